#include "store/etcd/etcd_client.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/json.hpp>
#include <exception>
#include <limits>
#include <optional>

#include "common/mutex.h"
#include "common/status_macros.h"

namespace draplane::store::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Status MapGatewayError(unsigned http_status, std::string_view body) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(body, ec);
  std::string message = "etcd answered HTTP " + std::to_string(http_status);
  int64_t code = -1;
  if (!ec && value.is_object()) {
    const boost::json::object& object = value.get_object();
    if (const auto* m = object.if_contains("message"); m != nullptr && m->is_string()) {
      message = "etcd: " + std::string(m->get_string());
    }
    if (const auto* c = object.if_contains("code"); c != nullptr && c->is_int64()) {
      code = c->get_int64();
    }
  }
  if (message.find("revision has been compacted") != std::string::npos) {
    return ExpiredError(std::move(message));
  }
  if (message.find("future revision") != std::string::npos) {
    return DeadlineExceededError(std::move(message));
  }
  switch (code) {
    case 3:  // INVALID_ARGUMENT
      return InvalidArgumentError(std::move(message));
    case 8:  // RESOURCE_EXHAUSTED
      return ResourceExhaustedError(std::move(message));
    case 4:   // DEADLINE_EXCEEDED
    case 14:  // UNAVAILABLE
      return UnavailableError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

// One HTTP/1.1 connection to one endpoint. Operations run asynchronously on the connection's
// own io_context, driven by the calling thread, so every call has a deadline.
class Connection {
 public:
  explicit Connection(asio::ssl::context* tls) : tls_context_(tls) {}

  Status Connect(const EtcdEndpoint& endpoint, Duration timeout) {
    endpoint_ = endpoint;
    tcp::resolver resolver(ioc_);
    boost::system::error_code ec;
    tcp::resolver::results_type results = resolver.resolve(endpoint.host, endpoint.port, ec);
    if (ec) return Failure("resolve", ec);
    if (tls_context_ != nullptr) {
      tls_ = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(ioc_, *tls_context_);
      SSL* ssl = tls_->native_handle();
      if (IsIpAddress(endpoint.host)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), endpoint.host.c_str());
      } else {
        SSL_set_tlsext_host_name(ssl, endpoint.host.c_str());
        SSL_set1_host(ssl, endpoint.host.c_str());
      }
    } else {
      tcp_ = std::make_unique<beast::tcp_stream>(ioc_);
    }
    beast::tcp_stream& lowest = Lowest();
    lowest.expires_after(timeout);
    lowest.async_connect(results, [&](boost::system::error_code e, const tcp::endpoint&) {
      ec = e;
      if (e || tls_ == nullptr) return;
      tls_->async_handshake(asio::ssl::stream_base::client,
                            [&](boost::system::error_code h) { ec = h; });
    });
    RunToCompletion();
    if (ec) return Failure(tls_ != nullptr ? "connect/TLS handshake" : "connect", ec);
    lowest.socket().set_option(asio::socket_base::keep_alive(true), ec);
    lowest.socket().set_option(tcp::no_delay(true), ec);
    return Status::Ok();
  }

  // Sends `request` and reads the whole response into `*response`.
  Status Exchange(const http::request<http::string_body>& request,
                  http::response_parser<http::string_body>* response, Duration timeout) {
    boost::system::error_code ec;
    Lowest().expires_after(timeout);
    Visit([&](auto& stream) {
      http::async_write(stream, request, [&, response](boost::system::error_code e, size_t) {
        if (e) {
          ec = e;
          return;
        }
        http::async_read(stream, buffer_, *response,
                         [&](boost::system::error_code r, size_t) { ec = r; });
      });
    });
    RunToCompletion();
    if (ec) {
      broken_ = true;
      return Failure("request", ec);
    }
    if (!response->get().keep_alive()) broken_ = true;
    return Status::Ok();
  }

  // Sends the request of a streaming call and reads the response header.
  Status StartStream(const http::request<http::string_body>& request,
                     http::response_parser<http::buffer_body>* parser, Duration timeout) {
    boost::system::error_code ec;
    Lowest().expires_after(timeout);
    Visit([&](auto& stream) {
      http::async_write(stream, request, [&, parser](boost::system::error_code e, size_t) {
        if (e) {
          ec = e;
          return;
        }
        http::async_read_header(stream, buffer_, *parser,
                                [&](boost::system::error_code r, size_t) { ec = r; });
      });
    });
    RunToCompletion();
    Lowest().expires_never();
    if (ec) return Failure("watch request", ec);
    return Status::Ok();
  }

  // Reads some more of a streamed body into `data`; returns the bytes read (0 at the end).
  // Fails when nothing arrives for `idle_timeout`.
  StatusOr<size_t> ReadSome(http::response_parser<http::buffer_body>* parser, char* data,
                            size_t size, Duration idle_timeout) {
    parser->get().body().data = data;
    parser->get().body().size = size;
    boost::system::error_code ec;
    Lowest().expires_after(idle_timeout);
    Visit([&](auto& stream) {
      http::async_read_some(stream, buffer_, *parser,
                            [&](boost::system::error_code e, size_t) { ec = e; });
    });
    RunToCompletion();
    if (ec == http::error::need_buffer) ec = {};
    if (ec) return Failure("watch read", ec);
    return size - parser->get().body().size;
  }

  // True when the peer closed the connection (or sent something unexpected) while it was idle.
  bool IsStale() {
    if (broken_) return true;
    pollfd fd{Lowest().socket().native_handle(), POLLIN, 0};
    return ::poll(&fd, 1, 0) != 0;
  }

  // Ends the connection from another thread: a blocked read returns with an error.
  void Shutdown() { ::shutdown(Lowest().socket().native_handle(), SHUT_RDWR); }

  const EtcdEndpoint& endpoint() const { return endpoint_; }

 private:
  beast::tcp_stream& Lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *tcp_; }

  template <typename F>
  void Visit(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(*tcp_);
    }
  }

  void RunToCompletion() {
    ioc_.restart();
    ioc_.run();
  }

  Status Failure(std::string_view what, const boost::system::error_code& ec) const {
    return UnavailableError("etcd " + endpoint_.host + ":" + endpoint_.port + ": " +
                            std::string(what) + ": " + ec.message());
  }

  asio::ssl::context* tls_context_;
  asio::io_context ioc_{1};
  beast::flat_buffer buffer_;
  std::unique_ptr<beast::tcp_stream> tcp_;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> tls_;
  EtcdEndpoint endpoint_;
  bool broken_ = false;
};

