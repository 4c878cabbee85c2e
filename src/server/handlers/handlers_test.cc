// Unit tests of the handler building blocks: request info, errors,
// discovery, output negotiation, stored-form splicing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "server/admission/admission.h"
#include "server/authz/rbac.h"
#include "server/handlers/discovery.h"
#include "server/handlers/errors.h"
#include "server/handlers/health.h"
#include "server/handlers/json_util.h"
#include "server/handlers/output.h"
#include "server/handlers/protobuf.h"
#include "server/handlers/registry.h"
#include "server/handlers/request_info.h"
#include "server/handlers/strategy.h"
#include "server/openapi/openapi.h"
#include "store/store.h"

namespace draplane::server::handlers {
namespace {

boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

TEST(RequestInfoTest, ReadsNamespacedResourcePaths) {
  RequestInfo info = ParseRequestInfo(
      "GET", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/c1/status", {});
  EXPECT_TRUE(info.is_resource_request);
  EXPECT_EQ(info.verb, "get");
  EXPECT_EQ(info.api_group, "resource.k8s.io");
  EXPECT_EQ(info.api_version, "v1");
  EXPECT_EQ(info.namespace_, "team-a");
  EXPECT_EQ(info.resource, "resourceclaims");
  EXPECT_EQ(info.name, "c1");
  EXPECT_EQ(info.subresource, "status");
}

TEST(RequestInfoTest, ListWatchAndDeleteCollection) {
  EXPECT_EQ(ParseRequestInfo("GET", "/api/v1/pods", {}).verb, "list");
  EXPECT_EQ(ParseRequestInfo("GET", "/api/v1/pods", {{"watch", "true"}}).verb, "watch");
  EXPECT_EQ(ParseRequestInfo("GET", "/api/v1/pods", {{"watch", "0"}}).verb, "list");
  EXPECT_EQ(ParseRequestInfo("GET", "/api/v1/watch/namespaces/a/pods", {}).verb, "watch");
  EXPECT_EQ(ParseRequestInfo("DELETE", "/api/v1/namespaces/a/pods", {}).verb, "deletecollection");
  EXPECT_EQ(ParseRequestInfo("POST", "/api/v1/namespaces/a/pods", {}).verb, "create");
}

// Boolean query parameters as upstream converts them: only "0" and "false" (any case) are false.
TEST(RequestInfoTest, QueryFlagsAreFalseOnlyForZeroAndFalse) {
  EXPECT_FALSE(QueryFlag("0"));
  EXPECT_FALSE(QueryFlag("false"));
  EXPECT_FALSE(QueryFlag("FALSE"));
  EXPECT_TRUE(QueryFlag("true"));
  EXPECT_TRUE(QueryFlag("1"));
  EXPECT_TRUE(QueryFlag("garbage"));
  EXPECT_TRUE(QueryFlag(""));
}

TEST(RequestInfoTest, NamespacesAreTheirOwnResource) {
  RequestInfo info = ParseRequestInfo("GET", "/api/v1/namespaces/team-a", {});
  EXPECT_EQ(info.resource, "namespaces");
  EXPECT_EQ(info.name, "team-a");
  RequestInfo status = ParseRequestInfo("PUT", "/api/v1/namespaces/team-a/finalize", {});
  EXPECT_EQ(status.subresource, "finalize");
  EXPECT_EQ(status.verb, "update");
}

TEST(RequestInfoTest, NameFromMetadataNameFieldSelector) {
  RequestInfo info = ParseRequestInfo("GET", "/api/v1/namespaces/a/pods",
                                      {{"fieldSelector", "metadata.name=p1"}, {"watch", "1"}});
  EXPECT_EQ(info.verb, "watch");
  EXPECT_EQ(info.name, "p1");
}

TEST(RequestInfoTest, NonResourcePaths) {
  RequestInfo info = ParseRequestInfo("GET", "/apis/resource.k8s.io/v1", {});
  EXPECT_FALSE(info.is_resource_request);
  EXPECT_EQ(info.verb, "get");
  EXPECT_FALSE(ParseRequestInfo("GET", "/healthz", {}).is_resource_request);
}

// Issue 17: the checks are real, in upstream's format.
TEST(HealthTest, ChecksFollowTheStoreBootstrapAndShutdown) {
  std::unique_ptr<store::Store> store = store::OpenStore("memory://").value();
  Health health(store.get(), RealClock(), {.interval = std::chrono::milliseconds(10)});
  for (int i = 0; i < 3000 && !health.StoreStatus().ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(health.StoreStatus().ok());
  http::Response before = health.Answer("/readyz", "");
  EXPECT_EQ(before.status, 500);
  EXPECT_NE(before.body.find("[-]poststarthook/rbac/bootstrap-roles failed: reason withheld"),
            std::string::npos);
  EXPECT_NE(before.body.find("readyz check failed"), std::string::npos);
  health.set_bootstrapped(true);
  EXPECT_EQ(health.Answer("/readyz", "").body, "ok");
  EXPECT_EQ(health.Answer("/readyz", "verbose").body,
            "[+]ping ok\n[+]log ok\n[+]memory ok\n[+]poststarthook/rbac/bootstrap-roles ok\n"
            "[+]shutdown ok\nreadyz check passed\n");
  EXPECT_EQ(health.Answer("/readyz/memory", "").body, "ok");
  EXPECT_EQ(health.Answer("/readyz/nope", "").status, 404);
  health.set_shutting_down(true);
  EXPECT_EQ(health.Answer("/readyz", "").status, 500);
  EXPECT_EQ(health.Answer("/readyz", "exclude=shutdown").status, 200);
  EXPECT_EQ(health.Answer("/livez", "").status, 200);  // liveness has no shutdown check
  EXPECT_EQ(health.Answer("/healthz", "").status, 200);
}

TEST(ErrorsTest, StatusJsonHasUpstreamShape) {
  ApiError e = NewNotFound({"resource.k8s.io", "resourceclaims"}, "c1");
  EXPECT_EQ(e.code, 404);
  EXPECT_EQ(StatusJson(e),
            R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
            R"("message":"resourceclaims.resource.k8s.io \"c1\" not found","reason":"NotFound",)"
            R"("details":{"name":"c1","group":"resource.k8s.io","kind":"resourceclaims"},)"
            R"("code":404})");
  ApiError invalid = NewInvalid("ResourceClaim.resource.k8s.io", "c1",
                                {api::Required(api::FieldPath("spec").Child("devices"), "")});
  EXPECT_EQ(invalid.code, 422);
  EXPECT_EQ(invalid.message,
            "ResourceClaim.resource.k8s.io \"c1\" is invalid: spec.devices: Required value");
  ASSERT_EQ(invalid.causes.size(), 1u);
  EXPECT_EQ(invalid.causes[0].field, "spec.devices");
  EXPECT_EQ(FromStatus(ExpiredError("too old"), {}).code, 410);
  EXPECT_EQ(FromStatus(ConflictError("x"), {{"", "pods"}, "p", "Pod"}).reason, "Conflict");
}

TEST(DiscoveryTest, ChoosesAggregatedDiscoveryFromAccept) {
  EXPECT_EQ(AggregatedVersion("application/json;g=apidiscovery.k8s.io;v=v2;as="
                              "APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;"
                              "v=v2beta1;as=APIGroupDiscoveryList,application/json"),
            "v2");
  EXPECT_EQ(AggregatedVersion("application/json;g=apidiscovery.k8s.io;v=v2beta1;as="
                              "APIGroupDiscoveryList,application/json"),
            "v2beta1");
  EXPECT_FALSE(AggregatedVersion("application/json, */*").has_value());
}

TEST(DiscoveryTest, ResourceListDescribesSubresources) {
  auto doc = ResourceListDiscovery(Registry::Default(), "resource.k8s.io", "v1");
  ASSERT_TRUE(doc.has_value());
  auto json = Json(*doc);
  bool found_status = false;
  for (const auto& r : json.at("resources").as_array()) {
    if (r.at("name") == "resourceclaims/status") {
      found_status = true;
      EXPECT_EQ(r.at("verbs"), Json(R"(["get","patch","update"])"));
    }
    if (r.at("name") == "resourceclaims") {
      EXPECT_EQ(r.at("singularName"), "resourceclaim");
      EXPECT_EQ(r.at("namespaced"), true);
      EXPECT_EQ(r.at("kind"), "ResourceClaim");
    }
  }
  EXPECT_TRUE(found_status);
  auto core = Json(*ResourceListDiscovery(Registry::Default(), "", "v1"));
  bool pods = false;
  for (const auto& r : core.at("resources").as_array()) {
    if (r.at("name") == "pods") {
      pods = true;
      EXPECT_EQ(r.at("shortNames"), Json(R"(["po"])"));
      EXPECT_EQ(r.at("categories"), Json(R"(["all"])"));
    }
  }
  EXPECT_TRUE(pods);
}

TEST(OutputTest, NegotiatesTables) {
  auto table = NegotiateOutput(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
      "g=meta.k8s.io,application/json",
      "");
  ASSERT_TRUE(table.has_value());
  EXPECT_EQ(table->kind, OutputKind::kTable);
  EXPECT_EQ(NegotiateOutput("application/vnd.kubernetes.protobuf,application/json", "")->kind,
            OutputKind::kJson);
  EXPECT_FALSE(NegotiateOutput("application/vnd.kubernetes.protobuf", "").has_value());
  EXPECT_EQ(NegotiateOutput("", "")->kind, OutputKind::kJson);
}

TEST(JsonUtilTest, SplicesResourceVersionIntoStoredForm) {
  JsonObject obj = Json(R"({"spec":{"a":1},"kind":"Pod","metadata":{"name":"p",
    "resourceVersion":"9"},"apiVersion":"v1"})")
                       .as_object();
  std::string stored = ToStoredJson(obj);
  EXPECT_EQ(stored, R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"a":1}})");
  EXPECT_EQ(WithResourceVersion(stored, 42),
            R"({"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"42","name":"p"},)"
            R"("spec":{"a":1}})");
  // Not in stored form: parsed instead.
  EXPECT_EQ(Json(WithResourceVersion(R"({"metadata":{},"kind":"X"})", 7)),
            Json(R"({"metadata":{"resourceVersion":"7"},"kind":"X"})"));
}

