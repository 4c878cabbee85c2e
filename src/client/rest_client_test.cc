#include "client/rest_client.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "client/http_transport.h"
#include "client/internal/test_server.h"
#include "client/typed.h"

namespace draplane::client {
namespace {

using internal::ChunkWriter;
using internal::TestPki;
using internal::TestRequest;
using internal::TestResponse;
using internal::TestServer;

constexpr char kPod[] = R"({"apiVersion":"v1","kind":"Pod",
  "metadata":{"name":"p","namespace":"ns","uid":"u1","resourceVersion":"7"},
  "spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Pending"}})";

std::unique_ptr<ApiClient> ClientFor(const std::string& url, std::string token = "") {
  RestConfig config;
  config.server = url;
  config.bearer_token = std::move(token);
  StatusOr<std::unique_ptr<ApiClient>> client = CreateRestClient(config);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return std::move(*client);
}

TEST(RestClientTest, GetSendsPathAndTokenAndDecodes) {
  TestServer server([](const TestRequest&) { return TestResponse{.body = kPod}; });
  auto api = ClientFor(server.url(), "secret");
  StatusOr<api::corev1::Pod> pod = Get<api::corev1::Pod>(*api, "ns", "p");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->metadata.uid, "u1");
  EXPECT_EQ(pod->status.phase, "Pending");
  std::vector<TestRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(requests[0].authorization, "Bearer secret");
}

TEST(RestClientTest, PathsFollowGroupAndScope) {
  TestServer server([](const TestRequest& r) {
    if (r.method == "GET") {
      return TestResponse{.body = R"({"kind":"ResourceSliceList","metadata":{"resourceVersion":"5"},
        "items":[]})"};
    }
    return TestResponse{.body = R"({"kind":"ResourceClaim","apiVersion":"resource.k8s.io/v1",
      "metadata":{"name":"c","namespace":"ns"}})"};
  });
  auto api = ClientFor(server.url());
  ListOptions options;
  options.label_selector = "app in (a,b)";
  options.limit = 10;
  StatusOr<ObjectList<api::resourcev1::ResourceSlice>> list =
      List<api::resourcev1::ResourceSlice>(*api, "", options);
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->resource_version, "5");
  api::resourcev1::ResourceClaim claim;
  claim.metadata.name = "c";
  claim.metadata.namespace_ = "ns";
  ASSERT_TRUE(UpdateStatus(*api, claim).ok());
  boost::json::object patch{{"metadata", boost::json::object{{"labels", nullptr}}}};
  ASSERT_TRUE(
      Patch<api::resourcev1::ResourceClaim>(*api, "ns", "c", PatchType::kJson, boost::json::array{})
          .ok());
  std::vector<TestRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(
      requests[0].target,
      "/apis/resource.k8s.io/v1/resourceslices?labelSelector=app%20in%20%28a%2Cb%29&limit=10");
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(requests[1].target, "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status");
  EXPECT_EQ(requests[1].content_type, "application/json");
  EXPECT_EQ(requests[2].method, "PATCH");
  EXPECT_EQ(requests[2].content_type, "application/json-patch+json");
}

TEST(RestClientTest, ErrorResponsesMapToStatusCodes) {
  TestServer server([](const TestRequest& r) {
    if (r.target.ends_with("/missing")) {
      return TestResponse{.status = 404,
                          .body = R"({"kind":"Status","status":"Failure","reason":"NotFound",
                            "message":"pods \"missing\" not found","code":404})"};
    }
    if (r.target.ends_with("/stale")) {
      return TestResponse{.status = 409, .body = R"({"kind":"Status","reason":"Conflict",
        "message":"the object has been modified","code":409})"};
    }
    if (r.target.ends_with("/invalid")) {
      return TestResponse{.status = 422, .body = R"({"kind":"Status","reason":"Invalid",
        "message":"Pod \"invalid\" is invalid","code":422,"details":{"causes":[
        {"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}]}})"};
    }
    if (r.target.ends_with("/gone")) return TestResponse{.status = 410, .body = "gone"};
    return TestResponse{.status = 409, .body = R"({"kind":"Status","reason":"AlreadyExists",
      "message":"pods \"dup\" already exists","code":409})"};
  });
  auto api = ClientFor(server.url());
  Status missing = Get<api::corev1::Pod>(*api, "ns", "missing").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "pods \"missing\" not found");
  EXPECT_EQ(Get<api::corev1::Pod>(*api, "ns", "stale").status().code(), StatusCode::kConflict);
  Status invalid = Get<api::corev1::Pod>(*api, "ns", "invalid").status();
  EXPECT_EQ(invalid.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(invalid.causes().size(), 1u);
  EXPECT_EQ(invalid.causes()[0].field, "spec.containers");
  Status gone = Get<api::corev1::Pod>(*api, "ns", "gone").status();
  EXPECT_EQ(gone.code(), StatusCode::kExpired);
  EXPECT_EQ(gone.message(), "gone");
  EXPECT_EQ(Get<api::corev1::Pod>(*api, "ns", "dup").status().code(), StatusCode::kAlreadyExists);
}

