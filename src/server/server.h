// The draplane API server: a Kubernetes-compatible API (discovery, the resource.k8s.io/v1 DRA
// kinds, pods, nodes, namespaces, events, leases, RBAC) over a Store, served over HTTPS to
// kubectl and any Kubernetes client (docs/design/server.md).
//
// `Server::Start` prepares the data directory (CA and serving certificate, token file,
// `admin.kubeconfig`), opens the store, creates the bootstrap RBAC policy and the default
// namespaces, and starts serving; when it returns, requests are accepted.
//
// Embedding: components that are ordinary API clients (scheduler, controllers, simulated node
// agents) can run inside the serve process. `Embed` hands each one the credentials of its own
// identity (an in-memory token) and the server's URL and CA; components start after the server
// is ready and stop, in reverse order, before it shuts down. By default their credentials carry
// `dispatch`, an in-process path into the same handler chain the listener feeds (authentication
// by the request's bearer token, authorization, admission, metrics): the components stay
// ordinary API clients but skip TLS, HTTP parsing and the sockets. With
// `ServerOptions::embedded_in_process` off they talk over the loopback listener instead, exactly
// as to a remote kube-apiserver.
//
// Thread-safety: all methods may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "server/dra_admission.h"
#include "server/http/http.h"
#include "store/store.h"

namespace draplane::server {

// Network I/O threads by default: 1 on machines with at most 2 cores, else 2. They only read,
// hand over and write; a second one on 2 cores mostly adds wake-ups between the two (template
// scheduler_perf: 5% less server CPU with one).
int DefaultIoThreads();

struct ServingLimits {
  // kube-apiserver's --request-timeout: a request not answered in time is 504; it also bounds the
  // reading of a body. API Priority and Fairness rejects a request that waited a quarter of it.
  Duration request_timeout = std::chrono::seconds(60);
  // The TLS handshake and a request's header block (kube-apiserver's ReadHeaderTimeout).
  Duration read_header_timeout = std::chrono::seconds(32);
  // A keep-alive connection waiting for its next request (kube-apiserver's IdleTimeout).
  Duration idle_timeout = std::chrono::seconds(90);
  // Open connections (kube-apiserver: none besides the file descriptor limit).
  size_t max_connections = 10'000;
  // Header blocks over 16 KiB and bodies over 64 KiB, of all connections together.
  size_t max_buffered_request_bytes = 256 * 1024 * 1024;
  // API Priority and Fairness: their sum is the server's concurrency limit in seats, shared by
  // the priority levels (kube-apiserver: the same flags and defaults).
  int max_requests_inflight = 400;
  int max_mutating_requests_inflight = 200;
  // Watches open at once, per user and in all (kube-apiserver: none).
  size_t max_watches_per_user = 500;
  size_t max_watches = 20'000;
  // draplane.dev PodExplanations computed at once, server-wide (each reads the whole cluster and
  // runs the allocator on every node); one more is 429 (handlers/pod_explanations.h).
  int max_pod_explanations_in_flight = 2;
  // History compaction by age, for every backend (kube-apiserver's --etcd-compaction-interval):
  // every interval the server compacts the store to the revision it saw one interval earlier, so
  // watch resumes and snapshot reads reach one to two intervals back. 0: off.
  Duration compaction_interval = std::chrono::minutes(5);
};

struct ServerOptions {
  // HOST:PORT; HOST an IP literal or "localhost"; port 0 picks a free port.
  std::string listen = "127.0.0.1:6443";
  std::string data_dir = "./draplane-data";
  // Store URL (store/store.h); empty: "sqlite://<data_dir>/store.db".
  std::string store_url;
  // Serve plain HTTP instead of HTTPS; refused unless `listen` is a loopback address.
  bool plain_http = false;
  // Extra DNS names / IPs for the serving certificate.
  std::vector<std::string> tls_sans;
  // Unauthenticated requests become system:anonymous (RBAC then allows only public paths).
  bool anonymous_auth = true;
  int io_threads = DefaultIoThreads();
  int worker_threads = 8;
  // Watch bookmarks are sent this often to watchers that allow them.
  Duration watch_bookmark_interval = std::chrono::seconds(30);
  // Watches without timeoutSeconds end after a random time in [min, 2*min).
  Duration watch_min_timeout = std::chrono::minutes(30);
  // How often the ResourceQuota controller recomputes every quota in full (drift detection;
  // docs/design/quota.md).
  Duration quota_resync_period = std::chrono::minutes(5);
  // Retention of AllocationDecision records (docs/design/decisions.md): older ones, and the
  // oldest beyond the per-namespace cap, are deleted.
  Duration decision_max_age = std::chrono::hours(24 * 7);
  int64_t decision_max_per_namespace = 10'000;
  // Events not written for this long are deleted (kube-apiserver's --event-ttl,
  // lifecycle/event_expiry.h); zero keeps them until deleted.
  Duration event_ttl = std::chrono::hours(1);
  // Admission DefaultTolerationSeconds: a new Pod without a toleration of these NoExecute node
  // taints tolerates them this long (kube-apiserver's --default-not-ready-toleration-seconds,
  // --default-unreachable-toleration-seconds); a negative value adds none.
  int64_t default_not_ready_toleration_seconds = 300;
  int64_t default_unreachable_toleration_seconds = 300;
  // Time source for timestamps written into objects (defaults to RealClock()).
  const Clock* clock = nullptr;
  store::StoreOptions store_options;
  // The draplane version reported in /version's gitVersion.
  std::string draplane_version = "0.0.0";
  // Embedded components get `ClientCredentials::dispatch` (true) or only the URL of the listener
  // (false).
  bool embedded_in_process = true;
  // Limits and timeouts against hostile and careless clients; docs/design/server.md ("Limits
  // and timeouts") lists each next to kube-apiserver's.
  ServingLimits limits;
  // The release and gates the DRA kinds are admitted for (Kubernetes 1.36 defaults).
  DraAdmission dra_admission;
};

// What a client needs to talk to the server as one identity.
struct ClientCredentials {
  std::string server_url;  // "https://127.0.0.1:6443"
  std::string ca_pem;      // empty for plain HTTP
  std::string user;
  std::string token;  // bearer token
  // Runs a request through the server's handler chain without a socket: everything the listener
  // does except TLS and HTTP framing, including the 413 for bodies over 3 MiB. The request is
  // authenticated by its own `Authorization: Bearer` header (put `token` there), never by the
  // fact that it is in-process. The request is served on the calling thread, so the answer comes
  // through the Exchange (as over HTTP, http/http.h) before the call returns, except for streams
  // (watches), whose events come later from other threads; the caller's ResponseStream
  // must honour the HttpServer's stream contract (on_closed exactly once; Close() ends the body; a
  // reader too far behind is ended), except that on_closed may run on the thread that ends the
  // stream, inside Write or Close (the server's watch streams allow that). Streams still open at
  // shutdown are closed with Close() before Shutdown returns. Safe to call from any thread, also
  // after Shutdown (503 ServiceUnavailable) and after the Server is destroyed. Empty when the
  // server was asked to embed components over its listener (ServerOptions::embedded_in_process).
  http::Handler dispatch;
};

// The explanation of Pod ns/name as a JSON object (scheduler::PodExplanation::ToJson): what
// GET /apis/draplane.dev/v1alpha1/namespaces/{ns}/podexplanations/{name} answers in `status`.
// NotFound when the Pod does not exist. Called on a server worker, possibly concurrently.
using PodExplainer =
    std::function<StatusOr<std::string>(const std::string& ns, const std::string& name)>;

// A component running inside the serve process as an API client.
class EmbeddedComponent {
 public:
  virtual ~EmbeddedComponent() = default;
  virtual std::string name() const = 0;
  // Starts the component (it owns its threads). Called once the server accepts requests.
  virtual Status Start(const ClientCredentials& credentials) = 0;
  // Stops it and joins its threads; the server is still serving.
  virtual void Stop() = 0;
};

class Server {
 public:
  // Starts serving (see the file comment). Errors: InvalidArgument for bad options (plain HTTP
  // on a non-loopback address, malformed listen address), Unavailable when the address cannot
  // be bound or the store cannot be opened, and the store's errors.
  static StatusOr<std::unique_ptr<Server>> Start(ServerOptions options);

