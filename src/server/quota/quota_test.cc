// ResourceQuota admission and the quota controller against a real in-process server (memory
// store, plain HTTP on a free loopback port) and real HTTP clients.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <filesystem>
#include <thread>

#include "server/server.h"
#include "server/testing/test_client.h"

namespace draplane::server::quota {
namespace {

namespace fs = std::filesystem;
using testing::TestConnection;
using testing::TestResponse;

class QuotaServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("draplane-quota-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.plain_http = true;
    options.store_url = "memory://";
    options.data_dir = dir_.string();
    options.io_threads = 2;
    options.worker_threads = 8;
    options.clock = &clock_;
    options.quota_resync_period = std::chrono::minutes(5);
    StatusOr<std::unique_ptr<Server>> started = Server::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(started).value();
    const std::string url = server_->url();
    port_ = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
    token_ = server_->IssueCredentials("admin", {"system:masters"}).token;
    ASSERT_EQ(Do("POST", "/api/v1/namespaces",
                 R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}})")
                  .status,
              201);
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    fs::remove_all(dir_);
  }

  TestResponse Do(const std::string& method, const std::string& target,
                  const std::string& body = "",
                  const std::string& content_type = "application/json") {
    auto connection = TestConnection::Connect(port_);
    EXPECT_TRUE(connection.ok());
    if (!connection.ok()) return {};
    StatusOr<TestResponse> response =
        (*connection)
            ->Do(method, target,
                 {{"Authorization", "Bearer " + token_}, {"Content-Type", content_type}}, body);
    EXPECT_TRUE(response.ok());
    return response.ok() ? *response : TestResponse{};
  }

  static std::string Claim(const std::string& name, const std::string& device_class = "gpu",
                           int count = 1) {
    return R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" +
           name +
           R"("},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":")" +
           device_class + R"(","count":)" + std::to_string(count) + "}}]}}}";
  }

  boost::json::object Quota(const std::string& name) {
    TestResponse r = Do("GET", "/api/v1/namespaces/team-a/resourcequotas/" + name);
    EXPECT_EQ(r.status, 200) << r.body;
    return boost::json::parse(r.body).as_object();
  }
  static std::string Used(const boost::json::object& quota, const std::string& key) {
    const boost::json::value* status = quota.if_contains("status");
    if (status == nullptr) return "";
    const boost::json::value* used = status->as_object().if_contains("used");
    if (used == nullptr) return "";
    const boost::json::value* value = used->as_object().if_contains(key);
    return value == nullptr ? "" : std::string(value->as_string());
  }

  ManualClock clock_;
  fs::path dir_;
  std::unique_ptr<Server> server_;
  uint16_t port_ = 0;
  std::string token_;
};