http::request<http::string_body> MakeRequest(const EtcdEndpoint& endpoint, std::string_view path,
                                             const boost::json::object& body) {
  http::request<http::string_body> request(http::verb::post, std::string(path), 11);
  request.set(http::field::host, endpoint.host + ":" + endpoint.port);
  request.set(http::field::content_type, "application/json");
  request.keep_alive(true);
  request.body() = boost::json::serialize(body);
  request.prepare_payload();
  return request;
}

}  // namespace

StatusOr<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view list) {
  std::vector<EtcdEndpoint> endpoints;
  while (true) {
    const size_t comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    const size_t colon = entry.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == entry.size()) {
      return InvalidArgumentError("etcd endpoint \"" + std::string(entry) + "\" is not HOST:PORT");
    }
    std::string_view port = entry.substr(colon + 1);
    if (port.find_first_not_of("0123456789") != std::string_view::npos) {
      return InvalidArgumentError("etcd endpoint \"" + std::string(entry) +
                                  "\" has a non-numeric port");
    }
    std::string host(entry.substr(0, colon));
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);  // [::1]:2379
    }
    endpoints.push_back(EtcdEndpoint{std::move(host), std::string(port)});
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return endpoints;
}

// Idle connections plus the endpoint to try first (the last one that answered).
class EtcdConnectionPool {
 public:
  explicit EtcdConnectionPool(const EtcdClientOptions& options) : options_(options) {}