// The moving overload writes the same bytes as the copying one: key order, the removal of
// metadata.resourceVersion (boost's erase moves the last member into its place), nested values.
TEST(JsonUtilTest, StoredFormIsTheSameWhenTheObjectIsMoved) {
  for (std::string_view text : {
           R"({"spec":{"a":[1,{"b":"c"}]},"kind":"Pod","metadata":{"resourceVersion":"9",
               "name":"p","labels":{"x":"y"},"uid":"u"},"apiVersion":"v1","status":{}})",
           R"({"metadata":{"name":"p","resourceVersion":"3"},"zz":null,"apiVersion":"v1"})",
           R"({"kind":"K","other":{"metadata":{"resourceVersion":"1"}}})",
           R"({"metadata":"not an object","kind":"K"})",
       }) {
    JsonObject obj = Json(text).as_object();
    std::string copied = ToStoredJson(obj);
    EXPECT_EQ(boost::json::value(obj), Json(text)) << text;  // not modified
    EXPECT_EQ(ToStoredJson(std::move(obj)), copied) << text;
  }
  JsonObject obj =
      Json(R"({"metadata":{"resourceVersion":"9","name":"p","uid":"u"},"kind":"K"})").as_object();
  EXPECT_EQ(ToStoredJson(std::move(obj)), R"({"kind":"K","metadata":{"uid":"u","name":"p"}})");
}

