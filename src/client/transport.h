// The HTTP seam of the client: a request goes in, a response (whole or streamed) comes out.
//
// `RestClient` (rest_client.h) speaks the Kubernetes REST protocol over a `Transport`; the
// implementation over Boost.Beast + OpenSSL (http_transport.h) is the only code in the client that
// touches the HTTP library. Tests substitute scripted transports, and an embedding process could
// hand requests to an in-process server through the same interface.
//
// Thread-safety: a Transport is safe for concurrent use (each call may use its own connection).
// A StreamingResponse is read from one thread; Cancel() may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::client {

struct HttpRequest {
  std::string method{};  // "GET", "POST", "PUT", "PATCH", "DELETE"
  // Path and query relative to the server URL, e.g. "/api/v1/pods?watch=true".
  std::string target{};
  std::string content_type{};  // for a body
  std::string body{};
  // Extra headers (Accept, Authorization and User-Agent are set by the transport).
  std::vector<std::pair<std::string, std::string>> headers{};
  // Deadline for the whole exchange (non-streaming requests); zero: none.
  Duration timeout{0};
};

struct HttpResponse {
  int status = 0;
  std::string content_type{};
  std::string body{};
};

// A response whose body arrives over time (watch streams).
class StreamingResponse {
 public:
  virtual ~StreamingResponse() = default;
  // The HTTP status code; the body of a non-2xx response is still readable.
  virtual int status() const = 0;
  // Appends the next bytes of the body to `*out`. Returns false at the end of the body, or
  // Cancelled after Cancel(), Unavailable on a connection error.
  virtual StatusOr<bool> Read(std::string* out) = 0;
  // Ends the stream: a Read in progress (or the next one) returns Cancelled. Thread-safe,
  // idempotent.
  virtual void Cancel() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `request` and reads the whole response. Unavailable when the server cannot be
  // reached or the connection fails, DeadlineExceeded after `request.timeout`. Any HTTP status
  // is a successful round trip.
  virtual StatusOr<HttpResponse> RoundTrip(const HttpRequest& request) = 0;
  // Sends `request` and returns once the response headers are in; the body is read through the
  // returned stream on a dedicated connection.
  virtual StatusOr<std::unique_ptr<StreamingResponse>> Stream(const HttpRequest& request) = 0;
};

}  // namespace draplane::client
