#include "client/memory_api.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/codec/json.h"
#include "api/quota/usage.h"
#include "client/informer.h"
#include "client/typed.h"

namespace draplane::client {
namespace {

using api::corev1::Namespace;
using api::corev1::Pod;
using api::corev1::ResourceQuota;
using api::resourcev1::ResourceClaim;

class MemoryApiTest : public ::testing::Test {
 protected:
  MemoryApiTest() : random_(NewSeededRandom(1)), api_(clock_, *random_) {}

  Pod MakePod(const std::string& name, const std::string& node = "") {
    Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "ns";
    pod.metadata.labels["app"] = name;
    pod.spec.node_name = node;
    return pod;
  }

  ManualClock clock_;
  std::unique_ptr<Random> random_;
  MemoryApi api_;
};

TEST_F(MemoryApiTest, CreateFillsMetadataAndRejectsDuplicates) {
  ResourceClaim claim;
  claim.metadata.generate_name = "pod-gpu-";
  claim.metadata.namespace_ = "ns";
  claim.status.reserved_for.emplace_back();
  StatusOr<ResourceClaim> created = Create(api_, claim);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->metadata.name.size(), std::string("pod-gpu-").size() + 5);
  EXPECT_FALSE(created->metadata.uid.empty());
  EXPECT_EQ(created->metadata.generation, 1);
  EXPECT_FALSE(created->metadata.resource_version.empty());
  EXPECT_TRUE(created->status.reserved_for.empty()) << "status is dropped on create";
  ResourceClaim again = *created;
  again.metadata.resource_version.clear();
  Status dup = Create(api_, again).status();
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.message(),
            "resourceclaims.resource.k8s.io \"" + created->metadata.name + "\" already exists");
}

TEST_F(MemoryApiTest, UpdateChecksResourceVersionAndSplitsStatus) {
  ResourceClaim claim;
  claim.metadata.name = "c";
  claim.metadata.namespace_ = "ns";
  StatusOr<ResourceClaim> created = Create(api_, claim);
  ASSERT_TRUE(created.ok());

  ResourceClaim with_status = *created;
  with_status.status.reserved_for.emplace_back();
  with_status.status.reserved_for.back().resource = "pods";
  with_status.metadata.finalizers.push_back("f");
  StatusOr<ResourceClaim> status_updated = UpdateStatus(api_, with_status);
  ASSERT_TRUE(status_updated.ok()) << status_updated.status().ToString();
  EXPECT_EQ(status_updated->status.reserved_for.size(), 1u);
  EXPECT_TRUE(status_updated->metadata.finalizers.empty()) << "status writes ignore metadata";

  // The first version is stale now.
  Status stale = UpdateStatus(api_, with_status).status();
  EXPECT_EQ(stale.code(), StatusCode::kConflict);

  ResourceClaim main = *status_updated;
  main.status.reserved_for.clear();
  main.metadata.finalizers.push_back("f");
  StatusOr<ResourceClaim> main_updated = Update(api_, main);
  ASSERT_TRUE(main_updated.ok());
  EXPECT_EQ(main_updated->metadata.finalizers, std::vector<std::string>{"f"});
  EXPECT_EQ(main_updated->status.reserved_for.size(), 1u) << "main writes ignore status";
  EXPECT_EQ(main_updated->metadata.generation, 1) << "spec unchanged";

  // A no-op write keeps the resourceVersion.
  StatusOr<ResourceClaim> noop = Update(api_, *main_updated);
  ASSERT_TRUE(noop.ok());
  EXPECT_EQ(noop->metadata.resource_version, main_updated->metadata.resource_version);

  // A status write that also changes the spec and the labels changes only the status; one that
  // sends them back as they are stores the same object as one that leaves them out.
  ResourceClaim changed_spec = *noop;
  changed_spec.spec.devices.requests.emplace_back();
  changed_spec.spec.devices.requests.back().name = "gpu";
  changed_spec.metadata.labels["team"] = "a";
  changed_spec.status.reserved_for.clear();
  StatusOr<ResourceClaim> spec_ignored = UpdateStatus(api_, changed_spec);
  ASSERT_TRUE(spec_ignored.ok()) << spec_ignored.status().ToString();
  EXPECT_TRUE(spec_ignored->spec.devices.requests.empty()) << "status writes ignore spec";
  EXPECT_TRUE(spec_ignored->metadata.labels.empty());
  EXPECT_TRUE(spec_ignored->status.reserved_for.empty());
  EXPECT_EQ(spec_ignored->metadata.finalizers, std::vector<std::string>{"f"});
  // The main resource, likewise, keeps the stored status when the body's differs.
  ResourceClaim changed_status = *spec_ignored;
  changed_status.status.reserved_for.emplace_back();
  changed_status.metadata.labels["team"] = "b";
  StatusOr<ResourceClaim> status_ignored = Update(api_, changed_status);
  ASSERT_TRUE(status_ignored.ok()) << status_ignored.status().ToString();
  EXPECT_TRUE(status_ignored->status.reserved_for.empty()) << "main writes ignore status";
  EXPECT_EQ(status_ignored->metadata.labels.at("team"), "b");
}

TEST_F(MemoryApiTest, FinalizersDelayDeletionUntilRemoved) {
  ResourceClaim claim;
  claim.metadata.name = "c";
  claim.metadata.namespace_ = "ns";
  claim.metadata.finalizers = {"resource.kubernetes.io/delete-protection"};
  ASSERT_TRUE(Create(api_, claim).ok());
  ASSERT_TRUE(Delete<ResourceClaim>(api_, "ns", "c").ok());
  StatusOr<ResourceClaim> deleting = Get<ResourceClaim>(api_, "ns", "c");
  ASSERT_TRUE(deleting.ok());
  EXPECT_TRUE(deleting->metadata.deletion_timestamp.has_value());
  deleting->metadata.finalizers.clear();
  ASSERT_TRUE(Update(api_, *deleting).ok());
  EXPECT_EQ(Get<ResourceClaim>(api_, "ns", "c").status().code(), StatusCode::kNotFound);
}