// A status update keeps everything of the old object but its status, in the old object's
// member order: the bytes are those of copying the old object and assigning the new status.
TEST(StrategyTest, StatusUpdateKeepsTheOldObjectsMemberOrder) {
  auto oracle = [](const JsonObject& obj, const JsonObject& old) {
    JsonObject result = old;
    if (auto it = obj.find("status"); it != obj.end()) {
      result["status"] = it->value();
    } else {
      result.erase("status");
    }
    std::string_view rv = MetaString(obj, "resourceVersion");
    JsonObject& meta = EnsureObject(result, "metadata");
    if (rv.empty()) {
      meta.erase("resourceVersion");
    } else {
      meta["resourceVersion"] = rv;
    }
    return result;
  };
  const std::vector<std::string_view> olds = {
      R"({"apiVersion":"v1","kind":"Pod","metadata":{"resourceVersion":"4","name":"p"},
          "status":{"phase":"Pending"},"spec":{"nodeName":"n"}})",
      R"({"kind":"Pod","metadata":{"name":"p"},"spec":{},"status":{"phase":"Pending"}})",
      R"({"metadata":{"name":"p","labels":{"a":"b"}},"spec":{"x":[1,2]}})",
  };
  const std::vector<std::string_view> news = {
      R"({"metadata":{"name":"p","resourceVersion":"4","labels":{"c":"d"}},"spec":{},
          "status":{"phase":"Running","conditions":[{"type":"Ready"}]}})",
      R"({"status":{"phase":"Failed"},"metadata":{"name":"p"}})",
      R"({"metadata":{"name":"p","resourceVersion":"5"},"spec":{"nodeName":"other"}})",
  };
  for (std::string_view old_text : olds) {
    for (std::string_view new_text : news) {
      const JsonObject old = Json(old_text).as_object();
      JsonObject obj = Json(new_text).as_object();
      std::string expected = boost::json::serialize(oracle(obj, old));
      PodStrategy().PrepareForStatusUpdate(obj, old);
      EXPECT_EQ(boost::json::serialize(obj), expected) << old_text << " <- " << new_text;
    }
  }
}

