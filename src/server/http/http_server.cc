// Boost.Beast implementation of HttpServer. This file and its tests are the only code in the
// server that sees Beast or Asio (STYLE.md, docs/architecture.md).
//
// Structure:
//  1. `Core` owns the io_context, the TLS context, the acceptor and the registry of live
//     sessions. It is shared by the server object and by every outstanding Exchange / stream,
//     so an answer that arrives after shutdown is dropped safely instead of touching freed
//     memory.
//  2. `Session<Stream>` is one connection (Stream = plain TCP or TLS over TCP). Everything it
//     does runs on its strand: handshake, read one request (header first, so a too-large body
//     is refused before it is read), call the handler, wait for the answer posted back by the
//     Exchange, write it, and loop (keep-alive) or close.
//  3. A streamed answer writes the header with chunked encoding and then drains a queue of
//     shared chunks; a concurrent 1-byte read notices the client going away. The stream ends
//     the connection when it ends.
#include "server/http/http_server.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <deque>
#include <map>
#include <thread>
#include <type_traits>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "common/thread_name.h"

namespace draplane::server::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

class SessionBase;
class StreamImpl;

// Shared state of one server (see the file comment, step 1).
//
// Member order matters: the io_context is destroyed before the members its queued handlers
// (sessions) use in their destructors, and the acceptor before the io_context.
struct Core {
  HttpServerOptions options;
  Handler handler;
  std::optional<ssl::context> ssl_ctx;

  Mutex mu;
  CondVar sessions_changed;
  std::map<SessionBase*, std::weak_ptr<SessionBase>> sessions DRAPLANE_GUARDED_BY(mu);
  std::atomic<bool> shutting_down{false};

  std::weak_ptr<Core> self;  // for handing shared ownership to Exchanges

  net::io_context ioc;
  tcp::acceptor acceptor{net::make_strand(ioc)};

  explicit Core(int threads) : ioc(threads) {}
};

std::string RemoteAddress(const tcp::socket& socket) {
  beast::error_code ec;
  tcp::endpoint endpoint = socket.remote_endpoint(ec);
  if (ec) return "";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

// Reads CN and O entries of the verified peer certificate, if any.
std::optional<ClientCertificate> PeerCertificate(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return std::nullopt;
  X509_NAME* subject = X509_get_subject_name(cert);
  if (subject == nullptr) return std::nullopt;
  ClientCertificate out;
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry));
    if (nid != NID_commonName && nid != NID_organizationName) continue;
    unsigned char* utf8 = nullptr;
    int length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry));
    if (length < 0) continue;
    std::string value(reinterpret_cast<char*>(utf8), static_cast<size_t>(length));
    OPENSSL_free(utf8);
    if (nid == NID_commonName) {
      out.common_name = std::move(value);
    } else {
      out.organizations.push_back(std::move(value));
    }
  }
  return out;
}

// The interface Exchange and StreamImpl use to reach a session of either stream type.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void Run() = 0;
  // Each of these posts onto the session's strand.
  virtual void PostShutdown() = 0;
  virtual void PostResponse(Response response) = 0;
  virtual void PostStreamStart(int status, std::vector<Header> headers,
                               std::shared_ptr<StreamImpl> stream) = 0;
  virtual void PostChunk(Chunk chunk) = 0;
  virtual void PostStreamEnd() = 0;
  // Closes the connection at once; only when no I/O thread runs (final stage of shutdown).
  virtual void ForceClose() = 0;
};

class StreamImpl final : public ResponseStream {
 public:
  StreamImpl(std::shared_ptr<Core> core, std::shared_ptr<SessionBase> session)
      : core_(std::move(core)), session_(std::move(session)) {}

  bool Write(Chunk chunk) override {
    if (!open_.load(std::memory_order_acquire) || chunk == nullptr || chunk->empty()) return false;
    size_t backlog = queued_bytes_.fetch_add(chunk->size()) + chunk->size();
    if (backlog > core_->options.max_stream_backlog_bytes) {
      log::Warning("http: ending a stream whose client is {} bytes behind", backlog);
      Close();
      return false;
    }
    session_->PostChunk(std::move(chunk));
    return true;
  }