TEST_F(MemoryApiTest, BoundPodsAreDeletedGracefullyUnlessGraceIsZero) {
  ASSERT_TRUE(Create(api_, MakePod("unbound")).ok());
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "unbound").ok());
  EXPECT_EQ(Get<Pod>(api_, "ns", "unbound").status().code(), StatusCode::kNotFound);

  ASSERT_TRUE(Create(api_, MakePod("bound", "node-1")).ok());
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "bound").ok());
  StatusOr<Pod> terminating = Get<Pod>(api_, "ns", "bound");
  ASSERT_TRUE(terminating.ok());
  EXPECT_TRUE(terminating->metadata.deletion_timestamp.has_value());
  EXPECT_EQ(terminating->metadata.deletion_grace_period_seconds, 30);
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "bound", {.grace_period_seconds = 0}).ok());
  EXPECT_EQ(Get<Pod>(api_, "ns", "bound").status().code(), StatusCode::kNotFound);
}

TEST_F(MemoryApiTest, BindingSetsNodeNameOnceAndChecksUid) {
  StatusOr<Pod> pod = Create(api_, MakePod("p"));
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(BindPod(api_, "ns", "p", "wrong-uid", "n1").code(), StatusCode::kConflict);
  ASSERT_TRUE(BindPod(api_, "ns", "p", pod->metadata.uid, "n1").ok());
  StatusOr<Pod> bound = Get<Pod>(api_, "ns", "p");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ(bound->spec.node_name, "n1");
  ASSERT_EQ(bound->status.conditions.size(), 1u);
  EXPECT_EQ(bound->status.conditions[0].type, "PodScheduled");
  EXPECT_EQ(bound->status.conditions[0].status, "True");
  Status again = BindPod(api_, "ns", "p", "", "n2");
  EXPECT_EQ(again.code(), StatusCode::kConflict);
  EXPECT_NE(again.message().find("already assigned to node \"n1\""), std::string_view::npos);
}

TEST_F(MemoryApiTest, ListFiltersBySelectorsAndPages) {
  for (const char* name : {"a", "b", "c", "d"}) {
    ASSERT_TRUE(Create(api_, MakePod(name, std::string(name) == "b" ? "n1" : "")).ok());
  }
  StatusOr<ObjectList<Pod>> labelled = List<Pod>(api_, "ns", {.label_selector = "app in (a,c)"});
  ASSERT_TRUE(labelled.ok());
  ASSERT_EQ(labelled->items.size(), 2u);
  EXPECT_EQ(labelled->items[1].metadata.name, "c");
  StatusOr<ObjectList<Pod>> on_node = List<Pod>(api_, "", {.field_selector = "spec.nodeName=n1"});
  ASSERT_TRUE(on_node.ok());
  ASSERT_EQ(on_node->items.size(), 1u);
  EXPECT_EQ(on_node->items[0].metadata.name, "b");
  StatusOr<ObjectList<Pod>> page1 = List<Pod>(api_, "ns", {.limit = 3});
  ASSERT_TRUE(page1.ok());
  EXPECT_EQ(page1->items.size(), 3u);
  ASSERT_FALSE(page1->continue_token.empty());
  StatusOr<ObjectList<Pod>> page2 =
      List<Pod>(api_, "ns", {.limit = 3, .continue_token = page1->continue_token});
  ASSERT_TRUE(page2.ok());
  ASSERT_EQ(page2->items.size(), 1u);
  EXPECT_EQ(page2->items[0].metadata.name, "d");
  EXPECT_TRUE(page2->continue_token.empty());
}

TEST_F(MemoryApiTest, PatchesMergeAndJsonPatch) {
  ASSERT_TRUE(Create(api_, MakePod("p")).ok());
  boost::json::value merge = boost::json::parse(R"({"metadata":{"labels":{"app":null,"x":"y"}}})");
  StatusOr<Pod> merged = Patch<Pod>(api_, "ns", "p", PatchType::kMerge, merge);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->metadata.labels, (std::map<std::string, std::string, std::less<>>{{"x", "y"}}));
  boost::json::value json_patch = boost::json::parse(
      R"([{"op":"test","path":"/metadata/labels/x","value":"y"},
          {"op":"add","path":"/metadata/finalizers","value":["f"]}])");
  StatusOr<Pod> patched = Patch<Pod>(api_, "ns", "p", PatchType::kJson, json_patch);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ(patched->metadata.finalizers, std::vector<std::string>{"f"});
  boost::json::value failing =
      boost::json::parse(R"([{"op":"test","path":"/metadata/labels/x","value":"z"}])");
  EXPECT_EQ(Patch<Pod>(api_, "ns", "p", PatchType::kJson, failing).status().code(),
            StatusCode::kInvalidArgument);
  boost::json::value status_patch = boost::json::parse(R"({"status":{"phase":"Running"}})");
  StatusOr<Pod> ignored = Patch<Pod>(api_, "ns", "p", PatchType::kMerge, status_patch);
  ASSERT_TRUE(ignored.ok());
  EXPECT_EQ(ignored->status.phase, "Pending") << "the main resource ignores status";
  StatusOr<Pod> running = Patch<Pod>(api_, "ns", "p", PatchType::kMerge, status_patch, "status");
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->status.phase, "Running");
}

TEST_F(MemoryApiTest, WatchResumesFromAVersionAndReportsSelectorTransitions) {
  StatusOr<Pod> a = Create(api_, MakePod("a"));
  ASSERT_TRUE(a.ok());
  std::string after_create = a->metadata.resource_version;
  ApiRequest request;
  request.resource = &ResourceOf<Pod>();
  request.list.field_selector = "spec.nodeName=n1";
  request.list.resource_version = after_create;
  StatusOr<std::unique_ptr<WatchStream>> watch = api_.Watch(request);
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(BindPod(api_, "ns", "a", "", "n1").ok());
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a", {.grace_period_seconds = 0}).ok());
  StatusOr<std::optional<WatchEvent>> added = (*watch)->Next();
  ASSERT_TRUE(added.ok() && added->has_value());
  EXPECT_EQ((*added)->type, "ADDED") << "the pod entered the selector";
  StatusOr<std::optional<WatchEvent>> deleted = (*watch)->Next();
  ASSERT_TRUE(deleted.ok() && deleted->has_value());
  EXPECT_EQ((*deleted)->type, "DELETED");

  api_.CompactLog();
  request.list.resource_version = after_create;
  EXPECT_EQ(api_.Watch(request).status().code(), StatusCode::kExpired);
}