// FormatTime computes the civil date itself; it must write what gmtime_r + snprintf write.
TEST(JsonUtilTest, FormatTimeMatchesLibc) {
  auto libc = [](int64_t seconds) {
    std::time_t t = static_cast<std::time_t>(seconds);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[80];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return std::string(buf);
  };
  // Every day boundary (a second on each side, and midday) that a Timestamp can hold (int64
  // nanoseconds: 1677-09-21 to 2262-04-11), and odd seconds in between.
  std::vector<int64_t> seconds = {0, -1, 1, 86399, 86400, 951782400, 951868799, 951868800};
  for (int64_t day = -106750; day <= 106749; ++day) {
    for (int64_t offset : {-1, 0, 1, 43210}) seconds.push_back(day * 86400 + offset);
  }
  for (int64_t s = -9'200'000'000; s < 9'200'000'000; s += 98'765'431) seconds.push_back(s);
  for (int64_t s : seconds) {
    ASSERT_EQ(FormatTime(Timestamp(std::chrono::seconds(s))), libc(s)) << s;
  }
  // Sub-second times truncate toward zero, as before.
  EXPECT_EQ(FormatTime(Timestamp(std::chrono::milliseconds(-1500))), libc(-1));
  EXPECT_EQ(FormatTime(Timestamp(std::chrono::milliseconds(1999))), libc(1));
}

TEST(JsonUtilTest, HumanDurationMatchesUpstream) {
  using namespace std::chrono;
  EXPECT_EQ(HumanDuration(seconds(5)), "5s");
  EXPECT_EQ(HumanDuration(seconds(119)), "119s");
  EXPECT_EQ(HumanDuration(seconds(200)), "3m20s");
  EXPECT_EQ(HumanDuration(minutes(45)), "45m");
  EXPECT_EQ(HumanDuration(hours(5) + minutes(7)), "5h7m");
  EXPECT_EQ(HumanDuration(hours(30)), "30h");
  EXPECT_EQ(HumanDuration(hours(24 * 3 + 4)), "3d4h");
  EXPECT_EQ(HumanDuration(hours(24 * 400)), "400d");
}

TEST(ProtobufTest, DecodesNamespaceEnvelope) {
  // runtime.Unknown{typeMeta{apiVersion: "v1", kind: "Namespace"}, raw: Namespace{metadata{name}}}
  std::string meta = std::string("\x0a\x02t1", 4);                     // ObjectMeta.name = "t1"
  std::string ns = std::string("\x0a", 1) + char(meta.size()) + meta;  // Namespace.metadata
  std::string type_meta = std::string("\x0a\x02v1\x12\x09Namespace", 15);
  std::string unknown = std::string("\x0a", 1) + char(type_meta.size()) + type_meta +
                        std::string("\x12", 1) + char(ns.size()) + ns;
  std::string body = std::string("k8s\0", 4) + unknown;
  StatusOr<JsonObject> obj = DecodeKubernetesProtobuf(body);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  EXPECT_EQ(boost::json::value(*obj),
            Json(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"t1"}})"));
  EXPECT_EQ(DecodeKubernetesProtobuf("nope").status().code(), StatusCode::kInvalidArgument);
}

TEST(ProtobufTest, DecodesResourceQuotaEnvelope) {
  // What `kubectl create quota q --hard=pods=2 --scopes=BestEffort` sends.
  auto field = [](int number, const std::string& bytes) {
    return std::string(1, char(number << 3 | 2)) + char(bytes.size()) + bytes;
  };
  std::string meta = field(1, "q");
  std::string quantity = field(1, "2");                       // resource.Quantity.string
  std::string entry = field(1, "pods") + field(2, quantity);  // map entry {key, value}
  std::string spec = field(1, entry) + field(2, "BestEffort");
  std::string quota = field(1, meta) + field(2, spec);
  std::string type_meta = field(1, "v1") + field(2, "ResourceQuota");
  std::string body = std::string("k8s\0", 4) + field(1, type_meta) + field(2, quota);
  StatusOr<JsonObject> obj = DecodeKubernetesProtobuf(body);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  EXPECT_EQ(boost::json::value(*obj),
            Json(R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q"},)"
                 R"("spec":{"hard":{"pods":"2"},"scopes":["BestEffort"]}})"));
}