TEST(RestClientTest, ADiscardedResponseIsNotParsedButErrorsStillAre) {
  TestServer server([](const TestRequest& r) {
    if (r.body.find(R"("name":"dup")") != std::string::npos) {
      return TestResponse{.status = 409, .body = R"({"kind":"Status","reason":"AlreadyExists",
        "message":"pods \"dup\" already exists","code":409})"};
    }
    return TestResponse{.status = 201, .body = "not json"};
  });
  auto api = ClientFor(server.url());
  ApiRequest request;
  request.verb = Verb::kCreate;
  request.resource = &ResourceOf<api::corev1::Pod>();
  request.namespace_ = "ns";
  request.body = boost::json::parse(kPod);
  EXPECT_EQ(api->Do(request).status().code(), StatusCode::kInternal);  // the answer is read
  request.discard_response = true;
  StatusOr<boost::json::value> discarded = api->Do(request);
  ASSERT_TRUE(discarded.ok()) << discarded.status().ToString();
  EXPECT_TRUE(discarded->is_null());
  request.body.as_object()["metadata"].as_object()["name"] = "dup";
  EXPECT_EQ(api->Do(request).status().code(), StatusCode::kAlreadyExists);
}

TEST(RestClientTest, KeepAliveReusesOneConnection) {
  TestServer server([](const TestRequest&) { return TestResponse{.body = kPod}; });
  auto api = ClientFor(server.url());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Get<api::corev1::Pod>(*api, "ns", "p").ok());
  EXPECT_EQ(server.connections(), 1);
}

TEST(RestClientTest, RetriesOnceWhenAnIdleConnectionWasClosed) {
  TestServer server([](const TestRequest& r) {
    // The first connection is dropped after its first answer, unannounced.
    return TestResponse{.body = kPod, .drop = r.connection_index == 0};
  });
  auto api = ClientFor(server.url());
  ASSERT_TRUE(Get<api::corev1::Pod>(*api, "ns", "p").ok());
  StatusOr<api::corev1::Pod> again = Get<api::corev1::Pod>(*api, "ns", "p");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(server.connections(), 2);
}

TEST(RestClientTest, UnreachableServerIsUnavailable) {
  std::string url;
  {
    TestServer server([](const TestRequest&) { return TestResponse{}; });
    url = server.url();
  }
  auto api = ClientFor(url);
  EXPECT_EQ(Get<api::corev1::Pod>(*api, "ns", "p").status().code(), StatusCode::kUnavailable);
}

TEST(RestClientTest, BindPodPostsABindingWithTheUid) {
  TestServer server([](const TestRequest&) {
    return TestResponse{.status = 201, .body = R"({"kind":"Status","status":"Success"})"};
  });
  auto api = ClientFor(server.url());
  ASSERT_TRUE(BindPod(*api, "ns", "p", "u1", "node-1").ok());
  std::vector<TestRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].target, "/api/v1/namespaces/ns/pods/p/binding");
  boost::json::value body = boost::json::parse(requests[0].body);
  EXPECT_EQ(body.at("metadata").at("uid"), "u1");
  EXPECT_EQ(body.at("target").at("name"), "node-1");
}

TEST(RestClientTest, WatchDecodesEventsSplitAcrossChunks) {
  TestServer server([](const TestRequest&) {
    TestResponse r;
    r.stream = [](ChunkWriter& w) {
      w.Write(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"na)");
      w.Write(R"(me":"a","resourceVersion":"2"}}})"
              "\n"
              R"({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"3"}}})"
              "\n");
      w.Write(R"({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a"}}})");
    };
    return r;
  });
  auto api = ClientFor(server.url());
  ApiRequest request;
  request.resource = &ResourceOf<api::corev1::Pod>();
  request.namespace_ = "ns";
  request.list.resource_version = "1";
  request.list.allow_watch_bookmarks = true;
  request.list.timeout_seconds = 30;
  StatusOr<std::unique_ptr<WatchStream>> watch = api->Watch(request);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  std::vector<std::string> types;
  while (true) {
    StatusOr<std::optional<WatchEvent>> event = (*watch)->Next();
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    if (!event->has_value()) break;
    types.push_back((*event)->type);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "BOOKMARK", "DELETED"}));
  EXPECT_EQ(server.Requests()[0].target,
            "/api/v1/namespaces/ns/pods?watch=true&resourceVersion=1&allowWatchBookmarks=true&"
            "timeoutSeconds=30");
}