  Status InitTls() {
    if (options_.ca_file.empty()) {
      if (!options_.cert_file.empty() || !options_.key_file.empty()) {
        return InvalidArgumentError("an etcd client certificate needs a CA file (cacert) too");
      }
      return Status::Ok();
    }
    tls_.emplace(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    tls_->load_verify_file(options_.ca_file, ec);
    if (ec) return InvalidArgumentError("etcd CA file " + options_.ca_file + ": " + ec.message());
    tls_->set_verify_mode(asio::ssl::verify_peer, ec);
    if (options_.cert_file.empty() != options_.key_file.empty()) {
      return InvalidArgumentError("an etcd client certificate needs both cert and key files");
    }
    if (!options_.cert_file.empty()) {
      tls_->use_certificate_chain_file(options_.cert_file, ec);
      if (ec) {
        return InvalidArgumentError("etcd client certificate " + options_.cert_file + ": " +
                                    ec.message());
      }
      tls_->use_private_key_file(options_.key_file, asio::ssl::context::pem, ec);
      if (ec) {
        return InvalidArgumentError("etcd client key " + options_.key_file + ": " + ec.message());
      }
    }
    return Status::Ok();
  }

  // An idle connection (`*reused` true) or a new one to the first endpoint that answers.
  StatusOr<std::unique_ptr<Connection>> Acquire(bool* reused) {
    {
      MutexLock lock(mu_);
      while (!idle_.empty()) {
        std::unique_ptr<Connection> connection = std::move(idle_.back());
        idle_.pop_back();
        if (!connection->IsStale()) {
          *reused = true;
          return connection;
        }
      }
    }
    *reused = false;
    return Connect();
  }

  StatusOr<std::unique_ptr<Connection>> Connect() {
    const size_t n = options_.endpoints.size();
    const size_t first = preferred_.load();
    Status last;
    for (size_t i = 0; i < n; ++i) {
      const size_t index = (first + i) % n;
      auto connection = std::make_unique<Connection>(tls_ ? &*tls_ : nullptr);
      last = connection->Connect(options_.endpoints[index], options_.request_timeout);
      if (last.ok()) {
        preferred_.store(index);
        return connection;
      }
    }
    return last;
  }

  void Release(std::unique_ptr<Connection> connection) {
    if (connection->IsStale()) return;
    MutexLock lock(mu_);
    idle_.push_back(std::move(connection));
  }

  const EtcdClientOptions& options() const { return options_; }

 private:
  const EtcdClientOptions options_;
  std::optional<asio::ssl::context> tls_;
  std::atomic<size_t> preferred_{0};
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ DRAPLANE_GUARDED_BY(mu_);
};

namespace {

// etcd sends a progress notification on an idle watch every 10 minutes (its default
// --experimental-watch-progress-notify-interval) when asked to (`progress_notify`); a stream
// silent for longer is presumed dead (e.g. a network partition TCP has not noticed) and is
// reopened.
constexpr Duration kWatchIdleTimeout = std::chrono::minutes(15);

class WatchStreamImpl final : public EtcdClient::WatchStream {
 public:
  WatchStreamImpl(std::unique_ptr<Connection> connection,
                  std::unique_ptr<http::response_parser<http::buffer_body>> parser)
      : connection_(std::move(connection)), parser_(std::move(parser)) {}

  Status Run(const std::function<bool(const boost::json::object&)>& on_message) override {
    try {
      return RunLoop(on_message);
    } catch (const std::exception& e) {
      return InternalError(std::string("etcd watch stream: ") + e.what());
    }
  }

  void Close() override {
    MutexLock lock(mu_);
    if (closed_) return;
    closed_ = true;
    connection_->Shutdown();
  }

 private:
  bool closed() {
    MutexLock lock(mu_);
    return closed_;
  }

  Status RunLoop(const std::function<bool(const boost::json::object&)>& on_message) {
    // Messages already read but not handed out (Run stopped early) come first.
    if (!DeliverPending(on_message)) return malformed_;
    std::vector<char> chunk(64 * 1024);
    while (!closed()) {
      if (parser_->is_done()) return UnavailableError("etcd ended the watch stream");
      StatusOr<size_t> n =
          connection_->ReadSome(parser_.get(), chunk.data(), chunk.size(), kWatchIdleTimeout);
      if (!n.ok()) return closed() ? Status::Ok() : n.status();
      pending_.append(chunk.data(), *n);
      if (!DeliverPending(on_message)) return malformed_;
    }
    return Status::Ok();
  }

