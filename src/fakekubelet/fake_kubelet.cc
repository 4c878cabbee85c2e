#include "fakekubelet/fake_kubelet.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <iterator>
#include <thread>

#include "agent/agent.h"
#include "agent/cdi.h"
#include "agent/kubelet_plugin.h"
#include "agent/node_registration.h"
#include "api/codec/json.h"
#include "api/meta/time.h"
#include "api/pods.h"
#include "client/events.h"
#include "client/informer.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "fakekubelet/internal/plugin_client.h"

namespace draplane::fakekubelet {

namespace rv1 = api::resourcev1;
namespace cv1 = api::corev1;
using internal::ClaimRef;
using internal::ClaimResult;
using internal::DeviceResult;
using internal::PluginClient;
using ClaimResults = std::map<std::string, ClaimResult>;

namespace {

constexpr std::string_view kKeyNode = "node";
constexpr std::string_view kKeyWipeAll = "wipe-all";
constexpr std::string_view kWipePrefix = "wipe/";
constexpr std::string_view kPodPrefix = "pod/";
constexpr std::string_view kGonePrefix = "gone/";
// The kubelet's event reason (kubecontainer.FailedPrepareDynamicResources).
constexpr std::string_view kFailedPrepareReason = "FailedPrepareDynamicResources";
constexpr Duration kRegistrationCallTimeout = std::chrono::seconds(10);

// One registered plugin instance.
struct Plugin {
  std::string driver;
  std::string socket;     // its registration socket
  std::string signature;  // of the socket file when registered: a new file is a new plugin
  std::unique_ptr<PluginClient> client;

  // The health stream's thread and how to stop it.
  std::thread health_thread;
  Mutex health_mu;
  CondVar health_cv;
  bool health_stop DRAPLANE_GUARDED_BY(health_mu) = false;
  // The open stream, owned by health_thread.
  internal::HealthWatch* watch DRAPLANE_GUARDED_BY(health_mu) = nullptr;
};

// The kubelet's claim info cache entry (pkg/kubelet/cm/dra/claiminfo.go), by namespace/name.
struct ClaimInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::set<std::string> drivers{};   // of the allocation results
  std::set<std::string> pod_uids{};  // Pods that use it
  bool prepared = false;
  std::map<std::string, std::vector<DeviceResult>> devices{};  // by driver, as prepared
};

bool IsPodTerminal(const cv1::Pod& pod) {
  return pod.status.phase == cv1::kPodPhaseSucceeded || pod.status.phase == cv1::kPodPhaseFailed;
}

bool IsReservedFor(const rv1::ResourceClaim& claim, const cv1::Pod& pod) {
  for (const rv1::ResourceClaimConsumerReference& ref : claim.status.reserved_for) {
    if (ref.api_group.empty() && ref.resource == "pods" && ref.uid == pod.metadata.uid) {
      return true;
    }
  }
  return false;
}

// Every plugin service a current kubelet speaks: the DRA services newest first, then the health
// services in the kubelet's order of preference (pickHealthService prefers v1).
constexpr std::string_view kDraServices[] = {agent::kDraServiceV1, agent::kDraServiceV1beta1};
constexpr std::string_view kHealthServices[] = {
    agent::kHealthServiceV1, agent::kHealthServiceV1beta1, agent::kHealthServiceV1alpha1};

// The first DRA service of the plugin's list this kubelet speaks (the kubelet walks the plugin's
// list in order, validateSupportedServices).
std::string ChooseDraService(const std::vector<std::string>& supported,
                             const std::set<std::string>& speaks) {
  for (const std::string& s : supported) {
    if (speaks.count(s) > 0 &&
        std::find(std::begin(kDraServices), std::end(kDraServices), s) != std::end(kDraServices)) {
      return s;
    }
  }
  return "";
}

// The health service this kubelet prefers among those the plugin lists.
std::string ChooseHealthService(const std::vector<std::string>& supported,
                                const std::set<std::string>& speaks) {
  for (std::string_view want : kHealthServices) {
    if (speaks.count(std::string(want)) > 0 &&
        std::find(supported.begin(), supported.end(), want) != supported.end()) {
      return std::string(want);
    }
  }
  return "";
}

boost::json::array ToJson(const std::vector<std::string>& list) {
  boost::json::array out;
  for (const std::string& s : list) out.emplace_back(s);
  return out;
}

boost::json::object ToJson(const DeviceResult& d) {
  return {{"requestNames", ToJson(d.request_names)},
          {"pool", d.pool_name},
          {"device", d.device_name},
          {"cdiDeviceIDs", ToJson(d.cdi_device_ids)}};
}

boost::json::array ToJson(const std::vector<ClaimRef>& claims) {
  boost::json::array out;
  for (const ClaimRef& c : claims) {
    out.push_back(
        boost::json::object{{"namespace", c.namespace_}, {"name", c.name}, {"uid", c.uid}});
  }
  return out;
}

// The CDI device IDs ("<kind>=<name>") the specs in `dirs` define, as a container runtime reads
// them (draplane's specs are JSON; files it cannot parse define nothing).
std::set<std::string> CdiDevicesIn(const std::vector<std::string>& dirs) {
  std::set<std::string> out;
  for (const std::string& dir : dirs) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) continue;
    while (struct dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (!name.ends_with(".json")) continue;
      std::FILE* f = std::fopen((dir + "/" + name).c_str(), "rb");
      if (f == nullptr) continue;
      std::string text;
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
      std::fclose(f);
      StatusOr<agent::CdiSpec> spec = agent::ParseCdiSpec(text);
      if (!spec.ok()) continue;
      for (const std::string& id : spec->DeviceIds()) out.insert(id);
    }
    ::closedir(d);
  }
  return out;
}

}  // namespace

