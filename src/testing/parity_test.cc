// The in-memory API (client/memory_api.h, the simulator's fast ApiClient) and the real server
// (through TestApi) give the same answers to the same requests: patch results and error codes
// and messages for every JSON patch operation and the merge formats, field selectors with
// escapes, unsupported field labels, and the common errors. Each case runs against both.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "api/quota/usage.h"
#include "client/memory_api.h"
#include "client/typed.h"
#include "common/random.h"
#include "testing/test_api.h"

namespace draplane::testing {
namespace {

using api::corev1::Pod;
using client::PatchType;

struct Answer {
  StatusCode code = StatusCode::kOk;
  std::string message;
  boost::json::value watched;  // the part of the object the case looks at

  bool operator==(const Answer&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Answer& a) {
  return out << StatusCodeName(a.code) << " \"" << a.message << "\" "
             << boost::json::serialize(a.watched);
}

// The labels, annotations, finalizers and owners of a Pod, and its containers' names and images:
// what the patch cases change (the server also defaults fields the in-memory API leaves alone).
boost::json::value Watched(const boost::json::value& pod) {
  const boost::json::object& object = pod.as_object();
  boost::json::object out;
  const boost::json::object& meta = object.at("metadata").as_object();
  for (std::string_view field : {"labels", "annotations", "finalizers", "ownerReferences"}) {
    if (const boost::json::value* v = meta.if_contains(field)) out[field] = *v;
  }
  boost::json::array containers;
  for (const boost::json::value& c : object.at("spec").as_object().at("containers").as_array()) {
    containers.push_back(boost::json::object{{"name", c.as_object().at("name")},
                                             {"image", c.as_object().at("image")}});
  }
  out["containers"] = std::move(containers);
  return out;
}

class ParityTest : public ::testing::Test {
 protected:
  ParityTest()
      : random_(NewSeededRandom(3)), memory_(clock_, *random_), server_({.clock = &clock_}) {
    for (client::ApiClient* api : apis()) {
      api::corev1::Namespace ns;
      ns.metadata.name = "ns";
      EXPECT_TRUE(client::Create(*api, ns).ok());
      EXPECT_TRUE(client::Create(*api, MakePod("p", "n1")).ok());
      EXPECT_TRUE(client::Create(*api, MakePod("q", "n2")).ok());
    }
  }

  static Pod MakePod(const std::string& name, const std::string& node) {
    Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "ns";
    pod.metadata.labels["app"] = "web";
    pod.metadata.annotations["a/b"] = "1";
    pod.metadata.finalizers = {"example.com/one", "example.com/two"};
    pod.spec.node_name = node;
    api::corev1::Container c;
    c.name = "main";
    c.image = "app:1";
    pod.spec.containers.push_back(c);
    api::corev1::Container sidecar;
    sidecar.name = "sidecar";
    sidecar.image = "proxy:1";
    pod.spec.containers.push_back(sidecar);
    return pod;
  }

  std::vector<client::ApiClient*> apis() { return {&memory_, &server_}; }

  // Patches pod p in both APIs and expects the same answer.
  void ExpectSamePatch(PatchType type, std::string_view patch) {
    std::vector<Answer> answers;
    for (client::ApiClient* api : apis()) {
      client::ApiRequest request;
      request.verb = client::Verb::kPatch;
      request.resource = &client::ResourceOf<Pod>();
      request.namespace_ = "ns";
      request.name = "p";
      request.patch_type = type;
      request.body = boost::json::parse(patch);
      StatusOr<boost::json::value> result = api->Do(request);
      Answer a;
      if (result.ok()) {
        a.watched = Watched(*result);
      } else {
        a.code = result.status().code();
        a.message = std::string(result.status().message());
      }
      answers.push_back(std::move(a));
    }
    EXPECT_EQ(answers[0], answers[1]) << "memory vs server, patch " << patch;
  }

  // Lists pods in both APIs with `selector` and expects the same names or the same error.
  void ExpectSameList(std::string_view selector) {
    std::vector<Answer> answers;
    for (client::ApiClient* api : apis()) {
      StatusOr<client::ObjectList<Pod>> list =
          client::List<Pod>(*api, "ns", {.field_selector = std::string(selector)});
      Answer a;
      if (list.ok()) {
        boost::json::array names;
        for (const Pod& p : list->items) names.push_back(boost::json::value(p.metadata.name));
        a.watched = std::move(names);
      } else {
        a.code = list.status().code();
        a.message = std::string(list.status().message());
      }
      answers.push_back(std::move(a));
    }
    EXPECT_EQ(answers[0], answers[1]) << "memory vs server, fieldSelector " << selector;
  }

