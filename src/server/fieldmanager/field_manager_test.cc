#include "server/fieldmanager/field_manager.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "server/fieldmanager/field_set.h"
#include "server/fieldmanager/typed.h"
#include "server/openapi/openapi.h"

namespace draplane::server::fieldmanager {
namespace {

using boost::json::object;
using boost::json::value;

object Json(std::string_view text) { return boost::json::parse(text).as_object(); }

WriteContext PodWrite(std::string now = "2026-12-07T10:00:00Z") {
  WriteContext context;
  context.type = KindType{"Pod", openapi::KindSchema("", "v1", "Pod")};
  context.api_version = "v1";
  context.reset_paths = ResetPaths("", /*has_status_subresource=*/true);
  context.now = std::move(now);
  return context;
}

const value& ManagedFields(const object& obj) { return obj.at("metadata").at("managedFields"); }

constexpr std::string_view kPod = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "p", "namespace": "team-a", "labels": {"app": "web"}},
  "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}})";

TEST(FieldSetTest, AppliedFieldsAreWrittenAsUpstreamWritesThem) {
  WriteContext context = PodWrite();
  ASSERT_NE(context.type.root, nullptr);
  StatusOr<FieldSet> set = FieldsOf(value(Json(kPod)), context.type);
  ASSERT_TRUE(set.ok()) << set.status().message();
  // Structs and maps are not members of an applied set; list items are, with "." first.
  EXPECT_EQ(boost::json::serialize(set->ToFieldsV1()),
            R"({"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:labels":{"f:app":{}},"f:name":{},)"
            R"("f:namespace":{}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},)"
            R"("f:image":{},"f:name":{}}}}})");
  StatusOr<FieldSet> back = FieldSet::FromFieldsV1(set->ToFieldsV1());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, *set);
  EXPECT_EQ(PathString({"f:spec", "f:containers", R"(k:{"name":"main"})", "f:image"}),
            R"(.spec.containers[name="main"].image)");
  EXPECT_EQ(PathString({"f:metadata", "f:finalizers", R"(v:"a")"}),
            R"(.metadata.finalizers[="a"])");
}

TEST(FieldSetTest, UnmodelledListsHaveUpstreamsListTypes) {
  // A container's ports and env are kept unmodelled, yet keyed as upstream keys them (a port's
  // protocol defaults to TCP); finalizers are a set.
  WriteContext context = PodWrite();
  StatusOr<FieldSet> set = FieldsOf(boost::json::parse(R"({"metadata":{"finalizers":["a"]},
      "spec":{"containers":[{"name":"main","ports":[{"containerPort":80}],
      "env":[{"name":"X","value":"1"}]}]}})"),
                                    context.type);
  ASSERT_TRUE(set.ok()) << set.status().message();
  std::string text = boost::json::serialize(set->ToFieldsV1());
  EXPECT_NE(text.find(R"("f:finalizers":{"v:\"a\"":{}})"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},)"
                      R"("f:containerPort":{}}})"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("f:env":{"k:{\"name\":\"X\"}":{".":{},"f:name":{},"f:value":{}}})"),
            std::string::npos)
      << text;
}

TEST(FieldSetTest, MalformedFieldsV1IsRefused) {
  EXPECT_FALSE(FieldSet::FromFieldsV1(boost::json::parse(R"({"x:spec":{}})")).ok());
  EXPECT_FALSE(FieldSet::FromFieldsV1(boost::json::parse(R"({"k:nope":{}})")).ok());
  EXPECT_FALSE(FieldSet::FromFieldsV1(boost::json::parse(R"([1])")).ok());
}

TEST(MergeTest, ConfiguredItemsKeepTheConfigurationsOrderAndOthersStay) {
  WriteContext context = PodWrite();
  value live = boost::json::parse(R"({"spec":{"containers":[
      {"name":"a","image":"a:1"},{"name":"b","image":"b:1"},{"name":"c","image":"c:1"}]}})");
  value config =
      boost::json::parse(R"({"spec":{"containers":[{"name":"c","image":"c:2"},{"name":"a"}]}})");
  StatusOr<value> merged = Merge(live, config, context.type);
  ASSERT_TRUE(merged.ok()) << merged.status().message();
  EXPECT_EQ(boost::json::serialize(*merged),
            R"({"spec":{"containers":[{"name":"b","image":"b:1"},{"name":"c","image":"c:2"},)"
            R"({"name":"a","image":"a:1"}]}})");
  value duplicate = boost::json::parse(R"({"spec":{"containers":[{"name":"c"},{"name":"c"}]}})");
  StatusOr<value> refused = Merge(live, duplicate, context.type);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(
      refused.status().message().find(R"(.spec.containers: duplicate entries for key [name="c"])"),
      std::string::npos)
      << refused.status().message();
}

