// The client::Transport of components embedded in `draplane serve` (scheduler, controllers,
// simulated node agents): requests go straight into the server's handler chain through
// `server::ClientCredentials::dispatch` instead of over the HTTPS loopback listener, which saves
// TLS, HTTP parsing and serialization on both sides and the socket I/O (docs/design/server.md,
// "Embedding components in the serve process").
//
// Everything else is what a connection gets: the request carries the component's bearer token
// (the server authenticates it exactly as over HTTP), Accept, User-Agent and Content-Type
// headers, the percent-decoded path and the raw query; authorization, admission and metrics
// run unchanged, and the answer comes back through an `http::Exchange`.
//   - RoundTrip waits for the answer (a streamed answer is read to its end). DeadlineExceeded
//     after `request.timeout` (zero: no deadline); Unavailable when the server drops the request
//     unanswered (shutdown).
//   - Stream returns once the status is known (StartStream or a whole answer), with the same
//     deadline. Read blocks for the next chunks and returns false after a server-side end
//     (Close, timeoutSeconds, shutdown) once everything queued before it was read. Cancel, from
//     any thread, ends the stream: a blocked Read returns Cancelled and the server's on_closed
//     runs once, on the cancelling thread. Destroying the stream cancels it.
//   - As on the listener, a reader that falls more than `max_stream_backlog_bytes` behind is
//     ended (the chunk that overflowed is dropped; what was queued is still read); the client
//     then resumes from the last revision it saw.
//
// Thread-safety: the transport is safe for concurrent use. A stream is read from one thread;
// Cancel may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "client/api_client.h"
#include "client/transport.h"
#include "common/status.h"
#include "server/http/http.h"
#include "server/http/http_server.h"
#include "server/server.h"

namespace draplane::cli {

struct InProcessTransportOptions {
  // Sent as `Authorization: Bearer <token>`; empty: no credentials (anonymous).
  std::string bearer_token{};
  std::string user_agent = "draplane";
  // The `remote_address` the server logs.
  std::string remote_address = "in-process";
  // The listener's limit (server::http::HttpServerOptions).
  size_t max_stream_backlog_bytes = server::http::HttpServerOptions{}.max_stream_backlog_bytes;
};

// A transport over `dispatch`. InvalidArgument when `dispatch` is empty.
StatusOr<std::unique_ptr<client::Transport>> NewInProcessTransport(
    server::http::Handler dispatch, InProcessTransportOptions options);

// The API client of an embedded component: in-process over `credentials.dispatch` when the
// server handed one out, else over HTTP(S) to `credentials.server_url` (trusting
// `credentials.ca_pem`). `user_agent` names the component. Errors of CreateRestClient.
StatusOr<std::unique_ptr<client::ApiClient>> NewEmbeddedClient(
    const server::ClientCredentials& credentials, const std::string& user_agent);

}  // namespace draplane::cli
