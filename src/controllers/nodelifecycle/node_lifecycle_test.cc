#include "controllers/nodelifecycle/node_lifecycle.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "api/gen/coordination_v1_types.h"
#include "api/labels/taints.h"
#include "api/pods.h"
#include "client/typed.h"
#include "common/mutex.h"
#include "controllers/tainteviction/controller.h"
#include "testing/test_api.h"

namespace draplane::controllers {
namespace {

namespace cv1 = api::corev1;
namespace co = api::coordinationv1;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

const Timestamp kT0 = Timestamp(std::chrono::seconds(1'700'000'000));
constexpr auto kSecond = std::chrono::seconds(1);

cv1::Toleration Tolerate(std::string key, std::optional<int64_t> seconds) {
  cv1::Toleration t;
  t.key = std::move(key);
  t.operator_ = "Exists";
  t.effect = "NoExecute";
  t.toleration_seconds = seconds;
  return t;
}

cv1::Taint NodeTaint(std::string key, std::string effect, Timestamp added) {
  cv1::Taint t;
  t.key = std::move(key);
  t.effect = std::move(effect);
  t.time_added = api::Time::FromTimestamp(added);
  return t;
}

TEST(NoExecuteEvictionTimeTest, UntoleratedAtOnceTolerationSecondsLaterForeverNever) {
  cv1::Pod pod;
  const std::vector<cv1::Taint> taints = {
      NodeTaint("node.kubernetes.io/unreachable", "NoExecute", kT0),
      NodeTaint("node.kubernetes.io/unreachable", "NoSchedule", kT0)};
  auto unseen = [](const cv1::Taint&) -> Timestamp { return Timestamp(); };
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), kT0);
  pod.spec.tolerations = {Tolerate("node.kubernetes.io/unreachable", 300)};
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), kT0 + 300 * kSecond);
  // Upstream's minimum over the tolerations used, one without seconds included.
  pod.spec.tolerations.push_back(Tolerate("", std::nullopt));
  pod.spec.tolerations.push_back(Tolerate("node.kubernetes.io/unreachable", -5));
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), kT0);
  pod.spec.tolerations = {Tolerate("", std::nullopt)};
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), std::nullopt);
  // Seconds beyond any Timestamp never end (they overflowed the addition and crashed the
  // server, which evaluates every Pod on a tainted node).
  for (int64_t huge : {int64_t{10'000'000'000}, std::numeric_limits<int64_t>::max()}) {
    pod.spec.tolerations = {Tolerate("node.kubernetes.io/unreachable", huge)};
    EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), std::nullopt) << huge;
  }
  // A Pod that arrived on the node after the taint gets its whole toleration from then.
  pod.spec.tolerations = {Tolerate("node.kubernetes.io/unreachable", 300)};
  api::SetPodCondition(&pod.status, "PodScheduled", "True", "", "",
                       api::Time::FromTimestamp(kT0 + 100 * kSecond));
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(pod, taints, unseen), kT0 + 400 * kSecond);
  pod.status.conditions.clear();
  // A taint without timeAdded counts from when it was first seen.
  pod.spec.tolerations = {Tolerate("node.kubernetes.io/unreachable", 60)};
  std::vector<cv1::Taint> undated = taints;
  undated[0].time_added.reset();
  EXPECT_EQ(api::labels::NoExecuteEvictionTime(
                pod, undated, [](const cv1::Taint&) { return kT0 + 10 * kSecond; }),
            kT0 + 70 * kSecond);
}

TEST(NodeZoneTest, RegionAndZoneLabels) {
  cv1::Node node;
  EXPECT_EQ(NodeZone(node), "");
  node.metadata.labels["topology.kubernetes.io/zone"] = "a";
  EXPECT_EQ(NodeZone(node), ":a");
  node.metadata.labels["failure-domain.beta.kubernetes.io/region"] = "eu";
  EXPECT_EQ(NodeZone(node), "eu:a");
}

class NodeLifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto changed = [this] {
      MutexLock lock(mu_);
      ++changes_;
      cv_.NotifyAll();
    };
    informers_.Get<cv1::Node>().AddHandlers(
        {.on_add = [changed](const auto&) { changed(); },
         .on_update = [changed](const auto&, const auto&) { changed(); },
         .on_delete = [changed](const auto&) { changed(); }});
    informers_.Get<cv1::Pod>().AddHandlers(
        {.on_add = [changed](const auto&) { changed(); },
         .on_update = [changed](const auto&, const auto&) { changed(); },
         .on_delete = [changed](const auto&) { changed(); }});
    informers_.Get<co::Lease>().AddHandlers(
        {.on_add = [changed](const auto&) { changed(); },
         .on_update = [changed](const auto&, const auto&) { changed(); },
         .on_delete = [changed](const auto&) { changed(); }});
  }
  void Start() {
    controller_ = std::make_unique<NodeLifecycleController>(api_, informers_, clock_);
    eviction_ = std::make_unique<TaintEvictionController>(api_, informers_, clock_);
    informers_.Start();
    ASSERT_TRUE(informers_.WaitForSync());
  }
  void TearDown() override {
    informers_.Stop();
    eviction_.reset();
    controller_.reset();
  }
  bool WaitForCache(const std::function<bool()>& done) {
    MutexLock lock(mu_);
    return cv_.WaitFor(lock, std::chrono::seconds(60), done);
  }
  // A node as an agent registers it: Ready now, with a Lease renewed now.
  void AddNode(const std::string& name, const std::string& zone = "", bool lease = true) {
    cv1::Node node;
    node.metadata.name = name;
    if (!zone.empty()) node.metadata.labels["topology.kubernetes.io/zone"] = zone;
    StatusOr<cv1::Node> created = client::Create(api_, node);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    Heartbeat(name, /*status=*/true, lease);
  }
  // What an agent's heartbeat writes: the Ready condition, and the Lease.
  void Heartbeat(const std::string& name, bool status = false, bool lease = true) {
    const api::Time now = api::Time::MicroFromTimestamp(clock_.Now());
    if (status) {
      StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", name);
      ASSERT_TRUE(node.ok());
      std::erase_if(node->status.conditions,
                    [](const cv1::NodeCondition& c) { return c.type == "Ready"; });
      cv1::NodeCondition ready;
      ready.type = "Ready";
      ready.status = "True";
      ready.reason = "KubeletReady";
      ready.last_heartbeat_time = api::Time::FromTimestamp(clock_.Now());
      ready.last_transition_time = ready.last_heartbeat_time;
      node->status.conditions.push_back(ready);
      ASSERT_TRUE(client::UpdateStatus(api_, *node).ok());
    }
    if (!lease) return;
    StatusOr<co::Lease> got = client::Get<co::Lease>(api_, "kube-node-lease", name);
    if (got.ok()) {
      got->spec.renew_time = now;
      ASSERT_TRUE(client::Update(api_, *got).ok());
      ASSERT_TRUE(WaitForCache([&] {
        auto l = informers_.Get<co::Lease>().Get("kube-node-lease", name);
        return l != nullptr && l->spec.renew_time == now;
      }));
      return;
    }
    co::Lease l;
    l.metadata.name = name;
    l.metadata.namespace_ = "kube-node-lease";
    l.spec.holder_identity = name;
    l.spec.renew_time = now;
    ASSERT_TRUE(client::Create(api_, l).ok());
  }
  void AddPod(const std::string& name, const std::string& node) {
    cv1::Pod pod;
    pod.metadata.namespace_ = "default";
    pod.metadata.name = name;
    pod.spec.node_name = node;
    cv1::Container c;
    c.name = "main";
    c.image = "app:1";
    pod.spec.containers.push_back(c);
    StatusOr<cv1::Pod> created = client::Create(api_, pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    api::SetPodCondition(&created->status, "Ready", "True", "", "",
                         api::Time::FromTimestamp(clock_.Now()));
    created->status.phase = "Running";
    ASSERT_TRUE(client::UpdateStatus(api_, *created).ok());
  }
  cv1::Node GetNode(const std::string& name) {
    StatusOr<cv1::Node> node = client::Get<cv1::Node>(api_, "", name);
    EXPECT_TRUE(node.ok());
    return node.ok() ? *node : cv1::Node();
  }
  std::string Ready(const std::string& name) {
    for (const cv1::NodeCondition& c : GetNode(name).status.conditions) {
      if (c.type == "Ready") return c.status;
    }
    return "";
  }
  // "key:effect" of each taint.
  std::vector<std::string> Taints(const std::string& name) {
    std::vector<std::string> out;
    for (const cv1::Taint& t : GetNode(name).spec.taints) {
      out.push_back(t.key + ":" + t.effect);
      if (t.key.starts_with("node.kubernetes.io/")) {
        EXPECT_TRUE(t.time_added.has_value()) << t.key;
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Waits until the caches show what the API has for every node, then runs one health pass.
  void Monitor() {
    StatusOr<client::ObjectList<cv1::Node>> nodes = client::List<cv1::Node>(api_, "");
    ASSERT_TRUE(nodes.ok());
    ASSERT_TRUE(WaitForCache([&] {
      for (const cv1::Node& n : nodes->items) {
        auto cached = informers_.Get<cv1::Node>().Get("", n.metadata.name);
        if (cached == nullptr || cached->metadata.resource_version != n.metadata.resource_version) {
          return false;
        }
      }
      return true;
    }));
    ASSERT_TRUE(controller_->Sync("monitor").ok());
  }
  // The NoSchedule pass of `node` once the cache shows its current version.
  void SyncNode(const std::string& name) {
    const std::string rv = GetNode(name).metadata.resource_version;
    ASSERT_TRUE(WaitForCache([&] {
      auto cached = informers_.Get<cv1::Node>().Get("", name);
      return cached != nullptr && cached->metadata.resource_version == rv;
    }));
    ASSERT_TRUE(controller_->Sync("node:" + name).ok());
  }
  void Advance(Duration d, const std::vector<std::string>& alive) {
    clock_.Advance(d);
    for (const std::string& n : alive) Heartbeat(n);
  }

  ManualClock clock_{kT0};
  draplane::testing::TestApi api_{{.clock = &clock_}};
  client::SharedInformers informers_{api_};
  std::unique_ptr<NodeLifecycleController> controller_;
  std::unique_ptr<TaintEvictionController> eviction_;
  Mutex mu_;
  CondVar cv_;
  int64_t changes_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

TEST_F(NodeLifecycleTest, ASilentNodeBecomesUnknownIsTaintedAndItsPodsEvictedAfterTolerations) {
  AddNode("n1");
  AddNode("n2");
  AddNode("n3");
  AddPod("tolerant", "n1");  // admission gives it 300 s of not-ready and unreachable
  StatusOr<cv1::Pod> tolerant = client::Get<cv1::Pod>(api_, "default", "tolerant");
  ASSERT_TRUE(tolerant.ok());
  EXPECT_EQ(tolerant->spec.tolerations.size(), 2u);
  Start();
  Monitor();
  EXPECT_EQ(Ready("n1"), "True");

  // Lease renewals alone keep n2 and n3 alive; n1 is within its 50 s.
  Advance(40 * kSecond, {"n2", "n3"});
  Monitor();
  EXPECT_EQ(Ready("n1"), "True");
  EXPECT_THAT(Taints("n1"), IsEmpty());

  Advance(20 * kSecond, {"n2", "n3"});
  Monitor();
  cv1::Node n1 = GetNode("n1");
  bool unknown = false;
  for (const cv1::NodeCondition& c : n1.status.conditions) {
    if (c.type == "Ready") {
      unknown = c.status == "Unknown" && c.reason == "NodeStatusUnknown" &&
                c.message == "Kubelet stopped posting node status.";
    }
  }
  EXPECT_TRUE(unknown);
  // The first node of a healthy zone is tainted at once.
  EXPECT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute"));
  SyncNode("n1");
  EXPECT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute",
                                        "node.kubernetes.io/unreachable:NoSchedule"));
  EXPECT_EQ(Ready("n2"), "True");
  EXPECT_THAT(Taints("n2"), IsEmpty());
  // The Pod is marked NotReady.
  StatusOr<cv1::Pod> pod = client::Get<cv1::Pod>(api_, "default", "tolerant");
  ASSERT_TRUE(pod.ok());
  EXPECT_TRUE(api::HasPodCondition(*pod, "Ready", "False"));

  // Within the default tolerations nothing is evicted.
  ASSERT_TRUE(eviction_->Sync("n1").ok());
  EXPECT_FALSE(client::Get<cv1::Pod>(api_, "default", "tolerant")->metadata.deletion_timestamp);

  // 300 s after the taint the default tolerations end.
  Advance(300 * kSecond, {"n2", "n3"});
  ASSERT_TRUE(eviction_->Sync("n1").ok());
  pod = client::Get<cv1::Pod>(api_, "default", "tolerant");
  ASSERT_TRUE(pod.ok());
  EXPECT_TRUE(pod->metadata.deletion_timestamp.has_value());
  EXPECT_TRUE(api::HasPodCondition(*pod, "DisruptionTarget", "True"));
}

TEST_F(NodeLifecycleTest, TheNodeComingBackLosesItsTaintsAndAnIntolerantPodGoesAtOnce) {
  AddNode("n1");
  AddNode("n2");
  AddNode("n3");
  Start();
  Monitor();
  Advance(51 * kSecond, {"n2", "n3"});
  Monitor();
  SyncNode("n1");
  ASSERT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute",
                                        "node.kubernetes.io/unreachable:NoSchedule"));
  // A NoExecute taint no Pod tolerates, added by hand without timeAdded, evicts at once; the
  // default tolerations keep the other Pod for 300 s.
  AddPod("tolerant", "n1");
  AddPod("intolerant", "n1");
  cv1::Node tainted = GetNode("n1");
  cv1::Taint maintenance;
  maintenance.key = "example.com/maintenance";
  maintenance.effect = "NoExecute";
  tainted.spec.taints.push_back(maintenance);
  ASSERT_TRUE(client::Update(api_, tainted).ok());
  cv1::Pod tolerant = *client::Get<cv1::Pod>(api_, "default", "tolerant");
  tolerant.spec.tolerations.push_back(Tolerate("example.com/maintenance", std::nullopt));
  ASSERT_TRUE(client::Update(api_, tolerant).ok());
  ASSERT_TRUE(WaitForCache([&] {
    auto p = informers_.Get<cv1::Pod>().Get("default", "tolerant");
    auto n = informers_.Get<cv1::Node>().Get("", "n1");
    return p != nullptr && p->spec.tolerations.size() == 3 && n != nullptr &&
           n->spec.taints.size() == 3 &&
           informers_.Get<cv1::Pod>().Get("default", "intolerant") != nullptr;
  }));
  ASSERT_TRUE(eviction_->Sync("n1").ok());
  EXPECT_TRUE(client::Get<cv1::Pod>(api_, "default", "intolerant")->metadata.deletion_timestamp);
  EXPECT_FALSE(client::Get<cv1::Pod>(api_, "default", "tolerant")->metadata.deletion_timestamp);
  tainted = GetNode("n1");
  std::erase_if(tainted.spec.taints,
                [](const cv1::Taint& t) { return t.key == "example.com/maintenance"; });
  ASSERT_TRUE(client::Update(api_, tainted).ok());

  // The agent is back: Ready again, every taint it caused goes.
  clock_.Advance(5 * kSecond);
  Heartbeat("n1", /*status=*/true);
  Monitor();
  SyncNode("n1");
  EXPECT_EQ(Ready("n1"), "True");
  EXPECT_THAT(Taints("n1"), IsEmpty());
}

