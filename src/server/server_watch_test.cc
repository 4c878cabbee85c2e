// Watch semantics over real HTTP against an in-process server: many concurrent watch streams
// and concurrent writers (every watcher sees every event exactly once, in revision order),
// resume from the last seen resourceVersion after a disconnect, bookmarks, selectors turning
// updates into ADDED/DELETED, and 410 Gone for a resourceVersion the store no longer has.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <thread>

#include "server/server.h"
#include "server/testing/test_client.h"

namespace draplane::server {
namespace {

using testing::TestConnection;
using testing::TestResponse;
using testing::WatchStream;

struct Fixture {
  std::unique_ptr<Server> server;
  uint16_t port = 0;
  std::string token;
  std::filesystem::path dir;

  explicit Fixture(int64_t retained = 0, Duration bookmarks = std::chrono::seconds(30)) {
    testing::RaiseFileLimit();
    dir = std::filesystem::temp_directory_path() /
          ("draplane-watch-" + std::to_string(::getpid()) + "-" +
           std::to_string(reinterpret_cast<uintptr_t>(this)));
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.plain_http = true;
    options.store_url = "memory://";
    options.data_dir = dir.string();
    options.io_threads = 2;
    options.worker_threads = 4;
    options.watch_bookmark_interval = bookmarks;
    options.store_options.retained_revisions = retained;
    options.store_options.watch_queue_limit = 100'000;
    StatusOr<std::unique_ptr<Server>> started = Server::Start(options);
    EXPECT_TRUE(started.ok()) << started.status().ToString();
    server = std::move(started).value();
    std::string url = server->url();
    port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    token = server->IssueCredentials("admin", {"system:masters"}).token;
  }
  ~Fixture() {
    server->Shutdown();
    std::filesystem::remove_all(dir);
  }

  std::vector<std::pair<std::string, std::string>> Auth() const {
    return {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
  }

  TestResponse Do(const std::string& method, const std::string& target,
                  const std::string& body = "", const std::string& content_type = "") {
    auto c = TestConnection::Connect(port);
    EXPECT_TRUE(c.ok());
    std::vector<std::pair<std::string, std::string>> headers = Auth();
    if (!content_type.empty()) headers.back().second = content_type;
    StatusOr<TestResponse> r = (*c)->Do(method, target, headers, body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : TestResponse{};
  }

  int CreateNamespace(const std::string& name) {
    return Do("POST", "/api/v1/namespaces",
              R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + name + R"("}})")
        .status;
  }

  std::string ListRevision(const std::string& path) {
    TestResponse r = Do("GET", path);
    return std::string(boost::json::parse(r.body).at("metadata").at("resourceVersion").as_string());
  }
};

std::string Claim(const std::string& name, const std::string& label = "a") {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" +
         name + R"(","labels":{"tier":")" + label +
         R"("}},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}})";
}

struct Event {
  std::string type;
  int64_t revision = 0;
  std::string name;
};

Event ParseEvent(const std::string& line) {
  boost::json::value v = boost::json::parse(line);
  Event e;
  e.type = std::string(v.at("type").as_string());
  const boost::json::object& meta = v.at("object").at("metadata").as_object();
  e.revision = std::stoll(std::string(meta.at("resourceVersion").as_string()));
  if (const boost::json::value* name = meta.if_contains("name")) {
    e.name = std::string(name->as_string());
  }
  return e;
}

