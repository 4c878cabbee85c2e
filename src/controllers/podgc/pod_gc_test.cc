#include "controllers/podgc/pod_gc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "api/pods.h"
#include "client/typed.h"
#include "common/metrics.h"
#include "testing/test_api.h"

namespace draplane::controllers {
namespace {

namespace cv1 = api::corev1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Timestamp kT0 = Timestamp(std::chrono::seconds(1'700'000'000));
constexpr auto kSecond = std::chrono::seconds(1);

class PodGCTest : public ::testing::Test {
 protected:
  void Start(PodGCOptions options = {}) {
    controller_ = std::make_unique<PodGCController>(api_, informers_, clock_, options);
    informers_.Start();
    ASSERT_TRUE(informers_.WaitForSync());
  }
  void TearDown() override {
    informers_.Stop();
    controller_.reset();
  }

  void AddNode(const std::string& name, bool ready = true) {
    cv1::Node node;
    node.metadata.name = name;
    StatusOr<cv1::Node> created = client::Create(api_, node);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    cv1::NodeCondition c;
    c.type = "Ready";
    c.status = ready ? "True" : "False";
    created->status.conditions.push_back(c);
    ASSERT_TRUE(client::UpdateStatus(api_, *created).ok());
  }
  // A Pod bound to `node` ("" none) in `phase`, kept after its deletion by a finalizer when
  // `finalizer`, so that a test can read what was written before the delete.
  void AddPod(const std::string& name, const std::string& node, const std::string& phase,
              bool finalizer = false, const std::string& reason = "") {
    cv1::Pod pod;
    pod.metadata.namespace_ = "default";
    pod.metadata.name = name;
    if (finalizer) pod.metadata.finalizers = {"example.com/keep"};
    pod.spec.node_name = node;
    cv1::Container c;
    c.name = "main";
    c.image = "app:1";
    pod.spec.containers.push_back(c);
    StatusOr<cv1::Pod> created = client::Create(api_, pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    created->status.phase = phase;
    created->status.reason = reason;
    ASSERT_TRUE(client::UpdateStatus(api_, *created).ok());
  }
  std::optional<cv1::Pod> GetPod(const std::string& name) {
    StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "default", name);
    if (!pod.ok()) return std::nullopt;
    return *pod;
  }
  // The Pods that exist, by name, and whether each is being deleted.
  std::map<std::string, bool> Pods() {
    std::map<std::string, bool> out;
    StatusOr<client::ObjectList<cv1::Pod>> pods = client::List<cv1::Pod>(api_, "default");
    EXPECT_TRUE(pods.ok());
    if (!pods.ok()) return out;
    for (const cv1::Pod& p : pods->items) {
      out[p.metadata.name] = p.metadata.deletion_timestamp.has_value();
    }
    return out;
  }
  // Waits until the informers show what the API has, then runs one pass.
  void Pass() {
    StatusOr<client::ObjectList<cv1::Pod>> pods = client::List<cv1::Pod>(api_, "");
    StatusOr<client::ObjectList<cv1::Node>> nodes = client::List<cv1::Node>(api_, "");
    ASSERT_TRUE(pods.ok() && nodes.ok());
    auto synced = [&] {
      if (informers_.Get<cv1::Pod>().List().size() != pods->items.size() ||
          informers_.Get<cv1::Node>().List().size() != nodes->items.size()) {
        return false;
      }
      for (const cv1::Pod& p : pods->items) {
        auto cached = informers_.Get<cv1::Pod>().Get(p.metadata.namespace_, p.metadata.name);
        if (!cached || cached->metadata.resource_version != p.metadata.resource_version) {
          return false;
        }
      }
      for (const cv1::Node& n : nodes->items) {
        auto cached = informers_.Get<cv1::Node>().Get("", n.metadata.name);
        if (!cached || cached->metadata.resource_version != n.metadata.resource_version) {
          return false;
        }
      }
      return true;
    };
    for (int i = 0; i < 60'000 && !synced(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(synced());
    ASSERT_TRUE(controller_->Sync().ok());
  }

  ManualClock clock_{kT0};
  draplane::testing::TestApi api_{{.clock = &clock_}};
  client::SharedInformers informers_{api_};
  std::unique_ptr<PodGCController> controller_;
};

TEST_F(PodGCTest, PodsOfADeletedNodeAreFailedAndForceDeletedAfterTheQuarantine) {
  AddNode("n1");
  AddNode("n2");
  AddPod("on-n1", "n1", "Running", /*finalizer=*/true);
  AddPod("done-on-n1", "n1", "Succeeded");
  AddPod("on-n2", "n2", "Running");
  AddPod("on-ghost", "ghost", "Running");  // bound to a node that never existed
  Start();
  ASSERT_TRUE(client::Delete<cv1::Node>(api_, "", "n1").ok());

  // Both missing nodes enter quarantine; nothing happens within it.
  Pass();
  clock_.Advance(39 * kSecond);
  Pass();
  EXPECT_EQ(Pods(),
            (std::map<std::string, bool>{
                {"done-on-n1", false}, {"on-ghost", false}, {"on-n1", false}, {"on-n2", false}}));

  clock_.Advance(kSecond);
  Pass();
  // The finalizer keeps on-n1 to be read: Failed, DisruptionTarget, deleted with grace 0.
  EXPECT_EQ(Pods(), (std::map<std::string, bool>{{"on-n1", true}, {"on-n2", false}}));
  std::optional<cv1::Pod> orphan = GetPod("on-n1");
  ASSERT_TRUE(orphan.has_value());
  EXPECT_EQ(orphan->status.phase, "Failed");
  EXPECT_TRUE(api::HasPodCondition(*orphan, "DisruptionTarget", "True"));
  for (const cv1::PodCondition& c : orphan->status.conditions) {
    if (c.type != "DisruptionTarget") continue;
    EXPECT_EQ(c.reason, "DeletionByPodGC");
    EXPECT_EQ(c.message, "PodGC: node no longer exists");
  }
  EXPECT_EQ(orphan->metadata.deletion_grace_period_seconds, 0);
  EXPECT_THAT(metrics::RenderText(),
              HasSubstr("pod_gc_collector_force_delete_pods_total{namespace=\"default\","
                        "reason=\"orphaned\"} 3"));
}

TEST_F(PodGCTest, ANodeThatAppearsDuringTheQuarantineKeepsItsPods) {
  AddPod("early", "late-node", "Running");
  Start();
  Pass();
  clock_.Advance(20 * kSecond);
  AddNode("late-node");
  Pass();
  clock_.Advance(40 * kSecond);
  Pass();
  EXPECT_EQ(Pods(), (std::map<std::string, bool>{{"early", false}}));
  EXPECT_EQ(GetPod("early")->status.phase, "Running");
}

TEST_F(PodGCTest, TerminatedPodsOverTheThresholdGoEvictedFirstThenOldest) {
  AddNode("n1");
  AddPod("oldest", "n1", "Succeeded");
  clock_.Advance(kSecond);
  AddPod("older", "n1", "Failed");
  clock_.Advance(kSecond);
  AddPod("newer", "n1", "Succeeded");
  clock_.Advance(kSecond);
  AddPod("evicted", "n1", "Failed", /*finalizer=*/false, "Evicted");
  clock_.Advance(kSecond);
  AddPod("running", "n1", "Running");
  Start({.terminated_pod_threshold = 2});
  Pass();
  EXPECT_EQ(Pods(),
            (std::map<std::string, bool>{{"newer", false}, {"older", false}, {"running", false}}));
  Pass();  // at the threshold: nothing more
  EXPECT_EQ(Pods().size(), 3u);
}

TEST_F(PodGCTest, ZeroThresholdKeepsEveryTerminatedPod) {
  AddNode("n1");
  AddPod("a", "n1", "Succeeded");
  AddPod("b", "n1", "Failed");
  Start({.terminated_pod_threshold = 0});
  Pass();
  EXPECT_EQ(Pods().size(), 2u);
}

TEST_F(PodGCTest, TerminatingPodsOnAnOutOfServiceNodeGoAtOnce) {
  AddNode("down", /*ready=*/false);
  AddNode("slow", /*ready=*/false);
  for (const std::string node : {"down", "slow"}) {
    StatusOr<cv1::Node> n = client::Get<cv1::Node>(api_, "", node);
    ASSERT_TRUE(n.ok());
    cv1::Taint t;
    t.key = node == "down" ? "node.kubernetes.io/out-of-service" : "example.com/other";
    t.effect = "NoExecute";
    n->spec.taints.push_back(t);
    ASSERT_TRUE(client::Update(api_, *n).ok());
  }
  AddPod("on-down", "down", "Running", /*finalizer=*/true);
  AddPod("on-slow", "slow", "Running");
  AddPod("running-on-down", "down", "Running");
  client::DeleteOptions graceful;
  graceful.grace_period_seconds = 300;
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "default", "on-down", graceful).ok());
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "default", "on-slow", graceful).ok());
  Start();
  Pass();
  // on-down was written Failed and deleted with grace 0 (its finalizer keeps it); on-slow waits
  // for its grace period, and a Pod not being deleted stays.
  std::optional<cv1::Pod> down = GetPod("on-down");
  ASSERT_TRUE(down.has_value());
  EXPECT_EQ(down->status.phase, "Failed");
  EXPECT_EQ(down->metadata.deletion_grace_period_seconds, 0);
  EXPECT_FALSE(api::HasPodCondition(*down, "DisruptionTarget", "True"));
  std::optional<cv1::Pod> slow = GetPod("on-slow");
  ASSERT_TRUE(slow.has_value());
  EXPECT_EQ(slow->status.phase, "Running");
  EXPECT_EQ(slow->metadata.deletion_grace_period_seconds, 300);
  EXPECT_EQ(GetPod("running-on-down")->status.phase, "Running");
}

TEST_F(PodGCTest, AnUnscheduledPodKeptByAFinalizerEndsFailed) {
  AddPod("unscheduled", "", "Pending", /*finalizer=*/true);
  AddPod("waiting", "", "Pending");
  ASSERT_TRUE(client::Delete<cv1::Pod>(api_, "default", "unscheduled").ok());
  Start();
  Pass();
  EXPECT_EQ(GetPod("unscheduled")->status.phase, "Failed");
  EXPECT_EQ(GetPod("waiting")->status.phase, "Pending");
}

}  // namespace
}  // namespace draplane::controllers
