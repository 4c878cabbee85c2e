#include "agent/profile.h"

#include <boost/json.hpp>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "api/codec/field_reader.h"
#include "api/codec/yaml.h"
#include "api/meta/duration.h"
#include "api/validation/names.h"
#include "common/status_macros.h"

namespace draplane::agent {

using api::codec::FieldReader;

namespace {

constexpr std::string_view kNodeProfileKind = "NodeProfile";
constexpr std::string_view kClusterProfileKind = "ClusterProfile";

std::string ListError(const std::vector<std::string>& problems) {
  std::string out;
  for (const std::string& p : problems) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out;
}

MigProfileSpec ReadMigProfile(const boost::json::value& v, const std::string& path,
                              int64_t gpu_slices, Status* status) {
  FieldReader r(v, path);
  MigProfileSpec out;
  if (auto name = r.String("name")) out.name = *name;
  if (out.name.empty()) r.Fail("name", "required (e.g. 1g.5gb)");
  if (auto q = r.Quantity("memory")) out.memory = *q;
  if (out.memory.Sign() <= 0) r.Fail("memory", "required and positive");
  if (auto n = r.Int("memorySlices")) out.memory_slices = *n;
  if (out.memory_slices <= 0 || out.memory_slices > gpu_slices) {
    r.Fail("memorySlices", "must be between 1 and the GPU's memorySlices");
  }
  if (auto n = r.Int("multiprocessors")) out.multiprocessors = *n;
  out.placements = r.IntList("placements");
  for (int64_t start : out.placements) {
    if (start < 0 || start + out.memory_slices > gpu_slices) {
      r.Fail("placements",
             "placement " + std::to_string(start) + " does not fit the GPU's memory slices");
    }
  }
  if (out.placements.empty()) {
    for (int64_t start = 0; start + out.memory_slices <= gpu_slices; start += out.memory_slices) {
      out.placements.push_back(start);
    }
  }
  *status = r.Finish();
  return out;
}

// A Go-style duration at `key`, nullopt when absent (a malformed one fails `r`).
std::optional<Duration> ReadDuration(FieldReader& r, std::string_view key) {
  std::optional<std::string> s = r.String(key);
  if (!s) return std::nullopt;
  StatusOr<Duration> d = api::ParseNonNegativeDuration(*s);
  if (d.ok()) return *d;
  r.Fail(key, d.status().message());
  return std::nullopt;
}

// `attach:` of a GPU or FPGA group.
std::optional<AttachSpec> ReadAttach(FieldReader& r) {
  const boost::json::value* v = r.Raw("attach");
  if (v == nullptr) return std::nullopt;
  FieldReader a(*v, r.PathOf("attach"));
  AttachSpec out;
  if (auto d = ReadDuration(a, "after")) out.after = *d;
  if (auto s = a.String("outcome")) {
    if (*s == "attached") {
      out.outcome = AttachSpec::Outcome::kAttached;
    } else if (*s == "failed") {
      out.outcome = AttachSpec::Outcome::kFailed;
    } else if (*s == "never") {
      out.outcome = AttachSpec::Outcome::kNever;
    } else {
      a.Fail("outcome", "must be attached, failed or never");
    }
  }
  if (auto s = a.String("message")) out.message = *s;
  r.Merge(a.Finish());
  return out;
}

GpuSpec ReadGpu(const boost::json::value& v, const std::string& path, Status* status) {
  FieldReader r(v, path);
  GpuSpec out;
  if (auto n = r.Int("count")) out.count = *n;
  if (out.count < 0) r.Fail("count", "must not be negative");
  if (auto s = r.String("productName")) out.product_name = *s;
  if (out.product_name.empty()) r.Fail("productName", "required");
  if (auto s = r.String("brand")) out.brand = *s;
  if (auto s = r.String("architecture")) out.architecture = *s;
  if (out.architecture.empty()) r.Fail("architecture", "required");
  auto version = [&](std::string_view key, bool required, std::string* dst) {
    std::optional<std::string> s = r.String(key);
    if (!s) {
      if (required) r.Fail(key, "required");
      return;
    }
    StatusOr<std::string> normalized = NormalizeVersion(*s);
    if (!normalized.ok()) {
      r.Fail(key, normalized.status().message());
      return;
    }
    *dst = *normalized;
  };
  version("cudaComputeCapability", true, &out.cuda_compute_capability);
  version("driverVersion", true, &out.driver_version);
  version("cudaDriverVersion", false, &out.cuda_driver_version);
  if (auto q = r.Quantity("memory")) out.memory = *q;
  if (out.memory.Sign() <= 0) r.Fail("memory", "required and positive");
  if (auto n = r.Int("multiprocessors")) out.multiprocessors = *n;
  out.uuids = r.StringList("uuids");
  if (static_cast<int64_t>(out.uuids.size()) > out.count) {
    r.Fail("uuids", "more UUIDs than GPUs");
  }
  if (const boost::json::value* mig = r.Raw("mig")) {
    FieldReader m(*mig, r.PathOf("mig"));
    MigSpec spec;
    if (auto n = m.Int("memorySlices")) spec.memory_slices = *n;
    if (spec.memory_slices <= 0 || spec.memory_slices > 28) {
      m.Fail("memorySlices", "must be between 1 and 28 (counters per set are limited to 32)");
    }
    if (auto b = m.Bool("wholeGpu")) spec.whole_gpu = *b;
    std::set<std::string> names;
    for (const auto& [item, item_path] : m.ObjectList("profiles")) {
      Status s;
      MigProfileSpec p = ReadMigProfile(*item, item_path, spec.memory_slices, &s);
      m.Merge(s);
      if (!names.insert(p.name).second) m.Fail("profiles", "duplicate profile " + p.name);
      spec.profiles.push_back(std::move(p));
    }
    r.Merge(m.Finish());
    out.mig = std::move(spec);
  }
  out.attach = ReadAttach(r);
  if (out.attach && out.mig)
    r.Fail("attach", "a partitionable (mig) GPU cannot be fabric-attached");
  *status = r.Finish();
  return out;
}

FpgaSpec ReadFpga(const boost::json::value& v, const std::string& path, Status* status) {
  FieldReader r(v, path);
  FpgaSpec out;
  if (auto n = r.Int("count")) out.count = *n;
  if (out.count < 0) r.Fail("count", "must not be negative");
  if (auto s = r.String("vendor")) out.vendor = *s;
  if (auto s = r.String("model")) out.model = *s;
  if (out.model.empty()) r.Fail("model", "required");
  if (auto s = r.String("bitstreamFamily")) out.bitstream_family = *s;
  if (out.bitstream_family.empty()) r.Fail("bitstreamFamily", "required");
  out.memory = r.Quantity("memory");
  out.attach = ReadAttach(r);
  *status = r.Finish();
  return out;
}

NicSpec ReadNic(const boost::json::value& v, const std::string& path, Status* status) {
  FieldReader r(v, path);
  NicSpec out;
  if (auto n = r.Int("count")) out.count = *n;
  if (out.count < 0) r.Fail("count", "must not be negative");
  if (auto s = r.String("model")) out.model = *s;
  if (out.model.empty()) r.Fail("model", "required");
  if (auto q = r.Quantity("bandwidth")) out.bandwidth = *q;
  if (out.bandwidth.Sign() <= 0) r.Fail("bandwidth", "required and positive");
  if (auto b = r.Bool("rdma")) out.rdma = *b;
  if (auto b = r.Bool("shared")) out.shared = *b;
  if (const boost::json::value* policy = r.Raw("requestPolicy")) {
    FieldReader p(*policy, r.PathOf("requestPolicy"));
    NicRequestPolicy rp;
    rp.default_value = p.Quantity("default");
    rp.min = p.Quantity("min");
    rp.max = p.Quantity("max");
    rp.step = p.Quantity("step");
    if (!rp.default_value) p.Fail("default", "required");
    if ((rp.max || rp.step) && !rp.min) p.Fail("min", "required with max or step");
    r.Merge(p.Finish());
    if (!out.shared) r.Fail("requestPolicy", "only allowed with shared: true");
    out.request_policy = rp;
  }
  *status = r.Finish();
  return out;
}

FaultSpec ReadFault(const boost::json::value& v, const std::string& path, Status* status) {
  FieldReader r(v, path);
  FaultSpec out;
  if (auto s = r.String("node")) out.node = *s;
  if (auto s = r.String("driver")) out.driver = *s;
  if (auto s = r.String("device")) out.device = *s;
  if (out.device.empty()) r.Fail("device", "required");
  if (auto d = ReadDuration(r, "after")) out.after = *d;
  out.duration = ReadDuration(r, "for");
  if (auto s = r.String("effect")) out.effect = *s;
  if (!out.effect.empty() && out.effect != "None" && out.effect != "NoSchedule" &&
      out.effect != "NoExecute") {
    r.Fail("effect", "must be None, NoSchedule or NoExecute");
  }
  if (auto s = r.String("message")) out.message = *s;
  if (auto s = r.String("prepare")) {
    if (*s == "terminal") {
      out.kind = FaultKind::kPrepareTerminal;
    } else if (*s == "retryable") {
      out.kind = FaultKind::kPrepareRetryable;
    } else if (*s == "crash") {
      out.kind = FaultKind::kPrepareCrash;
    } else {
      r.Fail("prepare", "must be terminal, retryable or crash");
    }
  }
  if (auto s = r.String("unprepare")) {
    if (out.kind != FaultKind::kUnhealthy) {
      r.Fail("unprepare", "a fault is either a prepare or an unprepare fault");
    } else if (*s == "retryable") {
      out.kind = FaultKind::kUnprepareRetryable;
    } else {
      r.Fail("unprepare", "must be retryable");
    }
  }
  if (auto n = r.Int("times")) out.times = *n;
  if (out.times < 1) r.Fail("times", "must be at least 1");
  if (out.kind != FaultKind::kUnhealthy && (out.duration || !out.effect.empty())) {
    r.Fail(out.kind == FaultKind::kUnprepareRetryable ? "unprepare" : "prepare",
           "an (un)prepare fault takes no `for` or `effect`");
  }
  *status = r.Finish();
  return out;
}

NodeTemplate ReadNodeTemplate(FieldReader& r, Status* status) {
  NodeTemplate out;
  out.labels = r.StringMap("labels");
  for (const auto& [k, v] : out.labels) {
    api::FieldErrorList errors = api::validation::ValidateLabelName(k, api::FieldPath("labels"));
    if (!errors.empty()) r.Fail("labels", errors.front().ToString());
  }
  out.capacity = r.QuantityMap("capacity");
  out.extended_resources = r.QuantityMap("extendedResources");
  for (const auto& [k, v] : out.extended_resources) {
    if (!api::validation::IsExtendedResourceName(k)) {
      r.Fail("extendedResources", k + " is not an extended resource name (domain/name)");
    }
  }
  if (const boost::json::value* devices = r.Raw("devices")) {
    FieldReader d(*devices, r.PathOf("devices"));
    for (const auto& [item, item_path] : d.ObjectList("gpus")) {
      Status s;
      out.devices.gpus.push_back(ReadGpu(*item, item_path, &s));
      d.Merge(s);
    }
    for (const auto& [item, item_path] : d.ObjectList("fpgas")) {
      Status s;
      out.devices.fpgas.push_back(ReadFpga(*item, item_path, &s));
      d.Merge(s);
    }
    for (const auto& [item, item_path] : d.ObjectList("nics")) {
      Status s;
      out.devices.nics.push_back(ReadNic(*item, item_path, &s));
      d.Merge(s);
    }
    r.Merge(d.Finish());
  }
  for (const auto& [item, item_path] : r.ObjectList("faults")) {
    Status s;
    out.faults.push_back(ReadFault(*item, item_path, &s));
    r.Merge(s);
  }
  *status = r.status();
  return out;
}

}  // namespace

std::string FaultSpec::Key() const {
  std::ostringstream out;
  out << static_cast<int>(kind) << '|' << node << '|' << driver << '|' << device << '|'
      << after.count() << '|' << (duration ? duration->count() : -1) << '|' << effect << '|'
      << times << '|' << message;
  return out.str();
}

StatusOr<ClusterProfile> ParseProfile(std::string_view text) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<api::codec::YamlDocument> docs,
                            api::codec::ParseYaml(text));
  const boost::json::value* doc = nullptr;
  for (const api::codec::YamlDocument& d : docs) {
    if (d.value.is_null()) continue;
    if (doc != nullptr) return InvalidArgumentError("a profile file holds exactly one document");
    doc = &d.value;
  }
  if (doc == nullptr) return InvalidArgumentError("the profile is empty");
  return ParseProfileJson(*doc);
}