TEST(FieldManagerTest, ACreateIsOwnedByItsManagerWithoutSystemMetadataOrStatus) {
  object pod = Json(kPod);
  pod["metadata"].as_object()["uid"] = "u-1";
  pod["status"] = Json(R"({"phase":"Pending"})");
  ASSERT_TRUE(TrackUpdate(nullptr, pod, "kubectl-create", PodWrite()).ok());
  const value& managed = ManagedFields(pod);
  ASSERT_EQ(managed.as_array().size(), 1u);
  const object& entry = managed.as_array()[0].as_object();
  EXPECT_EQ(entry.at("manager"), "kubectl-create");
  EXPECT_EQ(entry.at("operation"), "Update");
  EXPECT_EQ(entry.at("apiVersion"), "v1");
  EXPECT_EQ(entry.at("time"), "2026-12-07T10:00:00Z");
  EXPECT_EQ(entry.at("fieldsType"), "FieldsV1");
  // An added map is a member of an Update's set ("."), system metadata and status are nobody's.
  EXPECT_EQ(boost::json::serialize(entry.at("fieldsV1")),
            R"({"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{)"
            R"("k:{\"name\":\"main\"}":{".":{},"f:image":{},"f:name":{}}}}})");
}

TEST(FieldManagerTest, AnObjectNobodyTrackedStaysUntrackedUntilItsFirstApply) {
  object live = Json(kPod);
  object updated = live;
  updated["spec"].as_object()["containers"].as_array()[0].as_object()["image"] = "nginx:2";
  ASSERT_TRUE(TrackUpdate(&live, updated, "kubectl-edit", PodWrite()).ok());
  EXPECT_FALSE(updated.at("metadata").as_object().contains("managedFields"));

  object config = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
      "spec":{"containers":[{"name":"main","image":"nginx:3"}]}})");
  StatusOr<ApplyResult> applied = Apply(&live, config, "ci", false, PodWrite());
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  ASSERT_EQ(applied->conflicts.size(), 1u);
  EXPECT_EQ(ConflictMessage(applied->conflicts),
            R"(Apply failed with 1 conflict: conflict with "before-first-apply" using v1: )"
            R"(.spec.containers[name="main"].image)");
}

TEST(FieldManagerTest, ApplyConflictsWithAnotherOwnerUnlessForcedAndPrunesWhatItDropped) {
  // Created by kubectl create (an Update), then applied by "ci" with a new label only.
  object live = Json(kPod);
  ASSERT_TRUE(TrackUpdate(nullptr, live, "kubectl-create", PodWrite("2026-12-07T10:00:00Z")).ok());
  object config = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
      "labels":{"tier":"gold"}}})");
  StatusOr<ApplyResult> first = Apply(&live, config, "ci", false, PodWrite("2026-12-07T10:01:00Z"));
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(first->conflicts.empty());
  EXPECT_EQ(first->object.at("metadata").at("labels"), Json(R"({"app":"web","tier":"gold"})"));
  // Apply entries come first.
  EXPECT_EQ(ManagedFields(first->object).as_array()[0].at("manager"), "ci");
  EXPECT_EQ(ManagedFields(first->object).as_array()[0].at("operation"), "Apply");
  EXPECT_EQ(ManagedFields(first->object).as_array()[0].at("apiVersion"), "v1");

  // Changing a field kubectl-create owns conflicts, with upstream's message.
  object change = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
      "labels":{"tier":"gold","app":"api"}}})");
  StatusOr<ApplyResult> conflicted =
      Apply(&first->object, change, "ci", false, PodWrite("2026-12-07T10:02:00Z"));
  ASSERT_TRUE(conflicted.ok());
  ASSERT_EQ(conflicted->conflicts.size(), 1u);
  EXPECT_EQ(ConflictMessage(conflicted->conflicts),
            R"(Apply failed with 1 conflict: conflict with "kubectl-create" using v1: )"
            R"(.metadata.labels.app)");

  // Forced, the field changes hands.
  StatusOr<ApplyResult> forced =
      Apply(&first->object, change, "ci", true, PodWrite("2026-12-07T10:03:00Z"));
  ASSERT_TRUE(forced.ok());
  ASSERT_TRUE(forced->conflicts.empty());
  EXPECT_EQ(forced->object.at("metadata").at("labels"), Json(R"({"app":"api","tier":"gold"})"));

  // Dropping a label ci alone owns removes it; dropping one kubectl-create also owned would not.
  object smaller = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
      "labels":{"app":"api"}}})");
  StatusOr<ApplyResult> pruned =
      Apply(&forced->object, smaller, "ci", false, PodWrite("2026-12-07T10:04:00Z"));
  ASSERT_TRUE(pruned.ok());
  ASSERT_TRUE(pruned->conflicts.empty());
  EXPECT_EQ(pruned->object.at("metadata").at("labels"), Json(R"({"app":"api"})"));
  // The container kubectl-create owns stays.
  EXPECT_EQ(pruned->object.at("spec").at("containers").as_array().size(), 1u);
}