TEST_F(QuotaServerTest, ConcurrentCreatesNeverOverspendTheLastUnit) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"claims"},
                   "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"20",
                                   "gpu.deviceclass.resource.k8s.io/devices":"30"}}})")
                .status,
            201);
  constexpr int kThreads = 8;
  constexpr int kPerThread = 10;
  std::atomic<int> created{0}, refused{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto connection = TestConnection::Connect(port_);
      if (!connection.ok()) {
        other += kPerThread;
        return;
      }
      for (int i = 0; i < kPerThread; ++i) {
        std::string name = "c-" + std::to_string(t) + "-" + std::to_string(i);
        StatusOr<TestResponse> r =
            (*connection)
                ->Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims",
                     {{"Authorization", "Bearer " + token_}, {"Content-Type", "application/json"}},
                     Claim(name));
        if (!r.ok()) {
          ++other;
        } else if (r->status == 201) {
          ++created;
        } else if (r->status == 403 &&
                   r->body.find("exceeded quota: claims") != std::string::npos) {
          ++refused;
        } else {
          ++other;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(created.load(), 20);
  EXPECT_EQ(refused.load(), kThreads * kPerThread - 20);
  EXPECT_EQ(other.load(), 0);
  boost::json::object quota = Quota("claims");
  EXPECT_EQ(Used(quota, "count/resourceclaims.resource.k8s.io"), "20");
  EXPECT_EQ(Used(quota, "gpu.deviceclass.resource.k8s.io/devices"), "20");
  TestResponse list = Do("GET", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims");
  EXPECT_EQ(boost::json::parse(list.body).at("items").as_array().size(), 20u);
}

TEST_F(QuotaServerTest, AFloodOfObjectsStopsAtTheObjectCount) {
  // Issue 17's hostile tenant: count/<resource>.<group> bounds every kind, draplane's own too.
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"objects"},
                   "spec":{"hard":{"count/resourceclaimtemplates.resource.k8s.io":"5",
                                   "count/leases.coordination.k8s.io":"2"}}})")
                .status,
            201);
  int created = 0;
  std::string last;
  for (int i = 0; i < 50; ++i) {
    TestResponse r = Do(
        "POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaimtemplates",
        R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"t-)" +
            std::to_string(i) +
            R"("},"spec":{"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu"}}]}}}})");
    if (r.status == 201) {
      ++created;
    } else {
      EXPECT_EQ(r.status, 403);
      last = r.body;
    }
  }
  EXPECT_EQ(created, 5);
  // The used gauge follows admission's charges: the quota is full, and its alert can fire now,
  // not at the next sync.
  const std::string full_gauge =
      R"(draplane_quota_used{namespace="team-a",quota="objects",resource="count/resourceclaimtemplates.resource.k8s.io"} 5)";
  std::string metrics;
  EXPECT_TRUE(testing::Eventually([&] {
    metrics = Do("GET", "/metrics").body;
    return metrics.find(full_gauge) != std::string::npos;
  })) << metrics;
  EXPECT_NE(last.find(R"("reason":"Forbidden")"), std::string::npos) << last;
  EXPECT_NE(last.find("resourceclaimtemplates.resource.k8s.io \\\"t-49\\\" is forbidden: exceeded "
                      "quota: objects, requested: count/resourceclaimtemplates.resource.k8s.io=1, "
                      "used: count/resourceclaimtemplates.resource.k8s.io=5, limited: "
                      "count/resourceclaimtemplates.resource.k8s.io=5"),
            std::string::npos)
      << last;
}

TEST_F(QuotaServerTest, DeletingGivesTheQuotaBack) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"claims"},
                   "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"1"}}})")
                .status,
            201);
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("a")).status,
      201);
  EXPECT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("b")).status,
      403);
  ASSERT_EQ(Do("DELETE", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/a").status,
            200);
  // The controller sees the delete and gives the unit back.
  ASSERT_TRUE(testing::Eventually(
      [&] { return Used(Quota("claims"), "count/resourceclaims.resource.k8s.io") == "0"; }));
  EXPECT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("b")).status,
      201);
}

TEST_F(QuotaServerTest, AllocationModeLeavesDeviceKeysToTheScheduler) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"devices",
                   "annotations":{"draplane.dev/device-quota-mode":"Allocation"}},
                   "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"2",
                                   "h100.deviceclass.resource.k8s.io/devices":"1"}}})")
                .status,
            201);
  // The device key is not checked at admission: a 4-device claim is admitted...
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("a", "h100", 4))
          .status,
      201);
  boost::json::object quota = Quota("devices");
  EXPECT_EQ(Used(quota, "count/resourceclaims.resource.k8s.io"), "1");
  // ... and not charged: the scheduler charges the allocation.
  EXPECT_EQ(Used(quota, "h100.deviceclass.resource.k8s.io/devices"), "0");
  // The scheduler's charge survives the controller's recomputes.
  std::string rv(quota.at("metadata").at("resourceVersion").as_string());
  ASSERT_EQ(Do("PATCH", "/api/v1/namespaces/team-a/resourcequotas/devices/status",
               R"({"metadata":{"resourceVersion":")" + rv +
                   R"("},"status":{"used":{"h100.deviceclass.resource.k8s.io/devices":"1"}}})",
               "application/merge-patch+json")
                .status,
            200);
  // Its gauge follows the scheduler's write: no sync of the controller follows a charge.
  const std::string charged_gauge =
      R"(draplane_quota_used{namespace="team-a",quota="devices",resource="h100.deviceclass.resource.k8s.io/devices"} 1)";
  std::string metrics;
  ASSERT_TRUE(testing::Eventually([&] {
    metrics = Do("GET", "/metrics").body;
    return metrics.find(charged_gauge) != std::string::npos;
  })) << metrics;
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("b", "h100", 1))
          .status,
      201);
  ASSERT_EQ(Do("DELETE", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/a").status,
            200);
  ASSERT_TRUE(testing::Eventually(
      [&] { return Used(Quota("devices"), "count/resourceclaims.resource.k8s.io") == "1"; }));
  EXPECT_EQ(Used(Quota("devices"), "h100.deviceclass.resource.k8s.io/devices"), "1");
  // The object count still holds.
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("c", "h100", 1))
          .status,
      201);
  TestResponse refused = Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims",
                            Claim("d", "h100", 1));
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.body.find("limited: count/resourceclaims.resource.k8s.io=2"), std::string::npos)
      << refused.body;
}

