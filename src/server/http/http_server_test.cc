#include "server/http/http_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <future>
#include <mutex>
#include <thread>

namespace draplane::server::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = boost::asio::ip::tcp;

Response ProtocolError(int status, std::string message) {
  return Response{.status = status, .headers = {{"Content-Type", "text/plain"}}, .body = message};
}

std::unique_ptr<HttpServer> StartServer(Handler handler, size_t max_body = 1024,
                                        const Clock* clock = nullptr) {
  HttpServerOptions options;
  options.port = 0;
  options.clock = clock;
  options.io_threads = 1;
  options.max_body_bytes = max_body;
  options.protocol_error = ProtocolError;
  StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(handler));
  EXPECT_TRUE(server.ok()) << server.status().ToString();
  return std::move(server).value();
}

// A blocking test client on its own io_context.
class Client {
 public:
  explicit Client(uint16_t port) : stream_(ioc_) {
    stream_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
  }

  bhttp::response<bhttp::string_body> Send(bhttp::verb verb, std::string target,
                                           std::string body = "") {
    bhttp::request<bhttp::string_body> request{verb, target, 11};
    request.set(bhttp::field::host, "localhost");
    request.body() = std::move(body);
    request.prepare_payload();
    bhttp::write(stream_, request);
    bhttp::response<bhttp::string_body> response;
    bhttp::read(stream_, buffer_, response);
    return response;
  }

  beast::tcp_stream& stream() { return stream_; }
  beast::flat_buffer& buffer() { return buffer_; }

 private:
  net::io_context ioc_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
};

Handler EchoHandler() {
  return [](Request request, std::shared_ptr<Exchange> exchange) {
    std::string body = request.method + " " + request.path + " ?" + request.query + " " +
                       std::string(request.header("x-test")) + " " + request.body;
    exchange->Respond(
        Response{.status = 201, .headers = {{"Content-Type", "text/plain"}}, .body = body});
  };
}

TEST(HttpServerTest, AnswersSeveralRequestsOnOneKeepAliveConnection) {
  std::unique_ptr<HttpServer> server = StartServer(EchoHandler());
  Client client(server->port());
  auto first = client.Send(bhttp::verb::get, "/api/v1/a%20b?watch=true&x=1");
  EXPECT_EQ(first.result_int(), 201);
  EXPECT_EQ(first.body(), "GET /api/v1/a b ?watch=true&x=1  ");
  auto second = client.Send(bhttp::verb::post, "/apis", "payload");
  EXPECT_EQ(second.body(), "POST /apis ?  payload");
  EXPECT_EQ(server->open_connections(), 1u);
}

