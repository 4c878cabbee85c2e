#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "api/object.h"
#include "controllers/controller_manager.h"
#include "testing/cluster.h"

namespace draplane::controllers {
namespace {

using draplane::testing::Cluster;
namespace rv1 = api::resourcev1;
using api::corev1::Pod;

TEST(ResourceClaimControllerTest, GenerateNameCutsBothPartsProportionally) {
  EXPECT_EQ(ResourceClaimController::GenerateName("pod", "gpu"), "pod-gpu-");
  std::string pod(50, 'p');
  std::string claim(20, 'c');
  std::string name = ResourceClaimController::GenerateName(pod, claim);
  // 72 characters become 50*57/72 = 39 and 20*57/72 = 15, joined by a hyphen.
  EXPECT_EQ(name, std::string(39, 'p') + "-" + std::string(15, 'c'));
}

class ControllersTest : public ::testing::Test {
 protected:
  void Start(ControllerManagerOptions options = {}) {
    manager_ = std::make_unique<ControllerManager>(cluster_.api(), RealClock(), options);
    ASSERT_TRUE(manager_->Start().ok());
  }
  void TearDown() override {
    if (manager_) manager_->Stop();
  }
  // A claim of class "gpu" controlled by `pod`, as the controller generates from a template.
  rv1::ResourceClaim GeneratedFor(const std::string& name, const Pod& pod) {
    rv1::ResourceClaim claim = cluster_.ClaimSpec(name, "gpu");
    claim.metadata.owner_references.push_back(api::NewControllerRef(pod));
    return claim;
  }
  // Allocates and reserves a claim for a pod as the scheduler would.
  // Allocates `devices` of node-a's pool to the claim and reserves it for `pod`, in one status
  // write (the server keeps an allocation immutable once written).
  void AllocateFor(const std::string& claim_name, const Pod& pod,
                   const std::vector<std::string>& devices = {"gpu-0"}) {
    StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim(claim_name);
    ASSERT_TRUE(claim.ok());
    claim->metadata.finalizers.push_back("resource.kubernetes.io/delete-protection");
    StatusOr<rv1::ResourceClaim> updated = client::Update(cluster_.api(), *claim);
    ASSERT_TRUE(updated.ok());
    updated->status.allocation.emplace();
    for (const std::string& device : devices) {
      rv1::DeviceRequestAllocationResult r;
      r.request = "req";
      r.driver = "gpu.example.com";
      r.pool = "node-a";
      r.device = device;
      updated->status.allocation->devices.results.push_back(r);
    }
    rv1::ResourceClaimConsumerReference ref;
    ref.resource = "pods";
    ref.name = pod.metadata.name;
    ref.uid = pod.metadata.uid;
    updated->status.reserved_for.push_back(ref);
    ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *updated).ok());
  }

  Cluster cluster_;
  std::unique_ptr<ControllerManager> manager_;
};

TEST_F(ControllersTest, ClaimsAreCreatedFromTemplatesAndRecordedInThePodStatus) {
  rv1::ResourceClaimSpec spec = cluster_.ClaimSpec("x", "gpu").spec;
  rv1::ResourceClaimTemplate t;
  t.metadata.name = "gpu";
  t.metadata.namespace_ = "default";
  t.spec.metadata.labels["tier"] = "inference";
  t.spec.spec = spec;
  ASSERT_TRUE(client::Create(cluster_.api(), t).ok());
  cluster_.Pod(cluster_.PodSpec("llm", {"tmpl:gpu"}));
  Start();
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<Pod> p = cluster_.GetPod("llm");
    return p.ok() && p->status.resource_claim_statuses.size() == 1;
  }));
  StatusOr<Pod> pod = cluster_.GetPod("llm");
  const auto& status = pod->status.resource_claim_statuses[0];
  EXPECT_EQ(status.name, "gpu");
  ASSERT_TRUE(status.resource_claim_name.has_value());
  EXPECT_EQ(status.resource_claim_name->rfind("llm-gpu-", 0), 0u);
  StatusOr<rv1::ResourceClaim> claim = cluster_.GetClaim(*status.resource_claim_name);
  ASSERT_TRUE(claim.ok());
  EXPECT_EQ(claim->metadata.annotations.at("resource.kubernetes.io/pod-claim-name"), "gpu");
  EXPECT_EQ(claim->metadata.labels.at("tier"), "inference");
  ASSERT_EQ(claim->metadata.owner_references.size(), 1u);
  EXPECT_EQ(claim->metadata.owner_references[0].uid, pod->metadata.uid);
  EXPECT_TRUE(claim->metadata.owner_references[0].controller.value_or(false));
  EXPECT_TRUE(claim->metadata.owner_references[0].block_owner_deletion.value_or(false));
  EXPECT_EQ(claim->spec, spec);
}

