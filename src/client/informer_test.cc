#include "client/informer.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <set>
#include <thread>

#include "client/memory_api.h"
#include "client/shared_informers.h"
#include "common/mutex.h"
#include "common/random.h"
#include "testing/test_api.h"

namespace draplane::client {
namespace {

using api::corev1::Pod;

// Records handler calls and lets the test wait for a number of them.
class Recorder {
 public:
  Informer<Pod>::Handlers Handlers() {
    return {
        .on_add = [this](const Informer<Pod>::Ptr& p) { Push("add " + p->metadata.name); },
        .on_update =
            [this](const Informer<Pod>::Ptr& o, const Informer<Pod>::Ptr& n) {
              Push("update " + o->metadata.name + " " + o->metadata.resource_version + "->" +
                   n->metadata.resource_version);
            },
        .on_delete = [this](const Informer<Pod>::Ptr& p) { Push("delete " + p->metadata.name); },
    };
  }
  // Waits until at least `n` events were seen and returns them.
  std::vector<std::string> WaitFor(size_t n) {
    MutexLock lock(mu_);
    cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return events_.size() >= n; });
    return events_;
  }
  std::vector<std::string> Events() {
    MutexLock lock(mu_);
    return events_;
  }

 private:
  void Push(std::string e) {
    MutexLock lock(mu_);
    events_.push_back(std::move(e));
    cv_.NotifyAll();
  }
  Mutex mu_;
  CondVar cv_;
  std::vector<std::string> events_ DRAPLANE_GUARDED_BY(mu_);
};

class InformerTest : public ::testing::Test {
 protected:
  InformerTest() : api_({.clock = &clock_, .namespaces = {"ns"}}) {}

  StatusOr<Pod> CreatePod(const std::string& name, const std::string& node = "") {
    Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "ns";
    pod.spec.node_name = node;
    api::corev1::Container c;
    c.name = "main";
    c.image = "app:1";
    pod.spec.containers.push_back(c);
    StatusOr<Pod> created = Create(api_, pod);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created;
  }

  ManualClock clock_;
  draplane::testing::TestApi api_;
};

TEST_F(InformerTest, ListsThenFollowsTheWatch) {
  ASSERT_TRUE(CreatePod("a").ok());
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  EXPECT_EQ(recorder.WaitFor(1), std::vector<std::string>{"add a"});
  ASSERT_NE(informer.Get("ns", "a"), nullptr);

  ASSERT_TRUE(CreatePod("b").ok());
  StatusOr<Pod> a = Get<Pod>(api_, "ns", "a");
  ASSERT_TRUE(a.ok());
  a->metadata.labels["x"] = "y";
  StatusOr<Pod> updated = Update(api_, *a);
  ASSERT_TRUE(updated.ok());
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "b").ok());
  std::vector<std::string> events = recorder.WaitFor(4);
  EXPECT_EQ(events[1], "add b");
  EXPECT_EQ(events[2],
            "update a " + a->metadata.resource_version + "->" + updated->metadata.resource_version);
  EXPECT_EQ(events[3], "delete b");
  EXPECT_EQ(informer.Get("ns", "b"), nullptr);
  EXPECT_EQ(informer.Get("ns", "a")->metadata.labels.at("x"), "y");
  EXPECT_EQ(informer.list_count(), 1);
}

TEST_F(InformerTest, CachedObjectsHaveNoManagedFieldsAndUpdatesFromThemKeepTheServers) {
  ASSERT_TRUE(CreatePod("a").ok());
  StatusOr<Pod> read = Get<Pod>(api_, "ns", "a");
  ASSERT_TRUE(read.ok());
  ASSERT_FALSE(read->metadata.managed_fields.empty());  // the server tracks the creator

  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  EXPECT_TRUE(informer.Get("ns", "a")->metadata.managed_fields.empty());  // listed

  Pod changed = *informer.Get("ns", "a");
  changed.metadata.labels["x"] = "y";
  ASSERT_TRUE(Update(api_, changed).ok());
  recorder.WaitFor(2);
  EXPECT_TRUE(informer.Get("ns", "a")->metadata.managed_fields.empty());  // watched
  StatusOr<Pod> after = Get<Pod>(api_, "ns", "a");
  ASSERT_TRUE(after.ok());
  // The creator's fields stay recorded beside the update's label.
  ASSERT_EQ(after->metadata.managed_fields.size(), 1u);
  const std::string fields =
      boost::json::serialize(after->metadata.managed_fields[0].fields_v1.value());
  EXPECT_NE(fields.find("f:containers"), std::string::npos) << fields;
  EXPECT_NE(fields.find("f:x"), std::string::npos) << fields;
}