TEST_F(NodeLifecycleTest, NodesOfAZoneAreTaintedOneEveryTenSeconds) {
  for (std::string n : {"a1", "a2", "a3", "a4"}) AddNode(n, "a");
  Start();
  Monitor();
  Advance(51 * kSecond, {"a3", "a4"});
  Monitor();
  EXPECT_EQ(Ready("a1"), "Unknown");
  EXPECT_EQ(Ready("a2"), "Unknown");
  EXPECT_THAT(Taints("a1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute"));
  EXPECT_THAT(Taints("a2"), IsEmpty());
  Advance(5 * kSecond, {"a3", "a4"});
  Monitor();
  EXPECT_THAT(Taints("a2"), IsEmpty());
  Advance(5 * kSecond, {"a3", "a4"});
  Monitor();
  EXPECT_THAT(Taints("a2"), ElementsAre("node.kubernetes.io/unreachable:NoExecute"));
}

TEST_F(NodeLifecycleTest, EveryNodeDownIsTreatedAsTheControllerCutOff) {
  AddNode("n1");
  AddNode("n2");
  Start();
  Monitor();
  Advance(51 * kSecond, {"n2"});
  Monitor();
  ASSERT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute"));
  // n2 falls silent too: no node is reachable, so none is evicted and n1's taint goes.
  Advance(51 * kSecond, {});
  Monitor();
  EXPECT_EQ(Ready("n2"), "Unknown");
  EXPECT_THAT(Taints("n1"), IsEmpty());
  EXPECT_THAT(Taints("n2"), IsEmpty());
  Advance(30 * kSecond, {});
  Monitor();
  EXPECT_THAT(Taints("n1"), IsEmpty());
  // n2 reports again: normal rates, and n1, still Unknown, is tainted again (upstream).
  Advance(1 * kSecond, {});
  Heartbeat("n2", /*status=*/true);
  Monitor();
  EXPECT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unreachable:NoExecute"));
  EXPECT_THAT(Taints("n2"), IsEmpty());
}