StatusOr<ClusterProfile> ParseProfileJson(const boost::json::value& doc) {
  FieldReader r(doc, "");
  std::string api_version = r.String("apiVersion").value_or("");
  std::string kind = r.String("kind").value_or("");
  if (!r.status().ok()) return r.status();
  if (api_version != kProfileApiVersion) {
    return InvalidArgumentError("apiVersion: must be " + std::string(kProfileApiVersion));
  }
  ClusterProfile out;
  if (const boost::json::value* meta = r.Raw("metadata")) {
    FieldReader m(*meta, "metadata");
    out.name = m.String("name").value_or("");
    m.StringMap("labels");
    m.StringMap("annotations");
    DRAPLANE_RETURN_IF_ERROR(m.Finish());
  }
  if (kind == kNodeProfileKind) {
    out.is_node_profile = true;
    NodePoolSpec pool;
    pool.count = 1;
    Status s;
    pool.node = ReadNodeTemplate(r, &s);
    DRAPLANE_RETURN_IF_ERROR(s);
    out.pools.push_back(std::move(pool));
  } else if (kind == kClusterProfileKind) {
    std::set<std::string> names;
    for (const auto& [item, item_path] : r.ObjectList("nodePools")) {
      FieldReader p(*item, item_path);
      NodePoolSpec pool;
      pool.name = p.String("name").value_or("");
      if (pool.name.empty()) p.Fail("name", "required");
      if (!names.insert(pool.name).second) p.Fail("name", "duplicate pool " + pool.name);
      pool.name_prefix = p.String("namePrefix").value_or(pool.name + "-");
      if (auto n = p.Int("count")) pool.count = *n;
      if (pool.count < 0) p.Fail("count", "must not be negative");
      Status s;
      pool.node = ReadNodeTemplate(p, &s);
      p.Merge(s);
      DRAPLANE_RETURN_IF_ERROR(p.Finish());
      out.pools.push_back(std::move(pool));
    }
    if (out.pools.empty()) r.Fail("nodePools", "required: at least one pool");
  } else {
    return InvalidArgumentError("kind: must be NodeProfile or ClusterProfile");
  }
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  return out;
}