TEST_F(ControllersTest, AFinishedPodReleasesDeallocatesAndDeletesItsGeneratedClaim) {
  Pod spec = cluster_.PodSpec("job");
  spec.spec.node_name = "node-a";
  cluster_.Pod(spec);
  StatusOr<Pod> pod = cluster_.GetPod("job");
  ASSERT_TRUE(pod.ok());
  cluster_.Claim(GeneratedFor("job-gpu-x1y2z", *pod));
  AllocateFor("job-gpu-x1y2z", *pod);
  // Another claim, shared, keeps its allocation while another pod still uses it.
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  Pod other_spec = cluster_.PodSpec("other", {"shared"});
  other_spec.spec.node_name = "node-a";
  cluster_.Pod(other_spec);
  StatusOr<Pod> other = cluster_.GetPod("other");
  AllocateFor("shared", *other);
  Start();
  ASSERT_TRUE(client::Patch<Pod>(
                  cluster_.api(), "default", "job", client::PatchType::kMerge,
                  boost::json::object{{"status", boost::json::object{{"phase", "Succeeded"}}}},
                  "status")
                  .ok());
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return cluster_.GetClaim("job-gpu-x1y2z").status().code() == StatusCode::kNotFound; }));
  StatusOr<rv1::ResourceClaim> shared = cluster_.GetClaim("shared");
  ASSERT_TRUE(shared.ok());
  EXPECT_TRUE(shared->status.allocation.has_value());
  EXPECT_EQ(shared->status.reserved_for.size(), 1u);
}

TEST_F(ControllersTest, ADeletedPodReleasesASharedClaimWhichIsThenDeallocated) {
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  Pod spec = cluster_.PodSpec("user", {"shared"});
  spec.spec.node_name = "node-a";
  cluster_.Pod(spec);
  StatusOr<Pod> pod = cluster_.GetPod("user");
  AllocateFor("shared", *pod);
  Start();
  ASSERT_TRUE(
      client::Delete<Pod>(cluster_.api(), "default", "user", {.grace_period_seconds = 0}).ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("shared");
    return c.ok() && !c->status.allocation.has_value() && c->metadata.finalizers.empty();
  }));
  StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("shared");
  EXPECT_TRUE(c->status.reserved_for.empty());
}