TEST(RestClientTest, WatchOfAnExpiredVersionIsExpired) {
  TestServer server([](const TestRequest&) {
    return TestResponse{.status = 410, .body = R"j({"kind":"Status","reason":"Expired",
      "message":"too old resource version: 1 (5)","code":410})j"};
  });
  auto api = ClientFor(server.url());
  ApiRequest request;
  request.resource = &ResourceOf<api::corev1::Pod>();
  request.list.resource_version = "1";
  EXPECT_EQ(api->Watch(request).status().code(), StatusCode::kExpired);
}

TEST(RestClientTest, CancelUnblocksAWatch) {
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  TestServer server([&](const TestRequest&) {
    TestResponse r;
    r.stream = [&](ChunkWriter& w) {
      w.Write(R"({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a"}}})");
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return release; });
    };
    return r;
  });
  auto api = ClientFor(server.url());
  ApiRequest request;
  request.resource = &ResourceOf<api::corev1::Pod>();
  StatusOr<std::unique_ptr<WatchStream>> watch = api->Watch(request);
  ASSERT_TRUE(watch.ok());
  StatusOr<std::optional<WatchEvent>> first = (*watch)->Next();
  ASSERT_TRUE(first.ok() && first->has_value());
  std::thread canceller([&] { (*watch)->Cancel(); });
  StatusOr<std::optional<WatchEvent>> second = (*watch)->Next();
  canceller.join();
  EXPECT_EQ(second.status().code(), StatusCode::kCancelled);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
}

TEST(HttpTransportTest, TlsVerifiesTheServerAndPresentsAClientCertificate) {
  TestPki pki = internal::MakeTestPki();
  TestServer server([](const TestRequest&) { return TestResponse{.body = kPod}; }, &pki);
  RestConfig config;
  config.server = server.url();
  config.ca_pem = pki.ca_pem;
  config.client_certificate_pem = pki.client_cert_pem;
  config.client_key_pem = pki.client_key_pem;
  auto api = CreateRestClient(config);
  ASSERT_TRUE(api.ok()) << api.status().ToString();
  StatusOr<api::corev1::Pod> pod = Get<api::corev1::Pod>(**api, "ns", "p");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(server.last_client_cn(), "tester");
}

TEST(HttpTransportTest, TlsRejectsAServerSignedByAnotherCa) {
  TestPki pki = internal::MakeTestPki();
  TestPki other = internal::MakeTestPki();
  TestServer server([](const TestRequest&) { return TestResponse{.body = kPod}; }, &pki);
  RestConfig config;
  config.server = server.url();
  config.ca_pem = other.ca_pem;
  auto api = CreateRestClient(config);
  ASSERT_TRUE(api.ok());
  EXPECT_EQ(Get<api::corev1::Pod>(**api, "ns", "p").status().code(), StatusCode::kUnavailable);
  config.insecure_skip_tls_verify = true;
  auto insecure = CreateRestClient(config);
  ASSERT_TRUE(insecure.ok());
  EXPECT_TRUE(Get<api::corev1::Pod>(**insecure, "ns", "p").ok());
}

TEST(HttpTransportTest, MalformedUrlsAndPemAreInvalid) {
  RestConfig config;
  config.server = "ftp://x";
  EXPECT_EQ(CreateHttpTransport(config).status().code(), StatusCode::kInvalidArgument);
  config.server = "https://127.0.0.1:1";
  config.ca_pem = "not a certificate";
  EXPECT_EQ(CreateHttpTransport(config).status().code(), StatusCode::kInvalidArgument);
}

TEST(RestClientTest, EscapeQueryValueKeepsUnreservedCharacters) {
  EXPECT_EQ(EscapeQueryValue("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(EscapeQueryValue("spec.nodeName=n 1,x!=y"), "spec.nodeName%3Dn%201%2Cx%21%3Dy");
}

}  // namespace
}  // namespace draplane::client