  void Close() override {
    if (!open_.exchange(false)) return;
    session_->PostStreamEnd();
  }

  void SetOnClosed(std::function<void()> on_closed) override {
    MutexLock lock(mu_);
    if (ended_) {
      lock.Unlock();
      on_closed();
      return;
    }
    on_closed_ = std::move(on_closed);
  }

  bool open() const override { return open_.load(std::memory_order_acquire); }

  // Called by the session (on its strand) once a chunk has been written.
  void Written(size_t bytes) { queued_bytes_.fetch_sub(bytes); }

  // Called by the session (on its strand) when the stream is over for any reason.
  void Ended() {
    open_.store(false, std::memory_order_release);
    std::function<void()> callback;
    {
      MutexLock lock(mu_);
      if (ended_) return;
      ended_ = true;
      callback = std::move(on_closed_);
      on_closed_ = nullptr;
    }
    if (callback) callback();
  }

 private:
  std::shared_ptr<Core> core_;  // declared first: outlives session_
  std::shared_ptr<SessionBase> session_;
  std::atomic<bool> open_{true};
  std::atomic<size_t> queued_bytes_{0};
  Mutex mu_;
  bool ended_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::function<void()> on_closed_ DRAPLANE_GUARDED_BY(mu_);
};

class ExchangeImpl final : public Exchange {
 public:
  ExchangeImpl(std::shared_ptr<Core> core, std::shared_ptr<SessionBase> session)
      : core_(std::move(core)), session_(std::move(session)) {}

  ~ExchangeImpl() override {
    if (!answered_.exchange(true)) {
      session_->PostResponse(
          core_->options.protocol_error(500, "the request handler returned no response"));
    }
  }

  void Respond(Response response) override {
    if (answered_.exchange(true)) return;
    session_->PostResponse(std::move(response));
  }

  std::shared_ptr<ResponseStream> StartStream(int status, std::vector<Header> headers) override;

 private:
  std::shared_ptr<Core> core_;  // declared first: outlives session_
  std::shared_ptr<SessionBase> session_;
  std::atomic<bool> answered_{false};
};

template <typename Stream>
class Session final : public SessionBase {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

 public:
  // The session keeps only a raw pointer to its core, so that the io_context (whose queued
  // handlers own sessions) is not part of an ownership cycle.
  // Plain connection.
  Session(Core* core, tcp::socket&& socket) requires(!kTls)
      : core_(core), stream_(std::move(socket)) {}
  // TLS connection.
  Session(Core* core, tcp::socket&& socket) requires(kTls)
      : core_(core), stream_(std::move(socket), *core->ssl_ctx) {}

  ~Session() override { Unregister(); }

  void Run() override {
    remote_address_ = RemoteAddress(beast::get_lowest_layer(stream_).socket());
    net::dispatch(stream_.get_executor(), [self = Self()] { self->Begin(); });
  }

  void PostShutdown() override {
    net::post(stream_.get_executor(), [self = Self()] { self->OnShutdown(); });
  }

  void PostResponse(Response response) override {
    net::post(stream_.get_executor(), [self = Self(), response = std::move(response)]() mutable {
      self->WriteResponse(std::move(response));
    });
  }

  void PostStreamStart(int status, std::vector<Header> headers,
                       std::shared_ptr<StreamImpl> stream) override {
    net::post(stream_.get_executor(),
              [self = Self(), status, headers = std::move(headers), stream]() mutable {
                self->WriteStreamHeader(status, std::move(headers), std::move(stream));
              });
  }

  void PostChunk(Chunk chunk) override {
    net::post(stream_.get_executor(), [self = Self(), chunk = std::move(chunk)]() mutable {
      self->QueueChunk(std::move(chunk));
    });
  }