  virtual ~Server() = default;

  // The base URL clients use, e.g. "https://127.0.0.1:6443".
  virtual std::string url() const = 0;
  // <data_dir>/admin.kubeconfig (user "admin", group system:masters).
  virtual std::string admin_kubeconfig_path() const = 0;

  // Issues a token identity valid for this process's life (with `dispatch` unless
  // ServerOptions::embedded_in_process is off).
  virtual ClientCredentials IssueCredentials(const std::string& user,
                                             const std::vector<std::string>& groups) = 0;

  // Starts `component` as `user` in `groups` (e.g. system:kube-scheduler) and keeps it until
  // shutdown. Returns the component's start error.
  virtual Status Embed(std::unique_ptr<EmbeddedComponent> component, const std::string& user,
                       const std::vector<std::string>& groups) = 0;

  // Serves draplane.dev/v1alpha1 PodExplanations with `explainer` (until then they answer 503):
  // the server checks that the viewer may get the Pod and bounds how many run at once
  // (handlers/pod_explanations.h); `explainer` computes. Replaces an earlier one.
  virtual void ServePodExplanations(PodExplainer explainer) = 0;

  // The store the server writes to (for in-process tests and tools; components use the API).
  virtual store::Store* store() = 0;

  // Every open watch that allows bookmarks gets one now (normally they come every
  // ServerOptions::watch_bookmark_interval); it is on the stream when this returns.
  virtual void SendWatchBookmarks() = 0;
  // Ends every open watch as its timeout would (the clients resume from the last revision they
  // saw). With SendWatchBookmarks, what the unit tests' API (testing/test_api.h) drives.
  virtual void EndWatches() = 0;

  // Graceful termination's first step (kube-apiserver's ShutdownInitiated): /readyz fails its
  // `shutdown` check from now on, so load balancers and clients stop sending here, while every
  // request, watch and controller keeps being served until Shutdown. Idempotent.
  virtual void BeginShutdown() = 0;
  // Stops embedded components, ends watches, finishes requests in flight and closes the store.
  // Idempotent.
  virtual void Shutdown() = 0;
};

// Splits "HOST:PORT" / "[V6]:PORT". InvalidArgument when malformed.
Status ParseListenAddress(const std::string& listen, std::string* host, uint16_t* port);
// True for 127.0.0.0/8, ::1 and "localhost".
bool IsLoopback(const std::string& host);

}  // namespace draplane::server
