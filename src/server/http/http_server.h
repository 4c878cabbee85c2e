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
  // Go's http.DefaultMaxHeaderBytes.
  size_t max_header_bytes = 1024 * 1024;
  // A streamed response whose unsent bytes exceed this is ended (a watcher too slow to keep up).
  size_t max_stream_backlog_bytes = 64 * 1024 * 1024;
  // How long a keep-alive connection may wait for its next request, and how long a request may
  // take to arrive (TLS handshake included).
  std::chrono::seconds idle_timeout{300};
  ProtocolErrorResponder protocol_error;  // required
};

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
  // Graceful shutdown as described above; returns once the I/O threads have stopped.
  // Idempotent.
  virtual void Shutdown(std::chrono::milliseconds grace) = 0;
};

}  // namespace draplane::server::http