// Every answer, protocol errors and streams included, carries the server's time as an HTTP date.
TEST(HttpServerTest, EveryAnswerHasTheServersDate) {
  // 2026-12-02T01:40:05Z, a Wednesday.
  ManualClock clock{
      Timestamp(std::chrono::seconds(1'796'175'605) + std::chrono::milliseconds(900))};
  std::unique_ptr<HttpServer> server = StartServer(
      [](Request request, std::shared_ptr<Exchange> exchange) {
        if (request.path == "/watch") {
          exchange->StartStream(200, {})->Close();
          return;
        }
        exchange->Respond(Response{.status = 200, .headers = {}, .body = "ok"});
      },
      /*max_body=*/16, &clock);
  Client client(server->port());
  EXPECT_EQ(client.Send(bhttp::verb::get, "/x")[bhttp::field::date],
            "Wed, 02 Dec 2026 01:40:05 GMT");
  clock.Advance(std::chrono::hours(24 * 40));
  EXPECT_EQ(client.Send(bhttp::verb::post, "/x", std::string(100, 'a'))[bhttp::field::date],
            "Mon, 11 Jan 2027 01:40:05 GMT");
  Client streaming(server->port());
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/watch", 11};
  bhttp::write(streaming.stream(), request);
  bhttp::response_parser<bhttp::buffer_body> parser;
  bhttp::read_header(streaming.stream(), streaming.buffer(), parser);
  EXPECT_EQ(parser.get()[bhttp::field::date], "Mon, 11 Jan 2027 01:40:05 GMT");
  EXPECT_EQ(HttpDate(Timestamp(std::chrono::seconds(784111777))), "Sun, 06 Nov 1994 08:49:37 GMT");
}

TEST(HttpServerTest, RefusesTooLargeBodyWithProtocolError) {
  std::unique_ptr<HttpServer> server = StartServer(EchoHandler(), /*max_body=*/16);
  Client client(server->port());
  auto response = client.Send(bhttp::verb::post, "/x", std::string(100, 'a'));
  EXPECT_EQ(response.result_int(), 413);
  EXPECT_NE(response.body().find("too large"), std::string::npos);
}

// Issue 17: Beast throws for a header field over 64 KiB; the parser refuses it first (431) and
// the server keeps serving.
TEST(HttpServerTest, AnOversizedHeaderFieldIs431AndTheServerLives) {
  std::unique_ptr<HttpServer> server = StartServer(EchoHandler());
  for (std::string field :
       {"X-Big: " + std::string(70'000, 'a'), std::string(70'000, 'b') + ": 1"}) {
    Client client(server->port());
    std::string request = "GET / HTTP/1.1\r\nHost: x\r\n" + field + "\r\n\r\n";
    net::write(client.stream(), net::buffer(request));
    bhttp::response<bhttp::string_body> response;
    beast::error_code ec;
    bhttp::read(client.stream(), client.buffer(), response, ec);
    ASSERT_FALSE(ec) << ec.message();
    EXPECT_EQ(response.result_int(), 431) << response.body();
  }
  Client client(server->port());
  EXPECT_EQ(client.Send(bhttp::verb::get, "/after").result_int(), 201);
}

// A handler that does not answer within the request timeout: 504, and its late answer is dropped.
// A transfer coding other than chunked leaves the body's end unknown: answered 501 and the
// connection closed, so the bytes after the header (here a whole second request) are never
// served as a request of their own.
TEST(HttpServerTest, AnUnsupportedTransferEncodingIs501AndNothingIsSmuggled) {
  std::atomic<int> handled{0};
  std::unique_ptr<HttpServer> server =
      StartServer([&](Request, std::shared_ptr<Exchange> exchange) {
        ++handled;
        exchange->Respond(Response{.status = 200, .headers = {}, .body = "served"});
      });
  for (std::string coding : {"xchunked", "identity", "gzip"}) {
    Client client(server->port());
    std::string request = "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + coding +
                          "\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
    net::write(client.stream(), net::buffer(request));
    bhttp::response<bhttp::string_body> response;
    beast::error_code ec;
    bhttp::read(client.stream(), client.buffer(), response, ec);
    ASSERT_FALSE(ec) << coding << ": " << ec.message();
    EXPECT_EQ(response.result_int(), 501) << coding;
    EXPECT_FALSE(response.keep_alive()) << coding;
    bhttp::response<bhttp::string_body> second;
    bhttp::read(client.stream(), client.buffer(), second, ec);
    EXPECT_TRUE(ec) << coding << ": a second answer came: " << second.result_int();
  }
  EXPECT_EQ(handled.load(), 0);
}

TEST(HttpServerTest, ARequestNotAnsweredInTimeIs504) {
  std::shared_ptr<Exchange> held;
  std::mutex mu;
  HttpServerOptions options;
  options.io_threads = 1;
  options.request_timeout = std::chrono::seconds(1);
  options.protocol_error = ProtocolError;
  StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(options, [&](Request, std::shared_ptr<Exchange> exchange) {
        std::lock_guard lock(mu);
        held = std::move(exchange);
      });
  ASSERT_TRUE(server.ok());
  Client client((*server)->port());
  auto response = client.Send(bhttp::verb::get, "/slow");
  EXPECT_EQ(response.result_int(), 504);
  std::lock_guard lock(mu);
  ASSERT_NE(held, nullptr);
  held->Respond(Response{.status = 200, .headers = {}, .body = "late"});
}

TEST(HttpServerTest, UnansweredExchangeBecomes500) {
  std::unique_ptr<HttpServer> server =
      StartServer([](Request, std::shared_ptr<Exchange>) { /* drops the exchange */ });
  Client client(server->port());
  auto response = client.Send(bhttp::verb::get, "/");
  EXPECT_EQ(response.result_int(), 500);
}

TEST(HttpServerTest, AnswersFromAnotherThread) {
  std::vector<std::thread> workers;
  std::mutex mu;
  std::unique_ptr<HttpServer> server =
      StartServer([&](Request request, std::shared_ptr<Exchange> exchange) {
        std::lock_guard lock(mu);
        workers.emplace_back([request = std::move(request), exchange] {
          exchange->Respond(
              Response{.status = 200, .headers = {}, .body = "from worker " + request.path});
        });
      });
  {
    Client client(server->port());
    EXPECT_EQ(client.Send(bhttp::verb::get, "/w").body(), "from worker /w");
  }
  for (std::thread& worker : workers) worker.join();
}

TEST(HttpServerTest, RejectsMalformedPercentEncoding) {
  std::unique_ptr<HttpServer> server = StartServer(EchoHandler());
  Client client(server->port());
  EXPECT_EQ(client.Send(bhttp::verb::get, "/a%zz").result_int(), 400);
}

// Reads chunks of a streamed response until `want` bytes of body have arrived or it ends.
std::string ReadStreamBody(Client& client, bhttp::response_parser<bhttp::buffer_body>& parser,
                           size_t want) {
  std::string body;
  char buf[4096];
  while (!parser.is_done() && body.size() < want) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof(buf);
    beast::error_code ec;
    bhttp::read_some(client.stream(), client.buffer(), parser, ec);
    if (ec == bhttp::error::need_buffer) ec = {};
    if (ec) break;
    body.append(buf, sizeof(buf) - parser.get().body().size);
  }
  return body;
}

TEST(HttpServerTest, StreamsChunksUntilClosed) {
  std::promise<std::shared_ptr<ResponseStream>> stream_promise;
  std::unique_ptr<HttpServer> server = StartServer([&](Request,
                                                       std::shared_ptr<Exchange> exchange) {
    stream_promise.set_value(exchange->StartStream(200, {{"Content-Type", "application/json"}}));
  });
  Client client(server->port());
  bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/watch", 11};
  bhttp::write(client.stream(), request);
  std::shared_ptr<ResponseStream> stream = stream_promise.get_future().get();

  bhttp::response_parser<bhttp::buffer_body> parser;
  bhttp::read_header(client.stream(), client.buffer(), parser);
  EXPECT_EQ(parser.get().result_int(), 200);
  EXPECT_TRUE(parser.chunked());

  ASSERT_TRUE(stream->Write(std::make_shared<const std::string>("one\n")));
  EXPECT_EQ(ReadStreamBody(client, parser, 4), "one\n");
  ASSERT_TRUE(stream->Write(std::make_shared<const std::string>("two\n")));
  ASSERT_TRUE(stream->Write(std::make_shared<const std::string>("three\n")));
  EXPECT_EQ(ReadStreamBody(client, parser, 10), "two\nthree\n");

  std::promise<void> closed;
  stream->SetOnClosed([&] { closed.set_value(); });
  stream->Close();
  EXPECT_EQ(ReadStreamBody(client, parser, 1), "");
  EXPECT_TRUE(parser.is_done());
  closed.get_future().wait();
  EXPECT_FALSE(stream->Write(std::make_shared<const std::string>("late")));
}

TEST(HttpServerTest, NotifiesStreamOwnerWhenClientDisconnects) {
  std::promise<std::shared_ptr<ResponseStream>> stream_promise;
  std::unique_ptr<HttpServer> server =
      StartServer([&](Request, std::shared_ptr<Exchange> exchange) {
        stream_promise.set_value(exchange->StartStream(200, {}));
      });
  std::promise<void> closed;
  std::shared_ptr<ResponseStream> stream;
  {
    Client client(server->port());
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/watch", 11};
    bhttp::write(client.stream(), request);
    stream = stream_promise.get_future().get();
    stream->SetOnClosed([&] { closed.set_value(); });
    bhttp::response_parser<bhttp::buffer_body> parser;
    bhttp::read_header(client.stream(), client.buffer(), parser);
  }  // the client closes its socket here
  closed.get_future().wait();
  EXPECT_FALSE(stream->open());
}

TEST(HttpServerTest, ShutdownEndsStreamsAndIdleConnections) {
  std::vector<std::shared_ptr<ResponseStream>> streams;
  std::mutex mu;
  std::promise<void> all_started;
  constexpr int kStreams = 50;
  std::unique_ptr<HttpServer> server =
      StartServer([&](Request request, std::shared_ptr<Exchange> exchange) {
        if (request.path == "/") {
          exchange->Respond(Response{.status = 204, .headers = {}, .body = ""});
          return;
        }
        std::lock_guard lock(mu);
        streams.push_back(exchange->StartStream(200, {}));
        if (streams.size() == kStreams) all_started.set_value();
      });
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kStreams; ++i) {
    clients.push_back(std::make_unique<Client>(server->port()));
    bhttp::request<bhttp::empty_body> request{bhttp::verb::get, "/watch", 11};
    bhttp::write(clients.back()->stream(), request);
  }
  Client idle(server->port());
  EXPECT_EQ(idle.Send(bhttp::verb::get, "/").result_int(), 204);
  all_started.get_future().wait();

  std::atomic<int> closed{0};
  for (auto& stream : streams) stream->SetOnClosed([&] { closed.fetch_add(1); });
  server->Shutdown(std::chrono::seconds(10));
  EXPECT_EQ(closed.load(), kStreams);
  for (auto& client : clients) {
    bhttp::response_parser<bhttp::buffer_body> parser;
    bhttp::read_header(client->stream(), client->buffer(), parser);
    EXPECT_EQ(ReadStreamBody(*client, parser, 1), "");
    EXPECT_TRUE(parser.is_done());
  }
  EXPECT_EQ(server->open_connections(), 0u);
}

}  // namespace
}  // namespace draplane::server::http