StatusOr<NodeTemplate> ParseNodeTemplate(const boost::json::value& value, const std::string& path) {
  FieldReader r(value, path);
  DRAPLANE_RETURN_IF_ERROR(r.status());
  Status s;
  NodeTemplate node = ReadNodeTemplate(r, &s);
  DRAPLANE_RETURN_IF_ERROR(s);
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  return node;
}

StatusOr<ClusterProfile> LoadProfile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read profile " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  StatusOr<ClusterProfile> profile = ParseProfile(buffer.str());
  if (!profile.ok()) return profile.status().WithPrefix(path);
  return profile;
}

StatusOr<std::vector<ProfileNode>> ExpandNodes(const ClusterProfile& profile,
                                               std::string_view node_name_override) {
  std::vector<ProfileNode> out;
  std::set<std::string> seen;
  for (const NodePoolSpec& pool : profile.pools) {
    for (int64_t i = 0; i < pool.count; ++i) {
      ProfileNode node;
      if (profile.is_node_profile) {
        node.name = node_name_override.empty() ? profile.name : std::string(node_name_override);
      } else {
        node.name = pool.name_prefix + std::to_string(i);
      }
      node.pool = pool.name;
      node.index_in_pool = i;
      node.node = &pool.node;
      std::vector<std::string> problems = api::validation::IsDNS1123Subdomain(node.name);
      if (node.name.empty()) problems = {"must not be empty (give --node or metadata.name)"};
      if (!problems.empty()) {
        return InvalidArgumentError("node name \"" + node.name + "\": " + ListError(problems));
      }
      if (!seen.insert(node.name).second) {
        return InvalidArgumentError("duplicate node name " + node.name);
      }
      out.push_back(std::move(node));
    }
  }
  return out;
}