TEST(ProtobufTest, ZeroScalarsOfOmitemptyFieldsAreAbsent) {
  // Go's marshaller writes every scalar; `kubectl create priorityclass pc --value=0` sends an
  // empty generateName, a zero creationTimestamp, globalDefault false and an empty description.
  auto bytes = [](int number, const std::string& b) {
    return std::string(1, char(number << 3 | 2)) + char(b.size()) + b;
  };
  auto varint = [](int number, int v) { return std::string(1, char(number << 3)) + char(v); };
  std::string meta = bytes(1, "pc") + bytes(2, "") + bytes(8, "");  // creationTimestamp {}
  std::string pc = bytes(1, meta) + varint(2, 0) + varint(3, 0) + bytes(4, "");
  std::string body = std::string("k8s\0", 4) +
                     bytes(1, bytes(1, "scheduling.k8s.io/v1") + bytes(2, "PriorityClass")) +
                     bytes(2, pc);
  StatusOr<JsonObject> obj = DecodeKubernetesProtobuf(body);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  // value has no omitempty upstream: 0 stays.
  EXPECT_EQ(boost::json::value(*obj),
            Json(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",)"
                 R"("metadata":{"name":"pc"},"value":0})"));

  // A RoleBinding's roleRef.apiGroup and subjects' kind/name have no omitempty; a Subject's
  // apiGroup and namespace do.
  std::string subject = bytes(1, "User") + bytes(2, "") + bytes(3, "alice") + bytes(4, "");
  std::string role_ref = bytes(1, "") + bytes(2, "Role") + bytes(3, "r");
  std::string binding = bytes(1, bytes(1, "b")) + bytes(2, subject) + bytes(3, role_ref);
  body = std::string("k8s\0", 4) +
         bytes(1, bytes(1, "rbac.authorization.k8s.io/v1") + bytes(2, "RoleBinding")) +
         bytes(2, binding);
  obj = DecodeKubernetesProtobuf(body);
  ASSERT_TRUE(obj.ok()) << obj.status().ToString();
  EXPECT_EQ(boost::json::value(*obj),
            Json(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding",)"
                 R"("metadata":{"name":"b"},"subjects":[{"kind":"User","name":"alice"}],)"
                 R"("roleRef":{"apiGroup":"","kind":"Role","name":"r"}})"));
}

// NamespaceLifecycle remembers whether a namespace is terminating by the revision it read: every
// change of the namespace is seen by the next create, never an earlier answer.
// Issue 17: upstream admitNode's label and taint rules.
TEST(AdmissionTest, NodeRestrictionKeepsControlPlaneLabelsAndTaintsFromTheNode) {
  std::unique_ptr<store::Store> store = store::OpenStore("memory://").value();
  admission::Admission admission(store.get());
  const auth::UserInfo node{"system:node:n1", "", {"system:nodes", "system:authenticated"}};
  const auth::UserInfo admin{"admin", "", {"system:masters"}};
  auto object = [](std::string_view labels, std::string_view taints = "[]") {
    return Json(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{)" +
                std::string(labels) + R"(}},"spec":{"taints":)" + std::string(taints) + "}}")
        .as_object();
  };
  auto admit = [&](const auth::UserInfo& user, const JsonObject& obj,
                   const JsonObject* old) -> int {
    admission::Attributes a;
    a.resource = Registry::Default().Find("", "v1", "nodes");
    a.operation = old == nullptr ? admission::Operation::kCreate : admission::Operation::kUpdate;
    a.user = &user;
    a.name = "n1";
    a.object = &obj;
    a.old_object = old;
    std::optional<ApiError> e = admission.Admit(a);
    return e ? e->code : 0;
  };
  const JsonObject plain = object(R"("kubernetes.io/hostname":"n1")");
  EXPECT_EQ(admit(node, plain, nullptr), 0);
  for (std::string_view forbidden :
       {R"("node-restriction.kubernetes.io/trusted":"yes")", R"("kubernetes.io/role":"master")",
        R"("sub.k8s.io/x":"y")", R"("node-role.kubernetes.io/control-plane":"")"}) {
    EXPECT_EQ(admit(node, object(forbidden), nullptr), 403) << forbidden;
    EXPECT_EQ(admit(node, object(forbidden), &plain), 403) << forbidden;
    EXPECT_EQ(admit(admin, object(forbidden), &plain), 0) << forbidden;
  }
  for (std::string_view allowed :
       {R"("topology.kubernetes.io/zone":"a")", R"("node.kubernetes.io/instance-type":"big")",
        R"("x.kubelet.kubernetes.io/y":"z")", R"("example.com/gpu":"a100")", R"("plain":"1")"}) {
    EXPECT_EQ(admit(node, object(allowed), &plain), 0) << allowed;
  }
  // A label an admin set stays allowed while unchanged; removing or changing it is not.
  const JsonObject labelled = object(R"("node-restriction.kubernetes.io/trusted":"yes")");
  EXPECT_EQ(admit(node, labelled, &labelled), 0);
  EXPECT_EQ(admit(node, plain, &labelled), 403);
  // Taints: the node may register with them, never change them afterwards.
  const JsonObject tainted = object("", R"([{"key":"k","effect":"NoSchedule"}])");
  EXPECT_EQ(admit(node, tainted, nullptr), 0);
  EXPECT_EQ(admit(node, tainted, &tainted), 0);
  EXPECT_EQ(admit(node, object(""), &tainted), 403);
  EXPECT_EQ(admit(node, tainted, &plain), 403);
  EXPECT_EQ(admit(admin, object(""), &tainted), 0);
}