TEST(ServerWatchTest, ThousandWatchersSeeEveryEventOnceInOrderAndResume) {
  Fixture f;
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/w/resourceclaims";
  std::string start = f.ListRevision(collection);

  constexpr int kWatchers = 1000;
  constexpr int kWriters = 4;
  constexpr int kClaimsPerWriter = 10;
  constexpr int kEvents = kWriters * kClaimsPerWriter * 2;  // a create and an update each

  std::vector<std::unique_ptr<WatchStream>> streams(kWatchers);
  for (int i = 0; i < kWatchers; ++i) {
    auto s =
        WatchStream::Open(f.port, collection + "?watch=true&resourceVersion=" + start, f.Auth());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_EQ((*s)->status(), 200) << (*s)->error_body();
    streams[i] = std::move(s).value();
  }

  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&f, &collection, w] {
      auto c = TestConnection::Connect(f.port);
      ASSERT_TRUE(c.ok());
      for (int i = 0; i < kClaimsPerWriter; ++i) {
        std::string name = "c-" + std::to_string(w) + "-" + std::to_string(i);
        auto created = (*c)->Do("POST", collection, f.Auth(), Claim(name));
        ASSERT_TRUE(created.ok() && created->status == 201) << created->body;
        auto patched = (*c)->Do("PATCH", collection + "/" + name,
                                {{"Authorization", "Bearer " + f.token},
                                 {"Content-Type", "application/merge-patch+json"}},
                                R"({"metadata":{"labels":{"seen":"yes"}}})");
        ASSERT_TRUE(patched.ok() && patched->status == 200) << patched->body;
      }
    });
  }

  // The first 100 watchers disconnect after 20 events and resume from the last revision seen.
  constexpr int kResumers = 100;
  constexpr size_t kResumeAfter = 20;
  std::vector<std::vector<Event>> seen(kWatchers);
  std::vector<bool> resumed(kWatchers, false);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(3);
  auto done = [&] {
    for (const auto& events : seen) {
      if (events.size() < static_cast<size_t>(kEvents)) return false;
    }
    return true;
  };
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::vector<WatchStream*> raw;
    for (auto& s : streams) raw.push_back(s.get());
    testing::PollStreams(raw, std::chrono::milliseconds(200),
                         [&](size_t i, std::vector<std::string>& lines) {
                           for (const std::string& line : lines)
                             seen[i].push_back(ParseEvent(line));
                         });
    for (int i = 0; i < kResumers; ++i) {
      if (resumed[i] || seen[i].size() < kResumeAfter) continue;
      resumed[i] = true;
      streams[i]->Close();
      std::string from = std::to_string(seen[i].back().revision);
      auto s =
          WatchStream::Open(f.port, collection + "?watch=true&resourceVersion=" + from, f.Auth());
      ASSERT_TRUE(s.ok());
      ASSERT_EQ((*s)->status(), 200);
      streams[i] = std::move(s).value();
    }
  }
  for (std::thread& t : writers) t.join();
  ASSERT_TRUE(done()) << "not every watcher saw every event in time";

  std::vector<Event> reference;
  for (int i = 0; i < kWatchers; ++i) {
    SCOPED_TRACE("watcher " + std::to_string(i));
    const std::vector<Event>& events = seen[i];
    ASSERT_EQ(events.size(), static_cast<size_t>(kEvents));
    for (size_t k = 1; k < events.size(); ++k) {
      ASSERT_LT(events[k - 1].revision, events[k].revision) << "out of order or duplicated";
    }
    if (reference.empty()) reference = events;
    for (size_t k = 0; k < events.size(); ++k) {
      ASSERT_EQ(events[k].revision, reference[k].revision);
      ASSERT_EQ(events[k].type, reference[k].type);
      ASSERT_EQ(events[k].name, reference[k].name);
    }
  }
  int added = 0, modified = 0;
  for (const Event& e : reference) {
    added += e.type == "ADDED";
    modified += e.type == "MODIFIED";
  }
  EXPECT_EQ(added, kWriters * kClaimsPerWriter);
  EXPECT_EQ(modified, kWriters * kClaimsPerWriter);
}

