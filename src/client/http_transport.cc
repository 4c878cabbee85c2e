#include "client/http_transport.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <optional>
#include <vector>

#include "common/mutex.h"

namespace draplane::client {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

// Default deadline of a non-streaming exchange that sets none.
constexpr Duration kDefaultTimeout = std::chrono::seconds(60);

struct Url {
  bool tls = false;
  std::string host;  // without brackets for IPv6
  std::string port;
  std::string prefix;  // path prefix without trailing '/', possibly empty
  std::string host_header;
};

StatusOr<Url> ParseUrl(const std::string& server) {
  Url url;
  std::string_view rest = server;
  if (rest.starts_with("https://")) {
    url.tls = true;
    rest.remove_prefix(8);
  } else if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else {
    return InvalidArgumentError("server URL \"" + server +
                                "\" must start with https:// or http://");
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) url.prefix = std::string(rest.substr(slash));
  while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  url.host_header = std::string(authority);
  if (authority.starts_with("[")) {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgumentError("bad IPv6 host in " + server);
    url.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (after.starts_with(":")) url.port = std::string(after.substr(1));
  } else {
    size_t colon = authority.rfind(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) url.port = std::string(authority.substr(colon + 1));
  }
  if (url.host.empty()) return InvalidArgumentError("server URL \"" + server + "\" has no host");
  if (url.port.empty()) url.port = url.tls ? "443" : "80";
  return url;
}

Status NetworkError(const beast::error_code& ec, std::string_view what) {
  if (ec == beast::error::timeout) {
    return DeadlineExceededError(std::string(what) + ": timed out");
  }
  if (ec == asio::error::operation_aborted)
    return CancelledError(std::string(what) + ": cancelled");
  return UnavailableError(std::string(what) + ": " + ec.message());
}

// One connection with its own io_context; asynchronous operations are run to completion on the
// calling thread so that deadlines (beast::tcp_stream expiry) apply.
class Connection {
 public:
  Connection() = default;

  beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }

  Status Connect(const Url& url, ssl::context* ctx, const RestConfig& config, Duration timeout) {
    tcp::resolver resolver(ioc_);
    beast::error_code ec;
    tcp::resolver::results_type endpoints;
    resolver.async_resolve(url.host, url.port,
                           [&](beast::error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             endpoints = std::move(r);
                           });
    Run();
    if (ec) return NetworkError(ec, "resolve " + url.host);
    if (url.tls) {
      tls_.emplace(ioc_, *ctx);
    } else {
      plain_.emplace(ioc_);
    }
    lowest().expires_after(timeout);
    lowest().async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
    Run();
    if (ec) return NetworkError(ec, "connect " + url.host_header);
    lowest().socket().set_option(tcp::no_delay(true), ec);
    if (!url.tls) return Status::Ok();

    const std::string& name = config.tls_server_name.empty() ? url.host : config.tls_server_name;
    beast::error_code address_ec;
    asio::ip::make_address(name, address_ec);
    if (address_ec) {
      // SNI only for names, never for IP addresses (RFC 6066 §3).
      SSL_set_tlsext_host_name(tls_->native_handle(), name.c_str());
    }
    if (config.insecure_skip_tls_verify) {
      tls_->set_verify_mode(ssl::verify_none);
    } else {
      tls_->set_verify_mode(ssl::verify_peer);
      tls_->set_verify_callback(ssl::host_name_verification(name));
    }
    tls_->async_handshake(ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
    Run();
    if (ec) return NetworkError(ec, "TLS handshake with " + url.host_header);
    return Status::Ok();
  }

  // Writes a request.
  beast::error_code Write(http::request<http::string_body>& request, Duration timeout) {
    beast::error_code ec;
    SetDeadline(timeout);
    auto done = [&](beast::error_code e, std::size_t) { ec = e; };
    if (tls_) {
      http::async_write(*tls_, request, done);
    } else {
      http::async_write(*plain_, request, done);
    }
    Run();
    return ec;
  }

  template <typename Parser>
  beast::error_code ReadHeader(Parser& parser, Duration timeout) {
    beast::error_code ec;
    SetDeadline(timeout);
    auto done = [&](beast::error_code e, std::size_t) { ec = e; };
    if (tls_) {
      http::async_read_header(*tls_, buffer_, parser, done);
    } else {
      http::async_read_header(*plain_, buffer_, parser, done);
    }
    Run();
    return ec;
  }

  template <typename Parser>
  beast::error_code Read(Parser& parser, Duration timeout) {
    beast::error_code ec;
    SetDeadline(timeout);
    auto done = [&](beast::error_code e, std::size_t) { ec = e; };
    if (tls_) {
      http::async_read(*tls_, buffer_, parser, done);
    } else {
      http::async_read(*plain_, buffer_, parser, done);
    }
    Run();
    return ec;
  }

  template <typename Parser>
  beast::error_code ReadSome(Parser& parser) {
    beast::error_code ec;
    SetDeadline(Duration::zero());
    auto done = [&](beast::error_code e, std::size_t) { ec = e; };
    if (tls_) {
      http::async_read_some(*tls_, buffer_, parser, done);
    } else {
      http::async_read_some(*plain_, buffer_, parser, done);
    }
    Run();
    return ec;
  }

  // Schedules cancellation of the operation running (or next run) on this connection. Safe
  // from any thread: the work runs on the thread that runs the io_context.
  void PostCancel() {
    asio::post(ioc_, [this] {
      beast::error_code ignored;
      lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
      lowest().cancel();
    });
  }

  bool reused = false;

 private:
  void SetDeadline(Duration timeout) {
    if (timeout > Duration::zero()) {
      lowest().expires_after(timeout);
    } else {
      lowest().expires_never();
    }
  }
  void Run() {
    ioc_.restart();
    ioc_.run();
  }

  asio::io_context ioc_{1};
  std::optional<beast::tcp_stream> plain_;
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;
  beast::flat_buffer buffer_;
};

class HttpStream final : public StreamingResponse {
 public:
  HttpStream(std::unique_ptr<Connection> connection,
             std::unique_ptr<http::response_parser<http::buffer_body>> parser)
      : connection_(std::move(connection)), parser_(std::move(parser)) {}