TEST_F(MemoryApiTest, WatchersShareOneStoredVersion) {
  ApiRequest request;
  request.resource = &ResourceOf<Pod>();
  StatusOr<std::unique_ptr<WatchStream>> first = api_.Watch(request);
  StatusOr<std::unique_ptr<WatchStream>> second = api_.Watch(request);
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_TRUE(Create(api_, MakePod("a")).ok());
  StatusOr<std::optional<WatchEvent>> one = (*first)->Next();
  StatusOr<std::optional<WatchEvent>> two = (*second)->Next();
  ASSERT_TRUE(one.ok() && one->has_value() && two.ok() && two->has_value());
  ASSERT_NE((*one)->object, nullptr);
  EXPECT_EQ((*one)->object, (*two)->object) << "one immutable value, not a copy per watcher";
  EXPECT_EQ((*one)->object->at("metadata").at("name"), "a");
}

TEST_F(MemoryApiTest, AWriteWhoseAnswerIsDiscardedStillHappens) {
  ApiRequest create = CreateRequest(MakePod("a"), "");
  create.discard_response = true;
  StatusOr<boost::json::value> answer = api_.Do(create);
  ASSERT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_TRUE(answer->is_null()) << "nothing copied out for a caller that does not read it";
  EXPECT_TRUE(Get<Pod>(api_, "ns", "a").ok());
  // Without the flag the answer is the stored object.
  create = CreateRequest(MakePod("b"), "");
  answer = api_.Do(create);
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->at("metadata").at("name"), "b");
  // A failed write is a failure either way.
  create.discard_response = true;
  EXPECT_EQ(api_.Do(create).status().code(), StatusCode::kAlreadyExists);
}

TEST_F(MemoryApiTest, DoSharedAnswersWithTheStoredVersionItself) {
  ApiRequest watch;
  watch.resource = &ResourceOf<Pod>();
  StatusOr<std::unique_ptr<WatchStream>> stream = api_.Watch(watch);
  ASSERT_TRUE(stream.ok());
  StatusOr<std::shared_ptr<const boost::json::value>> created =
      api_.DoShared(CreateRequest(MakePod("a"), ""));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  ASSERT_NE(*created, nullptr);
  EXPECT_EQ((*created)->at("metadata").at("name"), "a");
  EXPECT_FALSE((*created)->at("metadata").at("uid").as_string().empty());
  StatusOr<std::optional<WatchEvent>> added = (*stream)->Next();
  ASSERT_TRUE(added.ok() && added->has_value());
  EXPECT_EQ((*added)->object, *created) << "the answer is the stored version, not a copy";

  ApiRequest get;
  get.resource = &ResourceOf<Pod>();
  get.namespace_ = "ns";
  get.name = "a";
  StatusOr<std::shared_ptr<const boost::json::value>> read = api_.DoShared(ApiRequest(get));
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(*read, *created);

  // An update keeps the body it was given as the new version; a discarded answer is null.
  StatusOr<Pod> current = DecodeAs<Pod>(**created);
  ASSERT_TRUE(current.ok());
  current->metadata.labels["tier"] = "gold";
  ApiRequest update = UpdateRequest(*current, "", "");
  update.discard_response = true;
  StatusOr<std::shared_ptr<const boost::json::value>> updated = api_.DoShared(std::move(update));
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(*updated, nullptr);
  StatusOr<Pod> stored = Get<Pod>(api_, "ns", "a");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->metadata.labels.at("tier"), "gold");
  EXPECT_NE(stored->metadata.resource_version, current->metadata.resource_version);
  EXPECT_EQ(api_.DoShared(CreateRequest(MakePod("a"), "")).status().code(),
            StatusCode::kAlreadyExists);
}

TEST_F(MemoryApiTest, AnInterceptorSeesTheBodyOfAWriteThatGivesItAway) {
  std::string seen;
  api_.SetInterceptor([&](const ApiRequest& r) -> std::optional<Status> {
    if (r.verb == Verb::kCreate && r.body.is_object()) {
      seen = std::string(r.body.at("metadata").at("name").as_string());
    }
    return std::nullopt;
  });
  ASSERT_TRUE(api_.DoShared(CreateRequest(MakePod("a"), "")).ok());
  EXPECT_EQ(seen, "a");
  api_.SetInterceptor(nullptr);
}