struct FakeKubelet::State {
  client::ApiClient& api;
  FakeKubeletOptions options;
  const Clock& clock;
  client::WorkQueue queue;
  std::unique_ptr<client::EventRecorder> events;
  std::unique_ptr<client::Informer<cv1::Pod>> pods;
  std::thread worker;
  std::thread watcher;
  int inotify_fd = -1;
  int wake[2] = {-1, -1};
  std::atomic<bool> started{false};
  std::atomic<bool> stopping{false};

  // Guards plugins, the sockets seen, health and the report.
  mutable Mutex mu;
  // By driver, oldest first.
  std::map<std::string, std::vector<std::shared_ptr<Plugin>>> plugins DRAPLANE_GUARDED_BY(mu);
  // Socket -> its FileSignature when refused.
  std::map<std::string, std::string> refused DRAPLANE_GUARDED_BY(mu);
  // Sockets whose GetInfo failed (reported once).
  std::set<std::string> failing DRAPLANE_GUARDED_BY(mu);
  // "<driver>/<pool>/<device>" -> health.
  std::map<std::string, std::string> health DRAPLANE_GUARDED_BY(mu);
  std::vector<std::string> report DRAPLANE_GUARDED_BY(mu);
  std::FILE* report_file = nullptr;

  // The Pod worker's own state.
  std::map<std::string, ClaimInfo> claims;  // by "<namespace>/<name>"
  std::set<std::string> running;            // Pod UIDs whose containers "run"
  Timestamp last_node_status{};

  State(client::ApiClient& a, FakeKubeletOptions o, const Clock& c)
      : api(a), options(std::move(o)), clock(c), queue(c, options.retry) {}

  ~State() {
    if (report_file != nullptr) std::fclose(report_file);
    if (inotify_fd >= 0) ::close(inotify_fd);
    for (int fd : wake) {
      if (fd >= 0) ::close(fd);
    }
  }

  void Report(boost::json::object line) {
    MutexLock lock(mu);
    boost::json::object out{{"seq", static_cast<int64_t>(report.size() + 1)}};
    for (auto& [k, v] : line) out[k] = std::move(v);
    std::string text = boost::json::serialize(out);
    log::Info("fakekubelet {}: {}", options.node_name, text);
    if (report_file != nullptr) {
      std::fputs((text + "\n").c_str(), report_file);
      std::fflush(report_file);
    }
    report.push_back(std::move(text));
  }

  // ---- plugin registry ---------------------------------------------------------------------

  void WatchRegistry() {
    while (!stopping.load()) {
      Rescan();
      struct pollfd fds[2] = {{.fd = inotify_fd, .events = POLLIN, .revents = 0},
                              {.fd = wake[0], .events = POLLIN, .revents = 0}};
      const int timeout_ms = static_cast<int>(
          std::chrono::duration_cast<std::chrono::milliseconds>(options.registry_poll_interval)
              .count());
      ::poll(fds, inotify_fd >= 0 ? 2 : 1, timeout_ms);
      char buf[4096];
      if (inotify_fd >= 0) {
        while (::read(inotify_fd, buf, sizeof(buf)) > 0) {
        }
      }
    }
  }

