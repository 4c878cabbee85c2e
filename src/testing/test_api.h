// The API that unit tests run components against: a real draplane API server (server/server.h:
// authentication, authorization, admission, the REST handlers with every kind's strategy,
// defaulting and validation, watches, the lifecycle controller) over the memory:// store, in
// this process, reached like an embedded component through the in-process transport
// (cli/in_process_transport.h) as the admin user. What a scheduler, controller, node agent or
// client test sees is therefore exactly what `draplane serve` answers: patch formats and their
// errors, field selectors, resourceVersion preconditions, graceful deletion, the error codes and
// messages. The server listens on a free loopback port (plain HTTP) and keeps its files in a
// temporary directory removed with it.
//
// Test hooks (what tests of informers, leader election and the agent drive):
//   SetInterceptor  fails chosen requests before they reach the server (conflict injection);
//   SendBookmarks   a bookmark now on every watch that asked for bookmarks;
//   CloseWatches    ends every open watch, as a server-side watch timeout does;
//   CompactLog      compacts the store's history: a watch from an earlier resourceVersion gets
//                   410 Expired;
//   RequestCount    requests per verb that reached the server.
//
// Thread-safety: as any ApiClient, safe for concurrent use; the hooks too.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/api_client.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "server/server.h"

namespace draplane::testing {

struct TestApiOptions {
  // Stamps object times and drives the server's time-based work (pod grace periods, watch
  // timeouts and bookmarks); RealClock() when null. Must outlive the TestApi.
  const Clock* clock = nullptr;
  // Namespaces created besides the server's own (default, kube-system, kube-public,
  // kube-node-lease).
  std::vector<std::string> namespaces{};
};

class TestApi : public client::ApiClient {
 public:
  // Returns a non-OK status to fail the request before it is sent, nullopt to send it.
  using Interceptor = std::function<std::optional<Status>(const client::ApiRequest&)>;

  // Starts the server; a test cannot run without it, so failing to start is fatal
  // (DRAPLANE_CHECK with the reason).
  explicit TestApi(TestApiOptions options = {});
  ~TestApi() override;

  StatusOr<boost::json::value> Do(const client::ApiRequest& request) override;
  StatusOr<std::unique_ptr<client::WatchStream>> Watch(const client::ApiRequest& request) override;

  void SetInterceptor(Interceptor interceptor);
  void SendBookmarks();
  void CloseWatches();
  void CompactLog();
  int64_t RequestCount(client::Verb verb) const;
  // The store's current revision (the newest resourceVersion).
  int64_t resource_version() const;

  // A client of the same server as another identity (a node agent's `system:node:<name>` in
  // `system:nodes`, a tenant, ...): authorization applies to it as to any client.
  std::unique_ptr<client::ApiClient> ClientAs(const std::string& user,
                                              const std::vector<std::string>& groups);

  server::Server& server() { return *server_; }

 private:
  std::string data_dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<client::ApiClient> client_;
  mutable Mutex mu_;
  Interceptor interceptor_ DRAPLANE_GUARDED_BY(mu_);
  std::array<std::atomic<int64_t>, 6> counts_{};
};

}  // namespace draplane::testing