// The event filter: only events that leave work for a sync queue one (most events are the
// controller's own writes, the scheduler's reservation and the binding).
TEST_F(ControllersTest, OnlyEventsThatLeaveWorkQueueASync) {
  cluster_.Node("node-a");
  rv1::ResourceClaimTemplate t;
  t.metadata.name = "gpu";
  t.metadata.namespace_ = "default";
  t.spec.spec = cluster_.ClaimSpec("x", "gpu").spec;
  ASSERT_TRUE(client::Create(cluster_.api(), t).ok());
  Pod fresh_spec = cluster_.PodSpec("fresh", {"tmpl:gpu"});
  cluster_.Pod(fresh_spec);
  // A pod whose generated claim is recorded, allocated and reserved for it: the scheduler's work.
  cluster_.Pod(cluster_.PodSpec("running", {"tmpl:gpu"}));
  StatusOr<Pod> running = cluster_.GetPod("running");
  ASSERT_TRUE(running.ok());
  cluster_.Claim(GeneratedFor("running-gpu-abcde", *running));
  AllocateFor("running-gpu-abcde", *running);
  ASSERT_TRUE(
      client::Patch<Pod>(
          cluster_.api(), "default", "running", client::PatchType::kMerge,
          boost::json::object{
              {"status", boost::json::object{{"resourceClaimStatuses",
                                              boost::json::array{boost::json::object{
                                                  {"name", "gpu"},
                                                  {"resourceClaimName", "running-gpu-abcde"}}}}}}},
          "status")
          .ok());
  // A shared claim allocated for "running" and used by a pod placed on the node by hand.
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  AllocateFor("shared", *running);
  Pod placed_spec = cluster_.PodSpec("placed", {"shared"});
  placed_spec.spec.node_name = "node-a";
  cluster_.Pod(placed_spec);
  // A claim reserved for a pod nobody has seen, and an unused claim with the finalizer.
  rv1::ResourceClaim ghost = cluster_.ClaimSpec("ghost", "gpu");
  cluster_.Claim(ghost);
  Pod ghost_pod;
  ghost_pod.metadata.name = "not-created";
  ghost_pod.metadata.uid = "ghost-uid";
  AllocateFor("ghost", ghost_pod);

  client::SharedInformers informers(cluster_.api());
  ResourceClaimController controller(cluster_.api(), informers, RealClock());
  informers.Start();
  ASSERT_TRUE(informers.WaitForSync());
  auto pod = [&](const std::string& name) { return *cluster_.GetPod(name); };
  auto claim = [&](const std::string& name) { return *cluster_.GetClaim(name); };

  EXPECT_TRUE(controller.PodNeedsWork(pod("fresh"))) << "its claim must be created";
  EXPECT_FALSE(controller.PodNeedsWork(pod("running")));
  EXPECT_TRUE(controller.PodNeedsWork(pod("placed"))) << "its allocated claim is not reserved";
  Pod finished = pod("running");
  finished.status.phase = "Succeeded";
  EXPECT_FALSE(controller.PodNeedsWork(finished)) << "its claims are looked at instead";

  EXPECT_FALSE(controller.ClaimNeedsWork(claim("running-gpu-abcde")));
  EXPECT_FALSE(controller.ClaimNeedsWork(claim("shared")));
  EXPECT_TRUE(controller.ClaimNeedsWork(claim("ghost"))) << "only the API knows that pod";
  rv1::ResourceClaim released = claim("running-gpu-abcde");
  released.status.reserved_for.clear();
  EXPECT_TRUE(controller.ClaimNeedsWork(released)) << "allocated and finalized but unused";
  released.status.allocation.reset();
  released.metadata.finalizers.clear();
  EXPECT_FALSE(controller.ClaimNeedsWork(released)) << "its owner may still run";
  released.metadata.owner_references[0].uid = "another-pod";
  EXPECT_TRUE(controller.ClaimNeedsWork(released)) << "generated for a pod that will not run";
  rv1::ResourceClaim stale = claim("shared");
  stale.status.reserved_for[0].uid = "old-uid";
  EXPECT_TRUE(controller.ClaimNeedsWork(stale)) << "reserved for an earlier pod of that name";
  informers.Stop();
}

// A pod placed on a node without the scheduler waits for its shared claim's allocation; the
// claim's update (not an update of the pod) is what lets the controller reserve it.
TEST_F(ControllersTest, APlacedPodIsReservedWhenItsSharedClaimGetsAllocated) {
  cluster_.Node("node-a");
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  Pod placed_spec = cluster_.PodSpec("placed", {"shared"});
  placed_spec.spec.node_name = "node-a";
  cluster_.Pod(placed_spec);
  cluster_.Pod(cluster_.PodSpec("scheduled", {"shared"}));
  Start();
  StatusOr<Pod> scheduled = cluster_.GetPod("scheduled");
  ASSERT_TRUE(scheduled.ok());
  AllocateFor("shared", *scheduled);
  StatusOr<Pod> placed = cluster_.GetPod("placed");
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("shared");
    return c.ok() && c->status.reserved_for.size() == 2;
  }));
  StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("shared");
  EXPECT_EQ(c->status.reserved_for[1].uid, placed->metadata.uid);
}

