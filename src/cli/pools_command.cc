// `draplane pools [--driver D] [--pool P]`: the answer a ResourcePoolStatusRequest (KEP-5677)
// would get, computed now from the server's slices, claims and DeviceTaintRules with the
// controller's own code (controllers/poolstatus/pool_status.h), without creating an object.
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "api/codec/json.h"
#include "api/codec/yaml.h"
#include "api/gen/resource_v1alpha3_codec.h"
#include "api/validation/pool_status_request_validation.h"
#include "cli/commands.h"
#include "client/kubeconfig.h"
#include "client/list_all.h"
#include "client/resource_v1alpha3.h"
#include "client/rest_client.h"
#include "client/typed.h"
#include "controllers/poolstatus/pool_status.h"

namespace draplane::cli {
namespace {

namespace rv1 = api::resourcev1;
namespace ra3 = api::resourcev1alpha3;

struct PoolsFlags {
  std::string kubeconfig;
  std::string context;
  std::string driver;
  std::string pool;
  std::string default_partition_type_attribute;
  int32_t limit = api::validation::kPoolStatusMaxLimit;
  std::string output = "text";
};

std::string Or(const std::optional<int32_t>& v) { return v ? std::to_string(*v) : "-"; }

// The partition and shareable summaries, or the validation error, in one cell.
std::string Details(const ra3::PoolStatus& p) {
  if (p.validation_error) return *p.validation_error;
  std::string out;
  for (const ra3::PartitionTypeStatus& t : p.partition_summary) {
    out += (out.empty() ? "" : " ") + t.type + ":" + Or(t.allocatable) + "/" + Or(t.total);
  }
  if (p.shareable_summary) {
    const ra3::ShareableSummaryStatus& s = *p.shareable_summary;
    out += std::string(out.empty() ? "" : " ") + "shared:" + Or(s.fully_available_devices) +
           " free," + Or(s.partially_available_devices) + " in use";
    for (const ra3::ShareableCapacityStatus& c : s.capacity) {
      out += " " + c.name + ":" + (c.available ? c.available->ToString() : "-") + "/" +
             (c.total ? c.total->ToString() : "-");
    }
  }
  return out.empty() ? "-" : out;
}

int RunPools(const PoolsFlags& flags) {
  if (flags.output != "text" && flags.output != "json" && flags.output != "yaml") {
    return ReportFailure("pools", "-o", InvalidArgumentError("output must be text, yaml or json"));
  }
  // The same checks as a request's spec, so a bad flag reads like the API's answer.
  ra3::ResourcePoolStatusRequest probe;
  probe.metadata.name = "pools";
  probe.spec.driver = flags.driver.empty() ? "example.com" : flags.driver;
  if (!flags.pool.empty()) probe.spec.pool_name = flags.pool;
  probe.spec.limit = flags.limit;
  if (!flags.default_partition_type_attribute.empty()) {
    probe.spec.default_partition_type_attribute = flags.default_partition_type_attribute;
  }
  if (api::FieldErrorList errs = api::validation::ValidateResourcePoolStatusRequest(probe);
      !errs.empty()) {
    std::string message;
    for (const api::FieldError& e : errs) message += (message.empty() ? "" : "; ") + e.ToString();
    return ReportFailure("pools", "flags", InvalidArgumentError(message));
  }

  std::string path = flags.kubeconfig.empty() ? client::DefaultKubeconfigPath() : flags.kubeconfig;
  StatusOr<client::RestConfig> config = client::LoadKubeconfig(path, flags.context);
  if (!config.ok()) return ReportFailure("pools", "kubeconfig", config.status());
  StatusOr<std::unique_ptr<client::ApiClient>> api = client::CreateRestClient(*config);
  if (!api.ok()) return ReportFailure("pools", "client", api.status());
  StatusOr<std::vector<rv1::ResourceSlice>> slices = client::ListAll<rv1::ResourceSlice>(**api);
  if (!slices.ok()) return ReportFailure("pools", "list resourceslices", slices.status());
  StatusOr<std::vector<rv1::ResourceClaim>> claims = client::ListAll<rv1::ResourceClaim>(**api);
  if (!claims.ok()) return ReportFailure("pools", "list resourceclaims", claims.status());
  StatusOr<std::vector<rv1::DeviceTaintRule>> rules = client::ListAll<rv1::DeviceTaintRule>(**api);
  if (!rules.ok()) return ReportFailure("pools", "list devicetaintrules", rules.status());
  controllers::poolstatus::Inputs inputs;
  std::set<std::string> drivers;
  for (const rv1::ResourceSlice& s : *slices) {
    inputs.slices.push_back(&s);
    if (flags.driver.empty() || s.spec.driver == flags.driver) drivers.insert(s.spec.driver);
  }
  if (!flags.driver.empty()) drivers.insert(flags.driver);
  for (const rv1::ResourceClaim& c : *claims) inputs.claims.push_back(&c);
  for (const rv1::DeviceTaintRule& r : *rules) inputs.rules.push_back(&r);

  ra3::ResourcePoolStatusRequestList list;
  list.api_version = "resource.k8s.io/v1alpha3";
  list.kind = "ResourcePoolStatusRequestList";
  for (const std::string& driver : drivers) {
    ra3::ResourcePoolStatusRequest item = probe;
    item.api_version = "resource.k8s.io/v1alpha3";
    item.kind = "ResourcePoolStatusRequest";
    item.metadata.name = driver;
    item.spec.driver = driver;
    controllers::poolstatus::Result result = controllers::poolstatus::Compute(item.spec, inputs);
    item.status = std::move(result.status);
    list.items.push_back(std::move(item));
  }
  std::string out;
  if (flags.output == "text") {
    std::vector<std::vector<std::string>> rows = {
        {"DRIVER", "POOL", "NODE", "TOTAL", "ALLOCATED", "AVAILABLE", "UNAVAILABLE", "DETAILS"}};
    std::vector<std::string> beyond_limit;
    for (const ra3::ResourcePoolStatusRequest& item : list.items) {
      for (const ra3::PoolStatus& p : item.status->pools) {
        rows.push_back({p.driver, p.pool_name, p.node_name.value_or("-"), Or(p.total_devices),
                        Or(p.allocated_devices), Or(p.available_devices), Or(p.unavailable_devices),
                        Details(p)});
      }
      if (item.status->pools.size() < static_cast<size_t>(item.status->pool_count.value_or(0))) {
        beyond_limit.push_back(
            item.spec.driver + ": " +
            std::to_string(item.status->pool_count.value_or(0) - item.status->pools.size()) +
            " more pools beyond --limit\n");
      }
    }
    out = Table(rows);
    for (const std::string& line : beyond_limit) out += line;
  } else {
    boost::json::value value = Encode(list);
    out =
        flags.output == "json" ? api::codec::WriteJson(value) + "\n" : api::codec::WriteYaml(value);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

void AddPoolsCommand(CLI::App& app) {
  auto flags = std::make_shared<PoolsFlags>();
  CLI::App* cmd = app.add_subcommand(
      "pools",
      "Device pools now: total, allocated, available, unavailable (tainted), partitions and "
      "shared capacity, as a ResourcePoolStatusRequest would report them");
  cmd->add_option("--driver", flags->driver, "Only this driver's pools (default: every driver)");
  cmd->add_option("--pool", flags->pool, "Only the pool of this name");
  cmd->add_option("--default-partition-type-attribute", flags->default_partition_type_attribute,
                  "Group partitions by this attribute where no slice of a pool names one "
                  "(spec.defaultPartitionTypeAttribute)");
  cmd->add_option("--limit", flags->limit, "At most this many pools per driver (1 ... 1000)")
      ->capture_default_str();
  cmd->add_option("--kubeconfig", flags->kubeconfig,
                  "Kubeconfig of the API server (default: $KUBECONFIG or ~/.kube/config)");
  cmd->add_option("--context", flags->context, "Kubeconfig context (default: current-context)");
  cmd->add_option("-o,--output", flags->output, "text, yaml or json")->capture_default_str();
  cmd->callback([flags] {
    int code = RunPools(*flags);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