TEST(ServerWatchTest, InitialStateThenChangesAndSelectorTransitions) {
  Fixture f;
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/w/resourceclaims";
  ASSERT_EQ(f.Do("POST", collection, Claim("x", "a")).status, 201);
  ASSERT_EQ(f.Do("POST", collection, Claim("y", "b")).status, 201);
  // No resourceVersion: synthetic ADDED for the current state first; only tier=a objects.
  auto s = WatchStream::Open(f.port, collection + "?watch=true&labelSelector=tier%3Da", f.Auth());
  ASSERT_TRUE(s.ok());
  std::vector<std::string> lines;
  (*s)->WaitLines(&lines, std::chrono::seconds(30));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(ParseEvent(lines[0]).type, "ADDED");
  EXPECT_EQ(ParseEvent(lines[0]).name, "x");

  auto patch = [&](const std::string& name, const std::string& tier) {
    auto c = TestConnection::Connect(f.port);
    auto r = (*c)->Do(
        "PATCH", collection + "/" + name,
        {{"Authorization", "Bearer " + f.token}, {"Content-Type", "application/merge-patch+json"}},
        R"({"metadata":{"labels":{"tier":")" + tier + R"("}}})");
    ASSERT_EQ(r->status, 200);
  };
  patch("y", "a");  // starts matching: ADDED
  patch("x", "c");  // stops matching: DELETED
  lines.clear();
  while (lines.size() < 2 && (*s)->WaitLines(&lines, std::chrono::seconds(30))) {
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(ParseEvent(lines[0]).type, "ADDED");
  EXPECT_EQ(ParseEvent(lines[0]).name, "y");
  EXPECT_EQ(ParseEvent(lines[1]).type, "DELETED");
  EXPECT_EQ(ParseEvent(lines[1]).name, "x");
}

// The legacy watch path names one object: only its events come (it streamed the whole
// collection), and a field selector naming another object is refused.
TEST(ServerWatchTest, LegacyWatchPathWatchesTheNamedObjectOnly) {
  Fixture f;
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/w/resourceclaims";
  ASSERT_EQ(f.Do("POST", collection, Claim("x")).status, 201);
  ASSERT_EQ(f.Do("POST", collection, Claim("y")).status, 201);
  auto s = WatchStream::Open(f.port, "/apis/resource.k8s.io/v1/watch/namespaces/w/resourceclaims/y",
                             f.Auth());
  ASSERT_TRUE(s.ok());
  std::vector<std::string> lines;
  (*s)->WaitLines(&lines, std::chrono::seconds(30));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(ParseEvent(lines[0]).name, "y");
  ASSERT_EQ(f.Do("POST", collection, Claim("z")).status, 201);
  ASSERT_EQ(f.Do("DELETE", collection + "/y").status, 200);
  lines.clear();
  while (lines.empty() && (*s)->WaitLines(&lines, std::chrono::seconds(30))) {
  }
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(ParseEvent(lines[0]).type, "DELETED");
  EXPECT_EQ(ParseEvent(lines[0]).name, "y");

  EXPECT_EQ(f.Do("GET",
                 "/apis/resource.k8s.io/v1/watch/namespaces/w/resourceclaims/"
                 "y?fieldSelector=metadata.name%3Dx")
                .status,
            400);
}

// Watches with field selectors share one parsed view of each object version (a kubelet per node
// watches pods with spec.nodeName=<node>); each still gets exactly its own events, and a
// transition out of the selection is a DELETED of the previous version at the new revision.
TEST(ServerWatchTest, FieldSelectedWatchesOfManyNodesSeeOnlyTheirPods) {
  Fixture f;
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string pods = "/api/v1/namespaces/w/pods";
  auto pod = [](const std::string& name) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"(","labels":{"app":"x"}},"spec":{"containers":[{"name":"c","image":"i"}]}})";
  };
  std::vector<std::unique_ptr<WatchStream>> watches;
  for (std::string selector :
       {"spec.nodeName%3Dn1", "spec.nodeName%3Dn2", "spec.nodeName%3Dn1", "spec.nodeName!%3D"}) {
    auto s = WatchStream::Open(f.port, pods + "?watch=true&fieldSelector=" + selector, f.Auth());
    ASSERT_TRUE(s.ok());
    watches.push_back(std::move(s).value());
  }
  // Label and field selectors together: app=x on n1 only.
  auto both = WatchStream::Open(
      f.port, pods + "?watch=true&labelSelector=app%3Dx&fieldSelector=spec.nodeName%3Dn1",
      f.Auth());
  ASSERT_TRUE(both.ok());
  for (std::string name : {"p1", "p2", "p3"}) {
    ASSERT_EQ(f.Do("POST", pods, pod(name)).status, 201);
  }
  auto bind = [&](const std::string& name, const std::string& node) {
    TestResponse r =
        f.Do("POST", pods + "/" + name + "/binding",
             R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":")" + name +
                 R"("},"target":{"apiVersion":"v1","kind":"Node","name":")" + node + R"("}})");
    ASSERT_EQ(r.status, 201) << r.body;
  };
  bind("p1", "n1");
  bind("p2", "n2");
  bind("p3", "n1");
  ASSERT_EQ(f.Do("PATCH", pods + "/p3", R"({"metadata":{"labels":{"app":"y"}}})",
                 "application/merge-patch+json")
                .status,
            200);
  auto collect = [](WatchStream& s, size_t n) {
    std::vector<std::string> lines;
    while (lines.size() < n && s.WaitLines(&lines, std::chrono::seconds(30))) {
    }
    std::vector<std::string> out;
    for (const std::string& line : lines) {
      Event e = ParseEvent(line);
      out.push_back(e.type + " " + e.name);
    }
    return out;
  };
  using Lines = std::vector<std::string>;
  EXPECT_EQ(collect(*watches[0], 3), (Lines{"ADDED p1", "ADDED p3", "MODIFIED p3"}));
  EXPECT_EQ(collect(*watches[1], 1), (Lines{"ADDED p2"}));
  EXPECT_EQ(collect(*watches[2], 3), (Lines{"ADDED p1", "ADDED p3", "MODIFIED p3"}));
  EXPECT_EQ(collect(*watches[3], 4), (Lines{"ADDED p1", "ADDED p2", "ADDED p3", "MODIFIED p3"}));
  std::vector<std::string> lines;
  while (lines.size() < 3 && (*both)->WaitLines(&lines, std::chrono::seconds(30))) {
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(ParseEvent(lines[0]).type + " " + ParseEvent(lines[0]).name, "ADDED p1");
  EXPECT_EQ(ParseEvent(lines[1]).type + " " + ParseEvent(lines[1]).name, "ADDED p3");
  // p3 left the selection by its label: the previous version, at the patch's revision.
  Event left = ParseEvent(lines[2]);
  EXPECT_EQ(left.type + " " + left.name, "DELETED p3");
  boost::json::value v = boost::json::parse(lines[2]);
  EXPECT_EQ(v.at("object").at("metadata").at("labels").at("app"), "x");
  EXPECT_EQ(v.at("object").at("spec").at("nodeName"), "n1");
  TestResponse p3 = f.Do("GET", pods + "/p3");
  EXPECT_EQ(std::to_string(left.revision),
            boost::json::parse(p3.body).at("metadata").at("resourceVersion").as_string());
}