TEST_F(InformerTest, ResumesAClosedWatchWithoutRelisting) {
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  ASSERT_TRUE(CreatePod("a").ok());
  recorder.WaitFor(1);
  api_.CloseWatches();  // as a server-side watch timeout
  ASSERT_TRUE(CreatePod("b").ok());
  EXPECT_EQ(recorder.WaitFor(2)[1], "add b");
  EXPECT_EQ(informer.list_count(), 1);
  EXPECT_GE(informer.watch_count(), 2);
}

TEST_F(InformerTest, RelistsAfterGoneAndReportsWhatWasMissed) {
  Recorder recorder;
  Informer<Pod> informer(api_, {.initial_backoff = std::chrono::milliseconds(1)});
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  // Pods created after the sync arrive only through the watch: once both are seen the watch is
  // open, so CloseWatches below ends it (a watch still being opened would outlive the close,
  // never see 410 Gone, and the test would wait forever for the relist).
  ASSERT_TRUE(CreatePod("a").ok());
  ASSERT_TRUE(CreatePod("b").ok());
  recorder.WaitFor(2);
  // Keep the informer from watching (its watch requests ask for bookmarks) while changes happen
  // and the event log is compacted: its resume then gets 410 Gone and it must relist.
  api_.SetInterceptor([](const ApiRequest& r) -> std::optional<Status> {
    if (r.list.allow_watch_bookmarks) return UnavailableError("paused");
    return std::nullopt;
  });
  api_.CloseWatches();
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a").ok());
  ASSERT_TRUE(CreatePod("c").ok());
  api_.CompactLog();
  api_.SetInterceptor(nullptr);
  std::vector<std::string> events = recorder.WaitFor(5);
  // The relist replaces the cache: a is gone, b is re-announced, c is new.
  EXPECT_EQ(events[2], "delete a");
  EXPECT_EQ(events[3].rfind("update b", 0), 0u) << events[3];
  EXPECT_EQ(events[4], "add c");
  EXPECT_EQ(informer.list_count(), 2);
  EXPECT_EQ(informer.size(), 2u);
}

TEST_F(InformerTest, BookmarksAdvanceTheResourceVersion) {
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  // An event that can only arrive through the watch proves the watch is open.
  ASSERT_TRUE(CreatePod("first").ok());
  recorder.WaitFor(1);
  // A change in another resource moves the store's version without any pod event.
  api::corev1::Node node;
  node.metadata.name = "n";
  ASSERT_TRUE(Create(api_, node).ok());
  // The bookmark is queued on the open watch before it is closed, and the log is compacted past
  // the informer's last pod event: only the bookmark lets it resume without relisting.
  api_.SendBookmarks();
  api_.CompactLog();
  api_.CloseWatches();
  ASSERT_TRUE(CreatePod("after").ok());
  EXPECT_EQ(recorder.WaitFor(2)[1], "add after");
  EXPECT_EQ(informer.list_count(), 1);
}

TEST_F(InformerTest, IndexesFollowTheCache) {
  ASSERT_TRUE(CreatePod("a", "n1").ok());
  ASSERT_TRUE(CreatePod("b", "n1").ok());
  ASSERT_TRUE(CreatePod("c", "n2").ok());
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddIndex("node",
                    [](const Pod& p) { return std::vector<std::string>{p.spec.node_name}; });
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  EXPECT_EQ(informer.ByIndex("node", "n1").size(), 2u);
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a", {.grace_period_seconds = 0}).ok());
  recorder.WaitFor(4);
  std::vector<Informer<Pod>::Ptr> on_n1 = informer.ByIndex("node", "n1");
  ASSERT_EQ(on_n1.size(), 1u);
  EXPECT_EQ(on_n1[0]->metadata.name, "b");
  EXPECT_TRUE(informer.ByIndex("node", "n3").empty());
}