  // Sockets in the registry dir whose names do not start with "." (the pluginwatcher's rule).
  std::set<std::string> Sockets() const {
    std::set<std::string> out;
    DIR* d = ::opendir(options.registry_dir.c_str());
    if (d == nullptr) return out;
    while (struct dirent* entry = ::readdir(d)) {
      const std::string name = entry->d_name;
      if (name.empty() || name[0] == '.') continue;
      const std::string path = options.registry_dir + "/" + name;
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) out.insert(path);
    }
    ::closedir(d);
    return out;
  }

  static std::string SocketSignature(const std::string& path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return "";
    return std::to_string(st.st_ino) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }

  void Rescan() {
    const std::set<std::string> sockets = Sockets();
    std::vector<std::string> gone;
    std::vector<std::string> fresh;
    {
      MutexLock lock(mu);
      std::set<std::string> known;
      for (const auto& [driver, list] : plugins) {
        for (const auto& p : list) {
          // A socket created again under the same name (a restarted plugin) is registered
          // again, as the pluginwatcher does on the new file's event.
          if (sockets.count(p->socket) > 0 && SocketSignature(p->socket) == p->signature) {
            known.insert(p->socket);
          } else {
            gone.push_back(p->socket);
          }
        }
      }
      for (const std::string& s : sockets) {
        if (known.count(s) > 0) continue;
        auto r = refused.find(s);
        if (r != refused.end() && r->second == SocketSignature(s)) continue;
        fresh.push_back(s);
      }
      std::erase_if(refused, [&](const auto& e) { return sockets.count(e.first) == 0; });
      std::erase_if(failing, [&](const std::string& s) { return sockets.count(s) == 0; });
    }
    for (const std::string& s : gone) Deregister(s);
    for (const std::string& s : fresh) Register(s);
  }

  void Refuse(const std::string& socket, const std::string& driver, const std::string& error) {
    Status notified =
        internal::NotifyRegistrationStatus(socket, false, error, kRegistrationCallTimeout);
    {
      MutexLock lock(mu);
      refused[socket] = SocketSignature(socket);
    }
    Report({{"event", "registrationRefused"},
            {"driver", driver},
            {"socket", socket},
            {"error", error},
            {"notified", notified.ok()}});
  }

  void Register(const std::string& socket) {
    StatusOr<internal::PluginInfo> info = internal::GetPluginInfo(socket, kRegistrationCallTimeout);
    if (!info.ok()) {
      bool first = false;
      {
        MutexLock lock(mu);
        first = failing.insert(socket).second;
      }
      // Retried on the next scan, as the pluginwatcher's reconciler does.
      if (first) {
        Report({{"event", "getInfoFailed"},
                {"socket", socket},
                {"error", std::string(info.status().message())}});
      }
      return;
    }
    if (info->type != agent::kDraPluginType) {
      Refuse(socket, info->name, "no handler registered for plugin type: " + info->type);
      return;
    }
    if (info->name.empty()) {
      Refuse(socket, info->name, "plugin name is empty");
      return;
    }
    const std::string service = ChooseDraService(info->supported_versions, options.services);
    if (service.empty()) {
      std::string listed;
      for (const std::string& v : info->supported_versions)
        listed += (listed.empty() ? "" : " ") + v;
      std::string spoken;
      for (std::string_view v : kDraServices) {
        if (options.services.count(std::string(v)) > 0) {
          spoken += (spoken.empty() ? "" : " ") + std::string(v);
        }
      }
      Refuse(socket, info->name,
             "none of services supported by the plugin (" + listed +
                 ") are supported by the kubelet (" + spoken + ")");
      return;
    }
    if (EndpointTaken(info->name, info->endpoint)) {
      Refuse(
          socket, info->name,
          "endpoint " + info->endpoint + " already registered for DRA driver plugin " + info->name);
      return;
    }
    if (options.refuse_drivers.count(info->name) > 0) {
      Refuse(socket, info->name, "registration of " + info->name + " refused by the fake kubelet");
      return;
    }
    auto plugin = std::make_shared<Plugin>();
    plugin->driver = info->name;
    plugin->socket = socket;
    plugin->signature = SocketSignature(socket);
    plugin->client = std::make_unique<PluginClient>(
        info->endpoint, service, ChooseHealthService(info->supported_versions, options.services));
    Status notified =
        internal::NotifyRegistrationStatus(socket, true, "", kRegistrationCallTimeout);
    if (!notified.ok()) {
      // The pluginwatcher treats this as a failed registration and tries again later.
      Report({{"event", "notifyFailed"},
              {"driver", info->name},
              {"socket", socket},
              {"error", std::string(notified.message())}});
      return;
    }
    {
      MutexLock lock(mu);
      plugins[plugin->driver].push_back(plugin);
      failing.erase(socket);
    }
    Report({{"event", "registered"},
            {"driver", plugin->driver},
            {"socket", socket},
            {"endpoint", info->endpoint},
            {"supportedVersions", ToJson(info->supported_versions)},
            {"service", service},
            {"healthService", plugin->client->health_service()}});
    if (!plugin->client->health_service().empty()) {
      plugin->health_thread = std::thread([this, plugin] { WatchHealth(*plugin); });
    }
  }

  bool EndpointTaken(const std::string& driver, const std::string& endpoint) const {
    MutexLock lock(mu);
    auto it = plugins.find(driver);
    if (it == plugins.end()) return false;
    for (const auto& p : it->second) {
      if (p->client->endpoint() == endpoint) return true;
    }
    return false;
  }

  void Deregister(const std::string& socket) {
    std::shared_ptr<Plugin> plugin;
    bool last = false;
    {
      MutexLock lock(mu);
      for (auto& [driver, list] : plugins) {
        for (auto it = list.begin(); it != list.end(); ++it) {
          if ((*it)->socket != socket) continue;
          plugin = *it;
          list.erase(it);
          last = list.empty();
          break;
        }
        if (plugin) break;
      }
      if (plugin && last) plugins.erase(plugin->driver);
    }
    if (!plugin) return;
    StopHealth(*plugin);
    Report({{"event", "deregistered"},
            {"driver", plugin->driver},
            {"socket", socket},
            {"endpoint", plugin->client->endpoint()},
            {"lastInstance", last}});
    if (last && options.slice_wipe_delay >= Duration::zero()) {
      queue.AddAfter(std::string(kWipePrefix) + plugin->driver, options.slice_wipe_delay);
    }
  }

  void StopHealth(Plugin& plugin) {
    {
      MutexLock lock(plugin.health_mu);
      plugin.health_stop = true;
      if (plugin.watch != nullptr) plugin.watch->Cancel();
    }
    plugin.health_cv.NotifyAll();
    if (plugin.health_thread.joinable()) plugin.health_thread.join();
  }

  void WatchHealth(Plugin& plugin) {
    while (true) {
      std::unique_ptr<internal::HealthWatch> watch = plugin.client->WatchHealth();
      {
        MutexLock lock(plugin.health_mu);
        if (plugin.health_stop) break;
        plugin.watch = watch.get();
      }
      while (true) {
        StatusOr<std::vector<internal::DeviceHealthUpdate>> update = watch->Next();
        if (!update.ok()) break;
        for (const internal::DeviceHealthUpdate& d : *update) {
          const std::string key = plugin.driver + "/" + d.pool_name + "/" + d.device_name;
          {
            MutexLock lock(mu);
            std::string& seen = health[key];
            if (seen == d.health) continue;
            seen = d.health;
          }
          Report({{"event", "health"},
                  {"driver", plugin.driver},
                  {"service", plugin.client->health_service()},
                  {"pool", d.pool_name},
                  {"device", d.device_name},
                  {"health", d.health},
                  {"message", d.message},
                  {"healthCheckTimeoutSeconds", d.health_check_timeout_seconds}});
        }
      }
      MutexLock lock(plugin.health_mu);
      plugin.watch = nullptr;
      // The kubelet re-opens an ended stream every 5 s (wait.UntilWithContext).
      plugin.health_cv.WaitFor(
          lock, options.health_retry_interval,
          [&]() DRAPLANE_REQUIRES(plugin.health_mu) { return plugin.health_stop; });
      if (plugin.health_stop) break;
    }
  }

  // The newest plugin of `driver` first; the caller tries the next when one does not answer
  // (the kubelet prefers a connected instance over the newest).
  std::vector<std::shared_ptr<Plugin>> PluginsOf(const std::string& driver) const {
    MutexLock lock(mu);
    auto it = plugins.find(driver);
    if (it == plugins.end()) return {};
    return {it->second.rbegin(), it->second.rend()};
  }

  // ---- prepare / unprepare -----------------------------------------------------------------

  using Call = std::function<StatusOr<std::map<std::string, ClaimResult>>(PluginClient&)>;

  // Calls `call` on the newest plugin of `driver` that answers; reports the call as `method`.
  StatusOr<std::map<std::string, ClaimResult>> CallDriver(const std::string& method,
                                                          const std::string& pod,
                                                          const std::string& driver,
                                                          const std::vector<ClaimRef>& claims,
                                                          const Call& call) {
    std::vector<std::shared_ptr<Plugin>> candidates = PluginsOf(driver);
    if (candidates.empty()) {
      return UnavailableError("DRA driver " + driver + " is not registered");
    }
    StatusOr<std::map<std::string, ClaimResult>> result = UnavailableError("no plugin answered");
    for (const std::shared_ptr<Plugin>& p : candidates) {
      result = call(*p->client);
      boost::json::object line{{"event", method},
                               {"pod", pod},
                               {"driver", driver},
                               {"endpoint", p->client->endpoint()},
                               {"service", p->client->dra_service()},
                               {"claims", ToJson(claims)}};
      if (result.ok()) {
        boost::json::object answers;
        for (const auto& [uid, r] : *result) {
          boost::json::object answer{{"error", r.error}};
          if (method == "NodePrepareResources") {
            boost::json::array devices;
            for (const DeviceResult& d : r.devices) devices.push_back(ToJson(d));
            answer["devices"] = std::move(devices);
          }
          answers[uid] = std::move(answer);
        }
        line["result"] = std::move(answers);
      } else {
        line["error"] = std::string(result.status().message());
      }
      Report(std::move(line));
      if (result.ok() || result.status().code() != StatusCode::kUnavailable) break;
    }
    return result;
  }

  // Every claim answered, none unknown, no per-claim error (manager.go prepareResources).
  static Status CheckAnswers(const std::string& method,
                             const std::map<std::string, ClaimResult>& answers,
                             const std::vector<ClaimRef>& claims) {
    for (const auto& [uid, r] : answers) {
      // Clang before 16 cannot capture a structured binding: by name.
      const std::string& answered = uid;
      auto ref = std::find_if(claims.begin(), claims.end(),
                              [&](const ClaimRef& c) { return c.uid == answered; });
      if (ref == claims.end()) {
        return InternalError(method + " returned result for unknown claim UID " + uid);
      }
      if (!r.error.empty()) {
        return InternalError(method + " failed for claim " + ref->namespace_ + "/" + ref->name +
                             ": " + r.error);
      }
    }
    std::set<std::string> asked;
    for (const ClaimRef& c : claims) asked.insert(c.uid);
    if (answers.size() < asked.size()) {
      return InternalError(method + " left out " + std::to_string(asked.size() - answers.size()) +
                           " claims");
    }
    return Status::Ok();
  }

  Status PreparePod(const cv1::Pod& pod) {
    const std::string& ns = pod.metadata.namespace_;
    const std::string pod_name = ns + "/" + pod.metadata.name;
    StatusOr<std::vector<std::string>> names = agent::PodClaimNames(pod);
    if (!names.ok()) return names.status().WithPrefix("prepare resource claim");
    std::map<std::string, std::vector<ClaimRef>> batches;  // by driver
    std::vector<std::string> to_prepare;
    for (const std::string& name : *names) {
      StatusOr<rv1::ResourceClaim> claim = client::Get<rv1::ResourceClaim>(api, ns, name);
      if (!claim.ok()) {
        return claim.status().WithPrefix("failed to fetch ResourceClaim " + name +
                                         " referenced by pod " + pod.metadata.name);
      }
      if (!IsReservedFor(*claim, pod)) {
        return FailedPreconditionError("pod " + pod.metadata.name + "(" + pod.metadata.uid +
                                       ") is not allowed to use resource claim " + name + "(" +
                                       claim->metadata.uid + ")");
      }
      const std::string key = ns + "/" + name;
      ClaimInfo& info = claims[key];
      if (info.uid != claim->metadata.uid) {
        info = ClaimInfo{.namespace_ = ns, .name = name, .uid = claim->metadata.uid};
        if (claim->status.allocation) {
          for (const auto& r : claim->status.allocation->devices.results) {
            info.drivers.insert(r.driver);
          }
        }
      }
      info.pod_uids.insert(pod.metadata.uid);
      if (info.prepared) continue;
      for (const std::string& driver : info.drivers) {
        batches[driver].push_back(ClaimRef{.namespace_ = ns, .uid = info.uid, .name = name});
      }
      to_prepare.push_back(key);
    }
    for (const auto& [driver, refs] : batches) {
      const Duration timeout = options.call_timeout;
      DRAPLANE_ASSIGN_OR_RETURN(
          ClaimResults answers,
          CallDriver("NodePrepareResources", pod_name, driver, refs,
                     [&, &batch = refs](PluginClient& c) { return c.Prepare(batch, timeout); }));
      DRAPLANE_RETURN_IF_ERROR(CheckAnswers("NodePrepareResources", answers, refs));
      for (const ClaimRef& ref : refs) {
        claims[ns + "/" + ref.name].devices[driver] = answers[ref.uid].devices;
      }
    }
    for (const std::string& key : to_prepare) claims[key].prepared = true;
    // The container runtime resolves the CDI device IDs before it starts anything.
    if (!options.cdi_dirs.empty()) {
      const std::set<std::string> known = CdiDevicesIn(options.cdi_dirs);
      for (const std::string& name : *names) {
        for (const auto& [driver, devices] : claims[ns + "/" + name].devices) {
          for (const DeviceResult& d : devices) {
            for (const std::string& id : d.cdi_device_ids) {
              if (known.count(id) == 0) {
                return FailedPreconditionError(
                    "failed to inject CDI devices: unresolvable CDI "
                    "devices " +
                    id);
              }
            }
          }
        }
      }
    }
    return Status::Ok();
  }

  // The CDI device IDs each container of `pod` gets (claimInfo.cdiDevicesAsList per
  // container claim reference).
  boost::json::object ContainerDevices(const cv1::Pod& pod) {
    boost::json::object out;
    for (const cv1::Container& c : pod.spec.containers) {
      std::vector<std::string> ids;
      for (const auto& ref : c.resources.claims) {
        std::string claim_name;
        for (const cv1::PodResourceClaim& pc : pod.spec.resource_claims) {
          if (pc.name != ref.name) continue;
          if (pc.resource_claim_name) claim_name = *pc.resource_claim_name;
          for (const auto& s : pod.status.resource_claim_statuses) {
            if (s.name == ref.name && s.resource_claim_name) claim_name = *s.resource_claim_name;
          }
        }
        auto info = claims.find(pod.metadata.namespace_ + "/" + claim_name);
        if (info == claims.end()) continue;
        for (const auto& [driver, devices] : info->second.devices) {
          for (const DeviceResult& d : devices) {
            const bool serves = ref.request.empty() || d.request_names.empty() ||
                                std::find(d.request_names.begin(), d.request_names.end(),
                                          ref.request) != d.request_names.end();
            if (serves) ids.insert(ids.end(), d.cdi_device_ids.begin(), d.cdi_device_ids.end());
          }
        }
      }
      out[c.name] = ToJson(ids);
    }
    return out;
  }

  // UnprepareResources for the Pod with `uid`: claims other Pods use lose only its reference.
  Status UnpreparePod(const std::string& uid, const std::string& pod_name) {
    std::map<std::string, std::vector<ClaimRef>> batches;
    std::vector<std::string> done;
    for (auto& [key, info] : claims) {
      if (info.pod_uids.count(uid) == 0) continue;
      if (info.pod_uids.size() > 1) {
        info.pod_uids.erase(uid);
        continue;
      }
      for (const std::string& driver : info.drivers) {
        batches[driver].push_back(
            ClaimRef{.namespace_ = info.namespace_, .uid = info.uid, .name = info.name});
      }
      done.push_back(key);
    }
    for (const auto& [driver, refs] : batches) {
      const Duration timeout = options.call_timeout;
      DRAPLANE_ASSIGN_OR_RETURN(
          ClaimResults answers,
          CallDriver("NodeUnprepareResources", pod_name, driver, refs,
                     [&, &batch = refs](PluginClient& c) { return c.Unprepare(batch, timeout); }));
      DRAPLANE_RETURN_IF_ERROR(CheckAnswers("NodeUnprepareResources", answers, refs));
    }
    for (const std::string& key : done) claims.erase(key);
    return Status::Ok();
  }

  // ---- the Pod worker ----------------------------------------------------------------------

  Status SyncPod(const std::string& ns, const std::string& name) {
    client::Informer<cv1::Pod>::Ptr pod = pods->Get(ns, name);
    if (pod == nullptr || pod->spec.node_name != options.node_name) return Status::Ok();
    const std::string& uid = pod->metadata.uid;
    const std::string pod_name = ns + "/" + name;
    if (pod->metadata.deletion_timestamp || IsPodTerminal(*pod)) {
      // The containers are stopped; then the claims are unprepared; only then can a deleted
      // Pod go.
      if (running.erase(uid) > 0) {
        Report({{"event", "stopped"}, {"pod", pod_name}, {"podUID", uid}});
      }
      DRAPLANE_RETURN_IF_ERROR(UnpreparePod(uid, pod_name));
      if (pod->metadata.deletion_timestamp) {
        // Reported first: once the delete is through, watchers may look.
        Report({{"event", "terminated"}, {"pod", pod_name}, {"podUID", uid}});
        // A Pod a finalizer keeps first ends Failed (api/pods.h).
        if (std::optional<boost::json::object> stopped =
                api::StoppedPodStatusPatch(*pod, api::Time::FromTimestamp(clock.Now()))) {
          Status s =
              client::PatchOnly<cv1::Pod>(api, ns, name, client::PatchType::kMerge,
                                          std::move(*stopped), "status", options.field_manager);
          if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
        }
        client::DeleteOptions force;
        force.grace_period_seconds = 0;
        force.precondition_uid = uid;
        Status s = client::Delete<cv1::Pod>(api, ns, name, force);
        if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kConflict) {
          return s;
        }
      }
      return Status::Ok();
    }
    if (running.count(uid) > 0) return Status::Ok();
    Status prepared = PreparePod(*pod);
    if (!prepared.ok()) {
      Report({{"event", "prepareFailed"},
              {"pod", pod_name},
              {"podUID", uid},
              {"error", std::string(prepared.message())}});
      events->Record(client::ReferenceTo(*pod), cv1::kEventTypeWarning, kFailedPrepareReason,
                     std::string(prepared.message()));
      return prepared;
    }
    const api::Time now = api::Time::FromTimestamp(clock.Now());
    boost::json::object patch{
        {"metadata", boost::json::object{{"resourceVersion", pod->metadata.resource_version}}},
        {"status", api::RunningPodStatus(*pod, now)}};
    StatusOr<cv1::Pod> patched =
        client::Patch<cv1::Pod>(api, ns, name, client::PatchType::kMerge, std::move(patch),
                                "status", options.field_manager);
    if (!patched.ok()) {
      if (patched.status().code() == StatusCode::kNotFound) return Status::Ok();
      return patched.status();  // a Conflict retries with the newer Pod
    }
    running.insert(uid);
    Report({{"event", "running"},
            {"pod", pod_name},
            {"podUID", uid},
            {"containers", ContainerDevices(*pod)}});
    return Status::Ok();
  }

  Status WipeSlices(const std::string& driver) {
    client::ListOptions list;
    list.field_selector = "spec.nodeName=" + options.node_name;
    DRAPLANE_ASSIGN_OR_RETURN(client::ObjectList<rv1::ResourceSlice> slices,
                              client::List<rv1::ResourceSlice>(api, "", list));
    int64_t deleted = 0;
    for (const rv1::ResourceSlice& slice : slices.items) {
      if (!driver.empty() && slice.spec.driver != driver) continue;
      Status s = client::Delete<rv1::ResourceSlice>(api, "", slice.metadata.name);
      if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
      ++deleted;
    }
    Report({{"event", "slicesWiped"}, {"driver", driver}, {"deleted", deleted}});
    return Status::Ok();
  }

  Status Process(const std::string& key) {
    if (key == kKeyNode) {
      Status s = agent::SyncNodeRegistration(
          api,
          agent::NodeRegistration{.node_name = options.node_name,
                                  .labels = options.labels,
                                  .capacity = options.capacity,
                                  .kubelet_version = "draplane-fakekubelet",
                                  .ready_message = "draplane fake kubelet is posting ready status",
                                  .field_manager = options.field_manager},
          clock, &last_node_status);
      if (!s.ok()) log::Warning("fakekubelet {}: heartbeat: {}", options.node_name, s.ToString());
      queue.AddAfter(key, options.heartbeat_interval);
      return Status::Ok();
    }
    if (key == kKeyWipeAll) return WipeSlices("");
    if (key.starts_with(kWipePrefix)) {
      const std::string driver = key.substr(kWipePrefix.size());
      if (!PluginsOf(driver).empty()) return Status::Ok();  // it came back in time
      return WipeSlices(driver);
    }
    if (key.starts_with(kGonePrefix)) {
      const std::string uid = key.substr(kGonePrefix.size());
      running.erase(uid);
      return UnpreparePod(uid, uid);
    }
    if (key.starts_with(kPodPrefix)) {
      std::string ns;
      std::string name;
      client::SplitObjectKey(key.substr(kPodPrefix.size()), &ns, &name);
      return SyncPod(ns, name);
    }
    return Status::Ok();
  }

  void Work() {
    while (std::optional<std::string> key = queue.Get()) {
      Status s = Process(*key);
      if (!s.ok()) {
        log::Warning("fakekubelet {}: {}: {}", options.node_name, *key, s.ToString());
        queue.AddRateLimited(*key);
      } else if (*key != kKeyNode) {
        queue.Forget(*key);
      }
      queue.Done(*key);
    }
  }
};