  // Hands out the complete lines of `pending_` (the gateway writes one JSON message per line);
  // false when `on_message` asked to stop or a line was malformed (then `malformed_` says so).
  bool DeliverPending(const std::function<bool(const boost::json::object&)>& on_message) {
    size_t start = 0;
    bool go_on = true;
    for (size_t newline; go_on && (newline = pending_.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      std::string_view line(pending_.data() + start, newline - start);
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
      boost::system::error_code ec;
      boost::json::value message = boost::json::parse(line, ec);
      if (ec || !message.is_object()) {
        malformed_ = InternalError("etcd watch stream sent malformed JSON: " + std::string(line));
        go_on = false;
        continue;
      }
      go_on = on_message(message.get_object());
    }
    pending_.erase(0, start);
    return go_on;
  }

  std::unique_ptr<Connection> connection_;
  std::unique_ptr<http::response_parser<http::buffer_body>> parser_;
  std::string pending_;  // bytes read but not yet handed out (Run thread only)
  Status malformed_;     // set when a message could not be parsed (Run thread only)
  Mutex mu_;
  bool closed_ DRAPLANE_GUARDED_BY(mu_) = false;
};

}  // namespace

EtcdClient::EtcdClient(std::unique_ptr<EtcdConnectionPool> pool) : pool_(std::move(pool)) {}
EtcdClient::~EtcdClient() = default;

StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(const EtcdClientOptions& options) {
  if (options.endpoints.empty()) return InvalidArgumentError("no etcd endpoints");
  auto pool = std::make_unique<EtcdConnectionPool>(options);
  try {
    DRAPLANE_RETURN_IF_ERROR(pool->InitTls());
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("etcd TLS setup: ") + e.what());
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(pool)));
}

StatusOr<boost::json::object> EtcdClient::Call(std::string_view path,
                                               const boost::json::object& body) {
  try {
    // A read may be retried once on a fresh connection when a pooled one turns out dead; a
    // write may not (it may have been applied).
    const bool retryable = path == "/v3/kv/range";
    for (int attempt = 0;; ++attempt) {
      bool reused = false;
      DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> connection, pool_->Acquire(&reused));
      http::request<http::string_body> request = MakeRequest(connection->endpoint(), path, body);
      http::response_parser<http::string_body> response;
      response.body_limit(std::numeric_limits<std::uint64_t>::max());
      Status status = connection->Exchange(request, &response, pool_->options().request_timeout);
      if (!status.ok()) {
        if (reused && retryable && attempt == 0) continue;
        return status;
      }
      const unsigned code = response.get().result_int();
      std::string text = std::move(response.get().body());
      pool_->Release(std::move(connection));
      if (code != 200) return MapGatewayError(code, text);
      boost::system::error_code ec;
      boost::json::value value = boost::json::parse(text, ec);
      if (ec || !value.is_object()) {
        return InternalError("etcd sent malformed JSON for " + std::string(path));
      }
      return std::move(value.get_object());
    }
  } catch (const std::exception& e) {
    return InternalError(std::string("etcd call ") + std::string(path) + ": " + e.what());
  }
}

StatusOr<std::unique_ptr<EtcdClient::WatchStream>> EtcdClient::OpenStream(
    std::string_view path, const boost::json::object& body) {
  try {
    DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<Connection> connection, pool_->Connect());
    http::request<http::string_body> request = MakeRequest(connection->endpoint(), path, body);
    auto parser = std::make_unique<http::response_parser<http::buffer_body>>();
    parser->body_limit(std::numeric_limits<std::uint64_t>::max());
    DRAPLANE_RETURN_IF_ERROR(
        connection->StartStream(request, parser.get(), pool_->options().request_timeout));
    if (parser->get().result_int() != 200) {
      return UnavailableError("etcd refused the watch stream with HTTP " +
                              std::to_string(parser->get().result_int()));
    }
    return std::unique_ptr<WatchStream>(
        new WatchStreamImpl(std::move(connection), std::move(parser)));
  } catch (const std::exception& e) {
    return InternalError(std::string("etcd stream ") + std::string(path) + ": " + e.what());
  }
}

}  // namespace draplane::store::internal
