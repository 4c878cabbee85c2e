// Several `draplane serve` instances on one etcd behave as one control plane: a write through one
// server is read, listed and watched through the other, and a RoleBinding created through one
// authorizes requests on the other. Uses the real etcd (tests/store/etcd_launcher.h).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>

#include "server/server.h"
#include "server/testing/test_client.h"
#include "tests/store/etcd_launcher.h"

namespace draplane::server {
namespace {

namespace fs = std::filesystem;
using testing::TestConnection;
using testing::TestResponse;
using testing::WatchStream;

struct Instance {
  std::unique_ptr<Server> server;
  uint16_t port = 0;
  std::string admin;
  std::string alice;

  TestResponse Do(const std::string& token, const std::string& method, const std::string& target,
                  const std::string& body = "") const {
    auto c = TestConnection::Connect(port);
    EXPECT_TRUE(c.ok());
    auto r = (*c)->Do(method, target,
                      {{"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}},
                      body);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : TestResponse{};
  }
};

Instance Start(const std::string& endpoint, const fs::path& dir) {
  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.plain_http = true;
  options.store_url = "etcd://" + endpoint;
  options.data_dir = dir.string();
  options.io_threads = 1;
  options.worker_threads = 2;
  StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  Instance out;
  out.server = std::move(server).value();
  std::string url = out.server->url();
  out.port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  out.admin = out.server->IssueCredentials("admin", {"system:masters"}).token;
  out.alice = out.server->IssueCredentials("alice", {"tenants"}).token;
  return out;
}

TEST(MultiServerTest, TwoServersOnOneEtcdAreOneControlPlane) {
  fs::path dir = fs::temp_directory_path() / ("draplane-multi-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto etcd = store::testing::EtcdProcess::Start((dir / "etcd").string());
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  Instance a = Start((*etcd)->endpoint(), dir / "a");
  Instance b = Start((*etcd)->endpoint(), dir / "b");

  ASSERT_EQ(a.Do(a.admin, "POST", "/api/v1/namespaces",
                 R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shared"}})")
                .status,
            201);
  const std::string claims = "/apis/resource.k8s.io/v1/namespaces/shared/resourceclaims";
  TestResponse list = b.Do(b.admin, "GET", claims);
  ASSERT_EQ(list.status, 200) << list.body;
  std::string rv(boost::json::parse(list.body).at("metadata").at("resourceVersion").as_string());

  auto watch = WatchStream::Open(b.port, claims + "?watch=true&resourceVersion=" + rv,
                                 {{"Authorization", "Bearer " + b.admin}});
  ASSERT_TRUE(watch.ok());
  ASSERT_EQ((*watch)->status(), 200);

  TestResponse created = a.Do(
      a.admin, "POST", claims,
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c1"},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}})");
  ASSERT_EQ(created.status, 201) << created.body;
  std::string created_rv(
      boost::json::parse(created.body).at("metadata").at("resourceVersion").as_string());

  std::vector<std::string> lines;
  (*watch)->WaitLines(&lines, std::chrono::seconds(60));
  ASSERT_FALSE(lines.empty()) << "server b's watch did not see server a's write";
  boost::json::value event = boost::json::parse(lines[0]);
  EXPECT_EQ(event.at("type"), "ADDED");
  EXPECT_EQ(event.at("object").at("metadata").at("name"), "c1");
  EXPECT_EQ(event.at("object").at("metadata").at("resourceVersion").as_string(), created_rv);

  TestResponse got = b.Do(b.admin, "GET", claims + "/c1");
  EXPECT_EQ(got.status, 200);
  // An update through b with a's resourceVersion succeeds: one revision space.
  TestResponse patched = b.Do(
      b.admin, "PUT", claims + "/c1",
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c1","resourceVersion":")" +
          created_rv +
          R"(","labels":{"via":"b"}},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}})");
  EXPECT_EQ(patched.status, 200) << patched.body;

  // RBAC written through a authorizes on b (b's RBAC cache follows etcd).
  EXPECT_EQ(b.Do(b.alice, "GET", claims).status, 403);
  ASSERT_EQ(
      a.Do(a.admin, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/shared/rolebindings",
           R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"alice"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"draplane:tenant"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]})")
          .status,
      201);
  int status = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((status = b.Do(b.alice, "GET", claims).status) != 200 &&
         std::chrono::steady_clock::now() < deadline) {
    // b learns about the binding through its etcd watch; poll until it has.
    std::vector<std::string> ignored;
    (*watch)->WaitLines(&ignored, std::chrono::milliseconds(100));
  }
  EXPECT_EQ(status, 200) << "server b never saw the RoleBinding written through server a";

  (*watch)->Close();
  a.server->Shutdown();
  b.server->Shutdown();
  etcd->reset();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace draplane::server