  void PostStreamEnd() override {
    net::post(stream_.get_executor(), [self = Self()] { self->EndStreamGracefully(); });
  }

  void ForceClose() override { Close(); }

 private:
  enum class State { kHandshake, kReading, kHandling, kWriting, kStreaming, kClosed };

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void Begin() {
    if (core_->shutting_down.load()) {
      Close();
      return;
    }
    if constexpr (kTls) {
      state_ = State::kHandshake;
      tcp().expires_after(core_->options.idle_timeout);
      stream_.async_handshake(ssl::stream_base::server,
                              [self = Self()](beast::error_code ec) { self->OnHandshake(ec); });
    } else {
      ReadRequest();
    }
  }

  void OnHandshake(beast::error_code ec) {
    if (ec) {
      log::Debug("http: TLS handshake with {} failed: {}", remote_address_, ec.message());
      Close();
      return;
    }
    if constexpr (kTls) client_certificate_ = PeerCertificate(stream_.native_handle());
    ReadRequest();
  }

  void ReadRequest() {
    if (core_->shutting_down.load()) {
      Close();
      return;
    }
    state_ = State::kReading;
    parser_.emplace();
    parser_->body_limit(core_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(core_->options.max_header_bytes));
    tcp().expires_after(core_->options.idle_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = Self()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      FailRead(ec);
      return;
    }
    if (beast::iequals(parser_->get()[bhttp::field::expect], "100-continue")) {
      auto interim = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_,
                                                                          parser_->get().version());
      bhttp::async_write(stream_, *interim, [self = Self(), interim](beast::error_code ec, size_t) {
        if (ec) {
          self->Close();
          return;
        }
        self->ReadBody();
      });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = Self()](beast::error_code ec, size_t) { self->OnRequest(ec); });
  }

  void FailRead(beast::error_code ec) {
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::error::eof || ec == ssl::error::stream_truncated) {
      Close();
      return;
    }
    // A protocol error: answer once and close. The client may still be sending the rest of its
    // request; closing at once would reset the connection before it reads the answer, so the
    // close lingers (shutdown our side, read and drop what arrives for a short while).
    keep_alive_ = false;
    linger_ = true;
    if (ec == bhttp::error::body_limit) {
      WriteResponse(core_->options.protocol_error(
          413, "the server has received too large a request entity (limit " +
                   std::to_string(core_->options.max_body_bytes) + " bytes)"));
    } else if (ec == bhttp::error::header_limit) {
      WriteResponse(core_->options.protocol_error(431, "request header fields too large"));
    } else {
      WriteResponse(core_->options.protocol_error(400, "malformed HTTP request: " + ec.message()));
    }
  }

  void OnRequest(beast::error_code ec) {
    if (ec) {
      FailRead(ec);
      return;
    }
    state_ = State::kHandling;
    tcp().expires_never();
    bhttp::request<bhttp::string_body> message = parser_->release();
    parser_.reset();
    keep_alive_ = message.keep_alive();

    Request request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    std::string_view target = request.target;
    size_t question = target.find('?');
    std::optional<std::string> path = PercentDecode(target.substr(0, question), false);
    if (!path) {
      keep_alive_ = false;
      WriteResponse(core_->options.protocol_error(400, "malformed percent-encoding in the path"));
      return;
    }
    request.path = std::move(*path);
    if (question != std::string_view::npos)
      request.query = std::string(target.substr(question + 1));
    request.headers.reserve(std::distance(message.begin(), message.end()));
    for (const auto& field : message) {
      request.headers.push_back(
          Header{std::string(field.name_string()), std::string(field.value())});
    }
    request.body = std::move(message.body());
    request.client_certificate = client_certificate_;
    request.remote_address = remote_address_;

    std::shared_ptr<Core> owner = core_->self.lock();
    if (owner == nullptr) {
      Close();
      return;
    }
    auto exchange = std::make_shared<ExchangeImpl>(std::move(owner), Self());
    core_->handler(std::move(request), std::move(exchange));
  }

  void WriteResponse(Response response) {
    if (state_ == State::kClosed) return;
    if (state_ != State::kHandling && state_ != State::kReading) return;
    state_ = State::kWriting;
    if (core_->shutting_down.load()) keep_alive_ = false;
    auto message = std::make_shared<bhttp::response<bhttp::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    for (Header& header : response.headers) message->insert(header.name, header.value);
    message->body() = std::move(response.body);
    message->keep_alive(keep_alive_);
    message->prepare_payload();
    tcp().expires_after(core_->options.idle_timeout);
    bhttp::async_write(stream_, *message, [self = Self(), message](beast::error_code ec, size_t) {
      if (!ec && self->linger_) {
        self->Linger();
        return;
      }
      if (ec || !self->keep_alive_) {
        self->Close();
        return;
      }
      self->ReadRequest();
    });
  }

  // Half-closes the connection and discards what the client still sends, up to a bound.
  void Linger() {
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcp().expires_after(std::chrono::seconds(2));
    tcp().async_read_some(net::buffer(discard_), [self = Self()](beast::error_code ec, size_t n) {
      self->lingered_ += n;
      if (ec || self->lingered_ > kMaxLingerBytes) {
        self->Close();
        return;
      }
      self->Linger();
    });
  }

  void WriteStreamHeader(int status, std::vector<Header> headers,
                         std::shared_ptr<StreamImpl> stream) {
    if (state_ != State::kHandling) {
      stream->Ended();
      return;
    }
    state_ = State::kStreaming;
    stream_impl_ = std::move(stream);
    stream_header_ = std::make_unique<bhttp::response<bhttp::empty_body>>();
    stream_header_->version(11);
    stream_header_->result(static_cast<unsigned>(status));
    for (Header& header : headers) stream_header_->insert(header.name, header.value);
    stream_header_->keep_alive(false);
    stream_header_->chunked(true);
    serializer_ = std::make_unique<bhttp::response_serializer<bhttp::empty_body>>(*stream_header_);
    writing_ = true;
    tcp().expires_never();
    bhttp::async_write_header(stream_, *serializer_, [self = Self()](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->Close();
        return;
      }
      self->WatchForDisconnect();
      self->WriteNextChunk();
    });
    if (core_->shutting_down.load()) stream_end_requested_ = true;
  }

  // A read that completes only when the client closes (or misbehaves) during a stream.
  void WatchForDisconnect() {
    stream_.async_read_some(net::buffer(discard_), [self = Self()](beast::error_code ec, size_t) {
      if (self->state_ != State::kStreaming) return;
      if (ec) {
        self->Close();
        return;
      }
      self->WatchForDisconnect();
    });
  }

  void QueueChunk(Chunk chunk) {
    if (state_ == State::kClosed || stream_end_requested_) {
      if (stream_impl_) stream_impl_->Written(chunk->size());
      return;
    }
    chunks_.push_back(std::move(chunk));
    if (state_ == State::kStreaming && !writing_) WriteNextChunk();
  }

  void EndStreamGracefully() {
    stream_end_requested_ = true;
    if (state_ == State::kStreaming && !writing_) WriteNextChunk();
    if (state_ == State::kHandling) Close();
  }

  void WriteNextChunk() {
    if (state_ != State::kStreaming || writing_) return;
    if (chunks_.empty()) {
      if (!stream_end_requested_) return;
      writing_ = true;
      net::async_write(stream_, bhttp::make_chunk_last(),
                       [self = Self()](beast::error_code, size_t) {
                         self->writing_ = false;
                         self->Close();
                       });
      return;
    }
    writing_ = true;
    Chunk chunk = chunks_.front();
    net::async_write(stream_, bhttp::make_chunk(net::const_buffer(chunk->data(), chunk->size())),
                     [self = Self(), chunk](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       // Close() (connection lost, shutdown) already dropped and accounted
                       // every queued chunk, this one included.
                       if (self->state_ == State::kClosed) return;
                       self->chunks_.pop_front();
                       if (self->stream_impl_) self->stream_impl_->Written(chunk->size());
                       if (ec) {
                         self->Close();
                         return;
                       }
                       self->WriteNextChunk();
                     });
  }

  void OnShutdown() {
    switch (state_) {
      case State::kHandshake:
      case State::kReading:
        Close();
        break;
      case State::kHandling:
      case State::kWriting:
        keep_alive_ = false;  // closes after the answer
        break;
      case State::kStreaming:
        EndStreamGracefully();
        break;
      case State::kClosed:
        break;
    }
  }

  // Removes the session from the registry of open connections.
  void Unregister() {
    MutexLock lock(core_->mu);
    if (core_->sessions.erase(this) > 0) core_->sessions_changed.NotifyAll();
  }

  void Close() {
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    Unregister();
    beast::error_code ignored;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp().socket().close(ignored);
    for (const Chunk& chunk : chunks_) {
      if (stream_impl_) stream_impl_->Written(chunk->size());
    }
    chunks_.clear();
    if (stream_impl_) {
      std::shared_ptr<StreamImpl> stream = std::move(stream_impl_);
      stream->Ended();
    }
  }

  Core* core_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<ClientCertificate> client_certificate_;
  std::string remote_address_;
  State state_ = State::kReading;
  bool keep_alive_ = true;
  bool linger_ = false;
  size_t lingered_ = 0;
  static constexpr size_t kMaxLingerBytes = 16 * 1024 * 1024;

  // Streaming.
  std::shared_ptr<StreamImpl> stream_impl_;
  std::unique_ptr<bhttp::response<bhttp::empty_body>> stream_header_;
  std::unique_ptr<bhttp::response_serializer<bhttp::empty_body>> serializer_;
  std::deque<Chunk> chunks_;
  bool writing_ = false;
  bool stream_end_requested_ = false;
  char discard_[512];
};

