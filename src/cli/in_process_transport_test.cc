// The in-process transport against a real server (memory store, port 0, temporary data
// directory): the REST client's verbs, Kubernetes Status errors, watches ended by the client and
// by server shutdown, authentication; and the stream mechanics against scripted dispatchers
// (backlog limit, on_closed exactly once, dropped and abandoned requests).
#include "cli/in_process_transport.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <sstream>
#include <thread>

#include "client/rest_client.h"

namespace draplane::cli {
namespace {

namespace http = server::http;

const client::ResourceType& Claims() {
  return client::ResourceOf<api::resourcev1::ResourceClaim>();
}

boost::json::value Claim(const std::string& name) {
  return boost::json::parse(
      R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":")" + name +
      R"("},"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}})");
}

std::string NameOf(const boost::json::value& object) {
  return std::string(object.at("metadata").at("name").as_string());
}

class InProcessTransportTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(/*in_process=*/true); }

  void TearDown() override {
    if (server_) server_->Shutdown();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void Start(bool in_process) {
    dir_ = std::filesystem::temp_directory_path() /
           ("draplane-inproc-" + std::to_string(::getpid()) + "-" +
            std::to_string(reinterpret_cast<uintptr_t>(this)));
    server::ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.data_dir = dir_.string();
    options.store_url = "memory://";
    options.io_threads = 1;
    options.worker_threads = 2;
    options.embedded_in_process = in_process;
    StatusOr<std::unique_ptr<server::Server>> started = server::Server::Start(options);
    ASSERT_TRUE(started.ok()) << started.status().ToString();
    server_ = std::move(started).value();
    credentials_ = server_->IssueCredentials("inproc-admin", {"system:masters"});
  }

  std::shared_ptr<client::Transport> Transport(const std::string& token) {
    StatusOr<std::unique_ptr<client::Transport>> transport =
        NewInProcessTransport(credentials_.dispatch, {.bearer_token = token});
    EXPECT_TRUE(transport.ok()) << transport.status().ToString();
    return std::shared_ptr<client::Transport>(std::move(transport).value());
  }

  std::unique_ptr<client::ApiClient> Client() {
    return client::NewRestClient(Transport(credentials_.token));
  }

  client::HttpResponse Raw(const std::string& method, const std::string& target,
                           const std::string& body = "") {
    client::HttpRequest request;
    request.method = method;
    request.target = target;
    request.body = body;
    if (!body.empty()) request.content_type = "application/json";
    StatusOr<client::HttpResponse> response = Transport(credentials_.token)->RoundTrip(request);
    EXPECT_TRUE(response.ok()) << response.status().ToString();
    return response.ok() ? *response : client::HttpResponse{};
  }

  // The registered watchers of resourceclaims, from /metrics.
  int64_t ClaimWatchers() {
    client::HttpResponse metrics = Raw("GET", "/metrics");
    EXPECT_EQ(metrics.status, 200);
    std::istringstream lines(metrics.body);
    for (std::string line; std::getline(lines, line);) {
      if (line.starts_with("apiserver_registered_watchers{") &&
          line.find("resource=\"resourceclaims\"") != std::string::npos) {
        return static_cast<int64_t>(std::stod(line.substr(line.rfind(' ') + 1)));
      }
    }
    return 0;
  }

  std::filesystem::path dir_;
  std::unique_ptr<server::Server> server_;
  server::ClientCredentials credentials_;
};