TEST(ServerWatchTest, BookmarksCarryTheNewestRevision) {
  Fixture f(0, std::chrono::milliseconds(100));
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/w/resourceclaims";
  std::string start = f.ListRevision(collection);
  auto s = WatchStream::Open(
      f.port, collection + "?watch=true&allowWatchBookmarks=true&resourceVersion=" + start,
      f.Auth());
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(f.Do("POST", collection, Claim("z")).status, 201);
  std::vector<std::string> lines;
  bool bookmark = false;
  int64_t added_revision = 0;
  while (!bookmark && (*s)->WaitLines(&lines, std::chrono::seconds(30))) {
    for (const std::string& line : lines) {
      Event e = ParseEvent(line);
      if (e.type == "ADDED") added_revision = e.revision;
      if (e.type == "BOOKMARK" && added_revision > 0) {
        bookmark = true;
        EXPECT_GE(e.revision, added_revision);
      }
    }
    lines.clear();
  }
  EXPECT_TRUE(bookmark);
}

TEST(ServerWatchTest, TooOldResourceVersionIsGone) {
  Fixture f(/*retained=*/5);
  ASSERT_EQ(f.CreateNamespace("w"), 201);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/w/resourceclaims";
  for (int i = 0; i < 30; ++i) {
    ASSERT_EQ(f.Do("POST", collection, Claim("g-" + std::to_string(i))).status, 201);
  }
  auto s = WatchStream::Open(f.port, collection + "?watch=true&resourceVersion=2", f.Auth());
  ASSERT_TRUE(s.ok());
  std::vector<std::string> lines;
  (*s)->WaitLines(&lines, std::chrono::seconds(30));
  ASSERT_FALSE(lines.empty());
  boost::json::value v = boost::json::parse(lines[0]);
  EXPECT_EQ(v.at("type"), "ERROR");
  EXPECT_EQ(v.at("object").at("code"), 410);
  EXPECT_EQ(v.at("object").at("reason"), "Expired");
  // A list at the old revision is Gone as well.
  TestResponse list = f.Do("GET", collection + "?resourceVersion=2&resourceVersionMatch=Exact");
  EXPECT_EQ(list.status, 410);
}

}  // namespace
}  // namespace draplane::server