TEST(AdmissionTest, NamespaceLifecycleFollowsEveryNamespaceChange) {
  auto opened = store::OpenStore("memory://");
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  std::unique_ptr<store::Store> store = std::move(opened).value();
  admission::Admission admission(store.get());
  const auth::UserInfo user{"alice", "", {"system:authenticated"}};
  admission::Attributes create;
  create.resource = Registry::Default().Find("", "v1", "pods");
  create.operation = admission::Operation::kCreate;
  create.user = &user;
  create.namespace_ = "team-a";
  create.name = "p";
  const store::Key key{"core/namespaces", "", "team-a"};
  auto ns = [](std::string_view status) {
    return std::string(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"},)") +
           R"("status":{"phase":")" + std::string(status) + R"("}})";
  };
  auto code = [&] {
    std::optional<ApiError> e = admission.Admit(create);
    return e ? e->code : 0;
  };
  EXPECT_EQ(code(), 404);
  ASSERT_TRUE(store->Create(key, ns("Active")).ok());
  EXPECT_EQ(code(), 0);
  EXPECT_EQ(code(), 0);
  ASSERT_TRUE(store->Update(key, ns("Terminating")).ok());
  EXPECT_EQ(code(), 403);
  EXPECT_EQ(code(), 403);
  ASSERT_TRUE(store->Update(key, ns("Active")).ok());
  EXPECT_EQ(code(), 0);
  ASSERT_TRUE(store
                  ->Update(key, R"({"apiVersion":"v1","kind":"Namespace","metadata":{)"
                                R"("name":"team-a","deletionTimestamp":"2026-01-01T00:00:00Z"},)"
                                R"("status":{"phase":"Active"}})")
                  .ok());
  EXPECT_EQ(code(), 403);
  ASSERT_TRUE(store->Delete(key).ok());
  EXPECT_EQ(code(), 404);
  ASSERT_TRUE(store->Create(key, ns("Active")).ok());
  EXPECT_EQ(code(), 0);
}

// A rule's resources match "resource" or "resource/subresource" exactly, "*", or "*/sub".
TEST(RbacTest, RuleResourcesMatchTheResourceAndSubresourceExactly) {
  auto allows = [](std::vector<std::string> resources, std::string resource,
                   std::string subresource) {
    authz::Attributes a;
    a.verb = "update";
    a.resource_request = true;
    a.api_group = "resource.k8s.io";
    a.resource = std::move(resource);
    a.subresource = std::move(subresource);
    authz::PolicyRule rule;
    rule.verbs = {"update"};
    rule.api_groups = {"resource.k8s.io"};
    rule.resources = std::move(resources);
    return authz::RuleAllows(a, rule);
  };
  EXPECT_TRUE(allows({"resourceclaims"}, "resourceclaims", ""));
  EXPECT_FALSE(allows({"resourceclaims"}, "resourceclaims", "status"));
  EXPECT_TRUE(allows({"resourceclaims/status"}, "resourceclaims", "status"));
  EXPECT_FALSE(allows({"resourceclaims/status"}, "resourceclaims", ""));
  EXPECT_FALSE(allows({"resourceclaims/status"}, "resourceclaim", "s/status"));
  EXPECT_FALSE(allows({"resourceclaims/status"}, "resourceclaims", "statu"));
  EXPECT_FALSE(allows({"resourceclaimsXstatus"}, "resourceclaims", "status"));
  EXPECT_FALSE(allows({"resourceclaims/statusX"}, "resourceclaims", "status"));
  EXPECT_FALSE(allows({"resourceclaims/"}, "resourceclaims", ""));
  EXPECT_TRUE(allows({"*/status"}, "resourceclaims", "status"));
  EXPECT_FALSE(allows({"*/status"}, "resourceclaims", ""));
  EXPECT_TRUE(allows({"*"}, "resourceclaims", "status"));
  EXPECT_TRUE(allows({"pods", "resourceclaims/status"}, "resourceclaims", "status"));
}

