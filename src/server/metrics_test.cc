// The API server's request metrics against a real in-process server: upstream's names and labels,
// and label values bounded by what the server serves (an unknown path, a refused request or a
// bogus subresource never becomes a series of its own).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "server/server.h"
#include "server/testing/test_client.h"

namespace draplane::server {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TestConnection;
using testing::TestResponse;

class ServerMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("draplane-metrics-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.plain_http = true;
    options.store_url = "memory://";
    options.data_dir = dir_.string();
    options.io_threads = 2;
    options.worker_threads = 4;
    StatusOr<std::unique_ptr<Server>> started = Server::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(started).value();
    const std::string url = server_->url();
    port_ = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    token_ = server_->IssueCredentials("admin", {"system:masters"}).token;
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    fs::remove_all(dir_);
  }
  TestResponse Do(const std::string& method, const std::string& target,
                  const std::string& body = "", bool authenticated = true) {
    auto connection = TestConnection::Connect(port_);
    EXPECT_TRUE(connection.ok());
    if (!connection.ok()) return {};
    std::vector<std::pair<std::string, std::string>> headers = {
        {"Content-Type", "application/json"}};
    if (authenticated) headers.push_back({"Authorization", "Bearer " + token_});
    StatusOr<TestResponse> response = (*connection)->Do(method, target, headers, body);
    EXPECT_TRUE(response.ok());
    return response.ok() ? *response : TestResponse{};
  }

  fs::path dir_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::string token_;
};

TEST_F(ServerMetricsTest, RequestsCountByVerbResourceAndCodeWithBoundedLabels) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces",
               R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}})")
                .status,
            201);
  ASSERT_EQ(Do("POST", "/api/v1/namespaces?dryRun=All&fieldManager=kubectl-create",
               R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-b"}})")
                .status,
            201);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Do("GET", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims").status, 200);
  }
  ASSERT_EQ(Do("GET", "/api/v1/namespaces/team-a/pods/missing").status, 404);
  ASSERT_EQ(Do("DELETE", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims").status, 200);
  // A client inventing groups, resources or subresources, or refused before the lookup (an
  // anonymous request), adds no label values.
  for (int i = 0; i < 20; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(Do("GET", "/apis/invented" + n + ".example.com/v1/things" + n).status, 404);
    EXPECT_EQ(Do("GET", "/api/v1/namespaces/team-a/pods/p/invented" + n).status, 404);
    EXPECT_EQ(Do("GET", "/api/v1/secret" + n, "", false).status, 403);
  }
  const std::string text = Do("GET", "/metrics").body;
  EXPECT_THAT(text, HasSubstr("apiserver_request_total{code=\"201\",component=\"apiserver\","
                              "dry_run=\"\",group=\"\",resource=\"namespaces\",scope=\"resource\","
                              "subresource=\"\",verb=\"POST\",version=\"v1\"} 1"));
  EXPECT_THAT(text,
              HasSubstr("apiserver_request_total{code=\"200\",component=\"apiserver\","
                        "dry_run=\"\",group=\"resource.k8s.io\",resource=\"resourceclaims\","
                        "scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 3"));
  EXPECT_THAT(text, HasSubstr("apiserver_request_total{code=\"404\",component=\"apiserver\","
                              "dry_run=\"\",group=\"\",resource=\"pods\",scope=\"resource\","
                              "subresource=\"\",verb=\"GET\",version=\"v1\"} 21"));
  // A collection's DELETE is upstream's DELETECOLLECTION (canonicalVerb), as LIST is its GET.
  EXPECT_THAT(text, HasSubstr("apiserver_request_total{code=\"200\",component=\"apiserver\","
                              "dry_run=\"\",group=\"resource.k8s.io\",resource=\"resourceclaims\","
                              "scope=\"namespace\",subresource=\"\",verb=\"DELETECOLLECTION\","
                              "version=\"v1\"} 1"));
  EXPECT_THAT(text, HasSubstr("apiserver_request_total{code=\"404\",component=\"apiserver\","
                              "dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"\","
                              "verb=\"LIST\",version=\"\"} 20"));
  EXPECT_THAT(text, HasSubstr("apiserver_request_total{code=\"403\",component=\"apiserver\","
                              "dry_run=\"\",group=\"\",resource=\"\",scope=\"\",subresource=\"\","
                              "verb=\"LIST\",version=\"\"} 20"));
  EXPECT_THAT(text,
              HasSubstr("apiserver_request_duration_seconds_count{component=\"apiserver\","
                        "dry_run=\"\",group=\"resource.k8s.io\",resource=\"resourceclaims\","
                        "scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\"} 3"));
  EXPECT_THAT(text,
              HasSubstr("apiserver_request_total{code=\"201\",component=\"apiserver\","
                        "dry_run=\"All\",group=\"\",resource=\"namespaces\",scope=\"resource\","
                        "subresource=\"\",verb=\"POST\",version=\"v1\"} 1"));
  // Upstream's buckets: the SLO queries read le="1", "5" and "30".
  EXPECT_THAT(
      text,
      HasSubstr("apiserver_request_duration_seconds_bucket{component=\"apiserver\","
                "dry_run=\"\",group=\"resource.k8s.io\",resource=\"resourceclaims\","
                "scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\",le=\"1\"} 3"));
  EXPECT_THAT(
      text,
      HasSubstr("apiserver_request_sli_duration_seconds_bucket{component=\"apiserver\","
                "group=\"resource.k8s.io\",resource=\"resourceclaims\","
                "scope=\"namespace\",subresource=\"\",verb=\"LIST\",version=\"v1\",le=\"30\"} 3"));
  EXPECT_THAT(text, Not(HasSubstr("invented")));
  EXPECT_THAT(text, Not(HasSubstr("things")));
  EXPECT_THAT(text, Not(HasSubstr("secret")));
  // The /metrics request itself is the one read in flight; no mutation is.
  EXPECT_THAT(text, HasSubstr("apiserver_current_inflight_requests{request_kind=\"readOnly\"} 1"));
  EXPECT_THAT(text, HasSubstr("apiserver_current_inflight_requests{request_kind=\"mutating\"} 0"));
}

}  // namespace
}  // namespace draplane::server