TEST_F(InProcessTransportTest, CreatesGetsUpdatesAndListsThroughTheHandlerChain) {
  ASSERT_TRUE(credentials_.dispatch);
  std::unique_ptr<client::ApiClient> api = Client();
  StatusOr<boost::json::value> created = api->Do({.verb = client::Verb::kCreate,
                                                  .resource = &Claims(),
                                                  .namespace_ = "default",
                                                  .body = Claim("a")});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(NameOf(*created), "a");
  EXPECT_FALSE(created->at("metadata").at("uid").as_string().empty());

  StatusOr<boost::json::value> got = api->Do(
      {.verb = client::Verb::kGet, .resource = &Claims(), .namespace_ = "default", .name = "a"});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->at("metadata").at("resourceVersion"),
            created->at("metadata").at("resourceVersion"));

  boost::json::value changed = *got;
  changed.at("metadata").as_object()["labels"] = boost::json::object{{"tier", "gold"}};
  StatusOr<boost::json::value> updated = api->Do({.verb = client::Verb::kUpdate,
                                                  .resource = &Claims(),
                                                  .namespace_ = "default",
                                                  .name = "a",
                                                  .body = changed});
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ(updated->at("metadata").at("labels").at("tier"), "gold");
  EXPECT_NE(updated->at("metadata").at("resourceVersion"),
            got->at("metadata").at("resourceVersion"));

  ASSERT_TRUE(api->Do({.verb = client::Verb::kCreate,
                       .resource = &Claims(),
                       .namespace_ = "default",
                       .body = Claim("b")})
                  .ok());
  StatusOr<boost::json::value> list = api->Do({.verb = client::Verb::kList,
                                               .resource = &Claims(),
                                               .namespace_ = "default",
                                               .list = {.label_selector = "tier=gold"}});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  const boost::json::array& items = list->at("items").as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(NameOf(items[0]), "a");
}

TEST_F(InProcessTransportTest, ErrorsAreKubernetesStatusAnswers) {
  client::HttpResponse missing =
      Raw("GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.content_type, "application/json");
  boost::json::value status = boost::json::parse(missing.body);
  EXPECT_EQ(status.at("kind"), "Status");
  EXPECT_EQ(status.at("reason"), "NotFound");
  EXPECT_EQ(status.at("message"), "resourceclaims.resource.k8s.io \"nope\" not found");

  std::string body = boost::json::serialize(Claim("dup"));
  std::string collection = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims";
  EXPECT_EQ(Raw("POST", collection, body).status, 201);
  client::HttpResponse again = Raw("POST", collection, body);
  EXPECT_EQ(again.status, 409);
  status = boost::json::parse(again.body);
  EXPECT_EQ(status.at("reason"), "AlreadyExists");
  EXPECT_EQ(status.at("code"), 409);

  // The REST client maps them as it does over HTTP.
  StatusOr<boost::json::value> got = Client()->Do(
      {.verb = client::Verb::kGet, .resource = &Claims(), .namespace_ = "default", .name = "x"});
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
}

TEST_F(InProcessTransportTest, AStaleResourceVersionIsAConflict) {
  std::unique_ptr<client::ApiClient> api = Client();
  StatusOr<boost::json::value> created = api->Do({.verb = client::Verb::kCreate,
                                                  .resource = &Claims(),
                                                  .namespace_ = "default",
                                                  .body = Claim("c")});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  boost::json::value first = *created;
  first.at("metadata").as_object()["labels"] = boost::json::object{{"n", "1"}};
  ASSERT_TRUE(api->Do({.verb = client::Verb::kUpdate,
                       .resource = &Claims(),
                       .namespace_ = "default",
                       .name = "c",
                       .body = first})
                  .ok());
  boost::json::value stale = *created;
  stale.at("metadata").as_object()["labels"] = boost::json::object{{"n", "2"}};
  client::HttpResponse conflict =
      Raw("PUT", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c",
          boost::json::serialize(stale));
  EXPECT_EQ(conflict.status, 409);
  boost::json::value status = boost::json::parse(conflict.body);
  EXPECT_EQ(status.at("reason"), "Conflict");
  EXPECT_NE(std::string(status.at("message").as_string()).find("the object has been modified"),
            std::string::npos);
}

TEST_F(InProcessTransportTest, AWatchDeliversEventsUntilCancelledFromAnotherThread) {
  std::unique_ptr<client::ApiClient> api = Client();
  int64_t watchers_before = ClaimWatchers();
  StatusOr<boost::json::value> list =
      api->Do({.verb = client::Verb::kList, .resource = &Claims(), .namespace_ = "default"});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  std::string from(list->at("metadata").at("resourceVersion").as_string());
  StatusOr<std::unique_ptr<client::WatchStream>> watch =
      api->Watch({.resource = &Claims(),
                  .namespace_ = "default",
                  .list = {.resource_version = from, .allow_watch_bookmarks = true}});
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();

  for (const char* name : {"w1", "w2"}) {
    ASSERT_TRUE(api->Do({.verb = client::Verb::kCreate,
                         .resource = &Claims(),
                         .namespace_ = "default",
                         .body = Claim(name)})
                    .ok());
  }
  for (const char* name : {"w1", "w2"}) {
    StatusOr<std::optional<client::WatchEvent>> event = (*watch)->Next();
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    ASSERT_TRUE(event->has_value());
    EXPECT_EQ((*event)->type, "ADDED");
    EXPECT_EQ(NameOf(*(*event)->object), name);
  }
  // An event was delivered, so the server has registered the watcher.
  EXPECT_EQ(ClaimWatchers(), watchers_before + 1);

  // Next blocks (nothing more happens) or has not started yet; Cancel ends it either way.
  StatusOr<std::optional<client::WatchEvent>> last = std::optional<client::WatchEvent>();
  std::thread reader([&] { last = (*watch)->Next(); });
  (*watch)->Cancel();
  reader.join();
  EXPECT_EQ(last.status().code(), StatusCode::kCancelled);
  // The server's on_closed ran inside Cancel: its watcher is gone.
  EXPECT_EQ(ClaimWatchers(), watchers_before);
}

TEST_F(InProcessTransportTest, ServerShutdownEndsOpenWatchesAndLaterRequests) {
  std::shared_ptr<client::Transport> transport = Transport(credentials_.token);
  std::unique_ptr<client::ApiClient> api = client::NewRestClient(transport);
  StatusOr<std::unique_ptr<client::WatchStream>> watch =
      api->Watch({.resource = &Claims(), .namespace_ = "default", .list = {}});
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(api->Do({.verb = client::Verb::kCreate,
                       .resource = &Claims(),
                       .namespace_ = "default",
                       .body = Claim("s")})
                  .ok());
  StatusOr<std::optional<client::WatchEvent>> event = (*watch)->Next();
  ASSERT_TRUE(event.ok() && event->has_value()) << event.status().ToString();
  EXPECT_EQ(NameOf(*(*event)->object), "s");

  server_->Shutdown();
  event = (*watch)->Next();
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_FALSE(event->has_value()) << "a server-side end is a normal end of the stream";

  StatusOr<boost::json::value> after = api->Do(
      {.verb = client::Verb::kGet, .resource = &Claims(), .namespace_ = "default", .name = "s"});
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable) << after.status().ToString();
  // The client side may outlive the server.
  server_.reset();
  watch->reset();
  after = api->Do(
      {.verb = client::Verb::kGet, .resource = &Claims(), .namespace_ = "default", .name = "s"});
  EXPECT_EQ(after.status().code(), StatusCode::kUnavailable) << after.status().ToString();
}