// --- openapi::UnknownFields against a direct reading of the schemas --------------------------

// The walk as it read the component schemas on every request before they were compiled: kept
// here as the oracle the compiled walk must agree with, field path by field path and in the
// pruned object's bytes (boost::json's erase reorders members, so the order of removals counts).
const boost::json::object* ResolveSchema(const boost::json::object* schema) {
  for (int depth = 0; schema != nullptr && depth < 8; ++depth) {
    const boost::json::value* r = schema->if_contains("$ref");
    if (r == nullptr) {
      const boost::json::value* all = schema->if_contains("allOf");
      if (all != nullptr && all->is_array() && all->get_array().size() == 1 &&
          all->get_array()[0].is_object()) {
        schema = &all->get_array()[0].get_object();
        continue;
      }
      return schema;
    }
    std::string_view name = r->get_string();
    constexpr std::string_view kPrefix = "#/components/schemas/";
    if (name.rfind(kPrefix, 0) != 0) return nullptr;
    const boost::json::value* target =
        openapi::ComponentSchemas().if_contains(name.substr(kPrefix.size()));
    schema = target != nullptr && target->is_object() ? &target->get_object() : nullptr;
  }
  return schema;
}

void OracleWalk(boost::json::value& v, const boost::json::object* schema, const std::string& path,
                bool prune, std::vector<std::string>* unknown) {
  schema = ResolveSchema(schema);
  if (schema == nullptr) return;
  if (const boost::json::value* p = schema->if_contains("x-kubernetes-preserve-unknown-fields");
      p != nullptr && p->is_bool() && p->get_bool()) {
    return;
  }
  if (v.is_object()) {
    boost::json::object& o = v.get_object();
    const boost::json::value* properties = schema->if_contains("properties");
    const boost::json::value* additional = schema->if_contains("additionalProperties");
    if (properties != nullptr && properties->is_object()) {
      std::vector<std::string> drop;
      for (auto& member : o) {
        std::string child =
            path.empty() ? std::string(member.key()) : path + "." + std::string(member.key());
        const boost::json::value* property = properties->get_object().if_contains(member.key());
        if (property == nullptr) {
          unknown->push_back(child);
          drop.emplace_back(member.key());
          continue;
        }
        if (property->is_object()) {
          OracleWalk(member.value(), &property->get_object(), child, prune, unknown);
        }
      }
      if (prune) {
        for (const std::string& key : drop) o.erase(key);
      }
    } else if (additional != nullptr && additional->is_object()) {
      for (auto& member : o) {
        OracleWalk(member.value(), &additional->get_object(),
                   path + "." + std::string(member.key()), prune, unknown);
      }
    }
    return;
  }
  if (v.is_array()) {
    const boost::json::value* items = schema->if_contains("items");
    if (items == nullptr || !items->is_object()) return;
    boost::json::array& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      OracleWalk(a[i], &items->get_object(), path + "[" + std::to_string(i) + "]", prune, unknown);
    }
  }
}

std::vector<std::string> OracleUnknownFields(std::string_view group, std::string_view version,
                                             std::string_view kind, JsonObject& obj, bool prune) {
  std::vector<std::string> unknown;
  std::optional<std::string> name = openapi::SchemaNameOf(group, version, kind);
  if (!name) return unknown;
  const boost::json::value* schema = openapi::ComponentSchemas().if_contains(*name);
  if (schema == nullptr || !schema->is_object()) return unknown;
  boost::json::value v(std::move(obj));
  OracleWalk(v, &schema->get_object(), "", prune, &unknown);
  obj = std::move(v.get_object());
  return unknown;
}