// The typed path (DoTyped: objects stored typed, JSON made on demand) against the JSON path (an
// interceptor sends every write through it): the same writes give the same answers, errors,
// stored objects and watch events.
TEST(MemoryApiTypedTest, TypedWritesStoreWhatJsonWritesStore) {
  ManualClock clock;
  std::unique_ptr<Random> typed_random = NewSeededRandom(3);
  std::unique_ptr<Random> json_random = NewSeededRandom(3);
  MemoryApi typed_api(clock, *typed_random);
  MemoryApi json_api(clock, *json_random);
  json_api.SetInterceptor([](const ApiRequest&) -> std::optional<Status> { return std::nullopt; });

  // Runs `write` on both APIs and checks that they answer alike; returns the typed API's answer.
  auto both = [&](auto write) {
    auto on_typed = write(typed_api);
    auto on_json = write(json_api);
    EXPECT_EQ(on_typed.status().code(), on_json.status().code());
    EXPECT_EQ(on_typed.status().message(), on_json.status().message());
    if (on_typed.ok() && on_json.ok()) {
      EXPECT_TRUE(api::codec::JsonEqual(ToJson(*on_typed), ToJson(*on_json)))
          << boost::json::serialize(ToJson(*on_typed)) << "\n"
          << boost::json::serialize(ToJson(*on_json));
    }
    return on_typed;
  };

  ResourceClaim claim;
  claim.metadata.generate_name = "c-";
  claim.metadata.namespace_ = "ns";
  claim.metadata.labels["app"] = "a";
  claim.status.reserved_for.emplace_back();  // dropped on create
  StatusOr<ResourceClaim> created =
      both([&](ApiClient& api) { return Create(api, claim, "manager"); });
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  clock.Advance(std::chrono::seconds(5));

  ResourceClaim reserved = *created;
  reserved.status.reserved_for.emplace_back();
  reserved.status.reserved_for.back().resource = "pods";
  reserved.status.reserved_for.back().name = "p";
  reserved.metadata.finalizers.push_back("ignored-by-a-status-write");
  StatusOr<ResourceClaim> status_written =
      both([&](ApiClient& api) { return UpdateStatus(api, reserved); });
  ASSERT_TRUE(status_written.ok());
  EXPECT_TRUE(status_written->metadata.finalizers.empty());
  // The same status again is a no-op: the resourceVersion stays.
  StatusOr<ResourceClaim> again =
      both([&](ApiClient& api) { return UpdateStatus(api, *status_written); });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->metadata.resource_version, status_written->metadata.resource_version);
  // Stale and replaced objects conflict.
  EXPECT_EQ(both([&](ApiClient& api) { return UpdateStatus(api, reserved); }).status().code(),
            StatusCode::kConflict);
  ResourceClaim other_uid = *status_written;
  other_uid.metadata.uid = "not-it";
  EXPECT_EQ(both([&](ApiClient& api) { return Update(api, other_uid); }).status().code(),
            StatusCode::kConflict);

  // A main write ignores the status and keeps the server's metadata.
  ResourceClaim finalized = *status_written;
  finalized.metadata.finalizers.push_back("f");
  finalized.metadata.creation_timestamp = api::Time();
  finalized.status.reserved_for.clear();
  StatusOr<ResourceClaim> main_written =
      both([&](ApiClient& api) { return Update(api, finalized); });
  ASSERT_TRUE(main_written.ok());
  EXPECT_EQ(main_written->status.reserved_for.size(), 1u);
  EXPECT_FALSE(main_written->metadata.creation_timestamp.empty());

  // Deleting a finalized claim marks it; removing the finalizer then removes it.
  clock.Advance(std::chrono::seconds(5));
  EXPECT_TRUE(Delete<ResourceClaim>(typed_api, "ns", created->metadata.name).ok());
  EXPECT_TRUE(Delete<ResourceClaim>(json_api, "ns", created->metadata.name).ok());
  StatusOr<ResourceClaim> marked =
      both([&](ApiClient& api) { return Get<ResourceClaim>(api, "ns", created->metadata.name); });
  ASSERT_TRUE(marked.ok());
  ASSERT_TRUE(marked->metadata.deletion_timestamp.has_value());
  ResourceClaim unfinalized = *marked;
  unfinalized.metadata.finalizers.clear();
  EXPECT_TRUE(both([&](ApiClient& api) { return Update(api, unfinalized); }).ok());
  EXPECT_EQ(
      both([&](ApiClient& api) { return Get<ResourceClaim>(api, "ns", created->metadata.name); })
          .status()
          .code(),
      StatusCode::kNotFound);

  // A cluster-scoped kind: the namespace is dropped; a spec change bumps the generation.
  api::resourcev1::DeviceClass device_class;
  device_class.metadata.name = "gpu";
  device_class.metadata.namespace_ = "ns";
  StatusOr<api::resourcev1::DeviceClass> class_created =
      both([&](ApiClient& api) { return Create(api, device_class); });
  ASSERT_TRUE(class_created.ok());
  api::resourcev1::DeviceClass class_changed = *class_created;
  class_changed.spec.selectors.emplace_back();
  class_changed.spec.selectors.back().cel = api::resourcev1::CELDeviceSelector{};
  class_changed.spec.selectors.back().cel->expression = "true";
  StatusOr<api::resourcev1::DeviceClass> class_updated =
      both([&](ApiClient& api) { return Update(api, class_changed); });
  ASSERT_TRUE(class_updated.ok());
  EXPECT_EQ(class_updated->metadata.generation, 2);

  // An Event (no generation, uids of their own).
  api::corev1::Event event;
  event.metadata.name = "e";
  event.metadata.namespace_ = "ns";
  event.reason = "Tested";
  EXPECT_TRUE(both([&](ApiClient& api) { return Create(api, event); }).ok());

  // A Pod's life: its own create, patch, binding and delete rules on the typed object (merge
  // patches member by member) against the JSON path.
  Pod pod;
  pod.metadata.name = "p";
  pod.metadata.namespace_ = "ns";
  pod.spec.containers.emplace_back().name = "c";
  pod.spec.termination_grace_period_seconds = 5;
  StatusOr<Pod> pod_created = both([&](ApiClient& api) { return Create(api, pod); });
  ASSERT_TRUE(pod_created.ok());
  EXPECT_EQ(pod_created->status.phase, "Pending");
  auto patch = [&](std::string_view subresource, boost::json::value body) {
    return both([&](ApiClient& api) {
      return Patch<Pod>(api, "ns", "p", PatchType::kMerge, body, subresource);
    });
  };
  const std::string uid = pod_created->metadata.uid;
  StatusOr<Pod> claim_statuses = patch(
      "status",
      boost::json::parse(R"({"metadata": {"uid": ")" + uid + R"(", "labels": {"ignored": "x"}},
          "spec": {"nodeName": "ignored"},
          "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}],
                     "nominatedNodeName": null}})"));
  ASSERT_TRUE(claim_statuses.ok());
  EXPECT_EQ(claim_statuses->status.resource_claim_statuses.size(), 1u);
  EXPECT_TRUE(claim_statuses->metadata.labels.empty()) << "a status patch changes the status";
  EXPECT_EQ(
      patch("status", boost::json::parse(R"({"metadata": {"uid": "other"}})")).status().code(),
      StatusCode::kConflict);
  EXPECT_EQ(
      patch("", boost::json::parse(R"({"metadata": {"resourceVersion": "1"}})")).status().code(),
      StatusCode::kConflict);
  StatusOr<Pod> labelled = patch("", boost::json::parse(R"({"metadata": {"labels": {"a": "b"}},
      "spec": {"activeDeadlineSeconds": 60}, "status": {"phase": "Ignored"}, "kind": "Ignored"})"));
  ASSERT_TRUE(labelled.ok());
  EXPECT_EQ(labelled->metadata.generation, 2) << "the spec changed";
  EXPECT_EQ(labelled->status.phase, "Pending");
  // The same patch again is a no-op; one of a member the model does not know takes the JSON.
  EXPECT_EQ(patch("", boost::json::parse(R"({"metadata": {"labels": {"a": "b"}}})"))
                ->metadata.resource_version,
            labelled->metadata.resource_version);
  StatusOr<Pod> emptied = patch("status", boost::json::parse(R"({"status": null})"));
  ASSERT_TRUE(emptied.ok());
  EXPECT_TRUE(emptied->status.phase.empty());
  EXPECT_TRUE(patch("", boost::json::parse(R"({"extra": {"kept": true}})")).ok());
  clock.Advance(std::chrono::seconds(5));
  for (MemoryApi* api : {&typed_api, &json_api}) {
    EXPECT_TRUE(BindPod(*api, "ns", "p", uid, "node-1").ok());
    EXPECT_EQ(BindPod(*api, "ns", "p", uid, "node-2").code(), StatusCode::kConflict);
    EXPECT_TRUE(Delete<Pod>(*api, "ns", "p").ok()) << "graceful: bound and running";
  }
  StatusOr<Pod> deleting = both([&](ApiClient& api) { return Get<Pod>(api, "ns", "p"); });
  ASSERT_TRUE(deleting.ok());
  EXPECT_EQ(deleting->spec.node_name, "node-1");
  EXPECT_EQ(deleting->metadata.deletion_grace_period_seconds, 5);
  for (MemoryApi* api : {&typed_api, &json_api}) {
    EXPECT_TRUE(Delete<Pod>(*api, "ns", "p", {.grace_period_seconds = 0}).ok());
  }

  // Errors.
  ResourceClaim nameless;
  nameless.metadata.namespace_ = "ns";
  EXPECT_EQ(both([&](ApiClient& api) { return Create(api, nameless); }).status().code(),
            StatusCode::kInvalidArgument);
  ResourceClaim missing = *created;
  missing.metadata.name = "missing";
  EXPECT_EQ(both([&](ApiClient& api) { return UpdateStatus(api, missing); }).status().code(),
            StatusCode::kNotFound);

  // A claim stored as JSON, written typed afterwards.
  ApiRequest json_create = CreateRequest(claim, "");
  json_create.body.as_object()["metadata"].as_object()["name"] = "from-json";
  for (MemoryApi* api : {&typed_api, &json_api}) ASSERT_TRUE(api->Do(json_create).ok());
  StatusOr<ResourceClaim> from_json = Get<ResourceClaim>(typed_api, "ns", "from-json");
  ASSERT_TRUE(from_json.ok());
  from_json->status.reserved_for.emplace_back();
  from_json->status.reserved_for.back().name = "q";
  EXPECT_TRUE(both([&](ApiClient& api) { return UpdateStatus(api, *from_json); }).ok());

  // Every event of both logs, and what is stored, alike.
  for (const ResourceType* resource :
       {&ResourceOf<ResourceClaim>(), &ResourceOf<api::resourcev1::DeviceClass>(),
        &ResourceOf<api::corev1::Event>(), &ResourceOf<Pod>()}) {
    ApiRequest watch;
    watch.resource = resource;
    watch.list.resource_version = "1";
    StatusOr<std::unique_ptr<WatchStream>> typed_log = typed_api.Watch(watch);
    StatusOr<std::unique_ptr<WatchStream>> json_log = json_api.Watch(watch);
    ASSERT_TRUE(typed_log.ok() && json_log.ok());
    while (true) {
      StatusOr<std::optional<WatchEvent>> a = (*typed_log)->Poll();
      StatusOr<std::optional<WatchEvent>> b = (*json_log)->Poll();
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->has_value(), b->has_value()) << resource->resource;
      if (!a->has_value()) break;
      EXPECT_EQ((*a)->type, (*b)->type);
      ASSERT_NE((*a)->object, nullptr) << "a watch that did not ask for typed events gets JSON";
      EXPECT_TRUE(api::codec::JsonEqual(*(*a)->object, *(*b)->object))
          << boost::json::serialize(*(*a)->object) << "\n"
          << boost::json::serialize(*(*b)->object);
    }
    ApiRequest list;
    list.verb = Verb::kList;
    list.resource = resource;
    StatusOr<boost::json::value> typed_list = typed_api.Do(list);
    StatusOr<boost::json::value> json_list = json_api.Do(list);
    ASSERT_TRUE(typed_list.ok() && json_list.ok());
    EXPECT_TRUE(api::codec::JsonEqual(*typed_list, *json_list)) << resource->resource;
  }
}