TEST_F(InProcessTransportTest, ABadTokenIsUnauthorized) {
  client::HttpRequest request;
  request.method = "GET";
  request.target = "/api/v1/namespaces";
  StatusOr<client::HttpResponse> response = Transport("not-a-token")->RoundTrip(request);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 401);
  EXPECT_EQ(boost::json::parse(response->body).at("reason"), "Unauthorized");

  // Without a token the request is anonymous, which RBAC refuses for namespaces.
  response = Transport("")->RoundTrip(request);
  ASSERT_TRUE(response.ok()) << response.status().ToString();
  EXPECT_EQ(response->status, 403);
}

TEST_F(InProcessTransportTest, EmbeddedClientsUseTheListenerWhenAskedTo) {
  TearDown();
  Start(/*in_process=*/false);
  EXPECT_FALSE(credentials_.dispatch);
  StatusOr<std::unique_ptr<client::ApiClient>> api = NewEmbeddedClient(credentials_, "test");
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  StatusOr<boost::json::value> created = (*api)->Do({.verb = client::Verb::kCreate,
                                                     .resource = &Claims(),
                                                     .namespace_ = "default",
                                                     .body = Claim("over-https")});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(NameOf(*created), "over-https");
}

// Scripted dispatchers: the stream mechanics without a server.

