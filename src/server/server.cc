#include "server/server.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "api/gen/scheduling_v1_codec.h"
#include "api/priority.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "server/admission/admission.h"
#include "server/auth/authenticator.h"
#include "server/auth/kubeconfig.h"
#include "server/auth/pki.h"
#include "server/authz/bootstrap.h"
#include "server/authz/node.h"
#include "server/authz/rbac.h"
#include "server/flowcontrol/flowcontrol.h"
#include "server/handlers/api_handler.h"
#include "server/handlers/errors.h"
#include "server/handlers/rest.h"
#include "server/handlers/watch.h"
#include "server/http/http_server.h"
#include "server/internal/thread_pool.h"
#include "server/lifecycle/decision_retention.h"
#include "server/lifecycle/event_expiry.h"
#include "server/lifecycle/lifecycle.h"
#include "server/quota/accounting.h"
#include "server/quota/admission.h"
#include "server/quota/controller.h"

namespace draplane::server {
namespace {

std::string UrlHost(const std::string& host) {
  std::string h = host;
  if (h == "0.0.0.0" || h.empty()) h = "127.0.0.1";
  if (h == "::") h = "::1";
  if (h.find(':') != std::string::npos) return "[" + h + "]";
  return h;
}

std::string IpOf(const std::string& host) { return host == "localhost" ? "127.0.0.1" : host; }

http::Response ProtocolError(int status, std::string message) {
  handlers::ApiError e;
  e.code = status;
  e.reason = status == 413   ? "RequestEntityTooLarge"
             : status == 400 ? "BadRequest"
             : status == 431 ? "RequestHeaderFieldsTooLarge"
                             : "InternalError";
  e.message = std::move(message);
  return handlers::ToResponse(e);
}

// The target of ClientCredentials::dispatch. Every credentials copy shares it, so a call after
// shutdown (or after the server is gone) finds it closed instead of a freed handler.
class InProcessGate {
 public:
  InProcessGate(handlers::ApiHandler* api, size_t max_body_bytes)
      : api_(api), max_body_bytes_(max_body_bytes) {}

  void Dispatch(http::Request request, std::shared_ptr<http::Exchange> exchange) {
    ReaderLock lock(mu_);
    if (api_ == nullptr) {
      exchange->Respond(
          handlers::ToResponse(handlers::NewServiceUnavailable("the server is shutting down")));
      return;
    }
    // The listener refuses such bodies before reading them (http_server.cc); so does this path.
    if (request.body.size() > max_body_bytes_) {
      exchange->Respond(
          ProtocolError(413, "the server has received too large a request entity (limit " +
                                 std::to_string(max_body_bytes_) + " bytes)"));
      return;
    }
    // On the caller's thread: it is a client waiting for this answer anyway, and handing the
    // request to the worker pool and the answer back cost two context switches per request.
    // Close() waits for calls in progress (they hold the shared lock).
    api_->Serve(request, std::move(exchange));
  }

  // After this returns no call reaches the handler.
  void Close() {
    WriterLock lock(mu_);
    api_ = nullptr;
  }

 private:
  SharedMutex mu_;
  handlers::ApiHandler* api_ DRAPLANE_GUARDED_BY(mu_);  // null once closed
  const size_t max_body_bytes_;
};

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(ServerOptions options) : options_(std::move(options)) {
    clock_ = options_.clock != nullptr ? options_.clock : &RealClock();
  }

  ~ServerImpl() override { Shutdown(); }