std::shared_ptr<ResponseStream> ExchangeImpl::StartStream(int status, std::vector<Header> headers) {
  auto stream = std::make_shared<StreamImpl>(core_, session_);
  if (answered_.exchange(true)) {
    stream->Ended();
    return stream;
  }
  // Posted before any chunk the caller writes, so the session knows its stream first.
  session_->PostStreamStart(status, std::move(headers), stream);
  return stream;
}

void Accept(Core* core) {
  core->acceptor.async_accept(
      net::make_strand(core->ioc), [core](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !core->acceptor.is_open()) return;
        if (ec) {
          log::Warning("http: accept failed: {}", ec.message());
          Accept(core);
          return;
        }
        if (core->shutting_down.load()) return;
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::shared_ptr<SessionBase> session;
        if (core->ssl_ctx) {
          session = std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
              core, std::move(socket));
        } else {
          session = std::make_shared<Session<beast::tcp_stream>>(core, std::move(socket));
        }
        {
          MutexLock lock(core->mu);
          core->sessions.emplace(session.get(), session);
        }
        session->Run();
        Accept(core);
      });
}

class HttpServerImpl final : public HttpServer {
 public:
  explicit HttpServerImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  ~HttpServerImpl() override { Shutdown(std::chrono::seconds(5)); }