TEST_F(QuotaServerTest, TheResyncCorrectsDriftAndSaysSo) {
  // The claim before the quota: the controller's only pending work is then the new quota's
  // first count, which the wait below sees done. (A claim created under the quota leaves a sync
  // queued that, on a loaded machine, ran after the wrong value below and corrected it early,
  // without the Event.)
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("a")).status,
      201);
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"claims"},
                   "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"10"}}})")
                .status,
            201);
  ASSERT_TRUE(testing::Eventually(
      [&] { return Used(Quota("claims"), "count/resourceclaims.resource.k8s.io") == "1"; }));
  // Someone writes a wrong value (a lost charge, a buggy client).
  std::string rv(Quota("claims").at("metadata").at("resourceVersion").as_string());
  ASSERT_EQ(Do("PATCH", "/api/v1/namespaces/team-a/resourcequotas/claims/status",
               R"({"metadata":{"resourceVersion":")" + rv +
                   R"("},"status":{"used":{"count/resourceclaims.resource.k8s.io":"7"}}})",
               "application/merge-patch+json")
                .status,
            200);
  EXPECT_EQ(Used(Quota("claims"), "count/resourceclaims.resource.k8s.io"), "7");
  // The periodic resync (the injected clock passes the period) puts it right and records it.
  clock_.Advance(std::chrono::minutes(6));
  ASSERT_TRUE(testing::Eventually(
      [&] { return Used(Quota("claims"), "count/resourceclaims.resource.k8s.io") == "1"; }));
  std::string events;
  ASSERT_TRUE(testing::Eventually([&] {
    events = Do("GET", "/api/v1/namespaces/team-a/events").body;
    return events.find("QuotaUsageCorrected") != std::string::npos;
  }));
  EXPECT_NE(events.find("count/resourceclaims.resource.k8s.io 7 -> 1"), std::string::npos)
      << events;
  TestResponse metrics = Do("GET", "/metrics");
  EXPECT_NE(metrics.body.find(R"(draplane_quota_drift_total{namespace="team-a",quota="claims"} 1)"),
            std::string::npos);
}

TEST_F(QuotaServerTest, ADeletedQuotaLeavesNoGaugeSeries) {
  for (const char* name : {"kept", "gone"}) {
    ASSERT_EQ(
        Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
           std::string(R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":")") + name +
               R"("},"spec":{"hard":{"count/resourceclaims.resource.k8s.io":"2",
                                           "count/pods":"3"}}})")
            .status,
        201);
  }
  auto metrics = [&] { return Do("GET", "/metrics").body; };
  const std::string gone_used =
      R"(draplane_quota_used{namespace="team-a",quota="gone",resource="count/pods"} 0)";
  const std::string gone_hard =
      R"(draplane_quota_hard{namespace="team-a",quota="gone",resource="count/resourceclaims.resource.k8s.io"} 2)";
  ASSERT_TRUE(testing::Eventually([&] {
    std::string m = metrics();
    return m.find(gone_used) != std::string::npos && m.find(gone_hard) != std::string::npos;
  }));
  // A key taken out of a quota loses its series; the quota's other keys keep theirs.
  std::string rv(Quota("kept").at("metadata").at("resourceVersion").as_string());
  ASSERT_EQ(Do("PUT", "/api/v1/namespaces/team-a/resourcequotas/kept",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"kept",
                   "resourceVersion":")" +
                   rv + R"("},"spec":{"hard":{"count/pods":"3"}}})")
                .status,
            200);
  ASSERT_EQ(Do("DELETE", "/api/v1/namespaces/team-a/resourcequotas/gone").status, 200);
  std::string m;
  ASSERT_TRUE(testing::Eventually([&] {
    m = metrics();
    return m.find(R"(quota="gone")") == std::string::npos &&
           m.find(R"(quota="kept",resource="count/resourceclaims)") == std::string::npos;
  })) << m;
  EXPECT_NE(
      m.find(R"(draplane_quota_hard{namespace="team-a",quota="kept",resource="count/pods"} 3)"),
      std::string::npos)
      << m;
}