  ManualClock clock_;
  std::unique_ptr<Random> random_;
  client::MemoryApi memory_;
  TestApi server_;
};

TEST_F(ParityTest, JsonPatchOperationsAndErrors) {
  for (std::string_view patch : {
           R"([{"op":"add","path":"/metadata/labels/tier","value":"front"}])",
           R"([{"op":"add","path":"/metadata/finalizers/-","value":"example.com/three"}])",
           R"([{"op":"add","path":"/metadata/finalizers/1","value":"example.com/middle"}])",
           R"([{"op":"remove","path":"/metadata/finalizers/0"}])",
           R"([{"op":"replace","path":"/metadata/labels/app","value":"api"}])",
           R"([{"op":"move","from":"/metadata/labels/app","path":"/metadata/labels/was"}])",
           R"([{"op":"copy","from":"/metadata/labels/app","path":"/metadata/annotations/app"}])",
           R"([{"op":"add","path":"/metadata/annotations/x~1y","value":"escaped"}])",
           R"([{"op":"test","path":"/metadata/labels/app","value":"web"},
               {"op":"remove","path":"/metadata/labels/app"}])",
           // Errors: a failed test, missing paths and indexes, malformed operations.
           R"([{"op":"test","path":"/metadata/labels/app","value":"db"}])",
           R"([{"op":"remove","path":"/metadata/labels/missing"}])",
           R"([{"op":"replace","path":"/metadata/nothing/here","value":1}])",
           R"([{"op":"add","path":"/metadata/finalizers/9","value":"x"}])",
           R"([{"op":"remove","path":"/metadata/finalizers/01"}])",
           R"([{"op":"move","from":"/metadata/missing","path":"/metadata/labels/x"}])",
           R"([{"op":"copy","path":"/metadata/labels/x"}])",
           R"([{"op":"add","path":"/metadata/labels/x"}])",
           R"([{"op":"frobnicate","path":"/metadata/labels/x"}])",
           R"([{"path":"/metadata/labels/x"}])",
           R"([{"op":"add","path":"metadata","value":1}])",
           R"({"op":"add"})",
       }) {
    ExpectSamePatch(PatchType::kJson, patch);
  }
}

// The JSON patch bounds (api/patch/patch.h JsonPatchLimits): too many operations, and copies that
// grow the object past 3 MiB, are refused alike.
TEST_F(ParityTest, JsonPatchBounds) {
  std::string many = "[";
  for (int i = 0; i < 10'001; ++i) {
    many += std::string(i > 0 ? "," : "") + R"({"op":"test","path":"/kind","value":"Pod"})";
  }
  many += "]";
  ExpectSamePatch(PatchType::kJson, many);
  std::string doubling = R"([{"op":"add","path":"/metadata/annotations","value":{"a":")" +
                         std::string(1024, 'x') + R"("}})";
  for (int i = 0; i < 12; ++i) {
    doubling += R"(,{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/c)" +
                std::to_string(i) + R"("})";
  }
  doubling += "]";
  ExpectSamePatch(PatchType::kJson, doubling);
}

TEST_F(ParityTest, MergeAndStrategicMergePatches) {
  for (std::string_view patch : {
           R"({"metadata":{"labels":{"app":null,"tier":"front"}}})",
           R"({"metadata":{"finalizers":["example.com/only"]}})",
           R"([1,2])",
       }) {
    ExpectSamePatch(PatchType::kMerge, patch);
  }
  for (std::string_view patch : {
           // Finalizers merge as a set; containers merge by name (only their images may change
           // on a Pod: the server validates, the in-memory API does not, so no case adds one).
           R"({"metadata":{"finalizers":["example.com/three"]}})",
           R"({"spec":{"containers":[{"name":"sidecar","image":"proxy:2"}]}})",
           R"({"spec":{"$setElementOrder/containers":[{"name":"main"},{"name":"sidecar"}],
                       "containers":[{"name":"main","image":"app:2"}]}})",
           R"({"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1",
                                               "uid":"u1"}]}})",
           R"({"metadata":{"ownerReferences":[{"uid":"u1","$patch":"delete"}]}})",
           R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/one"]}})",
           R"({"metadata":{"annotations":{"$patch":"replace","only":"this"}}})",
           R"({"metadata":{"$patch":"explode"}})",
           R"("not an object")",
       }) {
    ExpectSamePatch(PatchType::kStrategicMerge, patch);
  }
}