  Status Listen() {
    beast::error_code ec;
    net::ip::address address = net::ip::make_address(core_->options.host, ec);
    if (ec) return InvalidArgumentError("not an IP address: " + core_->options.host);
    tcp::endpoint endpoint(address, core_->options.port);
    core_->acceptor.open(endpoint.protocol(), ec);
    if (!ec) core_->acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) core_->acceptor.bind(endpoint, ec);
    if (!ec) core_->acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return UnavailableError("cannot listen on " + core_->options.host + ":" +
                              std::to_string(core_->options.port) + ": " + ec.message());
    }
    port_ = core_->acceptor.local_endpoint().port();
    return Status::Ok();
  }

  void StartThreads() {
    Accept(core_.get());
    int threads = std::max(1, core_->options.io_threads);
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([core = core_.get()] {
        SetCurrentThreadName("http-io");
        core->ioc.run();
      });
    }
  }

  uint16_t port() const override { return port_; }

  size_t open_connections() const override {
    MutexLock lock(core_->mu);
    return core_->sessions.size();
  }

  void Shutdown(std::chrono::milliseconds grace) override {
    MutexLock shutdown_lock(shutdown_mu_);
    if (stopped_) return;
    stopped_ = true;
    core_->shutting_down.store(true);
    net::post(core_->acceptor.get_executor(), [core = core_.get()] {
      beast::error_code ignored;
      core->acceptor.close(ignored);
    });
    for (const std::shared_ptr<SessionBase>& session : LiveSessions()) session->PostShutdown();
    {
      MutexLock lock(core_->mu);
      core_->sessions_changed.WaitFor(
          lock, grace, [&]() DRAPLANE_REQUIRES(core_->mu) { return core_->sessions.empty(); });
    }
    core_->ioc.stop();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    // No I/O thread runs now: close what is left and let the aborted operations release their
    // sessions.
    for (const std::shared_ptr<SessionBase>& session : LiveSessions()) session->ForceClose();
    core_->ioc.restart();
    core_->ioc.poll();
  }

 private:
  std::vector<std::shared_ptr<SessionBase>> LiveSessions() {
    std::vector<std::shared_ptr<SessionBase>> out;
    MutexLock lock(core_->mu);
    for (auto& [raw, weak] : core_->sessions) {
      if (std::shared_ptr<SessionBase> session = weak.lock()) out.push_back(std::move(session));
    }
    return out;
  }

  std::shared_ptr<Core> core_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  Mutex shutdown_mu_;
  bool stopped_ DRAPLANE_GUARDED_BY(shutdown_mu_) = false;
};