// An informer of the in-memory API takes the typed object a typed write stored: no JSON is
// encoded or decoded on the way.
TEST(MemoryApiTypedTest, InformersShareTheTypedObjectAWriteStored) {
  ManualClock clock;
  std::unique_ptr<Random> random = NewSeededRandom(1);
  MemoryApi api(clock, *random);
  Informer<ResourceClaim> informer(api, InformerOptions{.manual = true});
  informer.Start();
  ResourceClaim claim;
  claim.metadata.name = "c";
  claim.metadata.namespace_ = "ns";
  ApiRequest create = TypedRequest(Verb::kCreate, claim, "", "");
  StatusOr<std::shared_ptr<const ResourceClaim>> stored = WriteTyped(api, std::move(create), claim);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_NE(*stored, nullptr);
  ASSERT_TRUE(informer.PeekManual().ok());
  informer.DeliverManual();
  EXPECT_EQ(informer.Get("ns", "c"), *stored) << "the stored object itself, not a decoded copy";
  // A JSON reader still gets the object.
  StatusOr<ResourceClaim> read = Get<ResourceClaim>(api, "ns", "c");
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->metadata.uid, (*stored)->metadata.uid);
}

// A Pod created typed stays typed through the writes a Pod's life brings (merge patches, its
// binding, its deletion): a watch that takes typed events gets every version without JSON.
TEST(MemoryApiTypedTest, APodStaysTypedThroughItsLife) {
  ManualClock clock;
  std::unique_ptr<Random> random = NewSeededRandom(1);
  MemoryApi api(clock, *random);
  ApiRequest watch;
  watch.resource = &ResourceOf<Pod>();
  watch.list.resource_version = "1";
  watch.list.typed_events = true;
  StatusOr<std::unique_ptr<WatchStream>> events = api.Watch(watch);
  ASSERT_TRUE(events.ok());
  Pod pod;
  pod.metadata.name = "p";
  pod.metadata.namespace_ = "ns";
  StatusOr<std::shared_ptr<const Pod>> created =
      WriteAndShare(api, TypedRequest(Verb::kCreate, pod, "", ""), pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string uid = (*created)->metadata.uid;
  ASSERT_TRUE(PatchOnly<Pod>(api, "ns", "p", PatchType::kMerge,
                             boost::json::parse(R"({"metadata": {"uid": ")" + uid +
                                                R"("}, "status": {"phase": "Running"}})"),
                             "status")
                  .ok());
  ASSERT_TRUE(PatchOnly<Pod>(api, "ns", "p", PatchType::kMerge,
                             boost::json::parse(R"({"metadata": {"labels": {"a": "b"}}})"))
                  .ok());
  ASSERT_TRUE(BindPod(api, "ns", "p", uid, "node-1").ok());
  ASSERT_TRUE(Delete<Pod>(api, "ns", "p").ok());  // graceful: bound and running
  ASSERT_TRUE(Delete<Pod>(api, "ns", "p", {.grace_period_seconds = 0}).ok());
  std::vector<std::string> types;
  const Pod* last = nullptr;
  while (true) {
    StatusOr<std::optional<WatchEvent>> event = (*events)->Poll();
    ASSERT_TRUE(event.ok());
    if (!event->has_value()) break;
    types.push_back((*event)->type);
    EXPECT_EQ((*event)->object, nullptr) << (*event)->type << ": JSON was made";
    ASSERT_NE((*event)->typed, nullptr);
    last = static_cast<const Pod*>((*event)->typed.get());
  }
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "MODIFIED", "MODIFIED", "MODIFIED",
                                             "MODIFIED", "DELETED"}));
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->status.phase, "Running");
  EXPECT_EQ(last->metadata.labels.at("a"), "b");
  EXPECT_EQ(last->spec.node_name, "node-1");
  EXPECT_TRUE(last->metadata.deletion_timestamp.has_value());
}

