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
#include <sys/resource.h>
#include <time.h>

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

using BeastRequest = bhttp::request<bhttp::string_body>;

// Beast's `request_parser<string_body>` plus a limit on each header field. Beast stores a field's
// name and value behind 16-bit offsets and throws std::length_error for a longer one (from
// inside the parse, on an I/O thread); this parser refuses such a field first, as
// `header_limit`, so it is answered 431 like a header block over the total limit.
class RequestParser final : public bhttp::basic_parser<true> {
 public:
  explicit RequestParser(size_t max_field_bytes)
      : max_field_bytes_(std::min<size_t>(max_field_bytes, kBeastMaxField)) {}

  BeastRequest& get() { return message_; }
  BeastRequest release() { return std::move(message_); }

 private:
  // The longest name or value Beast can hold: 65,535 less the ": " it keeps with the name.
  static constexpr size_t kBeastMaxField = 65'533;

  void on_request_impl(bhttp::verb method, beast::string_view method_string,
                       beast::string_view target, int version, beast::error_code&) override {
    message_.target(target);
    if (method != bhttp::verb::unknown) {
      message_.method(method);
    } else {
      message_.method_string(method_string);
    }
    message_.version(version);
  }

  void on_response_impl(int, beast::string_view, int, beast::error_code& ec) override {
    ec = bhttp::error::bad_version;  // a request parser never reads a status line
  }

  void on_field_impl(bhttp::field name, beast::string_view name_string, beast::string_view value,
                     beast::error_code& ec) override {
    if (name_string.size() + value.size() > max_field_bytes_) {
      ec = bhttp::error::header_limit;
      return;
    }
    message_.insert(name, name_string, value);
  }

  void on_header_impl(beast::error_code& ec) override { ec = {}; }

  void on_body_init_impl(const boost::optional<std::uint64_t>& content_length,
                         beast::error_code& ec) override {
    reader_.emplace(message_, message_.body());
    reader_->init(content_length, ec);
  }

  size_t on_body_impl(beast::string_view body, beast::error_code& ec) override {
    return reader_->put(net::buffer(body.data(), body.size()), ec);
  }

  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}

  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body,
                            beast::error_code& ec) override {
    return reader_->put(net::buffer(body.data(), body.size()), ec);
  }

  void on_finish_impl(beast::error_code& ec) override {
    if (reader_) reader_->finish(ec);
  }

  const size_t max_field_bytes_;
  BeastRequest message_;
  std::optional<bhttp::string_body::reader> reader_;
};

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
  // The connection cap in effect: options.max_connections, lowered to what the process's file
  // descriptor limit leaves (set by Listen).
  size_t max_connections = 0;
  // Bytes reserved by requests over the per-connection allowances (large header blocks and
  // bodies), against options.max_buffered_request_bytes.
  std::atomic<size_t> buffered_request_bytes{0};
  // Delay before the next accept after a failed one (Go's http.Server: 5 ms doubling to 1 s).
  std::chrono::milliseconds accept_delay{0};  // only touched on the acceptor's strand

  std::weak_ptr<Core> self;  // for handing shared ownership to Exchanges

  net::io_context ioc;
  tcp::acceptor acceptor{net::make_strand(ioc)};

  explicit Core(int threads) : ioc(threads) {}
};

// Takes `bytes` from the shared budget of buffered request bytes; false when it would pass
// `limit` (nothing is taken then).
bool ReserveBuffered(Core& core, size_t bytes) {
  size_t current = core.buffered_request_bytes.load();
  do {
    if (current + bytes > core.options.max_buffered_request_bytes) return false;
  } while (!core.buffered_request_bytes.compare_exchange_weak(current, current + bytes));
  return true;
}

log::RateLimiter& ConnectionLogLimiter() {
  static log::RateLimiter limiter(std::chrono::seconds(10));
  return limiter;
}

log::RateLimiter& StreamLogLimiter() {
  static log::RateLimiter limiter(std::chrono::seconds(10));
  return limiter;
}

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