  Status Init() {
    std::string host;
    uint16_t port = 0;
    DRAPLANE_RETURN_IF_ERROR(ParseListenAddress(options_.listen, &host, &port));
    if (options_.plain_http && !IsLoopback(host)) {
      return InvalidArgumentError("plain HTTP is only served on a loopback address, not " + host);
    }
    // The data directory holds the CA key, the tokens and (SQLite) every tenant's objects: its
    // owner's only, as kube-apiserver's and etcd's data directories (etcd insists on 0700).
    if (::mkdir(options_.data_dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return UnavailableError("cannot create data directory " + options_.data_dir + ": " +
                              std::strerror(errno));
    }
    struct stat dir_stat {};
    if (::stat(options_.data_dir.c_str(), &dir_stat) == 0 && !S_ISDIR(dir_stat.st_mode)) {
      return FailedPreconditionError("--data-dir " + options_.data_dir + " is not a directory");
    }
    if (::stat(options_.data_dir.c_str(), &dir_stat) == 0 && (dir_stat.st_mode & 077) != 0) {
      if (::chmod(options_.data_dir.c_str(), dir_stat.st_mode & 0700) != 0) {
        return UnavailableError("cannot restrict data directory " + options_.data_dir +
                                " to its owner: " + std::strerror(errno));
      }
      log::Info("serve: restricted data directory {} to its owner (was {:o})", options_.data_dir,
                dir_stat.st_mode & 0777);
    }

    std::optional<http::TlsOptions> tls;
    if (!options_.plain_http) {
      std::vector<std::string> hosts = options_.tls_sans;
      hosts.push_back(host);
      DRAPLANE_ASSIGN_OR_RETURN(pki_, auth::EnsureServingPki(options_.data_dir, hosts, *clock_));
      tls = http::TlsOptions{pki_.serving.certificate_pem + pki_.ca.certificate_pem,
                             pki_.serving.private_key_pem, pki_.ca.certificate_pem};
    }

    std::string store_url = options_.store_url;
    if (store_url.empty()) store_url = "sqlite://" + options_.data_dir + "/store.db";
    store::StoreOptions store_options = options_.store_options;
    if (store_options.clock == nullptr) store_options.clock = const_cast<Clock*>(clock_);
    DRAPLANE_ASSIGN_OR_RETURN(store_, store::OpenStore(store_url, store_options));

    authenticator_ = std::make_unique<auth::Authenticator>(
        auth::AuthenticatorOptions{.token_file = auth::TokenFilePath(options_.data_dir),
                                   .anonymous = options_.anonymous_auth});
    rbac_cache_ = std::make_unique<authz::RbacCache>(store_.get());
    DRAPLANE_RETURN_IF_ERROR(rbac_cache_->Start());
    node_authorizer_ = std::make_unique<authz::NodeAuthorizer>(store_.get());
    rbac_authorizer_ = std::make_unique<authz::RbacAuthorizer>(rbac_cache_.get());
    authorizer_ = std::make_unique<authz::UnionAuthorizer>(
        std::vector<const authz::Authorizer*>{node_authorizer_.get(), rbac_authorizer_.get()});
    admission_ = std::make_unique<admission::Admission>(
        store_.get(), rbac_authorizer_.get(),
        admission::DefaultTolerationSeconds{
            .not_ready = options_.default_not_ready_toleration_seconds,
            .unreachable = options_.default_unreachable_toleration_seconds},
        options_.dra_admission.features.admin_access);
    health_ = std::make_unique<handlers::Health>(store_.get(), *clock_);
    pod_explanations_ =
        std::make_unique<handlers::PodExplanations>(options_.limits.max_pod_explanations_in_flight);
    flowcontrol_ = std::make_unique<flowcontrol::Controller>(
        flowcontrol::ControllerOptions{
            .server_concurrency_limit = options_.limits.max_requests_inflight +
                                        options_.limits.max_mutating_requests_inflight,
            .queue_wait_limit = options_.limits.request_timeout / 4},
        *clock_);
    pool_ = std::make_unique<internal::ThreadPool>(options_.worker_threads);
    watches_ = std::make_unique<handlers::WatchManager>(
        store_.get(), pool_.get(), *clock_,
        handlers::WatchManagerOptions{.bookmark_interval = options_.watch_bookmark_interval,
                                      .min_timeout = options_.watch_min_timeout,
                                      .max_watches_per_user = options_.limits.max_watches_per_user,
                                      .max_watches = options_.limits.max_watches});
    quota_accounting_ = std::make_unique<quota::QuotaAccounting>(
        store_.get(), &handlers::Registry::Default(), clock_);
    quota_admission_ = std::make_unique<quota::QuotaAdmission>(quota_accounting_.get());
    rest_ = std::make_unique<handlers::Rest>(
        handlers::RestDependencies{.store = store_.get(),
                                   .clock = clock_,
                                   .admission = admission_.get(),
                                   .rbac = rbac_cache_.get(),
                                   .watches = watches_.get(),
                                   .quota = quota_admission_.get(),
                                   .authorizer = authorizer_.get()});
    DRAPLANE_RETURN_IF_ERROR(Bootstrap());

    http::HttpServerOptions http_options;
    http_options.host = IpOf(host);
    http_options.port = port;
    http_options.tls = tls;
    http_options.io_threads = options_.io_threads;
    http_options.protocol_error = ProtocolError;
    http_options.clock = clock_;
    const ServingLimits& limits = options_.limits;
    auto seconds = [](Duration d) {
      return std::chrono::seconds(
          std::max<int64_t>(1, std::chrono::ceil<std::chrono::seconds>(d).count()));
    };
    http_options.read_header_timeout = seconds(limits.read_header_timeout);
    http_options.idle_timeout = seconds(limits.idle_timeout);
    http_options.request_timeout = seconds(limits.request_timeout);
    http_options.max_connections = limits.max_connections;
    http_options.max_buffered_request_bytes = limits.max_buffered_request_bytes;
    // The handler is created before the listener so that no request finds it missing.
    api_ = std::make_unique<handlers::ApiHandler>(
        handlers::ApiHandlerOptions{.draplane_version = options_.draplane_version,
                                    .server_address = ""},
        handlers::ApiHandlerDependencies{
            .registry = &handlers::Registry::For(options_.dra_admission),
            .authenticator = authenticator_.get(),
            .authorizer = authorizer_.get(),
            .rbac = rbac_authorizer_.get(),
            .rest = rest_.get(),
            .pool = pool_.get(),
            .clock = clock_,
            .flowcontrol = flowcontrol_.get(),
            .health = health_.get(),
            .pod_explanations = pod_explanations_.get()});
    DRAPLANE_ASSIGN_OR_RETURN(
        http_, http::HttpServer::Start(
                   http_options, [this](http::Request request, std::shared_ptr<http::Exchange> e) {
                     api_->Handle(std::move(request), std::move(e));
                   }));
    url_ = std::string(options_.plain_http ? "http://" : "https://") + UrlHost(host) + ":" +
           std::to_string(http_->port());
    gate_ = std::make_shared<InProcessGate>(api_.get(), http_options.max_body_bytes);

    lifecycle_ = std::make_unique<lifecycle::LifecycleController>(store_.get(), clock_);
    DRAPLANE_RETURN_IF_ERROR(lifecycle_->Start());
    quota_controller_ = std::make_unique<quota::QuotaController>(
        quota_accounting_.get(), rest_.get(), &handlers::Registry::Default(),
        quota::QuotaControllerOptions{.resync_period = options_.quota_resync_period});
    DRAPLANE_RETURN_IF_ERROR(quota_controller_->Start());
    decision_retention_ = std::make_unique<lifecycle::DecisionRetention>(
        store_.get(), clock_,
        lifecycle::DecisionRetentionOptions{
            .max_age = options_.decision_max_age,
            .max_per_namespace = options_.decision_max_per_namespace});
    DRAPLANE_RETURN_IF_ERROR(decision_retention_->Start());
    if (options_.event_ttl > Duration::zero()) {
      event_expiry_ =
          std::make_unique<lifecycle::EventExpiry>(store_.get(), clock_, options_.event_ttl);
      DRAPLANE_RETURN_IF_ERROR(event_expiry_->Start());
    }
    DRAPLANE_RETURN_IF_ERROR(WriteAdminKubeconfig());
    DRAPLANE_RETURN_IF_ERROR(
        auth::WriteFileAtomically(auth::ServerUrlPath(options_.data_dir), url_ + "\n", 0644));
    ticker_ = std::thread([this] {
      SetCurrentThreadName("server-ticker");
      TickLoop();
    });
    health_->set_bootstrapped(true);
    return Status::Ok();
  }

  std::string url() const override { return url_; }

  void ServePodExplanations(PodExplainer explainer) override {
    pod_explanations_->SetExplainer(std::move(explainer));
  }

  std::string admin_kubeconfig_path() const override {
    return auth::AdminKubeconfigPath(options_.data_dir);
  }

  ClientCredentials IssueCredentials(const std::string& user,
                                     const std::vector<std::string>& groups) override {
    std::string token = auth::NewToken(SecureRandom());
    authenticator_->AddMemoryToken(token, auth::UserInfo{user, SecureRandom().NewUuid(), groups});
    ClientCredentials credentials{url_, options_.plain_http ? "" : pki_.ca.certificate_pem, user,
                                  token, nullptr};
    if (options_.embedded_in_process) {
      credentials.dispatch = [gate = gate_](http::Request request,
                                            std::shared_ptr<http::Exchange> exchange) {
        gate->Dispatch(std::move(request), std::move(exchange));
      };
    }
    return credentials;
  }

  Status Embed(std::unique_ptr<EmbeddedComponent> component, const std::string& user,
               const std::vector<std::string>& groups) override {
    ClientCredentials credentials = IssueCredentials(user, groups);
    DRAPLANE_RETURN_IF_ERROR(component->Start(credentials).WithPrefix(component->name()));
    MutexLock lock(mu_);
    components_.push_back(std::move(component));
    return Status::Ok();
  }

  store::Store* store() override { return store_.get(); }

  void SendWatchBookmarks() override { watches_->BookmarkNow(); }
  void EndWatches() override { watches_->EndStreams(); }

  void BeginShutdown() override {
    if (health_) health_->set_shutting_down(true);
  }

  void Shutdown() override {
    {
      MutexLock lock(mu_);
      if (shut_down_) return;
      shut_down_ = true;
    }
    BeginShutdown();
    std::vector<std::unique_ptr<EmbeddedComponent>> components;
    {
      MutexLock lock(mu_);
      components = std::move(components_);
    }
    for (auto it = components.rbegin(); it != components.rend(); ++it) (*it)->Stop();
    if (lifecycle_) lifecycle_->Stop();
    if (quota_controller_) quota_controller_->Stop();
    if (decision_retention_) decision_retention_->Stop();
    if (event_expiry_) event_expiry_->Stop();
    {
      MutexLock lock(tick_mu_);
      stopping_ = true;
    }
    tick_cv_.NotifyAll();
    if (ticker_.joinable()) ticker_.join();
    // Streams end first so that their clients go away, then requests in flight finish.
    if (watches_) watches_->Shutdown();
    if (flowcontrol_) flowcontrol_->Shutdown();
    if (http_) http_->Shutdown(std::chrono::seconds(10));
    if (pool_) pool_->Shutdown();
    if (gate_) gate_->Close();
    if (rbac_cache_) rbac_cache_->Stop();
    http_.reset();
  }

 private:
  void TickLoop() {
    MutexLock lock(tick_mu_);
    Duration next_compaction = clock_->MonotonicNow() + options_.limits.compaction_interval;
    while (!stopping_) {
      tick_cv_.WaitFor(lock, std::chrono::seconds(1),
                       [&]() DRAPLANE_REQUIRES(tick_mu_) { return stopping_; });
      if (stopping_) break;
      lock.Unlock();
      watches_->Tick();
      lifecycle_->Tick();
      quota_controller_->Tick();
      decision_retention_->Tick();
      if (event_expiry_ != nullptr) event_expiry_->Tick();
      flowcontrol_->Tick();
      if (options_.limits.compaction_interval.count() > 0 &&
          clock_->MonotonicNow() >= next_compaction) {
        next_compaction = clock_->MonotonicNow() + options_.limits.compaction_interval;
        // On a worker: a store that does not answer (etcd down) must not hold up the ticks.
        pool_->Post([this] { CompactHistory(); });
      }
      lock.Lock();
    }
  }

  // kube-apiserver's compactor (storage/etcd3 compact.go): compacts to the revision seen at the
  // previous interval, then remembers the current one.
  void CompactHistory() {
    MutexLock lock(compaction_mu_);
    if (compaction_revision_ > 0) {
      Status compacted = store_->Compact(compaction_revision_);
      if (!compacted.ok()) {
        log::Warning("serve: compacting the store to revision {} failed: {}", compaction_revision_,
                     compacted.ToString());
      }
    }
    StatusOr<store::Revision> current = store_->CurrentRevision();
    if (current.ok()) compaction_revision_ = *current;
  }

  // events.k8s.io/v1 Events written by a server from before the two Event APIs shared one
  // storage (api/events.h) were kept under their own resource, where neither API reads them any
  // more: each moves, converted, into the shared storage.
  Status MoveSeparatelyStoredEvents(const handlers::Registry& registry) {
    constexpr std::string_view kOldStorage = "events.k8s.io/events";
    const handlers::ResourceInfo* events = registry.Find("events.k8s.io", "v1", "events");
    store::ListOptions options;
    options.limit = 500;
    int64_t moved = 0;
    while (true) {
      DRAPLANE_ASSIGN_OR_RETURN(store::ListResult page,
                                store_->List(std::string(kOldStorage), options));
      for (const store::ObjectPtr& object : page.objects) {
        if (StatusOr<handlers::JsonObject> event = handlers::ParseObject(object->value);
            event.ok()) {
          StatusOr<store::ObjectPtr> created =
              store_->Create(store::Key{events->StoreResource(), object->key.ns, object->key.name},
                             events->ToStored(std::move(event).value()));
          if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
            return created.status();
          }
          if (created.ok()) ++moved;
        }
        StatusOr<store::ObjectPtr> deleted =
            store_->Delete(object->key, store::Preconditions{object->revision});
        if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) {
          return deleted.status();
        }
      }
      if (page.continue_token.empty()) break;
      options.continue_token = page.continue_token;
    }
    if (moved > 0)
      log::Info("serve: moved {} events.k8s.io Events into the Events' storage", moved);
    return Status::Ok();
  }