TEST_F(MemoryApiTest, WritersThatReadNoAnswerStillWrite) {
  StatusOr<Pod> pod = Create(api_, MakePod("a"));
  ASSERT_TRUE(pod.ok());
  pod->metadata.labels["tier"] = "gold";
  ASSERT_TRUE(UpdateOnly(api_, *pod).ok());
  EXPECT_EQ(UpdateOnly(api_, *pod).code(), StatusCode::kConflict) << "the version moved on";
  ASSERT_TRUE(PatchOnly<Pod>(api_, "ns", "a", PatchType::kMerge,
                             boost::json::object{{"status", {{"phase", "Running"}}}}, "status")
                  .ok());
  StatusOr<Pod> stored = Get<Pod>(api_, "ns", "a");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->metadata.labels.at("tier"), "gold");
  EXPECT_EQ(stored->status.phase, "Running");
  EXPECT_EQ(PatchOnly<Pod>(api_, "ns", "b", PatchType::kMerge, boost::json::object{}).code(),
            StatusCode::kNotFound);
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a", {.grace_period_seconds = 0}).ok());
  EXPECT_EQ(Get<Pod>(api_, "ns", "a").status().code(), StatusCode::kNotFound);
}

TEST_F(MemoryApiTest, NamespacesTerminateThroughTheirFinalizer) {
  Namespace ns;
  ns.metadata.name = "team";
  StatusOr<Namespace> created = Create(api_, ns);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(created->spec.finalizers, std::vector<std::string>{"kubernetes"});
  EXPECT_EQ(created->status.phase, "Active");
  ASSERT_TRUE(Delete<Namespace>(api_, "", "team").ok());
  StatusOr<Namespace> terminating = Get<Namespace>(api_, "", "team");
  ASSERT_TRUE(terminating.ok());
  EXPECT_EQ(terminating->status.phase, "Terminating");
  Pod pod = MakePod("p");
  pod.metadata.namespace_ = "team";
  EXPECT_EQ(Create(api_, pod).status().code(), StatusCode::kFailedPrecondition);
  Namespace finalized = *terminating;
  finalized.spec.finalizers.clear();
  ApiRequest finalize;
  finalize.verb = Verb::kUpdate;
  finalize.resource = &ResourceOf<Namespace>();
  finalize.name = "team";
  finalize.subresource = "finalize";
  finalize.body = ToJson(finalized);
  ASSERT_TRUE(api_.Do(finalize).ok());
  EXPECT_EQ(Get<Namespace>(api_, "", "team").status().code(), StatusCode::kNotFound);
}

TEST_F(MemoryApiTest, InterceptorInjectsFailures) {
  api_.SetInterceptor([](const ApiRequest& r) -> std::optional<Status> {
    if (r.verb == Verb::kCreate) return ConflictError("injected");
    return std::nullopt;
  });
  EXPECT_EQ(Create(api_, MakePod("p")).status().code(), StatusCode::kConflict);
  EXPECT_EQ(api_.RequestCount(Verb::kCreate), 0);
}