// Copies `headers` into `message`. False when Beast refuses one (a name or value over 64 KiB):
// what a handler answers must never throw on an I/O thread.
template <typename Message>
bool InsertHeaders(Message& message, const std::vector<Header>& headers) {
  try {
    for (const Header& header : headers) message.insert(header.name, header.value);
    return true;
  } catch (const std::exception& e) {
    log::Warning("http: dropping an answer whose headers Beast refuses: {}", e.what());
    return false;
  }
}

// The interface Exchange and StreamImpl use to reach a session of either stream type.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void Run() = 0;
  // Each of these posts onto the session's strand.
  virtual void PostShutdown() = 0;
  // Closes the connection if it is still between requests (the connection cap needs room).
  virtual void PostEvictIfIdle() = 0;
  // `request` numbers the request on its connection: an answer for an earlier request (one
  // already answered 504 by the request timeout) is dropped.
  virtual void PostResponse(uint64_t request, Response response) = 0;
  virtual void PostStreamStart(uint64_t request, int status, std::vector<Header> headers,
                               std::shared_ptr<StreamImpl> stream) = 0;
  virtual void PostChunk(Chunk chunk) = 0;
  virtual void PostStreamEnd() = 0;
  // Closes a streaming connection at once, dropping what is queued (a reader too far behind: a
  // graceful end would wait for it to read everything first).
  virtual void PostStreamAbort() = 0;
  // Closes the connection at once; only when no I/O thread runs (final stage of shutdown).
  virtual void ForceClose() = 0;
  // True while the connection waits for a TLS handshake or for the first byte of a request: it
  // holds no request, so the connection cap may close it to admit a new one.
  bool idle() const { return idle_.load(std::memory_order_relaxed); }

 protected:
  std::atomic<bool> idle_{true};
};

class StreamImpl final : public ResponseStream {
 public:
  StreamImpl(std::shared_ptr<Core> core, std::shared_ptr<SessionBase> session)
      : core_(std::move(core)), session_(std::move(session)) {}