TEST(FieldManagerTest, KubectlTakesOverWhatItAppliedClientSide) {
  // Client-side apply left the annotation and an Update entry of kubectl-client-side-apply.
  object live = Json(kPod);
  live["metadata"].as_object()["annotations"] = object{
      {"kubectl.kubernetes.io/last-applied-configuration",
       R"({"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web"},"name":"p",)"
       R"("namespace":"team-a"},"spec":{"containers":[{"image":"nginx:1","name":"main"}]}})"}};
  ASSERT_TRUE(TrackUpdate(nullptr, live, "kubectl-client-side-apply", PodWrite()).ok());
  object config = Json(R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",
      "namespace":"team-a","labels":{"app":"web"}},
      "spec":{"containers":[{"name":"main","image":"nginx:2"}]}})");
  StatusOr<ApplyResult> applied = Apply(&live, config, "kubectl", false, PodWrite());
  ASSERT_TRUE(applied.ok()) << applied.status().message();
  EXPECT_TRUE(applied->conflicts.empty());
  EXPECT_EQ(applied->object.at("spec").at("containers").as_array()[0].at("image"), "nginx:2");
  // The annotation follows the configuration.
  std::string annotation(applied->object.at("metadata")
                             .at("annotations")
                             .at("kubectl.kubernetes.io/last-applied-configuration")
                             .as_string());
  EXPECT_NE(annotation.find("nginx:2"), std::string::npos);
  // Another manager gets the conflict.
  StatusOr<ApplyResult> other = Apply(&live, config, "flux", false, PodWrite());
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->conflicts.size(), 1u);
}

TEST(FieldManagerTest, UpdatesTakeFieldsFromOtherManagersAndOldManagersAreCapped) {
  object live = Json(kPod);
  ASSERT_TRUE(TrackUpdate(nullptr, live, "creator", PodWrite("2026-12-07T10:00:00Z")).ok());
  for (int i = 0; i < 12; ++i) {
    object next = live;
    next["metadata"].as_object()["labels"].as_object()["l" + std::to_string(i)] = "x";
    char time[32];
    std::snprintf(time, sizeof time, "2026-12-07T10:%02d:00Z", i + 1);
    ASSERT_TRUE(TrackUpdate(&live, next, "m" + std::to_string(i), PodWrite(time)).ok());
    live = std::move(next);
  }
  const boost::json::array& entries = ManagedFields(live).as_array();
  // 13 Update managers, capped at 10: the oldest merged into ancient-changes.
  EXPECT_EQ(entries.size(), 10u);
  bool ancient = false;
  for (const value& e : entries) ancient = ancient || e.at("manager") == "ancient-changes";
  EXPECT_TRUE(ancient);
  // A manager that rewrites a field takes it from its owner.
  object next = live;
  next["spec"].as_object()["containers"].as_array()[0].as_object()["image"] = "nginx:9";
  ASSERT_TRUE(TrackUpdate(&live, next, "m11", PodWrite("2026-12-07T11:00:00Z")).ok());
  std::string fields = boost::json::serialize(ManagedFields(next));
  EXPECT_EQ(fields.find("\"manager\":\"ancient-changes\"") != std::string::npos, true);
  size_t image_owners = 0;
  for (const value& e : ManagedFields(next).as_array()) {
    std::string set = boost::json::serialize(e.at("fieldsV1"));
    if (set.find("f:image") != std::string::npos) {
      ++image_owners;
      EXPECT_EQ(e.at("manager"), "m11");
    }
  }
  EXPECT_EQ(image_owners, 1u);
}

TEST(FieldManagerTest, OnlyASingleEmptyEntryClearsTheManagedFields) {
  object live = Json(kPod);
  ASSERT_TRUE(TrackUpdate(nullptr, live, "creator", PodWrite()).ok());
  // [] is what a client unaware of the field may send: the live entries stay.
  object updated = live;
  updated["metadata"].as_object()["managedFields"] = boost::json::array();
  updated["metadata"].as_object()["labels"].as_object()["x"] = "y";
  ASSERT_TRUE(TrackUpdate(&live, updated, "ops", PodWrite()).ok());
  EXPECT_EQ(ManagedFields(updated).as_array().size(), 2u);
  // [{}] clears them, and the object is then untracked until an apply.
  object cleared = live;
  cleared["metadata"].as_object()["managedFields"] = boost::json::array{object()};
  ASSERT_TRUE(TrackUpdate(&live, cleared, "ops", PodWrite()).ok());
  EXPECT_FALSE(cleared.at("metadata").as_object().contains("managedFields"));
}

TEST(FieldManagerTest, ManagerFromUserAgentIsItsProduct) {
  EXPECT_EQ(ManagerFromUserAgent("kubectl/v1.32.4 (linux/amd64) kubernetes/abc"), "kubectl");
  EXPECT_EQ(ManagerFromUserAgent("helm"), "helm");
  EXPECT_EQ(ManagerFromUserAgent(std::string(300, 'x')).size(), 127u);
}

}  // namespace
}  // namespace draplane::server::fieldmanager