// Quota admission (memory_quota.h; ParityTest.QuotaAdmissionAndReplenishment compares the
// messages and values with the server's).
class MemoryQuotaTest : public MemoryApiTest {
 protected:
  static constexpr std::string_view kDevices = "gpu.deviceclass.resource.k8s.io/devices";

  static ResourceClaim Claim(const std::string& name, int64_t count) {
    ResourceClaim c;
    c.metadata.name = name;
    c.metadata.namespace_ = "ns";
    api::resourcev1::DeviceRequest r;
    r.name = "gpus";
    r.exactly.emplace();
    r.exactly->device_class_name = "gpu";
    r.exactly->allocation_mode = "ExactCount";
    r.exactly->count = count;
    c.spec.devices.requests.push_back(r);
    return c;
  }
  static ResourceQuota Quota(const std::string& name, const std::map<std::string, int64_t>& hard) {
    ResourceQuota q;
    q.metadata.name = name;
    q.metadata.namespace_ = "ns";
    for (const auto& [key, value] : hard) q.spec.hard[key] = api::Quantity::FromInt64(value);
    return q;
  }
  // status.used of a quota, "key=value,..." ("" when unset).
  std::string Used(const std::string& quota) {
    StatusOr<ResourceQuota> q = Get<ResourceQuota>(api_, "ns", quota);
    return q.ok() ? api::quota::PrettyPrint(q->status.used) : q.status().ToString();
  }
};

TEST_F(MemoryQuotaTest, AnAllocationModeQuotaLeavesItsDeviceKeysToTheScheduler) {
  ResourceQuota q =
      Quota("devices", {{std::string(kDevices), 1}, {"count/resourceclaims.resource.k8s.io", 2}});
  q.metadata.annotations["draplane.dev/device-quota-mode"] = "Allocation";
  ASSERT_TRUE(Create(api_, q).ok());
  // The server adds the scheduler's key as 0 and never changes it.
  EXPECT_EQ(Used("devices"),
            "count/resourceclaims.resource.k8s.io=0," + std::string(kDevices) + "=0");
  ASSERT_TRUE(Create(api_, Claim("c1", 4)).ok()) << "the scheduler charges devices, not admission";
  ASSERT_TRUE(Create(api_, Claim("c2", 4)).ok());
  EXPECT_EQ(Used("devices"),
            "count/resourceclaims.resource.k8s.io=2," + std::string(kDevices) + "=0");
  Status third = Create(api_, Claim("c3", 1)).status();
  EXPECT_EQ(third.code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(third.message(),
            "resourceclaims.resource.k8s.io \"c3\" is forbidden: exceeded quota: devices, "
            "requested: count/resourceclaims.resource.k8s.io=1, used: "
            "count/resourceclaims.resource.k8s.io=2, limited: "
            "count/resourceclaims.resource.k8s.io=2");
}

TEST_F(MemoryQuotaTest, ChangingAQuotaRecountsItAndDeletingItAdmitsEverything) {
  ASSERT_TRUE(Create(api_, Claim("c1", 2)).ok());
  // A status in the manifest (a dump of another cluster) is dropped on create, as the server
  // drops it: the quota counts the objects here.
  ResourceQuota dumped = Quota("devices", {{std::string(kDevices), 2}});
  dumped.status.hard = dumped.spec.hard;
  dumped.status.used[std::string(kDevices)] = api::Quantity::FromInt64(7);
  ASSERT_TRUE(Create(api_, dumped).ok());
  EXPECT_EQ(Used("devices"), std::string(kDevices) + "=2") << "claims made before the quota count";
  EXPECT_EQ(Create(api_, Claim("c2", 1)).status().code(), StatusCode::kFailedPrecondition);

  // A larger limit and a new key: status.hard follows spec.hard, the new key is counted.
  StatusOr<ResourceQuota> q = Get<ResourceQuota>(api_, "ns", "devices");
  ASSERT_TRUE(q.ok());
  q->spec.hard[std::string(kDevices)] = api::Quantity::FromInt64(4);
  q->spec.hard["count/resourceclaims.resource.k8s.io"] = api::Quantity::FromInt64(10);
  ASSERT_TRUE(Update(api_, *q).ok());
  StatusOr<ResourceQuota> synced = Get<ResourceQuota>(api_, "ns", "devices");
  ASSERT_TRUE(synced.ok());
  EXPECT_TRUE(synced->status.hard == synced->spec.hard);
  EXPECT_EQ(Used("devices"),
            "count/resourceclaims.resource.k8s.io=1," + std::string(kDevices) + "=2");
  ASSERT_TRUE(Create(api_, Claim("c2", 1)).ok());
  EXPECT_EQ(Used("devices"),
            "count/resourceclaims.resource.k8s.io=2," + std::string(kDevices) + "=3");

  ASSERT_TRUE(Delete<ResourceQuota>(api_, "ns", "devices").ok());
  EXPECT_TRUE(Create(api_, Claim("c3", 32)).ok());
}

TEST_F(MemoryQuotaTest, AScopedQuotaCountsOnlyThePodsInItsScope) {
  ResourceQuota q = Quota("best-effort", {{"pods", 1}});
  q.spec.scopes = {"BestEffort"};
  ASSERT_TRUE(Create(api_, q).ok());
  Pod guaranteed = MakePod("g");
  api::corev1::Container c;
  c.name = "main";
  c.resources.requests["cpu"] = api::Quantity::FromInt64(1);
  guaranteed.spec.containers.push_back(c);
  ASSERT_TRUE(Create(api_, guaranteed).ok());
  Pod best_effort = MakePod("b");
  api::corev1::Container plain;
  plain.name = "main";
  best_effort.spec.containers.push_back(plain);
  ASSERT_TRUE(Create(api_, best_effort).ok());
  EXPECT_EQ(Used("best-effort"), "pods=1");
  EXPECT_EQ(Create(api_, MakePod("b2")).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "g").ok());
  EXPECT_EQ(Used("best-effort"), "pods=1") << "g was not in the scope";
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "b").ok());
  EXPECT_EQ(Used("best-effort"), "pods=0");
  EXPECT_TRUE(Create(api_, MakePod("b2")).ok());
}