  // Default namespaces, the system PriorityClasses and the bootstrap RBAC policy
  // (authz/bootstrap.h); Events stored apart by an older server join the others.
  Status Bootstrap() {
    const handlers::Registry& registry = handlers::Registry::For(options_.dra_admission);
    DRAPLANE_RETURN_IF_ERROR(MoveSeparatelyStoredEvents(registry));
    const handlers::ResourceInfo* namespaces = registry.Find("", "v1", "namespaces");
    for (std::string_view name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
      handlers::JsonObject ns;
      ns["apiVersion"] = "v1";
      ns["kind"] = "Namespace";
      handlers::JsonObject meta;
      meta["name"] = name;
      ns["metadata"] = std::move(meta);
      StatusOr<store::ObjectPtr> created = rest_->CreateInternal(*namespaces, std::move(ns));
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
        return created.status();
      }
    }
    // The system PriorityClasses (upstream's scheduling/bootstrap-system-priority-classes hook).
    const handlers::ResourceInfo* priority_classes =
        registry.Find("scheduling.k8s.io", "v1", "priorityclasses");
    for (const api::schedulingv1::PriorityClass& pc : api::SystemPriorityClasses()) {
      StatusOr<store::ObjectPtr> created =
          rest_->CreateInternal(*priority_classes, api::schedulingv1::Encode(pc).as_object());
      if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
        return created.status();
      }
    }
    for (authz::BootstrapObject& bootstrap : authz::BootstrapPolicy()) {
      std::string kind(handlers::GetString(bootstrap.object, "kind"));
      const handlers::ResourceInfo* info = registry.FindKind("rbac.authorization.k8s.io", kind);
      std::string name(handlers::MetaString(bootstrap.object, "name"));
      store::Key key{info->StoreResource(), "", name};
      StatusOr<store::ObjectPtr> existing = store_->Get(key);
      if (!existing.ok()) {
        if (existing.status().code() != StatusCode::kNotFound) return existing.status();
        StatusOr<store::ObjectPtr> created = rest_->CreateInternal(*info, bootstrap.object);
        if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
          return created.status();
        }
        continue;
      }
      // Auto-reconciliation: rewrite the content of objects that still allow it.
      StatusOr<handlers::JsonObject> current = handlers::ParseObject((*existing)->value);
      if (!current.ok()) continue;
      handlers::StringMap annotations = handlers::MetaStringMap(*current, "annotations");
      if (annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true") continue;
      bool changed = false;
      for (std::string_view field : {"rules", "roleRef", "subjects"}) {
        const boost::json::value* want = bootstrap.object.if_contains(field);
        const boost::json::value* have = current->if_contains(field);
        if (want == nullptr) continue;
        if (have == nullptr || !(*have == *want)) {
          (*current)[field] = *want;
          changed = true;
        }
      }
      if (!changed) continue;
      StatusOr<store::ObjectPtr> updated = store_->Update(
          key, handlers::ToStoredJson(*current), store::Preconditions{(*existing)->revision});
      if (updated.ok()) rbac_cache_->Observe(info->StoreResource(), **updated, false);
    }
    return Status::Ok();
  }

  Status WriteAdminKubeconfig() {
    auth::KubeconfigSpec spec;
    spec.server = url_;
    spec.user = "admin";
    if (options_.plain_http) {
      // No client certificates without TLS: a token kept in the data directory.
      std::string token_path = options_.data_dir + "/admin.token";
      StatusOr<std::string> token = auth::ReadFile(token_path);
      std::string value;
      if (token.ok() && !token->empty()) {
        value = *token;
        while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
      } else {
        value = auth::NewToken(SecureRandom());
        DRAPLANE_RETURN_IF_ERROR(auth::WriteFileAtomically(token_path, value + "\n", 0600));
      }
      authenticator_->AddMemoryToken(
          value, auth::UserInfo{"admin", "", {std::string(auth::kMastersGroup)}});
      spec.token = value;
    } else {
      // A token an earlier --plain-http start left is valid only while that server runs.
      std::error_code removed;
      std::filesystem::remove(options_.data_dir + "/admin.token", removed);
      if (removed)
        log::Warning("serve: removing {}/admin.token: {}", options_.data_dir, removed.message());
      spec.ca_pem = pki_.ca.certificate_pem;
      auth::CertificateRequest request;
      request.common_name = "admin";
      request.organizations = {std::string(auth::kMastersGroup)};
      request.client_auth = true;
      DRAPLANE_ASSIGN_OR_RETURN(auth::CertificateAndKey cert,
                                auth::IssueCertificate(pki_.ca, request, *clock_));
      spec.client_certificate_pem = std::move(cert.certificate_pem);
      spec.client_key_pem = std::move(cert.private_key_pem);
    }
    return auth::WriteFileAtomically(admin_kubeconfig_path(), auth::RenderKubeconfig(spec), 0600);
  }

  ServerOptions options_;
  const Clock* clock_;
  auth::ServingPki pki_;
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<auth::Authenticator> authenticator_;
  std::unique_ptr<authz::RbacCache> rbac_cache_;
  std::unique_ptr<authz::NodeAuthorizer> node_authorizer_;
  std::unique_ptr<authz::RbacAuthorizer> rbac_authorizer_;
  std::unique_ptr<authz::UnionAuthorizer> authorizer_;
  std::unique_ptr<admission::Admission> admission_;
  std::unique_ptr<handlers::Health> health_;
  std::unique_ptr<handlers::PodExplanations> pod_explanations_;
  std::unique_ptr<flowcontrol::Controller> flowcontrol_;
  std::unique_ptr<internal::ThreadPool> pool_;
  std::unique_ptr<handlers::WatchManager> watches_;
  std::unique_ptr<handlers::Rest> rest_;
  std::unique_ptr<handlers::ApiHandler> api_;
  std::unique_ptr<http::HttpServer> http_;
  std::shared_ptr<InProcessGate> gate_;
  std::unique_ptr<lifecycle::LifecycleController> lifecycle_;
  std::unique_ptr<quota::QuotaAccounting> quota_accounting_;
  std::unique_ptr<quota::QuotaAdmission> quota_admission_;
  std::unique_ptr<quota::QuotaController> quota_controller_;
  std::unique_ptr<lifecycle::DecisionRetention> decision_retention_;
  std::unique_ptr<lifecycle::EventExpiry> event_expiry_;
  std::string url_;

  Mutex mu_;
  bool shut_down_ DRAPLANE_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<EmbeddedComponent>> components_ DRAPLANE_GUARDED_BY(mu_);

  Mutex compaction_mu_;
  store::Revision compaction_revision_ DRAPLANE_GUARDED_BY(compaction_mu_) = 0;

  Mutex tick_mu_;
  CondVar tick_cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(tick_mu_) = false;
  std::thread ticker_;
};

}  // namespace

