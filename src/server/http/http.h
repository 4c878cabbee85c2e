// HTTP messages as the rest of the server sees them: plain values and two small completion
// interfaces, with no trace of the HTTP library (Boost.Beast stays in http_server.cc, STYLE.md).
//
// A request arrives as a `Request` together with an `Exchange`; the handler answers exactly once,
// either with a whole `Response` or by starting a chunked `ResponseStream` (watches). Both may be
// completed from any thread: the HTTP layer moves the work onto the connection's own strand.
//
// Thread-safety: `Request` and `Response` are values. `Exchange` and `ResponseStream` are safe for
// concurrent use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace draplane::server::http {

struct Header {
  std::string name;
  std::string value;
};

// Returns the value of the first header called `name` (ASCII case-insensitive), or empty.
std::string_view FindHeader(const std::vector<Header>& headers, std::string_view name);

// The identity in a client certificate that verified against the client CA: the subject's
// common name and organization entries (Kubernetes reads user and groups from them).
struct ClientCertificate {
  std::string common_name;
  std::vector<std::string> organizations;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the raw request target, e.g. "/api/v1/pods?watch=true"
  std::string path;    // the percent-decoded path part of `target`
  std::string query;   // the raw query part of `target`, without '?'
  std::vector<Header> headers;
  std::string body;
  // Present when the connection is TLS and the client presented a certificate that verified.
  std::optional<ClientCertificate> client_certificate;
  // The client presented a certificate that did not verify (expired, another issuer, not for
  // client authentication): the handshake went on, and authentication fails unless a bearer
  // token succeeds (kube-apiserver answers 401, not a TLS alert).
  bool client_certificate_rejected = false;
  std::string remote_address;  // "127.0.0.1:53422"

  std::string_view header(std::string_view name) const { return FindHeader(headers, name); }
};

struct Response {
  int status = 200;
  std::vector<Header> headers;  // Content-Length is computed; do not set it.
  std::string body;
};

// A piece of a streamed body, shared so one serialized watch event can go to many watchers.
using Chunk = std::shared_ptr<const std::string>;

// A chunked response body written over time. Created by Exchange::StartStream.
class ResponseStream {
 public:
  virtual ~ResponseStream() = default;
  // Queues `chunk` (non-empty) to be written in order. Returns false, dropping the chunk, when
  // the stream has ended (client gone, Close() called, server shutting down) or when the client
  // reads so slowly that the queued bytes exceed the server's backlog limit; in that last case
  // the stream is ended as well.
  virtual bool Write(Chunk chunk) = 0;
  // Ends the body (the terminating chunk) and then the connection. Idempotent.
  virtual void Close() = 0;
  // Installs the function called exactly once when the stream ends for any reason (Close(), the
  // client disconnecting, a write error, the backlog limit, server shutdown). If the stream has
  // already ended, `on_closed` runs before this returns. Runs on an I/O thread; must not block.
  virtual void SetOnClosed(std::function<void()> on_closed) = 0;
  // True while the stream accepts writes.
  virtual bool open() const = 0;
  // True when the reader lives in this process, so that Write is a queue append and a wake-up
  // of the reader, with no I/O (the embedded components' watches): cheap enough to call on the
  // thread that produced the data.
  virtual bool in_process() const { return false; }
};

// The answer channel of one request. Exactly one of Respond or StartStream is called; a second
// call is ignored. If the Exchange is destroyed unanswered the client gets a 500.
class Exchange {
 public:
  virtual ~Exchange() = default;
  virtual void Respond(Response response) = 0;
  // Sends the status line and headers (chunked transfer encoding) and returns the stream for
  // the body.
  virtual std::shared_ptr<ResponseStream> StartStream(int status, std::vector<Header> headers) = 0;
};

// Called on an I/O thread for every request; must not block (hand slow work to a pool).
using Handler = std::function<void(Request request, std::shared_ptr<Exchange> exchange)>;

// Builds the response for failures found by the HTTP layer itself (malformed request 400,
// body too large 413, handler never answered 500), so that its format is decided by the caller.
using ProtocolErrorResponder = std::function<Response(int status, std::string message)>;

// Percent-decodes `text` ("%2F" → "/"; '+' is kept as is unless `plus_is_space`). Returns
// std::nullopt for a malformed escape.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// Splits a raw query string into decoded (name, value) pairs in order ("a=1&b&c=%20" →
// {a,1},{b,""},{c," "}). Returns std::nullopt for a malformed escape.
std::optional<std::vector<std::pair<std::string, std::string>>> ParseQuery(std::string_view query);

// A `text/plain; charset=utf-8` answer that browsers may not sniff as another type (the health
// endpoints, the dashboard's errors).
Response PlainText(int status, std::string body);

}  // namespace draplane::server::http