TEST_F(InformerTest, AnUpdateMovesAnObjectBetweenIndexValuesOrReplacesItInPlace) {
  StatusOr<Pod> a = CreatePod("a");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(CreatePod("b").ok());
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddIndex("team", [](const Pod& p) {
    std::vector<std::string> out;
    if (auto it = p.metadata.labels.find("team"); it != p.metadata.labels.end()) {
      out.push_back(it->second);
    }
    if (p.metadata.labels.contains("shared")) out.push_back("shared");
    return out;
  });
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  recorder.WaitFor(2);
  auto update = [&](const std::map<std::string, std::string, std::less<>>& labels) {
    Pod pod = *informer.Get("ns", "a");
    pod.metadata.labels = labels;
    ASSERT_TRUE(Update(api_, pod).ok());
  };
  auto names = [&](const std::string& value) {
    std::vector<std::string> out;
    for (const auto& p : informer.ByIndex("team", value)) out.push_back(p->metadata.name);
    return out;
  };
  update({{"team", "x"}, {"shared", "1"}});
  recorder.WaitFor(3);
  EXPECT_EQ(names("x"), std::vector<std::string>{"a"});
  EXPECT_EQ(names("shared"), std::vector<std::string>{"a"});
  // Same values, new version: the index hands out the new one.
  update({{"team", "x"}, {"shared", "1"}, {"other", "2"}});
  recorder.WaitFor(4);
  ASSERT_EQ(informer.ByIndex("team", "x").size(), 1u);
  EXPECT_EQ(informer.ByIndex("team", "x")[0]->metadata.labels.size(), 3u);
  // One value replaced, one dropped.
  update({{"team", "y"}});
  recorder.WaitFor(5);
  EXPECT_TRUE(names("x").empty());
  EXPECT_TRUE(names("shared").empty());
  EXPECT_EQ(names("y"), std::vector<std::string>{"a"});
}

TEST_F(InformerTest, ResyncReannouncesEveryObject) {
  ASSERT_TRUE(CreatePod("a").ok());
  Recorder recorder;
  Informer<Pod> informer(api_, {.resync_period = std::chrono::milliseconds(10)});
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  std::vector<std::string> events = recorder.WaitFor(2);
  EXPECT_EQ(events[0], "add a");
  EXPECT_EQ(events[1].rfind("update a", 0), 0u);
}

TEST_F(InformerTest, StopEndsABlockedWatch) {
  Informer<Pod> informer(api_);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  informer.Stop();
  EXPECT_TRUE(informer.HasSynced());
}

TEST_F(InformerTest, HandlersAddedWhileRunningGetTheCacheThenEveryChange) {
  ASSERT_TRUE(CreatePod("a").ok());
  ASSERT_TRUE(CreatePod("b").ok());
  Recorder first;
  Informer<Pod> informer(api_);
  informer.AddHandlers(first.Handlers());
  informer.Start();
  first.WaitFor(2);

  // The replay runs on the adding thread: both adds are there when AddHandlers returns.
  Recorder late;
  informer.AddHandlers(late.Handlers());
  EXPECT_EQ(late.Events(), (std::vector<std::string>{"add a", "add b"}));

  ASSERT_TRUE(CreatePod("c").ok());
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a", {.grace_period_seconds = 0}).ok());
  std::vector<std::string> events = late.WaitFor(4);
  EXPECT_EQ(events[2], "add c");
  EXPECT_EQ(events[3], "delete a");
}

TEST_F(InformerTest, AHandlerAddedDuringWritesSeesEachObjectExactlyOnce) {
  Informer<Pod> informer(api_);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  constexpr int kPods = 200;
  std::thread writer([&] {
    for (int i = 0; i < kPods; ++i) EXPECT_TRUE(CreatePod("p" + std::to_string(i)).ok());
  });
  while (informer.size() < kPods / 2) std::this_thread::yield();
  Recorder late;
  informer.AddHandlers(late.Handlers());
  writer.join();
  std::vector<std::string> events = late.WaitFor(kPods);
  std::set<std::string> distinct(events.begin(), events.end());
  EXPECT_EQ(events.size(), static_cast<size_t>(kPods));
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kPods));
}