TEST(InProcessTransportStreamTest, AReaderTooFarBehindIsEndedOnceAndReadsWhatWasQueued) {
  int closed = 0;
  std::shared_ptr<http::ResponseStream> server_side;
  bool third_written = true;
  http::Handler dispatch = [&](http::Request request, std::shared_ptr<http::Exchange> exchange) {
    EXPECT_EQ(request.path, "/apis/x/v1/things");
    EXPECT_EQ(request.query, "watch=true&labelSelector=a%3Db");
    EXPECT_EQ(request.header("authorization"), "Bearer t");
    EXPECT_EQ(request.remote_address, "in-process");
    server_side = exchange->StartStream(200, {{"Content-Type", "application/json"}});
    server_side->SetOnClosed([&] { ++closed; });
    EXPECT_TRUE(server_side->Write(std::make_shared<const std::string>(std::string(600, 'a'))));
    EXPECT_TRUE(server_side->Write(std::make_shared<const std::string>(std::string(400, 'b'))));
    third_written = server_side->Write(std::make_shared<const std::string>("c"));
  };
  StatusOr<std::unique_ptr<client::Transport>> transport =
      NewInProcessTransport(dispatch, {.bearer_token = "t", .max_stream_backlog_bytes = 1000});
  ASSERT_TRUE(transport.ok());
  StatusOr<std::unique_ptr<client::StreamingResponse>> stream =
      (*transport)
          ->Stream({.method = "GET", .target = "/apis/x/v1/things?watch=true&labelSelector=a%3Db"});
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ((*stream)->status(), 200);
  EXPECT_FALSE(third_written);
  EXPECT_FALSE(server_side->open());
  EXPECT_EQ(closed, 1);

  std::string body;
  StatusOr<bool> more = (*stream)->Read(&body);
  ASSERT_TRUE(more.ok());
  EXPECT_TRUE(*more);
  EXPECT_EQ(body, std::string(600, 'a') + std::string(400, 'b'));
  more = (*stream)->Read(&body);
  ASSERT_TRUE(more.ok());
  EXPECT_FALSE(*more);
  (*stream)->Cancel();
  server_side->Close();
  EXPECT_EQ(closed, 1);
}

TEST(InProcessTransportStreamTest, AnAnswerThatIsNotStreamedIsReadAsAWholeBody) {
  http::Handler dispatch = [](http::Request, std::shared_ptr<http::Exchange> exchange) {
    exchange->Respond({.status = 410, .headers = {}, .body = "gone"});
  };
  StatusOr<std::unique_ptr<client::Transport>> transport = NewInProcessTransport(dispatch, {});
  ASSERT_TRUE(transport.ok());
  StatusOr<std::unique_ptr<client::StreamingResponse>> stream =
      (*transport)->Stream({.method = "GET", .target = "/w"});
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ((*stream)->status(), 410);
  std::string body;
  EXPECT_TRUE(*(*stream)->Read(&body));
  EXPECT_FALSE(*(*stream)->Read(&body));
  EXPECT_EQ(body, "gone");
}

TEST(InProcessTransportStreamTest, ARequestDroppedUnansweredIsUnavailable) {
  http::Handler dispatch = [](http::Request, std::shared_ptr<http::Exchange>) {};
  StatusOr<std::unique_ptr<client::Transport>> transport = NewInProcessTransport(dispatch, {});
  ASSERT_TRUE(transport.ok());
  EXPECT_EQ((*transport)->RoundTrip({.method = "GET", .target = "/x"}).status().code(),
            StatusCode::kUnavailable);
  EXPECT_EQ((*transport)->Stream({.method = "GET", .target = "/x"}).status().code(),
            StatusCode::kUnavailable);
}

TEST(InProcessTransportStreamTest, AStreamStartedAfterTheCallerGaveUpEndsAtOnce) {
  std::shared_ptr<http::Exchange> held;
  http::Handler dispatch = [&](http::Request, std::shared_ptr<http::Exchange> exchange) {
    held = std::move(exchange);
  };
  StatusOr<std::unique_ptr<client::Transport>> transport = NewInProcessTransport(dispatch, {});
  ASSERT_TRUE(transport.ok());
  client::HttpRequest request{
      .method = "GET", .target = "/w", .timeout = std::chrono::milliseconds(1)};
  EXPECT_EQ((*transport)->Stream(request).status().code(), StatusCode::kDeadlineExceeded);
  ASSERT_NE(held, nullptr);
  std::shared_ptr<http::ResponseStream> stream = held->StartStream(200, {});
  EXPECT_FALSE(stream->open());
  EXPECT_FALSE(stream->Write(std::make_shared<const std::string>("x")));
  int closed = 0;
  stream->SetOnClosed([&] { ++closed; });
  EXPECT_EQ(closed, 1);
}

TEST(InProcessTransportStreamTest, AnEmptyDispatcherIsRefused) {
  EXPECT_EQ(NewInProcessTransport(nullptr, {}).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace draplane::cli