// A placed Pod is reserved only for its own claims: a template entry's status naming a claim the
// Pod does not control (another Pod's, here "shared") never makes the Pod its user (upstream
// syncPod's IsForPod), while its directly named claim is reserved in the same pass.
TEST_F(ControllersTest, APlacedPodIsNotReservedForAClaimItsTemplateEntryDidNotGenerate) {
  cluster_.Node("node-a");
  cluster_.Claim(cluster_.ClaimSpec("shared", "gpu"));
  cluster_.Claim(cluster_.ClaimSpec("own", "gpu"));
  cluster_.Pod(cluster_.PodSpec("owner", {"shared", "own"}));
  Pod placed_spec = cluster_.PodSpec("placed", {"own"});
  api::corev1::PodResourceClaim from_template;
  from_template.name = "gpu";
  from_template.resource_claim_template_name = "gpu-template";
  placed_spec.spec.resource_claims.insert(placed_spec.spec.resource_claims.begin(), from_template);
  placed_spec.spec.node_name = "node-a";
  cluster_.Pod(placed_spec);
  StatusOr<Pod> placed = cluster_.GetPod("placed");
  ASSERT_TRUE(placed.ok());
  api::corev1::PodResourceClaimStatus forged;
  forged.name = "gpu";
  forged.resource_claim_name = "shared";
  placed->status.resource_claim_statuses.push_back(forged);
  ASSERT_TRUE(client::UpdateStatus(cluster_.api(), *placed).ok());
  StatusOr<Pod> owner = cluster_.GetPod("owner");
  ASSERT_TRUE(owner.ok());
  AllocateFor("shared", *owner, {"gpu-0"});
  AllocateFor("own", *owner, {"gpu-1"});
  Start();
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<rv1::ResourceClaim> c = cluster_.GetClaim("own");
    return c.ok() && c->status.reserved_for.size() == 2;
  }));
  StatusOr<rv1::ResourceClaim> shared = cluster_.GetClaim("shared");
  ASSERT_TRUE(shared.ok());
  ASSERT_EQ(shared->status.reserved_for.size(), 1u);
  EXPECT_EQ(shared->status.reserved_for[0].uid, owner->metadata.uid);
}

// A claim the API refuses (a ResourceQuota in the default mode: its admission charges a claim's
// devices at create) is retried, and the Pod shows why, as upstream records it; once the quota
// has room again the claim is made.
TEST_F(ControllersTest, AClaimTheQuotaRefusesIsRetriedAndRecordedOnThePod) {
  rv1::ResourceClaimTemplate t;
  t.metadata.name = "gpu";
  t.metadata.namespace_ = "default";
  t.spec.spec = cluster_.ClaimSpec("x", "gpu").spec;
  ASSERT_TRUE(client::Create(cluster_.api(), t).ok());
  api::corev1::ResourceQuota quota;
  quota.metadata.name = "devices";
  quota.metadata.namespace_ = "default";
  quota.spec.hard["gpu.deviceclass.resource.k8s.io/devices"] = api::Quantity::FromInt64(1);
  ASSERT_TRUE(client::Create(cluster_.api(), quota).ok());
  cluster_.Pod(cluster_.PodSpec("first", {"tmpl:gpu"}));
  cluster_.Pod(cluster_.PodSpec("second", {"tmpl:gpu"}));
  Start();
  auto claim_of = [&](const std::string& pod) -> std::string {
    StatusOr<Pod> p = cluster_.GetPod(pod);
    if (!p.ok() || p->status.resource_claim_statuses.empty()) return "";
    return p->status.resource_claim_statuses[0].resource_claim_name.value_or("");
  };
  // Whichever Pod is synced first gets the quota's one device.
  std::string refused_pod;
  std::string message;
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    for (const api::corev1::Event& e : cluster_.Events()) {
      if (e.reason != "FailedResourceClaimCreation") continue;
      refused_pod = e.involved_object.name;
      message = e.message;
      EXPECT_EQ(e.type, "Warning");
      EXPECT_EQ(e.source.component, "resource_claim");
      return true;
    }
    return false;
  }));
  std::string admitted_pod = refused_pod == "first" ? "second" : "first";
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !claim_of(admitted_pod).empty(); }));
  EXPECT_EQ(claim_of(refused_pod), "");
  EXPECT_TRUE(
      message.starts_with("PodResourceClaim gpu: create ResourceClaim gpu: "
                          "resourceclaims.resource.k8s.io \"" +
                          refused_pod + "-gpu-"))
      << message;
  EXPECT_NE(message.find("is forbidden: exceeded quota: devices, requested: "
                         "gpu.deviceclass.resource.k8s.io/devices=1, used: "
                         "gpu.deviceclass.resource.k8s.io/devices=1, limited: "
                         "gpu.deviceclass.resource.k8s.io/devices=1"),
            std::string::npos)
      << message;
  // The admitted Pod's claim goes away: the quota's controller gives the device back, and the
  // retry makes the refused Pod's claim.
  ASSERT_TRUE(
      client::Delete<rv1::ResourceClaim>(cluster_.api(), "default", claim_of(admitted_pod)).ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] { return !claim_of(refused_pod).empty(); }));
}

