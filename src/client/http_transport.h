// The Transport over real HTTP(S): Boost.Beast + OpenSSL, HTTP/1.1 with keep-alive.
//
// Behaviour:
//   - `http://` and `https://` servers; TLS verifies the server certificate against
//     `RestConfig::ca_pem` (or the system store), checking the host name or IP address (or
//     `tls_server_name`), unless `insecure_skip_tls_verify`; a client certificate is presented when
//     configured; a bearer token goes into `Authorization`.
//   - Idle connections are pooled (at most `max_idle_connections`) and reused. A request that
//     fails on a reused connection before any response byte arrived is retried once on a fresh
//     connection (the server may have closed the idle connection meanwhile).
//   - Streams (watches) get a connection of their own that is closed when the stream ends.
//
// Thread-safety: safe for concurrent use; each call runs its I/O on the calling thread.
#pragma once

#include <memory>

#include "client/kubeconfig.h"
#include "client/transport.h"
#include "common/status.h"

namespace draplane::client {

struct HttpTransportOptions {
  int max_idle_connections = 16;
  // Deadline for connecting (TCP + TLS handshake).
  Duration connect_timeout = std::chrono::seconds(10);
};

// InvalidArgument for a malformed server URL or unusable TLS material (bad PEM).
StatusOr<std::unique_ptr<Transport>> CreateHttpTransport(const RestConfig& config,
                                                         const HttpTransportOptions& options = {});

}  // namespace draplane::client