StatusOr<std::unique_ptr<FakeKubelet>> FakeKubelet::Create(client::ApiClient& api,
                                                           FakeKubeletOptions options,
                                                           const Clock& clock) {
  if (options.node_name.empty()) return InvalidArgumentError("fakekubelet: no node name");
  if (options.registry_dir.empty()) return InvalidArgumentError("fakekubelet: no registry dir");
  if (options.services.empty()) {
    options.services.insert(std::begin(kDraServices), std::end(kDraServices));
    options.services.insert(std::begin(kHealthServices), std::end(kHealthServices));
  }
  bool speaks_dra = false;
  for (const std::string& service : options.services) {
    const bool dra = std::find(std::begin(kDraServices), std::end(kDraServices), service) !=
                     std::end(kDraServices);
    const bool health = std::find(std::begin(kHealthServices), std::end(kHealthServices),
                                  service) != std::end(kHealthServices);
    if (!dra && !health) {
      return InvalidArgumentError("fakekubelet: services: unsupported value \"" + service +
                                  "\": supported values: v1.DRAPlugin, v1beta1.DRAPlugin, "
                                  "v1.DRAResourceHealth, v1beta1.DRAResourceHealth, "
                                  "v1alpha1.DRAResourceHealth");
    }
    speaks_dra = speaks_dra || dra;
  }
  if (!speaks_dra) {
    return InvalidArgumentError(
        "fakekubelet: services: Required value: at least one DRA service (v1.DRAPlugin, "
        "v1beta1.DRAPlugin)");
  }
  auto state = std::make_unique<State>(api, std::move(options), clock);
  if (!state->options.report_path.empty()) {
    state->report_file = std::fopen(state->options.report_path.c_str(), "a");
    if (state->report_file == nullptr) {
      return InvalidArgumentError("fakekubelet: cannot open the report " +
                                  state->options.report_path);
    }
  }
  state->events = std::make_unique<client::EventRecorder>(
      api, clock,
      client::EventRecorderOptions{
          .component = "kubelet", .host = state->options.node_name, .synchronous = true});
  return std::unique_ptr<FakeKubelet>(new FakeKubelet(std::move(state)));
}

