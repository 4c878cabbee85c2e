// API server throughput and latency over HTTP (`make bench`): an in-process `draplane serve`
// (SQLite store in a temporary directory, the default; plain HTTP on loopback so the client is
// the simple socket client of server/testing) measured from client threads.
//
//   BM_CreateClaim/threads:N       POST of a new ResourceClaim per iteration (creates/s)
//   BM_GetClaim/threads:N          GET of one claim (gets/s)
//   BM_ListClaims/10000            a list of 10,000 claims, whole (no limit)
//   BM_WatchFanout/1000            one write, timed until all 1,000 watchers got the event
//                                  (manual time: the fan-out latency of the last watcher)
//
// kube-apiserver with etcd is the reference point: a few thousand writes/s on machines much
// larger than this one (docs/design/server.md lists the numbers measured here).
#include <benchmark/benchmark.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "server/server.h"
#include "server/testing/test_client.h"

namespace draplane::server {
namespace {

using testing::TestConnection;
using testing::WatchStream;

class BenchServer {
 public:
  // The server, started by the first benchmark that needs it; it lives until Stop().
  static BenchServer& Get() {
    std::call_once(started_, [] { instance_ = new BenchServer(); });
    return *instance_;
  }
  // Shuts the server down and removes its data directory (after every benchmark ran).
  static void Stop() {
    if (instance_ == nullptr) return;
    instance_->server_->Shutdown();
    std::filesystem::remove_all(instance_->dir_);
    delete instance_;
    instance_ = nullptr;
  }

  uint16_t port() const { return port_; }
  std::vector<std::pair<std::string, std::string>> Headers() const {
    return {{"Authorization", "Bearer " + token_}, {"Content-Type", "application/json"}};
  }

  std::unique_ptr<TestConnection> Connect() const {
    auto c = TestConnection::Connect(port_);
    if (!c.ok()) std::abort();
    return std::move(c).value();
  }

  // Creates namespace `ns` once.
  void EnsureNamespace(const std::string& ns) {
    std::lock_guard lock(mu_);
    if (!namespaces_.insert(ns).second) return;
    auto c = Connect();
    c->Do("POST", "/api/v1/namespaces", Headers(),
          R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":")" + ns + R"("}})")
        .status()
        .IgnoreError();  // an existing namespace is fine
  }

 private:
  BenchServer() {
    testing::RaiseFileLimit();
    dir_ = std::filesystem::temp_directory_path() /
           ("draplane-server-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.plain_http = true;
    options.data_dir = dir_.string();
    options.io_threads = 2;
    options.worker_threads = 8;
    options.store_options.watch_queue_limit = 1'000'000;
    auto started = Server::Start(options);
    if (!started.ok()) {
      std::fprintf(stderr, "server: %s\n", started.status().ToString().c_str());
      std::abort();
    }
    server_ = std::move(started).value();
    std::string url = server_->url();
    port_ = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    token_ = server_->IssueCredentials("bench", {"system:masters"}).token;
  }

  static inline std::once_flag started_;
  static inline BenchServer* instance_ = nullptr;

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::string token_;
  std::mutex mu_;
  std::set<std::string> namespaces_;
};

std::string Claim(const std::string& name) {
  return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" +
         name +
         R"(","labels":{"app":"bench"}},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}})";
}

std::atomic<int64_t> g_counter{0};