  bool Write(Chunk chunk) override {
    if (!open_.load(std::memory_order_acquire) || chunk == nullptr || chunk->empty()) return false;
    size_t backlog = queued_bytes_.fetch_add(chunk->size()) + chunk->size();
    if (backlog > core_->options.max_stream_backlog_bytes) {
      log::WarningEvery(StreamLogLimiter(), "http: ending a stream whose client is {} bytes behind",
                        backlog);
      if (open_.exchange(false)) session_->PostStreamAbort();
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
  ExchangeImpl(std::shared_ptr<Core> core, std::shared_ptr<SessionBase> session, uint64_t request)
      : core_(std::move(core)), session_(std::move(session)), request_(request) {}

  ~ExchangeImpl() override {
    if (!answered_.exchange(true)) {
      session_->PostResponse(
          request_, core_->options.protocol_error(500, "the request handler returned no response"));
    }
  }

  void Respond(Response response) override {
    if (answered_.exchange(true)) return;
    session_->PostResponse(request_, std::move(response));
  }

  std::shared_ptr<ResponseStream> StartStream(int status, std::vector<Header> headers) override;

 private:
  std::shared_ptr<Core> core_;  // declared first: outlives session_
  std::shared_ptr<SessionBase> session_;
  const uint64_t request_;
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
      : core_(core), stream_(std::move(socket)), request_timer_(stream_.get_executor()) {}
  // TLS connection.
  Session(Core* core, tcp::socket&& socket) requires(kTls)
      : core_(core),
        stream_(std::move(socket), *core->ssl_ctx),
        request_timer_(stream_.get_executor()) {}

  ~Session() override {
    ReleaseBuffered();
    Unregister();
  }

  void Run() override {
    remote_address_ = RemoteAddress(beast::get_lowest_layer(stream_).socket());
    net::dispatch(stream_.get_executor(), [self = Self()] { self->Begin(); });
  }

  void PostShutdown() override {
    net::post(stream_.get_executor(), [self = Self()] { self->OnShutdown(); });
  }

  void PostEvictIfIdle() override {
    net::post(stream_.get_executor(), [self = Self()] {
      if (self->idle() && self->state_ != State::kClosed) self->Close();
    });
  }

  void PostResponse(uint64_t request, Response response) override {
    net::post(stream_.get_executor(),
              [self = Self(), request, response = std::move(response)]() mutable {
                if (request != self->request_number_) return;  // answered 504 already
                self->WriteResponse(std::move(response));
              });
  }

  void PostStreamStart(uint64_t request, int status, std::vector<Header> headers,
                       std::shared_ptr<StreamImpl> stream) override {
    net::post(stream_.get_executor(),
              [self = Self(), request, status, headers = std::move(headers), stream]() mutable {
                if (request != self->request_number_) {
                  stream->Ended();
                  return;
                }
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

  void PostStreamAbort() override {
    net::post(stream_.get_executor(), [self = Self()] { self->Close(); });
  }

  void ForceClose() override { Close(); }

 private:
  // kIdle: waiting for the first byte of a request; kReading: reading its header and body.
  enum class State { kHandshake, kIdle, kReading, kHandling, kWriting, kStreaming, kClosed };

  static constexpr size_t kReadChunk = 4096;

  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }

  void SetState(State state) {
    state_ = state;
    idle_.store(state == State::kHandshake || state == State::kIdle, std::memory_order_relaxed);
  }

  void Begin() {
    if (core_->shutting_down.load()) {
      Close();
      return;
    }
    // The first request (and the TLS handshake before it) must arrive within the header
    // timeout of the connection's start (kube-apiserver: ReadHeaderTimeout).
    tcp().expires_after(core_->options.read_header_timeout);
    if constexpr (kTls) {
      SetState(State::kHandshake);
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
    if constexpr (kTls) {
      SSL* ssl = stream_.native_handle();
      client_certificate_ = PeerCertificate(ssl);
      client_certificate_rejected_ =
          SSL_get0_peer_certificate(ssl) != nullptr && !client_certificate_.has_value();
    }
    ReadRequest();
  }

  // Waits for the next request: its first byte within the idle timeout (the header timeout for
  // a connection's first request, already running), then the header block within the header
  // timeout.
  void ReadRequest() {
    if (core_->shutting_down.load()) {
      Close();
      return;
    }
    ReleaseBuffered();
    parser_.emplace(core_->options.max_header_field_bytes);
    parser_->body_limit(core_->options.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(core_->options.max_header_bytes));
    if (buffer_.size() > 0) {  // the client already sent more
      if (served_ > 0) tcp().expires_after(core_->options.read_header_timeout);
      ReadHeader();
      return;
    }
    SetState(State::kIdle);
    if (served_ > 0) tcp().expires_after(core_->options.idle_timeout);
    ReadMore(/*first_byte=*/true);
  }

  // Reads what the client sends next into buffer_, then goes on with ReadHeader. `first_byte`:
  // the read that ends a keep-alive wait; the header timeout runs from there.
  void ReadMore(bool first_byte) {
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = Self(), first_byte](beast::error_code ec, size_t n) {
                              self->buffer_.commit(n);
                              if (ec) {
                                self->FailRead(ec);
                                return;
                              }
                              if (first_byte && self->served_ > 0) {
                                self->tcp().expires_after(self->core_->options.read_header_timeout);
                              }
                              self->ReadHeader();
                            });
  }

  // Reads the header block with our own loop around the parser (Beast's async_read_header would
  // do the same) so that the bytes a connection buffers are known: past the per-connection
  // allowance the header takes a share of the shared budget, or is answered 431. The parser
  // parses a header only once all of it is buffered, so nothing is consumed before that.
  void ReadHeader() {
    SetState(State::kReading);
    if (buffer_.size() > 0) {
      beast::error_code ec;
      size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (!ec && parser_->is_header_done()) {
        OnHeader({});
        return;
      }
      if (ec && ec != bhttp::error::need_more) {
        FailRead(ec);
        return;
      }
      if (buffer_.size() > core_->options.header_bytes_per_connection && header_reserved_ == 0) {
        if (!ReserveBuffered(*core_, core_->options.max_header_bytes)) {
          FailRead(bhttp::error::header_limit);
          return;
        }
        header_reserved_ = core_->options.max_header_bytes;
      }
    }
    ReadMore(/*first_byte=*/false);
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      FailRead(ec);
      return;
    }
    // Only chunked transfer coding is understood (as Go's server): with any other the body's end
    // is unknown, and reading the bytes after the header as the next request would let a client
    // smuggle a request past whatever inspected this one. Answered and the connection closed.
    if (auto te = parser_->get().find(bhttp::field::transfer_encoding);
        te != parser_->get().end() && !beast::iequals(te->value(), "chunked")) {
      keep_alive_ = false;
      linger_ = true;
      WriteResponse(core_->options.protocol_error(
          501, "unsupported transfer encoding: \"" + std::string(te->value()) + "\""));
      return;
    }
    // A body over the per-connection allowance needs a share of the shared budget, taken before
    // it is read (a chunked body may grow to the body limit).
    size_t body = parser_->content_length() ? static_cast<size_t>(*parser_->content_length())
                  : parser_->chunked()      ? core_->options.max_body_bytes
                                            : 0;
    body = std::min(body, core_->options.max_body_bytes);
    if (body > core_->options.body_bytes_per_connection) {
      if (!ReserveBuffered(*core_, body)) {
        keep_alive_ = false;
        linger_ = true;
        Response busy = core_->options.protocol_error(
            429, "the server is reading too many large requests, please try again later");
        busy.headers.push_back({"Retry-After", "1"});
        WriteResponse(std::move(busy));
        return;
      }
      body_reserved_ = body;
    }
    // The body must arrive within the request timeout.
    tcp().expires_after(core_->options.request_timeout);
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
      WriteResponse(core_->options.protocol_error(
          431, "request header fields too large (limits: " +
                   std::to_string(core_->options.max_header_bytes) + " bytes in all, " +
                   std::to_string(core_->options.max_header_field_bytes) + " per field)"));
    } else {
      WriteResponse(core_->options.protocol_error(400, "malformed HTTP request: " + ec.message()));
    }
  }

  void OnRequest(beast::error_code ec) {
    if (ec) {
      FailRead(ec);
      return;
    }
    SetState(State::kHandling);
    tcp().expires_never();
    BeastRequest message = parser_->release();
    parser_.reset();
    keep_alive_ = message.keep_alive();
    ++request_number_;
    ++served_;

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
    request.client_certificate_rejected = client_certificate_rejected_;
    request.remote_address = remote_address_;

    std::shared_ptr<Core> owner = core_->self.lock();
    if (owner == nullptr) {
      Close();
      return;
    }
    // kube-apiserver's request timeout: a request not answered in time gets a 504 (its handler
    // may still finish; that answer is dropped). A stream (watch) stops the timer when it starts.
    request_timer_.expires_after(core_->options.request_timeout);
    request_timer_.async_wait([self = Self(), number = request_number_](beast::error_code ec) {
      if (ec || number != self->request_number_ || self->state_ != State::kHandling) return;
      ++self->request_number_;  // the handler's answer, if it ever comes, is dropped
      self->keep_alive_ = false;
      self->WriteResponse(self->core_->options.protocol_error(
          504, "request did not complete within requested timeout - context deadline exceeded"));
    });
    auto exchange = std::make_shared<ExchangeImpl>(std::move(owner), Self(), request_number_);
    core_->handler(std::move(request), std::move(exchange));
  }

  // Every answer says when it was made (HttpServerOptions::clock).
  template <typename Message>
  void SetDate(Message& message) {
    message.set(bhttp::field::date, HttpDate(core_->options.clock->Now()));
  }

  void WriteResponse(Response response) {
    if (state_ == State::kClosed) return;
    if (state_ != State::kHandling && state_ != State::kReading && state_ != State::kIdle) return;
    SetState(State::kWriting);
    request_timer_.cancel();
    if (core_->shutting_down.load()) keep_alive_ = false;
    auto message = std::make_shared<bhttp::response<bhttp::string_body>>();
    message->version(11);
    message->result(static_cast<unsigned>(response.status));
    SetDate(*message);
    if (!InsertHeaders(*message, response.headers)) {
      // A header Beast cannot hold (over 64 KiB): the answer cannot be sent as built.
      message = std::make_shared<bhttp::response<bhttp::string_body>>();
      message->version(11);
      Response fallback = core_->options.protocol_error(500, "response header too large");
      message->result(static_cast<unsigned>(fallback.status));
      SetDate(*message);
      InsertHeaders(*message, fallback.headers);
      response.body = std::move(fallback.body);
    }
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
    ReleaseBuffered();
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
    SetState(State::kStreaming);
    request_timer_.cancel();
    ReleaseBuffered();
    stream_impl_ = std::move(stream);
    stream_header_ = std::make_unique<bhttp::response<bhttp::empty_body>>();
    stream_header_->version(11);
    stream_header_->result(static_cast<unsigned>(status));
    SetDate(*stream_header_);
    if (!InsertHeaders(*stream_header_, headers)) {
      Close();
      return;
    }
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
      case State::kIdle:
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

  // Returns what this connection took from the shared budget of buffered request bytes.
  void ReleaseBuffered() {
    if (header_reserved_ + body_reserved_ == 0) return;
    core_->buffered_request_bytes.fetch_sub(header_reserved_ + body_reserved_);
    header_reserved_ = 0;
    body_reserved_ = 0;
  }

  // Removes the session from the registry of open connections.
  void Unregister() {
    MutexLock lock(core_->mu);
    if (core_->sessions.erase(this) > 0) core_->sessions_changed.NotifyAll();
  }

  void Close() {
    if (state_ == State::kClosed) return;
    SetState(State::kClosed);
    Unregister();
    ReleaseBuffered();
    request_timer_.cancel();
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
  net::steady_timer request_timer_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  std::optional<ClientCertificate> client_certificate_;
  bool client_certificate_rejected_ = false;
  std::string remote_address_;
  State state_ = State::kIdle;
  bool keep_alive_ = true;
  bool linger_ = false;
  size_t lingered_ = 0;
  static constexpr size_t kMaxLingerBytes = 16 * 1024 * 1024;
  uint64_t request_number_ = 0;  // of the request being handled; answers for others are dropped
  uint64_t served_ = 0;          // requests read on this connection
  size_t header_reserved_ = 0;   // taken from Core::buffered_request_bytes
  size_t body_reserved_ = 0;     // likewise

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
  session_->PostStreamStart(request_, status, std::move(headers), stream);
  return stream;
}

// Makes room for one more connection when the cap is reached: asks a connection that holds no
// request (waiting for its TLS handshake or for a request's first byte) to close. Returns false
// when every connection is busy with a request; the new one is then refused.
bool MakeRoomForConnection(Core* core) {
  MutexLock lock(core->mu);
  if (core->sessions.size() < core->max_connections) return true;
  for (auto& [raw, weak] : core->sessions) {
    if (!raw->idle()) continue;
    if (std::shared_ptr<SessionBase> session = weak.lock()) {
      session->PostEvictIfIdle();
      return true;
    }
  }
  return false;
}

void Accept(Core* core);

// After a failed accept (out of file descriptors, above all) waits before the next one, 5 ms
// doubling to 1 s, as Go's http.Server does, instead of spinning on an error that persists.
void AcceptAfterDelay(Core* core) {
  core->accept_delay = std::clamp(core->accept_delay * 2, std::chrono::milliseconds(5),
                                  std::chrono::milliseconds(1000));
  auto timer = std::make_shared<net::steady_timer>(core->acceptor.get_executor());
  timer->expires_after(core->accept_delay);
  timer->async_wait([core, timer](beast::error_code ec) {
    if (ec || !core->acceptor.is_open()) return;
    Accept(core);
  });
}

void Accept(Core* core) {
  core->acceptor.async_accept(
      net::make_strand(core->ioc), [core](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !core->acceptor.is_open()) return;
        if (ec) {
          log::WarningEvery(ConnectionLogLimiter(), "http: accept failed: {}", ec.message());
          AcceptAfterDelay(core);
          return;
        }
        core->accept_delay = std::chrono::milliseconds(0);
        if (core->shutting_down.load()) return;
        beast::error_code ignored;
        if (!MakeRoomForConnection(core)) {
          log::WarningEvery(ConnectionLogLimiter(),
                            "http: refusing a connection: {} connections open, every one busy "
                            "with a request",
                            core->max_connections);
          socket.close(ignored);
          Accept(core);
          return;
        }
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

// Runs the io_context until it stops. Our handlers do not throw, but Beast, Asio and OpenSSL
// may (e.g. std::length_error, std::bad_alloc) on input a client chose: the exception ends only
// the handler that threw (its connection is released with it) and the thread goes back to
// serving, as Asio allows after an exception left run().
void RunIoThread(Core* core) {
  static log::RateLimiter limiter(std::chrono::seconds(10));
  while (true) {
    try {
      core->ioc.run();
      return;
    } catch (const std::exception& e) {
      log::WarningEvery(limiter, "http: a connection handler threw, connection dropped: {}",
                        e.what());
    } catch (...) {
      log::WarningEvery(limiter, "http: a connection handler threw, connection dropped");
    }
  }
}

// The connection cap: `configured`, lowered so that the connections leave file descriptors
// for the rest of the process (store, etcd clients, logs) under its RLIMIT_NOFILE.
size_t ConnectionCap(size_t configured) {
  constexpr size_t kReservedDescriptors = 256;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return configured;
  size_t available = limit.rlim_cur > 2 * kReservedDescriptors
                         ? static_cast<size_t>(limit.rlim_cur) - kReservedDescriptors
                         : static_cast<size_t>(limit.rlim_cur) / 2;
  return std::max<size_t>(1, std::min(configured, available));
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
    core_->max_connections = ConnectionCap(core_->options.max_connections);
    return Status::Ok();
  }

  void StartThreads() {
    Accept(core_.get());
    int threads = std::max(1, core_->options.io_threads);
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([core = core_.get()] {
        SetCurrentThreadName("http-io");
        RunIoThread(core);
      });
    }
  }

  uint16_t port() const override { return port_; }

  size_t open_connections() const override {
    MutexLock lock(core_->mu);
    return core_->sessions.size();
  }

  size_t max_connections() const override { return core_->max_connections; }

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
      // Ask for a client certificate and accept connections without one. A certificate that does
      // not verify does not fail the handshake either (upstream's RequestClientCert): the request
      // is answered 401 unless a bearer token authenticates it (PeerCertificate keeps only a
      // verified certificate).
      ctx.set_verify_mode(ssl::verify_peer);
      ctx.set_verify_callback([](bool, ssl::verify_context&) { return true; });
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
    // Sessions are resumable (browsers resume the first connection's session on the next ones
    // they open in parallel). With peer verification on, OpenSSL refuses to resume a session
    // without a session ID context and fails that handshake ("session id context
    // uninitialized"), which a browser reports as ERR_SSL_PROTOCOL_ERROR for the request it was
    // for. One context: every session of this server was made under the same verification
    // settings, and a resumed session keeps the client certificate it was verified with.
    static constexpr unsigned char kSessionIdContext[] = "draplane-apiserver";
    SSL_CTX_set_session_id_context(ctx.native_handle(), kSessionIdContext,
                                   sizeof(kSessionIdContext) - 1);
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
  if (core->options.clock == nullptr) core->options.clock = &RealClock();
  core->handler = std::move(handler);
  if (core->options.tls) DRAPLANE_RETURN_IF_ERROR(LoadTls(*core, *core->options.tls));
  auto server = std::make_unique<HttpServerImpl>(core);
  DRAPLANE_RETURN_IF_ERROR(server->Listen());
  server->StartThreads();
  return std::unique_ptr<HttpServer>(std::move(server));
}

std::string HttpDate(Timestamp t) {
  static constexpr const char* kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t seconds = std::chrono::floor<std::chrono::seconds>(t).time_since_epoch().count();
  struct tm utc {};
  gmtime_r(&seconds, &utc);
  char out[40];
  snprintf(out, sizeof(out), "%s, %02d %s %04d %02d:%02d:%02d GMT", kDays[utc.tm_wday], utc.tm_mday,
           kMonths[utc.tm_mon], utc.tm_year + 1900, utc.tm_hour, utc.tm_min, utc.tm_sec);
  return out;
}

}  // namespace draplane::server::http