FakeKubelet::FakeKubelet(std::unique_ptr<State> state) : state_(std::move(state)) {}

FakeKubelet::~FakeKubelet() { Stop(); }

Status FakeKubelet::Start() {
  State& s = *state_;
  if (s.started.exchange(true)) return Status::Ok();
  if (::mkdir(s.options.registry_dir.c_str(), 0750) != 0 && errno != EEXIST) {
    return InvalidArgumentError("fakekubelet: cannot create " + s.options.registry_dir);
  }
  if (::pipe2(s.wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    return InternalError("fakekubelet: cannot create a pipe");
  }
  s.inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (s.inotify_fd >= 0 &&
      ::inotify_add_watch(s.inotify_fd, s.options.registry_dir.c_str(),
                          IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) < 0) {
    ::close(s.inotify_fd);
    s.inotify_fd = -1;  // the periodic rescan still finds sockets
  }
  s.queue.Add(std::string(kKeyNode));
  if (s.options.wipe_slices_on_start) s.queue.Add(std::string(kKeyWipeAll));
  client::InformerOptions informer;
  informer.field_selector = "spec.nodeName=" + s.options.node_name;
  s.pods = std::make_unique<client::Informer<cv1::Pod>>(s.api, informer);
  client::WorkQueue* queue = &s.queue;
  auto enqueue = [queue](const cv1::Pod& pod) {
    queue->Add(std::string(kPodPrefix) +
               client::ObjectKey(pod.metadata.namespace_, pod.metadata.name));
  };
  s.pods->AddHandlers(
      {.on_add = [enqueue](const auto& pod) { enqueue(*pod); },
       .on_update = [enqueue](const auto&, const auto& pod) { enqueue(*pod); },
       .on_delete =
           [queue](const auto& pod) { queue->Add(std::string(kGonePrefix) + pod->metadata.uid); }});
  s.pods->Start();
  s.worker = std::thread([&s] { s.Work(); });
  s.watcher = std::thread([&s] { s.WatchRegistry(); });
  return Status::Ok();
}

void FakeKubelet::Stop() {
  State& s = *state_;
  if (!s.started.load() || s.stopping.exchange(true)) return;
  if (s.wake[1] >= 0) (void)!::write(s.wake[1], "x", 1);
  if (s.watcher.joinable()) s.watcher.join();
  s.queue.ShutDown();
  if (s.worker.joinable()) s.worker.join();
  if (s.pods) s.pods->Stop();
  std::vector<std::shared_ptr<Plugin>> all;
  {
    MutexLock lock(s.mu);
    for (auto& [driver, list] : s.plugins) all.insert(all.end(), list.begin(), list.end());
  }
  for (const auto& p : all) s.StopHealth(*p);
  s.events->Stop();
}

std::vector<std::string> FakeKubelet::Report() const {
  MutexLock lock(state_->mu);
  return state_->report;
}

std::vector<std::string> FakeKubelet::RegisteredDrivers() const {
  MutexLock lock(state_->mu);
  std::vector<std::string> out;
  for (const auto& [driver, list] : state_->plugins) out.push_back(driver);
  return out;
}

}  // namespace draplane::fakekubelet
