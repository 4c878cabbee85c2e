// An HTTP/1.1 server (plain or TLS) on a small fixed pool of I/O threads.
//
// One `io_context` drives every connection asynchronously, so thousands of long-lived watch
// streams cost memory, not threads. Each connection has its own strand; requests are read one at
// a time per connection (keep-alive, no pipelining), handed to the `Handler`, and answered through
// the `Exchange` from any thread. Streamed responses use chunked transfer encoding and end the
// connection when they end.
//
// TLS: the server presents `certificate_chain_pem`; when `client_ca_pem` is set it asks for a
// client certificate and accepts connections without one (Go's VerifyClientCertIfGiven), but a
// certificate that does not verify fails the handshake. The verified subject is passed on in
// `Request::client_certificate`.
//
// Shutdown (`Shutdown()` or destruction): stop accepting, close idle connections, end all
// streams, let requests in flight be answered (each connection closes after its answer), then
// stop the I/O threads. The owner must answer or drop every `Exchange` it holds for shutdown to
// finish before `grace` runs out; after that, connections are closed regardless.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "server/http/http.h"

namespace draplane::server::http {

struct TlsOptions {
  std::string certificate_chain_pem;
  std::string private_key_pem;
  // When non-empty, client certificates signed by this CA authenticate their subject.
  std::string client_ca_pem;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";  // an IP address literal
  uint16_t port = 0;               // 0 picks a free port; see HttpServer::port()
  std::optional<TlsOptions> tls;   // plain HTTP when absent
  int io_threads = 2;
  // kube-apiserver's limit on request bodies (MaxRequestBodyBytes, 3 MiB).
  size_t max_body_bytes = 3 * 1024 * 1024;
  // The request line and header block together (kube-apiserver: Go's MaxHeaderBytes, 1 MiB);
  // more is answered 431.
  size_t max_header_bytes = 1024 * 1024;
  // One header field, name and value together (Go has no such limit; Beast cannot hold a name or
  // value over 65,533 bytes, so this is capped there); more is answered 431.
  size_t max_header_field_bytes = 64 * 1024;
  // Memory held by requests being read or served is bounded per connection and in all: every
  // connection may buffer a header block of `header_bytes_per_connection` and a body of
  // `body_bytes_per_connection`; a larger header block (up to max_header_bytes) or body (up to
  // max_body_bytes) first takes its size from a budget of `max_buffered_request_bytes` shared by
  // all connections, and is answered 431 / 429 (Retry-After: 1) when the budget is spent. The
  // share is returned when the answer has been written.
  size_t header_bytes_per_connection = 16 * 1024;
  size_t body_bytes_per_connection = 64 * 1024;
  size_t max_buffered_request_bytes = 256 * 1024 * 1024;
  // A streamed response whose unsent bytes exceed this is ended (a watcher too slow to keep up).
  size_t max_stream_backlog_bytes = 64 * 1024 * 1024;
  // Open connections at most (lowered to leave file descriptors under RLIMIT_NOFILE). At the cap
  // a new connection closes one that holds no request (waiting for its TLS handshake or its next
  // request); when every connection is busy with a request, the new one is closed.
  size_t max_connections = 10'000;
  // Timeouts (kube-apiserver's secure serving: ReadHeaderTimeout 32 s, IdleTimeout 90 s;
  // --request-timeout 60 s):
  //   read_header_timeout  the TLS handshake and the first request's header block from the
  //                        connection's start; a later request's header from its first byte;
  //   idle_timeout         a keep-alive connection waiting for its next request, and the
  //                        writing of an answer;
  //   request_timeout      reading a body, and a handler's answer: a request not answered in
  //                        time is answered 504 (streams are exempt once they start).
  std::chrono::seconds read_header_timeout{32};
  std::chrono::seconds idle_timeout{90};
  std::chrono::seconds request_timeout{60};
  ProtocolErrorResponder protocol_error;  // required
  // The time of the Date header of every answer (RFC 9110 §6.6.1: an origin server with a clock
  // sends it; Go's net/http, and so kube-apiserver, does). Clients such as the dashboard read the
  // server's time from it. RealClock() when null.
  const Clock* clock = nullptr;
};

// `t` as an HTTP date (IMF-fixdate, RFC 9110 §5.6.7): "Sun, 06 Nov 1994 08:49:37 GMT".
std::string HttpDate(Timestamp t);

class HttpServer {
 public:
  // Binds and listens, then starts the I/O threads. Returns InvalidArgument for a bad host or
  // TLS material and Unavailable when the address cannot be bound.
  static StatusOr<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Handler handler);

  virtual ~HttpServer() = default;

  // The port actually bound.
  virtual uint16_t port() const = 0;
  // Number of open connections (for metrics and tests).
  virtual size_t open_connections() const = 0;
  // The connection cap in effect (HttpServerOptions::max_connections, lowered to fit
  // RLIMIT_NOFILE).
  virtual size_t max_connections() const = 0;
  // Graceful shutdown as described above; returns once the I/O threads have stopped.
  // Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace draplane::server::http
