#include "testing/test_api.h"

#include <stdlib.h>

#include <filesystem>

#include "api/gen/core_v1_types.h"
#include "cli/in_process_transport.h"
#include "client/typed.h"
#include "common/check.h"
#include "common/mutex.h"

namespace draplane::testing {
namespace {

std::string NewDataDir() {
  std::filesystem::path base = std::filesystem::temp_directory_path() / "draplane-test-api-XXXXXX";
  std::string pattern = base.string();
  DRAPLANE_CHECK_MSG(::mkdtemp(pattern.data()) != nullptr, "cannot create a temporary directory");
  return pattern;
}

}  // namespace

TestApi::TestApi(TestApiOptions options) : data_dir_(NewDataDir()) {
  server::ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.data_dir = data_dir_;
  server_options.store_url = "memory://";
  server_options.plain_http = true;
  server_options.io_threads = 1;
  server_options.worker_threads = 2;
  server_options.clock = options.clock;
  StatusOr<std::unique_ptr<server::Server>> started = server::Server::Start(server_options);
  DRAPLANE_CHECK_MSG(started.ok(), started.status().ToString().c_str());
  server_ = std::move(*started);
  client_ = ClientAs("admin", {"system:masters"});
  for (const std::string& name : options.namespaces) {
    api::corev1::Namespace ns;
    ns.metadata.name = name;
    StatusOr<api::corev1::Namespace> created = client::Create(*client_, ns);
    DRAPLANE_CHECK_MSG(created.ok(), created.status().ToString().c_str());
  }
}

TestApi::~TestApi() {
  client_.reset();
  server_->Shutdown();
  server_.reset();
  std::error_code ignored;
  std::filesystem::remove_all(data_dir_, ignored);
}

std::unique_ptr<client::ApiClient> TestApi::ClientAs(const std::string& user,
                                                     const std::vector<std::string>& groups) {
  StatusOr<std::unique_ptr<client::ApiClient>> client =
      cli::NewEmbeddedClient(server_->IssueCredentials(user, groups), "draplane-test");
  DRAPLANE_CHECK_MSG(client.ok(), client.status().ToString().c_str());
  return std::move(*client);
}

StatusOr<boost::json::value> TestApi::Do(const client::ApiRequest& request) {
  Interceptor interceptor;
  {
    MutexLock lock(mu_);
    interceptor = interceptor_;
  }
  if (interceptor) {
    if (std::optional<Status> failure = interceptor(request)) return *failure;
  }
  counts_[static_cast<size_t>(request.verb)].fetch_add(1);
  return client_->Do(request);
}

StatusOr<std::unique_ptr<client::WatchStream>> TestApi::Watch(const client::ApiRequest& request) {
  Interceptor interceptor;
  {
    MutexLock lock(mu_);
    interceptor = interceptor_;
  }
  if (interceptor) {
    if (std::optional<Status> failure = interceptor(request)) return *failure;
  }
  return client_->Watch(request);
}

void TestApi::SetInterceptor(Interceptor interceptor) {
  MutexLock lock(mu_);
  interceptor_ = std::move(interceptor);
}

void TestApi::SendBookmarks() { server_->SendWatchBookmarks(); }

void TestApi::CloseWatches() { server_->EndWatches(); }

void TestApi::CompactLog() {
  StatusOr<int64_t> revision = server_->store()->CurrentRevision();
  DRAPLANE_CHECK_MSG(revision.ok(), revision.status().ToString().c_str());
  Status compacted = server_->store()->Compact(*revision);
  DRAPLANE_CHECK_MSG(compacted.ok(), compacted.ToString().c_str());
}

int64_t TestApi::RequestCount(client::Verb verb) const {
  return counts_[static_cast<size_t>(verb)].load();
}

int64_t TestApi::resource_version() const {
  StatusOr<int64_t> revision = server_->store()->CurrentRevision();
  DRAPLANE_CHECK_MSG(revision.ok(), revision.status().ToString().c_str());
  return *revision;
}

}  // namespace draplane::testing