int DefaultIoThreads() { return std::thread::hardware_concurrency() <= 2 ? 1 : 2; }

Status ParseListenAddress(const std::string& listen, std::string* host, uint16_t* port) {
  std::string port_text;
  if (!listen.empty() && listen[0] == '[') {
    size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return InvalidArgumentError("malformed listen address \"" + listen + "\"");
    }
    *host = listen.substr(1, close - 1);
    port_text = listen.substr(close + 2);
  } else {
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos) {
      return InvalidArgumentError("listen address \"" + listen + "\" has no port");
    }
    *host = listen.substr(0, colon);
    port_text = listen.substr(colon + 1);
  }
  if (host->empty()) *host = "0.0.0.0";
  char* end = nullptr;
  long value = std::strtol(port_text.c_str(), &end, 10);
  if (port_text.empty() || *end != '\0' || value < 0 || value > 65535) {
    return InvalidArgumentError("invalid port in listen address \"" + listen + "\"");
  }
  *port = static_cast<uint16_t>(value);
  unsigned char raw[16];
  std::string ip = IpOf(*host);
  if (inet_pton(AF_INET, ip.c_str(), raw) != 1 && inet_pton(AF_INET6, ip.c_str(), raw) != 1) {
    return InvalidArgumentError("listen host \"" + *host + "\" must be an IP address or localhost");
  }
  return Status::Ok();
}

bool IsLoopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  unsigned char raw[4];
  return inet_pton(AF_INET, host.c_str(), raw) == 1 && raw[0] == 127;
}

StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  auto server = std::make_unique<ServerImpl>(std::move(options));
  Status status = server->Init();
  if (!status.ok()) {
    server->Shutdown();
    return status;
  }
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace draplane::server