TEST_F(InformerTest, RemovedHandlersAreNotCalledAgain) {
  Recorder removed;
  Recorder kept;
  Informer<Pod> informer(api_);
  Informer<Pod>::HandlerId id = informer.AddHandlers(removed.Handlers());
  informer.AddHandlers(kept.Handlers());
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync());
  ASSERT_TRUE(CreatePod("a").ok());
  kept.WaitFor(1);
  informer.RemoveHandlers(id);
  ASSERT_TRUE(CreatePod("b").ok());
  kept.WaitFor(2);
  EXPECT_EQ(removed.Events(), std::vector<std::string>{"add a"});
}

TEST_F(InformerTest, AnIndexAddedWhileRunningCoversTheCache) {
  ASSERT_TRUE(CreatePod("a", "n1").ok());
  Recorder recorder;
  Informer<Pod> informer(api_);
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  recorder.WaitFor(1);
  informer.AddIndex("node",
                    [](const Pod& p) { return std::vector<std::string>{p.spec.node_name}; });
  EXPECT_EQ(informer.ByIndex("node", "n1").size(), 1u);
  ASSERT_TRUE(CreatePod("b", "n1").ok());
  recorder.WaitFor(2);
  EXPECT_EQ(informer.ByIndex("node", "n1").size(), 2u);
}

// Each cached object remembers where every index lists it, by the indexes' order; an index
// added later may come first in that order.
TEST_F(InformerTest, AnIndexAddedBeforeAnotherInOrderKeepsBothFollowingUpdates) {
  ASSERT_TRUE(CreatePod("a").ok());
  Recorder recorder;
  Informer<Pod> informer(api_);
  auto label = [](std::string key) {
    return [key](const Pod& p) {
      auto it = p.metadata.labels.find(key);
      return it == p.metadata.labels.end() ? std::vector<std::string>{}
                                           : std::vector<std::string>{it->second};
    };
  };
  informer.AddIndex("zone", label("zone"));
  informer.AddHandlers(recorder.Handlers());
  informer.Start();
  recorder.WaitFor(1);
  auto update = [&](const std::map<std::string, std::string, std::less<>>& labels) {
    Pod pod = *informer.Get("ns", "a");
    pod.metadata.labels = labels;
    ASSERT_TRUE(Update(api_, pod).ok());
  };
  update({{"zone", "z1"}, {"app", "web"}});
  recorder.WaitFor(2);
  informer.AddIndex("app", label("app"));  // "app" orders before "zone"
  ASSERT_EQ(informer.ByIndex("app", "web").size(), 1u);
  ASSERT_EQ(informer.ByIndex("zone", "z1").size(), 1u);
  update({{"zone", "z2"}, {"app", "web"}});
  recorder.WaitFor(3);
  EXPECT_TRUE(informer.ByIndex("zone", "z1").empty());
  ASSERT_EQ(informer.ByIndex("zone", "z2").size(), 1u);
  ASSERT_EQ(informer.ByIndex("app", "web").size(), 1u);
  EXPECT_EQ(informer.ByIndex("app", "web")[0]->metadata.labels.at("zone"), "z2");
  update({{"zone", "z2"}});
  recorder.WaitFor(4);
  EXPECT_TRUE(informer.ByIndex("app", "web").empty());
  EXPECT_EQ(informer.ByIndex("zone", "z2")[0]->metadata.labels.size(), 1u);
  ASSERT_TRUE(Delete<Pod>(api_, "ns", "a", {.grace_period_seconds = 0}).ok());
  recorder.WaitFor(5);
  EXPECT_TRUE(informer.ByIndex("zone", "z2").empty());
}