TEST_F(QuotaServerTest, DryRunChecksWithoutCharging) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"claims"},
                   "spec":{"hard":{"count/resourceclaims.resource.k8s.io":"1"}}})")
                .status,
            201);
  EXPECT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims?dryRun=All", Claim("a"))
          .status,
      201);
  EXPECT_EQ(Used(Quota("claims"), "count/resourceclaims.resource.k8s.io"), "0");
  ASSERT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims", Claim("a")).status,
      201);
  EXPECT_EQ(
      Do("POST", "/apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims?dryRun=All", Claim("b"))
          .status,
      403);
}

TEST_F(QuotaServerTest, PodsAreChargedTheirComputeAndMustStateIt) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"compute"},
                   "spec":{"hard":{"pods":"2","requests.cpu":"3"}}})")
                .status,
            201);
  auto pod = [](const std::string& name, const std::string& resources) {
    return R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":")" + name +
           R"("},"spec":{"containers":[{"name":"c","image":"x",)" + resources + "}]}}";
  };
  TestResponse unstated =
      Do("POST", "/api/v1/namespaces/team-a/pods", pod("p0", R"("resources":{})"));
  EXPECT_EQ(unstated.status, 403);
  EXPECT_NE(unstated.body.find("failed quota: compute: must specify requests.cpu for: c"),
            std::string::npos)
      << unstated.body;
  EXPECT_EQ(Do("POST", "/api/v1/namespaces/team-a/pods",
               pod("p1", R"("resources":{"requests":{"cpu":"2"}})"))
                .status,
            201);
  TestResponse over = Do("POST", "/api/v1/namespaces/team-a/pods",
                         pod("p2", R"("resources":{"requests":{"cpu":"2"}})"));
  EXPECT_EQ(over.status, 403);
  EXPECT_NE(over.body.find("requested: requests.cpu=2, used: requests.cpu=2, limited: "
                           "requests.cpu=3"),
            std::string::npos)
      << over.body;
  EXPECT_EQ(Do("POST", "/api/v1/namespaces/team-a/pods",
               pod("p3", R"("resources":{"requests":{"cpu":"1"}})"))
                .status,
            201);
  boost::json::object quota = Quota("compute");
  EXPECT_EQ(Used(quota, "pods"), "2");
  EXPECT_EQ(Used(quota, "requests.cpu"), "3");
}

// The controller looks only at changes of resources a quota of the namespace counts on the server
// (controller.h): a quota that starts counting Pods must make it see their changes from then on.
TEST_F(QuotaServerTest, AQuotaThatStartsCountingPodsSeesTheirChanges) {
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/resourcequotas",
               R"({"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"devices",
                   "annotations":{"draplane.dev/device-quota-mode":"Allocation"}},
                   "spec":{"hard":{"h100.deviceclass.resource.k8s.io/devices":"4"}}})")
                .status,
            201);
  const std::string pod = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},)"
                          R"("spec":{"containers":[{"name":"c","image":"x"}]}})";
  ASSERT_EQ(Do("POST", "/api/v1/namespaces/team-a/pods", pod).status, 201);
  // Nothing counts Pods yet; then the quota does, and its sync counts the Pod. The controller
  // may write the quota's status between the read and the write: read again on a conflict.
  ASSERT_TRUE(testing::Eventually([&] {
    boost::json::object quota = Quota("devices");
    quota["spec"].as_object()["hard"].as_object()["pods"] = "5";
    return Do("PUT", "/api/v1/namespaces/team-a/resourcequotas/devices",
              boost::json::serialize(quota))
               .status == 200;
  }));
  ASSERT_TRUE(testing::Eventually([&] { return Used(Quota("devices"), "pods") == "1"; }));
  // The Pod turns terminal: it no longer counts.
  TestResponse current = Do("GET", "/api/v1/namespaces/team-a/pods/p1");
  ASSERT_EQ(current.status, 200);
  boost::json::object p1 = boost::json::parse(current.body).as_object();
  p1["status"] = boost::json::object{{"phase", "Succeeded"}};
  ASSERT_EQ(
      Do("PUT", "/api/v1/namespaces/team-a/pods/p1/status", boost::json::serialize(p1)).status,
      200);
  ASSERT_TRUE(testing::Eventually([&] { return Used(Quota("devices"), "pods") == "0"; }));
}

}  // namespace
}  // namespace draplane::server::quota