TEST_F(ParityTest, FieldSelectorsWithEscapesAndUnsupportedLabels) {
  for (std::string_view selector : {
           "spec.nodeName=n1",
           "spec.nodeName==n2",
           "spec.nodeName!=n1",
           "metadata.name=p,spec.nodeName=n1",
           "metadata.name=q,spec.nodeName=n1",
           R"(spec.nodeName=n\,1)",
           R"(metadata.name=p\=x)",
           "status.phase=Pending",
           "spec.nodeName",
           "spec.driver=gpu.example.com",
           "metadata.labels.app=web",
       }) {
    ExpectSameList(selector);
  }
}

TEST_F(ParityTest, CommonErrors) {
  std::vector<Answer> answers;
  for (client::ApiClient* api : apis()) {
    Answer a;
    Status missing = client::Get<Pod>(*api, "ns", "nope").status();
    Status taken = client::Create(*api, MakePod("p", "n1")).status();
    a.message = std::string(missing.message()) + " | " + std::string(taken.message());
    a.watched = boost::json::array{StatusCodeName(missing.code()), StatusCodeName(taken.code())};
    answers.push_back(std::move(a));
  }
  EXPECT_EQ(answers[0], answers[1]);
}

// An update never removes a Pod in graceful deletion (upstream's ShouldDeleteDuringUpdate), not
// even the one that takes its last finalizer: its kubelet's delete with grace period 0 does.
TEST_F(ParityTest, AnUpdateKeepsAPodInGracefulDeletion) {
  for (client::ApiClient* api : apis()) {
    SCOPED_TRACE(api == &memory_ ? "memory" : "server");
    ASSERT_TRUE(client::Delete<Pod>(*api, "ns", "q").ok());  // bound: graceful, 30 s
    for (std::string_view patch :
         {R"({"status": {"phase": "Running"}})", R"({"metadata": {"finalizers": null}})"}) {
      StatusOr<Pod> patched =
          client::Patch<Pod>(*api, "ns", "q", PatchType::kMerge, boost::json::parse(patch),
                             patch.find("status") != std::string_view::npos ? "status" : "");
      ASSERT_TRUE(patched.ok()) << patch << ": " << patched.status().ToString();
      EXPECT_EQ(patched->metadata.deletion_grace_period_seconds, 30);
    }
    StatusOr<Pod> kept = client::Get<Pod>(*api, "ns", "q");
    ASSERT_TRUE(kept.ok()) << kept.status().ToString();
    EXPECT_TRUE(kept->metadata.finalizers.empty());
    ASSERT_TRUE(client::Delete<Pod>(*api, "ns", "q", {.grace_period_seconds = 0}).ok());
    EXPECT_EQ(client::Get<Pod>(*api, "ns", "q").status().code(), StatusCode::kNotFound);
  }
}