StatusOr<ProfileNode> FindNode(const ClusterProfile& profile, std::string_view node_name) {
  DRAPLANE_ASSIGN_OR_RETURN(std::vector<ProfileNode> nodes, ExpandNodes(profile, node_name));
  for (ProfileNode& node : nodes) {
    if (node.name == node_name) return node;
  }
  return NotFoundError("node " + std::string(node_name) + " is not in profile " + profile.name);
}

StatusOr<std::string> NormalizeVersion(std::string_view text) {
  const std::string error = "invalid version \"" + std::string(text) + "\" (e.g. 550.90.07)";
  std::vector<uint64_t> parts;
  size_t i = 0;
  while (true) {
    size_t start = i;
    uint64_t value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      value = value * 10 + static_cast<uint64_t>(text[i] - '0');
      if (value > 1'000'000'000ULL) return InvalidArgumentError(error);
      ++i;
    }
    if (i == start) return InvalidArgumentError(error);
    parts.push_back(value);
    if (i == text.size()) break;
    if (text[i] != '.') return InvalidArgumentError(error);
    ++i;
  }
  if (parts.size() > 3) return InvalidArgumentError(error);
  while (parts.size() < 3) parts.push_back(0);
  return std::to_string(parts[0]) + "." + std::to_string(parts[1]) + "." + std::to_string(parts[2]);
}

}  // namespace draplane::agent