TEST_F(InformerTest, SharedInformersHandOutOneInformerPerTypeAndStartLateOnes) {
  ASSERT_TRUE(CreatePod("a").ok());
  SharedInformers shared(api_);
  Informer<Pod>& pods = shared.Get<Pod>();
  EXPECT_EQ(&pods, &shared.Get<Pod>());
  shared.Start();
  ASSERT_TRUE(shared.WaitForSync());
  EXPECT_EQ(pods.size(), 1u);
  Informer<api::corev1::Node>& nodes = shared.Get<api::corev1::Node>();
  EXPECT_FALSE(nodes.HasSynced());
  shared.Start();
  ASSERT_TRUE(shared.WaitForSync());
  EXPECT_TRUE(nodes.HasSynced());
}

// Manual mode is the simulator's: it polls watch streams without blocking, which only the
// in-memory API offers (a REST watch cannot be polled), so this test runs against that API.
TEST(ManualInformerTest, DeliversOnlyWhenAskedInResourceVersionOrder) {
  std::unique_ptr<Random> random = NewSeededRandom(1);
  ManualClock clock;
  MemoryApi api(clock, *random);
  auto create_pod = [&](const std::string& name) {
    Pod pod;
    pod.metadata.name = name;
    pod.metadata.namespace_ = "ns";
    api::corev1::Container c;
    c.name = "main";
    c.image = "app:1";
    pod.spec.containers.push_back(c);
    return Create(api, pod);
  };
  ASSERT_TRUE(create_pod("a").ok());
  SharedInformers shared(api, {.manual = true});
  std::vector<std::string> seen;
  shared.Get<Pod>().AddHandlers(
      {.on_add = [&](const auto& p) { seen.push_back("pod " + p->metadata.name); },
       .on_update = [&](const auto&, const auto& p) { seen.push_back("pod* " + p->metadata.name); },
       .on_delete = [&](const auto& p) { seen.push_back("-pod " + p->metadata.name); }});
  shared.Get<api::corev1::Node>().AddHandlers(
      {.on_add = [&](const auto& n) { seen.push_back("node " + n->metadata.name); }});
  shared.Start();  // lists on this thread
  ASSERT_TRUE(shared.WaitForSync());
  EXPECT_EQ(seen, std::vector<std::string>{"pod a"});

  api::corev1::Node node;
  node.metadata.name = "n1";
  ASSERT_TRUE(Create(api, node).ok());
  ASSERT_TRUE(create_pod("b").ok());
  ASSERT_TRUE(Create(api,
                     [] {
                       api::corev1::Node n;
                       n.metadata.name = "n2";
                       return n;
                     }())
                  .ok());
  ASSERT_TRUE(Delete<Pod>(api, "ns", "a").ok());
  EXPECT_EQ(seen.size(), 1u);  // nothing arrives by itself
  StatusOr<size_t> delivered = shared.DeliverPending();
  ASSERT_TRUE(delivered.ok()) << delivered.status().ToString();
  EXPECT_EQ(*delivered, 4u);
  EXPECT_EQ(seen, (std::vector<std::string>{"pod a", "node n1", "pod b", "node n2", "-pod a"}));
  EXPECT_EQ(*shared.DeliverPending(), 0u);

  // A watch the server ends is resumed from the last resourceVersion, without a relist.
  api.CloseWatches();
  ASSERT_TRUE(create_pod("c").ok());
  EXPECT_EQ(*shared.DeliverPending(), 1u);
  EXPECT_EQ(seen.back(), "pod c");
  EXPECT_EQ(shared.Get<Pod>().list_count(), 1);

  // An object the informer cannot decode is skipped, as a watching informer skips it: not
  // delivered, not counted, and the events after it arrive.
  ApiRequest bad;
  bad.verb = Verb::kCreate;
  bad.resource = &ResourceOf<Pod>();
  bad.namespace_ = "ns";
  bad.body = boost::json::parse(
      R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad", "namespace": "ns"},
          "spec": {"priority": "high", "containers": [{"name": "main", "image": "app:1"}]}})");
  ASSERT_TRUE(api.Do(bad).ok());
  ASSERT_TRUE(create_pod("d").ok());
  EXPECT_EQ(*shared.DeliverPending(), 1u);
  EXPECT_EQ(seen.back(), "pod d");
  EXPECT_EQ(shared.Get<Pod>().Get("ns", "bad"), nullptr);
  shared.Stop();
}

}  // namespace
}  // namespace draplane::client