  int status() const override { return static_cast<int>(parser_->get().result_int()); }

  StatusOr<bool> Read(std::string* out) override {
    char buffer[64 * 1024];
    while (true) {
      if (cancelled_.load()) return CancelledError("watch stream cancelled");
      if (parser_->is_done()) return false;
      parser_->get().body().data = buffer;
      parser_->get().body().size = sizeof buffer;
      beast::error_code ec = connection_->ReadSome(*parser_);
      if (ec == http::error::need_buffer) ec = {};
      size_t n = sizeof buffer - parser_->get().body().size;
      if (n > 0) out->append(buffer, n);
      if (cancelled_.load()) return CancelledError("watch stream cancelled");
      if (ec == http::error::end_of_stream || ec == asio::error::eof) return n > 0;
      if (ec) return NetworkError(ec, "reading stream");
      if (n > 0) return true;
    }
  }

  void Cancel() override {
    if (!cancelled_.exchange(true)) connection_->PostCancel();
  }

 private:
  std::unique_ptr<Connection> connection_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  std::atomic<bool> cancelled_{false};
};

class HttpTransport final : public Transport {
 public:
  HttpTransport(Url url, RestConfig config, std::unique_ptr<ssl::context> ctx,
                HttpTransportOptions options)
      : url_(std::move(url)), config_(std::move(config)), ctx_(std::move(ctx)), options_(options) {}

  StatusOr<HttpResponse> RoundTrip(const HttpRequest& request) override {
    http::request<http::string_body> req = BuildRequest(request);
    Duration timeout = request.timeout > Duration::zero() ? request.timeout : kDefaultTimeout;
    for (int attempt = 0;; ++attempt) {
      StatusOr<std::unique_ptr<Connection>> conn = Acquire(/*allow_idle=*/attempt == 0);
      if (!conn.ok()) return conn.status();
      bool reused = (*conn)->reused;
      beast::error_code ec = (*conn)->Write(req, timeout);
      http::response_parser<http::string_body> parser;
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());
      parser.header_limit(1 << 20);
      if (!ec) ec = (*conn)->Read(parser, timeout);
      if (ec) {
        if (reused && !parser.got_some() && ec != beast::error::timeout) continue;
        return NetworkError(ec, request.method + " " + request.target);
      }
      HttpResponse response;
      response.status = static_cast<int>(parser.get().result_int());
      response.content_type = std::string(parser.get()[http::field::content_type]);
      bool keep_alive = parser.get().keep_alive();
      response.body = std::move(parser.get().body());
      if (keep_alive) Release(std::move(*conn));
      return response;
    }
  }