TEST_F(MemoryQuotaTest, TheChargeIsWrittenBeforeTheObjectAndGivenBackAfterIt) {
  ASSERT_TRUE(Create(api_, Quota("devices", {{std::string(kDevices), 4}})).ok());
  ApiRequest request;
  request.resource = &ResourceOf<ResourceQuota>();
  request.list.resource_version = std::to_string(api_.resource_version());
  StatusOr<std::unique_ptr<WatchStream>> quotas = api_.Watch(request);
  ASSERT_TRUE(quotas.ok());
  StatusOr<ResourceClaim> created = Create(api_, Claim("c1", 3));
  ASSERT_TRUE(created.ok());
  StatusOr<std::optional<WatchEvent>> charged = (*quotas)->Next();
  ASSERT_TRUE(charged.ok() && charged->has_value());
  StatusOr<ResourceQuota> after = DecodeAs<ResourceQuota>(*(*charged)->object);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status.used.at(std::string(kDevices)).ToString(), "3");
  EXPECT_LT(std::stoll(after->metadata.resource_version),
            std::stoll(created->metadata.resource_version));
  ASSERT_TRUE(Delete<ResourceClaim>(api_, "ns", "c1").ok());
  StatusOr<std::optional<WatchEvent>> given_back = (*quotas)->Next();
  ASSERT_TRUE(given_back.ok() && given_back->has_value());
  after = DecodeAs<ResourceQuota>(*(*given_back)->object);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status.used.at(std::string(kDevices)).ToString(), "0");
}

TEST(MemoryApiOptionsTest, EventsExpireAfterTheirTtl) {
  ManualClock clock;
  std::unique_ptr<Random> random = NewSeededRandom(1);
  MemoryApi api(clock, *random, {.event_ttl = std::chrono::hours(1)});
  api::corev1::Event event;
  event.metadata.name = "e1";
  event.metadata.namespace_ = "ns";
  event.reason = "Scheduled";
  ASSERT_TRUE(Create(api, event).ok());
  ApiRequest watch;
  watch.resource = &ResourceOf<api::corev1::Event>();
  watch.list.resource_version = std::to_string(api.resource_version());
  StatusOr<std::unique_ptr<WatchStream>> stream = api.Watch(watch);
  ASSERT_TRUE(stream.ok());
  clock.Advance(std::chrono::minutes(59));
  EXPECT_TRUE((Get<api::corev1::Event>(api, "ns", "e1")).ok());
  clock.Advance(std::chrono::minutes(1));
  EXPECT_EQ(Get<api::corev1::Event>(api, "ns", "e1").status().code(), StatusCode::kNotFound);
  StatusOr<std::optional<WatchEvent>> deleted = (*stream)->Poll();
  ASSERT_TRUE(deleted.ok() && deleted->has_value());
  EXPECT_EQ((*deleted)->type, "DELETED");
  // Other kinds never expire.
  ASSERT_TRUE(Create(api,
                     [] {
                       Pod p;
                       p.metadata.name = "p";
                       p.metadata.namespace_ = "ns";
                       return p;
                     }())
                  .ok());
  clock.Advance(std::chrono::hours(2));
  EXPECT_TRUE(Get<Pod>(api, "ns", "p").ok());
}

// Every write of an Event renews its lease: an aggregated Event (its count patched) lives one TTL
// from its last update, not from its creation.
TEST(MemoryApiOptionsTest, AnUpdatedEventLivesATtlFromItsLastWrite) {
  ManualClock clock;
  std::unique_ptr<Random> random = NewSeededRandom(1);
  MemoryApi api(clock, *random, {.event_ttl = std::chrono::hours(1)});
  api::corev1::Event event;
  event.metadata.name = "e1";
  event.metadata.namespace_ = "ns";
  event.reason = "FailedScheduling";
  event.count = 1;
  ASSERT_TRUE(Create(api, event).ok());
  clock.Advance(std::chrono::minutes(50));
  ASSERT_TRUE(Patch<api::corev1::Event>(api, "ns", "e1", PatchType::kMerge,
                                        boost::json::object{{"count", 2}})
                  .ok());
  clock.Advance(std::chrono::minutes(20));  // 70 minutes after its creation
  StatusOr<api::corev1::Event> kept = Get<api::corev1::Event>(api, "ns", "e1");
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->count, 2);
  clock.Advance(std::chrono::minutes(40));  // one hour after the update
  EXPECT_EQ(Get<api::corev1::Event>(api, "ns", "e1").status().code(), StatusCode::kNotFound);
}

TEST(MemoryApiOptionsTest, TheEventLogKeepsItsCapacity) {
  ManualClock clock;
  std::unique_ptr<Random> random = NewSeededRandom(1);
  MemoryApi api(clock, *random, {.event_log_capacity = 2});
  uint64_t start = api.resource_version();
  for (const char* name : {"a", "b", "c"}) {
    Pod p;
    p.metadata.name = name;
    p.metadata.namespace_ = "ns";
    ASSERT_TRUE(Create(api, p).ok());
  }
  ApiRequest watch;
  watch.resource = &ResourceOf<Pod>();
  watch.list.resource_version = std::to_string(start);
  EXPECT_EQ(api.Watch(watch).status().code(), StatusCode::kExpired);
  watch.list.resource_version = std::to_string(start + 1);
  StatusOr<std::unique_ptr<WatchStream>> stream = api.Watch(watch);
  ASSERT_TRUE(stream.ok());
  StatusOr<std::optional<WatchEvent>> first = (*stream)->Poll();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ((*first)->object->at("metadata").at("name"), "b");
}

}  // namespace
}  // namespace draplane::client