TEST_F(ControllersTest, OrphanedObjectsAreCollected) {
  rv1::ResourceClaim claim = cluster_.ClaimSpec("orphan", "gpu");
  api::metav1::OwnerReference owner;
  owner.api_version = "v1";
  owner.kind = "Pod";
  owner.name = "gone";
  owner.uid = "no-such-uid";
  claim.metadata.owner_references.push_back(owner);
  cluster_.Claim(claim);
  rv1::ResourceClaim foreign = cluster_.ClaimSpec("foreign", "gpu");
  api::metav1::OwnerReference job;
  job.api_version = "batch/v1";
  job.kind = "Job";
  job.name = "j";
  job.uid = "job-uid";
  foreign.metadata.owner_references.push_back(job);
  cluster_.Claim(foreign);
  Start();
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return cluster_.GetClaim("orphan").status().code() == StatusCode::kNotFound; }));
  EXPECT_TRUE(cluster_.GetClaim("foreign").ok()) << "owners of unknown kinds are not judged";
}

TEST_F(ControllersTest, DeletingANamespaceDeletesItsContentThenTheNamespace) {
  cluster_.Namespace("team");
  cluster_.ns = "team";
  cluster_.Claim(cluster_.ClaimSpec("c", "gpu"));
  cluster_.Pod(cluster_.PodSpec("p"));
  Start();
  ASSERT_TRUE(client::Delete<api::corev1::Namespace>(cluster_.api(), "", "team").ok());
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    return client::Get<api::corev1::Namespace>(cluster_.api(), "", "team").status().code() ==
           StatusCode::kNotFound;
  }));
  EXPECT_TRUE(cluster_.Pods().empty());
  EXPECT_TRUE(cluster_.Claims().empty());
}

TEST_F(ControllersTest, TheKubeletSimulatorRunsBoundPodsAndFinishesDeletions) {
  cluster_.Node("node-a");
  Pod spec = cluster_.PodSpec("web");
  spec.spec.node_name = "node-a";
  cluster_.Pod(spec);
  cluster_.Pod(cluster_.PodSpec("unbound"));
  Start({.simulate_kubelet = true});
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<Pod> p = cluster_.GetPod("web");
    return p.ok() && p->status.phase == "Running";
  }));
  StatusOr<Pod> web = cluster_.GetPod("web");
  bool ready = false;
  for (const auto& c : web->status.conditions)
    ready = ready || (c.type == "Ready" && c.status == "True");
  EXPECT_TRUE(ready);
  EXPECT_FALSE(web->status.pod_ip.empty());
  EXPECT_EQ(cluster_.GetPod("unbound")->status.phase, "Pending");
  ASSERT_TRUE(client::Delete<Pod>(cluster_.api(), "default", "web").ok());
  // A Pod placed by hand whose claim nobody allocated does not start (the kubelet refuses a
  // claim that is not reserved for the Pod); it does once the claim is allocated for it.
  cluster_.Claim(cluster_.ClaimSpec("by-hand", "gpu"));
  Pod placed = cluster_.PodSpec("placed", {"by-hand"});
  placed.spec.node_name = "node-a";
  cluster_.Pod(placed);
  ASSERT_TRUE(cluster_.WaitUntil(
      [&] { return cluster_.GetPod("web").status().code() == StatusCode::kNotFound; }));
  EXPECT_EQ(cluster_.GetPod("placed")->status.phase, "Pending");
  AllocateFor("by-hand", *cluster_.GetPod("placed"));
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<Pod> p = cluster_.GetPod("placed");
    return p.ok() && p->status.phase == "Running";
  }));
}