TEST_F(NodeLifecycleTest, ConditionsAndCordonTaintNoScheduleAndNodesNobodyReportsAreLeftAlone) {
  AddNode("n1");
  cv1::Node manual;
  manual.metadata.name = "by-hand";
  ASSERT_TRUE(client::Create(api_, manual).ok());
  Start();
  Monitor();
  cv1::Node n1 = GetNode("n1");
  n1.spec.unschedulable = true;
  ASSERT_TRUE(client::Update(api_, n1).ok());
  SyncNode("n1");
  EXPECT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/unschedulable:NoSchedule"));
  n1 = GetNode("n1");
  n1.spec.unschedulable = false;
  ASSERT_TRUE(client::Update(api_, n1).ok());
  n1 = GetNode("n1");
  cv1::NodeCondition pressure;
  pressure.type = "MemoryPressure";
  pressure.status = "True";
  n1.status.conditions.push_back(pressure);
  ASSERT_TRUE(client::UpdateStatus(api_, n1).ok());
  SyncNode("n1");
  EXPECT_THAT(Taints("n1"), ElementsAre("node.kubernetes.io/memory-pressure:NoSchedule"));

  // Nothing ever reported for by-hand: an hour later it is as it was.
  for (int i = 0; i < 12; ++i) {
    Advance(5 * std::chrono::minutes(1), {"n1"});
    Heartbeat("n1", /*status=*/true);
  }
  Monitor();
  cv1::Node untouched = GetNode("by-hand");
  EXPECT_THAT(untouched.status.conditions, IsEmpty());
  EXPECT_THAT(untouched.spec.taints, IsEmpty());
}

}  // namespace
}  // namespace draplane::controllers