// Adds an unknown member to the object nodes of `v` (depth first), the `index`-th one only, or
// every one when `index` is negative; returns how many object nodes there are.
int InjectUnknown(boost::json::value& v, int index, int* seen) {
  if (v.is_object()) {
    boost::json::object& o = v.get_object();
    int mine = (*seen)++;
    std::vector<boost::json::value*> children;
    for (auto& member : o) children.push_back(&member.value());
    for (boost::json::value* child : children) InjectUnknown(*child, index, seen);
    if (index < 0 || index == mine) {
      // One first (erasing it moves another member into its place) and one last.
      boost::json::object rebuilt;
      rebuilt["aUnknown" + std::to_string(mine)] = "x";
      for (auto& member : o) rebuilt.emplace(member.key(), std::move(member.value()));
      rebuilt["zzUnknown" + std::to_string(mine)] = boost::json::object{{"deeper", 1}};
      o = std::move(rebuilt);
    }
  } else if (v.is_array()) {
    for (boost::json::value& item : v.get_array()) InjectUnknown(item, index, seen);
  }
  return *seen;
}

void ExpectSameAsOracle(const boost::json::object& original, const std::string& what) {
  std::string api_version(GetString(original, "apiVersion"));
  std::string kind(GetString(original, "kind"));
  size_t slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
  for (bool prune : {true, false}) {
    JsonObject expected_obj = original;
    JsonObject actual_obj = original;
    std::vector<std::string> expected =
        OracleUnknownFields(group, version, kind, expected_obj, prune);
    std::vector<std::string> actual =
        openapi::UnknownFields(group, version, kind, actual_obj, prune);
    EXPECT_EQ(actual, expected) << what << " prune=" << prune;
    EXPECT_EQ(boost::json::serialize(actual_obj), boost::json::serialize(expected_obj))
        << what << " prune=" << prune;
  }
}

TEST(OpenApiTest, UnknownFieldsAgreeWithTheSchemasOnEveryFixtureAndInjection) {
  const std::filesystem::path dir = std::filesystem::path(DRAPLANE_SHARED_DIR) / "fixtures/k8s-api";
  int checked = 0;
  int reported = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    boost::json::value fixture = boost::json::parse(text.str());
    ASSERT_TRUE(fixture.is_object()) << entry.path();
    const std::string name = entry.path().filename().string();
    ExpectSameAsOracle(fixture.get_object(), name);
    int seen = 0;
    boost::json::value all = fixture;
    int objects = InjectUnknown(all, -1, &seen);
    ExpectSameAsOracle(all.get_object(), name + " everywhere");
    for (int i = 0; i < objects; ++i) {
      boost::json::value one = fixture;
      seen = 0;
      InjectUnknown(one, i, &seen);
      ExpectSameAsOracle(one.get_object(), name + " at object " + std::to_string(i));
      JsonObject copy = one.get_object();
      std::string api_version(GetString(copy, "apiVersion"));
      size_t slash = api_version.find('/');
      reported += static_cast<int>(
          openapi::UnknownFields(slash == std::string::npos ? "" : api_version.substr(0, slash),
                                 api_version.substr(slash + 1), GetString(copy, "kind"), copy, true)
              .size());
      ++checked;
    }
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(reported, 100);  // the injections are found, not only agreed upon
}

TEST(OpenApiTest, UnknownFieldPathsAndPruning) {
  JsonObject claim = Json(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
      "metadata":{"name":"c","bogus":1,"labels":{"a":"b"}},
      "spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"x","nope":2}},
                                     {"name":"s","extra":[1]}]}},
      "status":{"reservedFor":[{"resource":"pods","name":"p","uid":"u","what":true}]},
      "top":0})")
                         .get_object();
  std::vector<std::string> unknown =
      openapi::UnknownFields("resource.k8s.io", "v1", "ResourceClaim", claim, true);
  EXPECT_EQ(unknown, (std::vector<std::string>{
                         "metadata.bogus", "spec.devices.requests[0].exactly.nope",
                         "spec.devices.requests[1].extra", "status.reservedFor[0].what", "top"}));
  EXPECT_EQ(boost::json::value(claim),
            Json(R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim",
                "metadata":{"name":"c","labels":{"a":"b"}},
                "spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"x"}},
                                               {"name":"s"}]}},
                "status":{"reservedFor":[{"resource":"pods","name":"p","uid":"u"}]}})"));
  JsonObject unserved = Json(R"({"foo":1})").get_object();
  EXPECT_TRUE(openapi::UnknownFields("example.com", "v1", "Nothing", unserved, true).empty());
  EXPECT_EQ(boost::json::value(unserved), Json(R"({"foo":1})"));
}

}  // namespace
}  // namespace draplane::server::handlers