// Upstream's kubelet fails a Pod active longer than spec.activeDeadlineSeconds (its claims are
// then released as a finished Pod's).
TEST_F(ControllersTest, TheKubeletSimulatorFailsAPodPastItsActiveDeadline) {
  cluster_.Node("node-a");
  Pod spec = cluster_.PodSpec("batch");
  spec.spec.node_name = "node-a";
  spec.spec.active_deadline_seconds = 1;
  cluster_.Pod(spec);
  Start({.simulate_kubelet = true});
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<Pod> p = cluster_.GetPod("batch");
    return p.ok() && p->status.phase == "Failed";
  }));
  StatusOr<Pod> batch = cluster_.GetPod("batch");
  EXPECT_EQ(batch->status.reason, "DeadlineExceeded");
  ASSERT_TRUE(batch->status.start_time.has_value());
}

TEST_F(ControllersTest, TheKubeletSimulatorReportsTheHealthOfEachContainersDevices) {
  cluster_.Node("node-a");
  cluster_.Slice("node-a", "gpu.example.com",
                 {{"gpu-0", {{"model", "A100"}}, "", 0}, {"gpu-1", {{"model", "A100"}}, "", 0}});
  StatusOr<rv1::ResourceSlice> slice =
      client::Get<rv1::ResourceSlice>(cluster_.api(), "", "node-a-gpu.example.com");
  ASSERT_TRUE(slice.ok());
  slice->spec.devices[1].taints.emplace_back();
  slice->spec.devices[1].taints.back().key = "gpu.example.com/unhealthy";
  slice->spec.devices[1].taints.back().effect = "NoExecute";
  ASSERT_TRUE(client::Update(cluster_.api(), *slice).ok());
  cluster_.Claim(cluster_.ClaimSpec("c", "gpu", 3));
  Pod spec = cluster_.PodSpec("train", {"c"});
  cluster_.Pod(spec);
  StatusOr<Pod> pod = cluster_.GetPod("train");
  ASSERT_TRUE(pod.ok());
  AllocateFor("c", *pod, {"gpu-0", "gpu-1", "gpu-9"});
  ASSERT_TRUE(
      client::BindPod(cluster_.api(), "default", "train", pod->metadata.uid, "node-a").ok());
  // Device-taint eviction off: it would evict the Pod for gpu-1's NoExecute taint (as upstream),
  // and this test looks at the health the kubelet simulator reports while the Pod runs.
  Start({.simulate_kubelet = true, .device_taint_eviction = false});
  ASSERT_TRUE(cluster_.WaitUntil([&] {
    StatusOr<Pod> p = cluster_.GetPod("train");
    return p.ok() && p->status.phase == "Running";
  }));
  boost::json::value json = client::ToJson(*cluster_.GetPod("train"));
  EXPECT_EQ(boost::json::serialize(
                json.at("status").at("containerStatuses").at(0).at("allocatedResourcesStatus")),
            R"([{"name":"claim:c","resources":[)"
            R"({"resourceID":"gpu.example.com/node-a/gpu-0","health":"Healthy"},)"
            R"({"resourceID":"gpu.example.com/node-a/gpu-1","health":"Unhealthy"},)"
            R"({"resourceID":"gpu.example.com/node-a/gpu-9","health":"Unknown"}]}])");
}

}  // namespace
}  // namespace draplane::controllers