  StatusOr<std::unique_ptr<StreamingResponse>> Stream(const HttpRequest& request) override {
    http::request<http::string_body> req = BuildRequest(request);
    StatusOr<std::unique_ptr<Connection>> conn = Acquire(/*allow_idle=*/false);
    if (!conn.ok()) return conn.status();
    Duration timeout = request.timeout > Duration::zero() ? request.timeout : kDefaultTimeout;
    beast::error_code ec = (*conn)->Write(req, timeout);
    auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    parser->header_limit(1 << 20);
    if (!ec) ec = (*conn)->ReadHeader(*parser, timeout);
    if (ec) return NetworkError(ec, request.method + " " + request.target);
    return std::unique_ptr<StreamingResponse>(
        std::make_unique<HttpStream>(std::move(*conn), std::move(parser)));
  }

 private:
  http::request<http::string_body> BuildRequest(const HttpRequest& request) const {
    http::request<http::string_body> req;
    req.version(11);
    req.method_string(request.method);
    req.target(url_.prefix + request.target);
    req.set(http::field::host, url_.host_header);
    req.set(http::field::user_agent, config_.user_agent);
    req.set(http::field::accept, "application/json");
    if (!config_.bearer_token.empty()) {
      req.set(http::field::authorization, "Bearer " + config_.bearer_token);
    }
    for (const auto& [name, value] : request.headers) req.set(name, value);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      if (!request.content_type.empty()) req.set(http::field::content_type, request.content_type);
      req.body() = request.body;
    }
    req.keep_alive(true);
    req.prepare_payload();
    return req;
  }

  StatusOr<std::unique_ptr<Connection>> Acquire(bool allow_idle) {
    if (allow_idle) {
      MutexLock lock(mu_);
      if (!idle_.empty()) {
        std::unique_ptr<Connection> conn = std::move(idle_.back());
        idle_.pop_back();
        conn->reused = true;
        return conn;
      }
    }
    auto conn = std::make_unique<Connection>();
    Status s = conn->Connect(url_, ctx_.get(), config_, options_.connect_timeout);
    if (!s.ok()) return s;
    return conn;
  }

  void Release(std::unique_ptr<Connection> conn) {
    MutexLock lock(mu_);
    if (static_cast<int>(idle_.size()) < options_.max_idle_connections) {
      idle_.push_back(std::move(conn));
    }
  }

  const Url url_;
  const RestConfig config_;
  const std::unique_ptr<ssl::context> ctx_;
  const HttpTransportOptions options_;
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace

StatusOr<std::unique_ptr<Transport>> CreateHttpTransport(const RestConfig& config,
                                                         const HttpTransportOptions& options) {
  StatusOr<Url> url = ParseUrl(config.server);
  if (!url.ok()) return url.status();
  std::unique_ptr<ssl::context> ctx;
  if (url->tls) {
    try {
      ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
      ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
      if (!config.ca_pem.empty()) {
        ctx->add_certificate_authority(asio::buffer(config.ca_pem));
      } else {
        ctx->set_default_verify_paths();
      }
      if (!config.client_certificate_pem.empty()) {
        ctx->use_certificate_chain(asio::buffer(config.client_certificate_pem));
        ctx->use_private_key(asio::buffer(config.client_key_pem), ssl::context::pem);
      }
    } catch (const boost::system::system_error& e) {
      return InvalidArgumentError(std::string("TLS configuration: ") + e.what());
    }
  }
  return std::unique_ptr<Transport>(
      std::make_unique<HttpTransport>(std::move(*url), config, std::move(ctx), options));
}

}  // namespace draplane::client
