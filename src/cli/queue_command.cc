// `draplane queue [-n NS] [--domain D] [-o text|wide|json]`: the scheduling queue's order now,
// with each pending Pod's band, its tenant's share and fair share, its aging credit, since when
// it starves and its starvation hold, then the shares per domain and tenant (the `sprio` / `sshare`
// of this world; docs/design/fair-share.md §5). Computed from the server's objects with the
// scheduler's own order (scheduler/queue_view.h, which says what the API cannot show and how it
// stands in).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "api/codec/json.h"
#include "api/meta/duration.h"
#include "api/meta/time.h"
#include "cli/commands.h"
#include "client/kubeconfig.h"
#include "client/list_all.h"
#include "client/rest_client.h"
#include "client/typed.h"
#include "scheduler/queue_view.h"
#include "scheduler/scheduler.h"

namespace draplane::cli {
namespace {

namespace json = boost::json;

struct QueueFlags {
  std::string kubeconfig;
  std::string context;
  std::string namespace_;
  std::string domain;
  // The names `draplane scheduler` and `draplane serve` schedule by default.
  std::vector<std::string> scheduler_names = scheduler::SchedulerOptions{}.scheduler_names;
  std::string output = "text";
};

std::string Fixed(double value, int digits = 2) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return buf;
}

std::string Rfc3339(Timestamp t) { return api::Time::FromTimestamp(t).text(); }

bool Shown(const scheduler::QueuedPodView& pod, const QueueFlags& flags) {
  if (!flags.namespace_.empty() && pod.namespace_ != flags.namespace_) return false;
  return flags.domain.empty() ||
         std::find(pod.domains.begin(), pod.domains.end(), flags.domain) != pod.domains.end();
}

std::string Text(const scheduler::QueueView& view, const QueueFlags& flags, Timestamp now) {
  bool wide = flags.output == "wide";
  std::string out;
  if (!view.policy_error.empty()) {
    out += "DeviceSharingPolicy default is not in force: " + view.policy_error + "\n";
  }
  if (view.policy.empty()) {
    out += "No sharing policy in force: the queue orders by priority, then arrival.\n";
  }
  std::vector<std::vector<std::string>> rows;
  if (view.policy.empty()) {
    rows.push_back({"POSITION", "PRIORITY", "NAMESPACE", "POD", "WAITING"});
  } else {
    // SHARE/FAIR is the tenant's effective share over its fair share (1.00: exactly at it), the
    // ordering's key; FAIR a fraction of the domain, as the Pods' queued messages print both.
    rows.push_back({"POSITION", "PRIORITY", "NAMESPACE", "POD", "SHARE/FAIR", "FAIR", "CREDIT",
                    "WAITING", "STARVING-SINCE", "HOLD"});
    if (wide) {
      rows.back().push_back("WEIGHT");
      rows.back().push_back("DOMAINS");
    }
  }
  for (const scheduler::QueuedPodView& pod : view.pods) {
    if (!Shown(pod, flags)) continue;
    std::vector<std::string> row{std::to_string(pod.position), std::to_string(pod.priority),
                                 pod.namespace_, pod.name};
    std::string waiting = api::FormatDuration(std::chrono::duration_cast<Duration>(
        std::chrono::duration_cast<std::chrono::seconds>(now - pod.waiting_since)));
    if (view.policy.empty()) {
      row.push_back(waiting);
    } else {
      bool in_domain = !pod.domains.empty();
      row.push_back(in_domain ? Fixed(pod.share) : "-");
      row.push_back(in_domain ? Fixed(pod.fair) : "-");
      row.push_back(Fixed(pod.credit));
      row.push_back(waiting);
      row.push_back(pod.starving_since ? Rfc3339(*pod.starving_since) : "-");
      // "node-3 5/8": devices held on the target node of those the Pod needs there.
      row.push_back(pod.hold ? pod.hold->node + " " + std::to_string(pod.hold->devices.size()) +
                                   "/" + std::to_string(pod.hold->needed)
                             : "-");
      if (wide) {
        row.push_back(Fixed(pod.weight, 0));
        std::string domains;
        for (const std::string& d : pod.domains) domains += (domains.empty() ? "" : ",") + d;
        row.push_back(domains.empty() ? "-" : domains);
      }
    }
    rows.push_back(std::move(row));
  }
  if (rows.size() == 1) {
    out += "No pending Pods.\n";
  } else {
    out += Table(rows);
  }
  if (view.policy.empty()) return out;
  std::vector<std::vector<std::string>> shares{{"DOMAIN", "CAPACITY", "TENANT", "WEIGHT", "FAIR",
                                                "CURRENT", "DECAYED", "EFFECTIVE/FAIR", "PENDING",
                                                "STARVING"}};
  for (const scheduler::DomainShares& domain : view.shares) {
    if (!flags.domain.empty() && domain.name != flags.domain) continue;
    for (const scheduler::TenantShare& t : domain.tenants) {
      if (!flags.namespace_.empty() && t.namespace_ != flags.namespace_) continue;
      shares.push_back({domain.name, Fixed(domain.capacity_units, 0), t.namespace_,
                        Fixed(t.weight, 0), Fixed(t.fair), Fixed(t.current), Fixed(t.decayed),
                        Fixed(t.effective), std::to_string(t.pending), std::to_string(t.starving)});
    }
  }
  if (shares.size() > 1) out += "\n" + Table(shares);
  return out;
}

json::object Json(const scheduler::QueueView& view, const QueueFlags& flags) {
  json::object out;
  out["policy"] = view.policy;
  if (!view.policy_error.empty()) out["policyError"] = view.policy_error;
  json::array pods;
  for (const scheduler::QueuedPodView& pod : view.pods) {
    if (!Shown(pod, flags)) continue;
    json::object p{{"position", pod.position},
                   {"namespace", pod.namespace_},
                   {"name", pod.name},
                   {"priority", pod.priority},
                   {"waitingSince", Rfc3339(pod.waiting_since)}};
    if (!view.policy.empty()) {
      json::array domains;
      for (const std::string& d : pod.domains) domains.emplace_back(d);
      p["domains"] = std::move(domains);
      p["weight"] = pod.weight;
      p["share"] = pod.share;
      p["fairShare"] = pod.fair;
      p["credit"] = pod.credit;
      if (pod.starving_since) p["starvingSince"] = Rfc3339(*pod.starving_since);
      if (pod.hold) {
        json::array devices;
        for (const allocator::HeldDeviceId& d : pod.hold->devices) {
          devices.push_back(
              json::object{{"driver", d.driver}, {"pool", d.pool}, {"device", d.device}});
        }
        p["hold"] = json::object{{"node", pod.hold->node},
                                 {"since", Rfc3339(pod.hold->since)},
                                 {"needed", pod.hold->needed},
                                 {"devices", std::move(devices)}};
      }
    }
    pods.push_back(std::move(p));
  }
  out["pods"] = std::move(pods);
  json::array domains;
  for (const scheduler::DomainShares& domain : view.shares) {
    if (!flags.domain.empty() && domain.name != flags.domain) continue;
    json::array tenants;
    for (const scheduler::TenantShare& t : domain.tenants) {
      if (!flags.namespace_.empty() && t.namespace_ != flags.namespace_) continue;
      tenants.push_back(json::object{{"namespace", t.namespace_},
                                     {"weight", t.weight},
                                     {"fairShare", t.fair},
                                     {"current", t.current},
                                     {"decayed", t.decayed},
                                     {"effective", t.effective},
                                     {"pending", t.pending},
                                     {"starving", t.starving}});
    }
    domains.push_back(json::object{{"name", domain.name},
                                   {"capacityUnits", domain.capacity_units},
                                   {"tenants", std::move(tenants)}});
  }
  out["domains"] = std::move(domains);
  return out;
}

int RunQueue(const QueueFlags& flags) {
  if (flags.output != "text" && flags.output != "wide" && flags.output != "json") {
    return ReportFailure("queue", "-o", InvalidArgumentError("output must be text, wide or json"));
  }
  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return ReportFailure("queue", "kubeconfig", config.status());
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return ReportFailure("queue", "client", api.status());
  client::ApiClient& c = **api;

  scheduler::QueueViewInputs inputs;
  inputs.scheduler_names = flags.scheduler_names;
  StatusOr<api::draplanev1alpha1::DeviceSharingPolicy> policy =
      client::Get<api::draplanev1alpha1::DeviceSharingPolicy>(c, "", "default");
  if (policy.ok()) {
    inputs.policy = *std::move(policy);
  } else if (policy.status().code() != StatusCode::kNotFound) {
    return ReportFailure("queue", "get devicesharingpolicy default", policy.status());
  }
  auto list = [&](auto* out, const char* what) {
    using T = typename std::remove_pointer_t<decltype(out)>::value_type;
    StatusOr<std::vector<T>> items = client::ListAll<T>(c);
    if (!items.ok()) throw CommandExit{ReportFailure("queue", what, items.status())};
    *out = *std::move(items);
  };
  list(&inputs.pods, "list pods");
  list(&inputs.claims, "list resourceclaims");
  list(&inputs.classes, "list deviceclasses");
  list(&inputs.slices, "list resourceslices");
  if (inputs.policy.has_value()) list(&inputs.namespaces, "list namespaces");
  inputs.now = RealClock().Now();

  scheduler::QueueView view = scheduler::ComputeQueueView(inputs);
  if (!flags.domain.empty() && inputs.policy.has_value()) {
    bool known = false;
    for (const auto& d : inputs.policy->spec.domains) known = known || d.name == flags.domain;
    if (!known) {
      return ReportFailure(
          "queue", "--domain",
          NotFoundError("DeviceSharingPolicy default has no domain \"" + flags.domain + "\""));
    }
  }
  std::string out = flags.output == "json" ? api::codec::WriteJson(Json(view, flags)) + "\n"
                                           : Text(view, flags, inputs.now);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void AddQueueCommand(CLI::App& app) {
  auto flags = std::make_shared<QueueFlags>();
  CLI::App* cmd = app.add_subcommand(
      "queue",
      "The scheduling queue's order now: each pending Pod's position, priority band, tenant "
      "share and fair share under the DeviceSharingPolicy, aging credit and starvation, then "
      "the shares per domain and tenant");
  cmd->add_option("-n,--namespace", flags->namespace_,
                  "Only this namespace's Pods and shares (positions stay those of the whole "
                  "queue)");
  cmd->add_option("--domain", flags->domain, "Only Pods using this domain of the policy");
  cmd->add_option("--scheduler-name", flags->scheduler_names,
                  "Pods of these schedulers (repeatable; default: those the scheduler serves by "
                  "default)")
      ->capture_default_str();
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("-o,--output", flags->output, "text, wide or json")->capture_default_str();
  cmd->callback([flags] {
    int code = RunQueue(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
