// The two Event APIs share one storage (api/events.h). A store written by an older server kept
// events.k8s.io/v1 Events under their own resource; the server moves them at start.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "server/server.h"
#include "server/testing/test_client.h"
#include "store/store.h"
#include "testing/temp_dir.h"

namespace draplane::server {
namespace {

constexpr std::string_view kOldStorage = "events.k8s.io/events";

TEST(EventsStorageTest, AnOlderServersEventsV1EventsJoinTheSharedStorageAtStart) {
  // Removed however the test ends (an assertion returns early).
  const draplane::testing::TempDir dir;
  const std::string store_url = "sqlite://" + dir.File("store.db");
  const store::Key old_key{std::string(kOldStorage), "team-a", "trainer-0.scheduled"};
  {
    StatusOr<std::unique_ptr<store::Store>> store = store::OpenStore(store_url, {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)
                    ->Create(old_key, R"({"apiVersion":"events.k8s.io/v1","kind":"Event",)"
                                      R"("metadata":{"name":"trainer-0.scheduled",)"
                                      R"("namespace":"team-a","uid":"u-1"},)"
                                      R"("eventTime":"2026-12-06T10:00:00.000000Z",)"
                                      R"("reportingController":"example.com/scheduler",)"
                                      R"("reportingInstance":"scheduler-1","action":"Binding",)"
                                      R"("reason":"Scheduled","type":"Normal",)"
                                      R"("regarding":{"kind":"Pod","name":"trainer-0"},)"
                                      R"("note":"bound to node-1"})")
                    .ok());
  }

  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.plain_http = true;
  options.store_url = store_url;
  options.data_dir = dir.path();
  options.event_ttl = Duration(0);  // the Event is older than any TTL; keep it
  StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string url = (*server)->url();
  const uint16_t port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  const std::string token = (*server)->IssueCredentials("admin", {"system:masters"}).token;
  auto get = [&](const std::string& target) {
    StatusOr<std::unique_ptr<testing::TestConnection>> c = testing::TestConnection::Connect(port);
    EXPECT_TRUE(c.ok());
    StatusOr<testing::TestResponse> r =
        (*c)->Do("GET", target, {{"Authorization", "Bearer " + token}});
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : testing::TestResponse{};
  };

  testing::TestResponse core = get("/api/v1/namespaces/team-a/events/trainer-0.scheduled");
  ASSERT_EQ(core.status, 200) << core.body;
  boost::json::object event = boost::json::parse(core.body).as_object();
  EXPECT_EQ(event.at("apiVersion"), "v1");
  EXPECT_EQ(event.at("message"), "bound to node-1");
  EXPECT_EQ(event.at("involvedObject").at("name"), "trainer-0");
  EXPECT_EQ(event.at("reportingComponent"), "example.com/scheduler");
  EXPECT_EQ(event.at("metadata").at("uid"), "u-1");

  testing::TestResponse v1 = get("/apis/events.k8s.io/v1/namespaces/team-a/events");
  ASSERT_EQ(v1.status, 200) << v1.body;
  const boost::json::value list = boost::json::parse(v1.body);
  const boost::json::array& items = list.at("items").as_array();
  ASSERT_EQ(items.size(), 1u) << v1.body;
  EXPECT_EQ(items[0].at("note"), "bound to node-1");
  EXPECT_EQ(items[0].at("regarding").at("name"), "trainer-0");
  (*server)->Shutdown();
  server->reset();

  StatusOr<std::unique_ptr<store::Store>> store = store::OpenStore(store_url, {});
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->Get(old_key).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace draplane::server