// pods/binding (upstream's BindingREST): the Binding's uid and resourceVersion are preconditions;
// PodScheduled turns True where the condition stands, the other conditions keep their order; the
// Binding's annotations go onto the Pod; a bound Pod and a Pod being deleted are refused alike.
TEST_F(ParityTest, BindingSetsPodScheduledInPlace) {
  std::vector<Answer> answers;
  for (client::ApiClient* api : apis()) {
    Pod pod = MakePod("unbound", "");
    pod.metadata.finalizers.clear();
    StatusOr<Pod> created = client::Create(*api, pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE(client::Patch<Pod>(*api, "ns", "unbound", PatchType::kMerge,
                                   boost::json::parse(R"({"status": {"conditions": [
                                     {"type": "example.com/Admitted", "status": "True"},
                                     {"type": "PodScheduled", "status": "False",
                                      "reason": "Unschedulable", "message": "0/3 nodes"},
                                     {"type": "example.com/Gated", "status": "False"}]}})"),
                                   "status")
                    .ok());
    Answer a;
    // A Binding for another Pod of the same name (deleted and created again) is refused.
    Status stale =
        client::BindPod(*api, "ns", "unbound", "11111111-2222-4333-8444-555555555555", "n1");
    client::ApiRequest outdated;
    outdated.verb = client::Verb::kCreate;
    outdated.resource = &client::ResourceOf<Pod>();
    outdated.namespace_ = "ns";
    outdated.name = "unbound";
    outdated.subresource = "binding";
    outdated.body = boost::json::parse(R"({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "unbound", "resourceVersion": "1"},
        "target": {"kind": "Node", "name": "n1"}})");
    Status old_version = api->Do(outdated).status();
    // The Binding's annotations go onto the Pod.
    client::ApiRequest annotated = outdated;
    annotated.body = boost::json::parse(R"({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "unbound", "uid": ")" +
                                        created->metadata.uid + R"(",
                     "annotations": {"example.com/placed-by": "parity"}},
        "target": {"kind": "Node", "name": "n1"}})");
    Status bound = api->Do(annotated).status();
    Status again = client::BindPod(*api, "ns", "unbound", created->metadata.uid, "n2");
    ASSERT_TRUE(client::Delete<Pod>(*api, "ns", "q").ok());  // bound: graceful
    StatusOr<Pod> deleting = client::Get<Pod>(*api, "ns", "q");
    ASSERT_TRUE(deleting.ok());
    Status gone = client::BindPod(*api, "ns", "q", deleting->metadata.uid, "n1");
    // The uids differ between the two APIs: the message up to the Pod's own.
    std::string stale_message(stale.message());
    std::string old_message(old_version.message());
    a.message = stale_message.substr(0, stale_message.rfind(": ")) + " | " +
                old_message.substr(0, old_message.rfind(": ")) + " | " +
                std::string(again.message()) + " | " + std::string(gone.message());
    boost::json::array seen{StatusCodeName(stale.code()), StatusCodeName(old_version.code()),
                            StatusCodeName(bound.code()), StatusCodeName(again.code()),
                            StatusCodeName(gone.code())};
    StatusOr<Pod> got = client::Get<Pod>(*api, "ns", "unbound");
    ASSERT_TRUE(got.ok());
    seen.push_back(boost::json::value(got->spec.node_name));
    seen.push_back(boost::json::value(got->metadata.annotations["example.com/placed-by"]));
    for (const api::corev1::PodCondition& c : got->status.conditions) {
      seen.push_back(boost::json::value(c.type + "=" + c.status + " " + c.reason + c.message));
    }
    a.watched = std::move(seen);
    answers.push_back(std::move(a));
  }
  EXPECT_EQ(answers[0], answers[1]);
  EXPECT_EQ(answers[1].watched,
            (boost::json::array{"CONFLICT", "CONFLICT", "OK", "CONFLICT", "CONFLICT", "n1",
                                "parity", "example.com/Admitted=True ", "PodScheduled=True ",
                                "example.com/Gated=False "}))
      << answers[1];
}