void BM_CreateClaim(benchmark::State& state) {
  BenchServer& server = BenchServer::Get();
  server.EnsureNamespace("create");
  auto c = server.Connect();
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/create/resourceclaims";
  for (auto _ : state) {
    auto r = c->Do("POST", collection, server.Headers(),
                   Claim("c-" + std::to_string(g_counter.fetch_add(1))));
    if (!r.ok() || r->status != 201) state.SkipWithError("create failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_CreateClaim)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();

void BM_GetClaim(benchmark::State& state) {
  BenchServer& server = BenchServer::Get();
  server.EnsureNamespace("get");
  auto c = server.Connect();
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/get/resourceclaims";
  if (state.thread_index() == 0) {
    c->Do("POST", collection, server.Headers(), Claim("target")).status().IgnoreError();
  }
  for (auto _ : state) {
    auto r = c->Do("GET", collection + "/target", server.Headers());
    if (!r.ok() || r->status != 200) state.SkipWithError("get failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetClaim)->Threads(1)->Threads(4)->Threads(16)->UseRealTime();

void BM_ListClaims(benchmark::State& state) {
  BenchServer& server = BenchServer::Get();
  const int64_t count = state.range(0);
  const std::string ns = "list-" + std::to_string(count);
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/" + ns + "/resourceclaims";
  static std::once_flag filled;
  std::call_once(filled, [&] {
    server.EnsureNamespace(ns);
    std::vector<std::thread> writers;
    std::atomic<int64_t> next{0};
    for (int t = 0; t < 16; ++t) {
      writers.emplace_back([&] {
        auto c = server.Connect();
        for (int64_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
          c->Do("POST", collection, server.Headers(), Claim("l-" + std::to_string(i)))
              .status()
              .IgnoreError();
        }
      });
    }
    for (auto& w : writers) w.join();
  });
  auto c = server.Connect();
  int64_t bytes = 0;
  for (auto _ : state) {
    auto r = c->Do("GET", collection, server.Headers());
    if (!r.ok() || r->status != 200) state.SkipWithError("list failed");
    bytes += static_cast<int64_t>(r->body.size());
  }
  state.SetBytesProcessed(bytes);
  state.counters["objects"] = static_cast<double>(count);
}
BENCHMARK(BM_ListClaims)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WatchFanout(benchmark::State& state) {
  BenchServer& server = BenchServer::Get();
  const int64_t watchers = state.range(0);
  server.EnsureNamespace("fanout");
  const std::string collection = "/apis/resource.k8s.io/v1/namespaces/fanout/resourceclaims";
  auto c = server.Connect();
  auto list = c->Do("GET", collection, server.Headers());
  if (!list.ok() || list->status != 200) {
    state.SkipWithError("list failed");
    return;
  }
  std::string rv = list->body.substr(list->body.find("\"resourceVersion\":\"") + 19);
  rv = rv.substr(0, rv.find('"'));
  std::vector<std::unique_ptr<WatchStream>> streams;
  for (int64_t i = 0; i < watchers; ++i) {
    auto s = WatchStream::Open(server.port(), collection + "?watch=true&resourceVersion=" + rv,
                               server.Headers());
    if (!s.ok() || (*s)->status() != 200) {
      state.SkipWithError("watch failed");
      return;
    }
    streams.push_back(std::move(s).value());
  }
  std::vector<WatchStream*> raw;
  for (auto& s : streams) raw.push_back(s.get());
  for (auto _ : state) {
    std::vector<int> got(watchers, 0);
    int64_t complete = 0;
    auto start = std::chrono::steady_clock::now();
    auto r = c->Do("POST", collection, server.Headers(),
                   Claim("f-" + std::to_string(g_counter.fetch_add(1))));
    if (!r.ok() || r->status != 201) {
      state.SkipWithError("create failed");
      break;
    }
    auto deadline = start + std::chrono::seconds(60);
    while (complete < watchers && std::chrono::steady_clock::now() < deadline) {
      testing::PollStreams(raw, std::chrono::milliseconds(100),
                           [&](size_t i, std::vector<std::string>& lines) {
                             if (got[i] == 0 && !lines.empty()) ++complete;
                             got[i] += static_cast<int>(lines.size());
                           });
    }
    auto elapsed = std::chrono::steady_clock::now() - start;
    if (complete < watchers) state.SkipWithError("not every watcher got the event");
    state.SetIterationTime(std::chrono::duration<double>(elapsed).count());
  }
  state.counters["watchers"] = static_cast<double>(watchers);
}
BENCHMARK(BM_WatchFanout)
    ->Arg(1000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace
}  // namespace draplane::server

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  draplane::server::BenchServer::Stop();
  return 0;
}