Status LoadTls(Core& core, const TlsOptions& tls) {
  try {
    ssl::context ctx(ssl::context::tls_server);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                    ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                    ssl::context::single_dh_use);
    ctx.use_certificate_chain(net::buffer(tls.certificate_chain_pem));
    ctx.use_private_key(net::buffer(tls.private_key_pem), ssl::context::pem);
    if (!tls.client_ca_pem.empty()) {
      ctx.add_certificate_authority(net::buffer(tls.client_ca_pem));
      // Ask for a client certificate, accept connections without one, fail a bad one.
      ctx.set_verify_mode(ssl::verify_peer);
      // Advertise the acceptable issuers so clients with several certificates pick ours.
      BIO* bio =
          BIO_new_mem_buf(tls.client_ca_pem.data(), static_cast<int>(tls.client_ca_pem.size()));
      STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
      while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
        sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(cert)));
        X509_free(cert);
      }
      BIO_free(bio);
      ERR_clear_error();
      SSL_CTX_set_client_CA_list(ctx.native_handle(), names);
    }
    // HTTP/1.1 only; clients that offer h2 fall back (ALPN would be needed to negotiate it).
    core.ssl_ctx.emplace(std::move(ctx));
  } catch (const boost::system::system_error& e) {
    return InvalidArgumentError(std::string("invalid TLS material: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                        Handler handler) {
  if (!options.protocol_error) return InvalidArgumentError("protocol_error responder is required");
  if (!handler) return InvalidArgumentError("handler is required");
  auto core = std::make_shared<Core>(std::max(1, options.io_threads));
  core->self = core;
  core->options = std::move(options);
  core->handler = std::move(handler);
  if (core->options.tls) DRAPLANE_RETURN_IF_ERROR(LoadTls(*core, *core->options.tls));
  auto server = std::make_unique<HttpServerImpl>(core);
  DRAPLANE_RETURN_IF_ERROR(server->Listen());
  server->StartThreads();
  return std::unique_ptr<HttpServer>(std::move(server));
}

}  // namespace draplane::server::http