// ResourceQuota admission and replenishment (client/memory_quota.h against server/quota/): the
// same creates are refused with the same messages, and the quotas show the same status.used
// after every change. The server's quota controller replenishes after a change, not during it:
// its values are waited for (a guard of 60 s, not a timing assertion).
TEST_F(ParityTest, QuotaAdmissionAndReplenishment) {
  const std::string kDevices = "gpu.deviceclass.resource.k8s.io/devices";
  auto claim = [](const std::string& name, int64_t count) {
    api::resourcev1::ResourceClaim c;
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
  };
  // A Pod of its own (no finalizers, unbound), its containers asking for `cpu` each when set.
  auto pod = [](const std::string& name, const std::string& cpu) {
    Pod p = MakePod(name, "");
    p.metadata.finalizers.clear();
    if (!cpu.empty()) {
      for (auto& c : p.spec.containers)
        c.resources.requests["cpu"] = api::Quantity::Parse(cpu).value();
    }
    return p;
  };
  std::vector<std::vector<std::string>> transcripts;
  for (client::ApiClient* api : apis()) {
    std::vector<std::string>& t = transcripts.emplace_back();
    auto step = [&](const std::string& what, const Status& s) {
      t.push_back(
          what + ": " +
          (s.ok() ? "OK" : std::string(StatusCodeName(s.code())) + " " + std::string(s.message())));
    };
    auto used = [&](const std::string& quota) {
      StatusOr<api::corev1::ResourceQuota> q =
          client::Get<api::corev1::ResourceQuota>(*api, "ns", quota);
      return q.ok() ? api::quota::PrettyPrint(q->status.used) : q.status().ToString();
    };
    auto settle = [&](const std::string& quota, const std::string& expected) {
      for (int i = 0; i < 6000 && used(quota) != expected; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      t.push_back(quota + " used " + used(quota));
    };
    api::corev1::ResourceQuota devices;
    devices.metadata.name = "devices";
    devices.metadata.namespace_ = "ns";
    devices.spec.hard[kDevices] = api::Quantity::FromInt64(2);
    devices.spec.hard["count/resourceclaims.resource.k8s.io"] = api::Quantity::FromInt64(5);
    step("create quota devices", client::Create(*api, devices).status());
    api::corev1::ResourceQuota pods;
    pods.metadata.name = "pods";
    pods.metadata.namespace_ = "ns";
    pods.spec.hard["pods"] = api::Quantity::FromInt64(3);
    pods.spec.hard["count/pods"] = api::Quantity::FromInt64(3);
    pods.spec.hard["requests.cpu"] = api::Quantity::FromInt64(2);
    step("create quota pods", client::Create(*api, pods).status());
    settle("devices", "count/resourceclaims.resource.k8s.io=0," + kDevices + "=0");
    settle("pods", "count/pods=2,pods=2,requests.cpu=0");  // the fixture's p and q

    step("create c1", client::Create(*api, claim("c1", 1)).status());
    step("create c2", client::Create(*api, claim("c2", 2)).status());
    step("create c3", client::Create(*api, claim("c3", 1)).status());
    settle("devices", "count/resourceclaims.resource.k8s.io=2," + kDevices + "=2");
    step("delete c1", client::Delete<api::resourcev1::ResourceClaim>(*api, "ns", "c1"));
    settle("devices", "count/resourceclaims.resource.k8s.io=1," + kDevices + "=1");
    step("create c2 again", client::Create(*api, claim("c2", 2)).status());
    step("create c4", client::Create(*api, claim("c4", 1)).status());
    settle("devices", "count/resourceclaims.resource.k8s.io=2," + kDevices + "=2");

    step("create p1 without cpu", client::Create(*api, pod("p1", "")).status());
    step("create p1", client::Create(*api, pod("p1", "500m")).status());
    settle("pods", "count/pods=3,pods=3,requests.cpu=1");
    step("create p2", client::Create(*api, pod("p2", "500m")).status());
    StatusOr<Pod> p1 = client::Get<Pod>(*api, "ns", "p1");
    ASSERT_TRUE(p1.ok());
    p1->status.phase = "Succeeded";
    step("p1 succeeded", client::UpdateStatus(*api, *p1).status());
    settle("pods", "count/pods=3,pods=2,requests.cpu=0");
    step("create p2 after p1 succeeded", client::Create(*api, pod("p2", "500m")).status());
    step("delete p1", client::Delete<Pod>(*api, "ns", "p1"));
    settle("pods", "count/pods=2,pods=2,requests.cpu=0");
    step("create p2 after p1 is gone", client::Create(*api, pod("p2", "500m")).status());
    settle("pods", "count/pods=3,pods=3,requests.cpu=1");
  }
  EXPECT_EQ(transcripts[0], transcripts[1]) << "memory vs server";
  // What both must say (the comparison alone would pass if both admitted everything).
  const std::vector<std::string>& memory = transcripts[0];
  ASSERT_EQ(memory.size(), 24u);
  EXPECT_EQ(memory[5],
            "create c2: FAILED_PRECONDITION resourceclaims.resource.k8s.io \"c2\" is forbidden: "
            "exceeded quota: devices, requested: " +
                kDevices + "=2, used: " + kDevices + "=1, limited: " + kDevices + "=2");
  EXPECT_EQ(memory[13],
            "create p1 without cpu: FAILED_PRECONDITION pods \"p1\" is forbidden: failed quota: "
            "pods: must specify requests.cpu for: main,sidecar");
  EXPECT_EQ(memory[16],
            "create p2: FAILED_PRECONDITION pods \"p2\" is forbidden: exceeded quota: pods, "
            "requested: count/pods=1,pods=1, used: count/pods=3,pods=3, limited: "
            "count/pods=3,pods=3");
  EXPECT_EQ(memory[19],
            "create p2 after p1 succeeded: FAILED_PRECONDITION pods \"p2\" is forbidden: "
            "exceeded quota: pods, requested: count/pods=1, used: count/pods=3, limited: "
            "count/pods=3");
  EXPECT_EQ(memory[23], "pods used count/pods=3,pods=3,requests.cpu=1");
}

}  // namespace
}  // namespace draplane::testing
