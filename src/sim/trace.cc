#include "sim/trace.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "api/codec/field_reader.h"
#include "api/codec/manifest.h"
#include "api/codec/yaml.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/meta_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/meta/duration.h"
#include "api/validation/names.h"
#include "api/validation/pod_defaults.h"
#include "api/validation/pod_validation.h"
#include "api/validation/validation.h"
#include "common/status_macros.h"
#include "sim/internal/json.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;
using api::codec::FieldReader;
namespace rv1 = api::resourcev1;

Duration ToMillis(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d); }

// A duration field; `positive` rejects zero.
std::optional<Duration> ReadDuration(FieldReader& r, std::string_view key, bool positive) {
  std::optional<std::string> text = r.String(key);
  if (!text) return std::nullopt;
  StatusOr<Duration> d = api::ParseDuration(*text);
  if (!d.ok()) {
    r.Fail(key, d.status().message());
    return std::nullopt;
  }
  if (*d < Duration::zero() || (positive && *d == Duration::zero())) {
    r.Fail(key, positive ? "must be positive" : "must not be negative");
    return std::nullopt;
  }
  return ToMillis(*d);
}

// A number field (integer or decimal).
std::optional<double> ReadNumber(FieldReader& r, std::string_view key) {
  const json::value* v = r.Raw(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->as_int64());
  if (v->is_uint64()) return static_cast<double>(v->as_uint64());
  if (v->is_double()) return v->as_double();
  r.Fail(key, "must be a number");
  return std::nullopt;
}

std::string Prefixed(std::string_view path, const api::FieldError& e) {
  std::string field = e.field.empty() ? std::string(path) : std::string(path) + "." + e.field;
  return field + ": " + e.Body();
}

// `path: unknown field "spec.x"` for the first field of `object` its kind does not have.
Status CheckUnknownFields(const json::object& object, const std::string& path,
                          const ParseOptions& options) {
  if (!options.unknown_fields) return Status::Ok();
  std::vector<std::string> unknown = options.unknown_fields(object);
  if (unknown.empty()) return Status::Ok();
  return InvalidArgumentError(path + ": unknown field \"" + unknown.front() + "\"");
}

// A Pod manifest of an arrival or generator at `path`, in `ns`: kind checked, namespace set,
// fields checked, defaulted, decoded once to catch type errors, and validated.
StatusOr<json::object> PreparePod(const json::value* value, const std::string& path,
                                  const std::string& ns, const ParseOptions& options) {
  if (value == nullptr) return InvalidArgumentError(path + ": Required value");
  if (!value->is_object()) return InvalidArgumentError(path + ": must be a Pod manifest");
  json::object pod = value->as_object();
  auto check = [&](std::string_view key, std::string_view want) -> Status {
    if (const json::value* v = pod.if_contains(key)) {
      if (!v->is_string() || v->as_string() != want) {
        return InvalidArgumentError(path + "." + std::string(key) + ": must be " +
                                    std::string(want));
      }
    }
    pod[key] = want;
    return Status::Ok();
  };
  DRAPLANE_RETURN_IF_ERROR(check("apiVersion", "v1"));
  DRAPLANE_RETURN_IF_ERROR(check("kind", "Pod"));
  DRAPLANE_RETURN_IF_ERROR(CheckUnknownFields(pod, path, options));
  json::value& meta_value = pod["metadata"];
  if (!meta_value.is_object()) meta_value = json::object();
  json::object& meta = meta_value.as_object();
  if (const json::value* n = meta.if_contains("namespace")) {
    if (!n->is_string() || n->as_string() != ns) {
      return InvalidArgumentError(path + ".metadata.namespace: must be the namespace \"" + ns +
                                  "\" or absent");
    }
  }
  meta["namespace"] = ns;
  auto has = [&](std::string_view key) {
    const json::value* v = meta.if_contains(key);
    return v != nullptr && v->is_string() && !v->as_string().empty();
  };
  if (!has("name") && !has("generateName")) {
    return InvalidArgumentError(path +
                                ".metadata.name: Required value: name or generateName is required");
  }
  if (const json::object* spec = pod.if_contains("spec") ? pod["spec"].if_object() : nullptr) {
    if (const json::value* node = spec->if_contains("nodeName");
        node != nullptr && node->is_string() && !node->as_string().empty()) {
      return InvalidArgumentError(path +
                                  ".spec.nodeName: Forbidden: the simulator schedules every trace "
                                  "Pod; a Pod bound by name would skip the scheduler, and its "
                                  "claims would never be allocated");
    }
  }
  // The names the API server would take: the namespace a DNS label, and the copies' names
  // (`<name>-<i>`, or generateName and a suffix) DNS subdomains.
  const std::string parent = path.substr(0, path.rfind('.'));
  if (std::vector<std::string> bad = api::validation::NameIsDNSLabel(ns, false); !bad.empty()) {
    return InvalidArgumentError(parent + ".namespace: Invalid value: " + api::RenderValue(ns) +
                                ": " + bad.front());
  }
  for (std::string_view key : {"name", "generateName"}) {
    if (!has(key)) continue;
    const std::string name(meta.at(key).as_string());
    if (std::vector<std::string> bad = api::validation::NameIsDNSSubdomain(name + "-0", true);
        !bad.empty()) {
      return InvalidArgumentError(path + ".metadata." + std::string(key) + ": Invalid value: " +
                                  api::RenderValue(name) + ": " + bad.front());
    }
  }
  for (std::string_view key : {"uid", "resourceVersion", "creationTimestamp"}) meta.erase(key);
  pod.erase("status");
  api::validation::SetPodDefaults(pod);
  api::corev1::Pod typed;
  api::FieldErrorList errors;
  api::corev1::Decode(json::value(pod), &typed, &errors);
  if (errors.empty()) errors = api::validation::ValidatePodSpec(pod);
  if (!errors.empty()) return InvalidArgumentError(Prefixed(path, errors.front()));
  return pod;
}

// A ResourceClaimTemplate (namespace optional: then one per namespace of the trace) or a
// ResourceClaim (namespace required), decoded, defaulted and validated as the API server would.
StatusOr<json::object> PrepareClaimObject(const json::value& value, const std::string& path,
                                          bool is_template, const ParseOptions& options) {
  if (!value.is_object()) return InvalidArgumentError(path + ": must be an object");
  const json::object& object = value.as_object();
  const json::value* api_version = object.if_contains("apiVersion");
  const json::value* kind = object.if_contains("kind");
  std::string want = is_template ? "ResourceClaimTemplate" : "ResourceClaim";
  if (api_version == nullptr || !api_version->is_string() ||
      api_version->as_string() != "resource.k8s.io/v1" || kind == nullptr || !kind->is_string() ||
      kind->as_string() != want) {
    return InvalidArgumentError(path + ": must be a resource.k8s.io/v1 " + want);
  }
  DRAPLANE_RETURN_IF_ERROR(CheckUnknownFields(object, path, options));
  api::FieldErrorList errors;
  if (is_template) {
    rv1::ResourceClaimTemplate typed;
    rv1::Decode(value, &typed, &errors);
    if (errors.empty()) {
      api::validation::SetDefaults(&typed);
      if (typed.metadata.namespace_.empty()) typed.metadata.namespace_ = "default";  // checked only
      errors = api::validation::ValidateResourceClaimTemplate(typed);
    }
  } else {
    rv1::ResourceClaim typed;
    rv1::Decode(value, &typed, &errors);
    if (errors.empty()) {
      if (typed.metadata.namespace_.empty()) {
        return InvalidArgumentError(path + ".metadata.namespace: Required value");
      }
      api::validation::SetDefaults(&typed);
      errors = api::validation::ValidateResourceClaim(typed);
    }
  }
  if (!errors.empty()) return InvalidArgumentError(Prefixed(path, errors.front()));
  return object;
}

std::optional<DurationSpec> ReadDurationSpec(FieldReader& r, std::string_view key) {
  const json::value* v = r.Raw(key);
  if (v == nullptr) return std::nullopt;
  DurationSpec spec;
  if (v->is_string()) {
    std::optional<Duration> d = ReadDuration(r, key, false);
    if (!d) return std::nullopt;
    spec.fixed = *d;
    return spec;
  }
  FieldReader d(*v, r.PathOf(key));
  std::optional<Duration> median = ReadDuration(d, "median", true);
  std::optional<double> sigma = ReadNumber(d, "sigma");
  if (!median && d.status().ok()) d.Fail("median", "Required value");
  if (sigma && (*sigma < 0 || *sigma > 10)) d.Fail("sigma", "must be between 0 and 10");
  r.Merge(d.Finish());
  if (!median) return std::nullopt;
  spec.log_normal = true;
  spec.median = *median;
  spec.sigma = sigma.value_or(1.0);
  return spec;
}

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A standard normal draw (Box-Muller; one value per call, so every draw uses two uniforms).
double Normal(Random& random) {
  double u1 = 1.0 - random.UniformDouble();  // (0, 1]
  double u2 = random.UniformDouble();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Duration Draw(const DurationSpec& spec, Random& random) {
  if (!spec.log_normal) return spec.fixed;
  double seconds =
      std::chrono::duration<double>(spec.median).count() * std::exp(spec.sigma * Normal(random));
  // Capped at a year: a far tail draw must not overflow the clock.
  seconds = std::min(seconds, 365.0 * 24 * 3600);
  return ToMillis(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds)));
}

// The Pod of copy `index` (a suffix when `suffix`) of `manifest`, whose name is `name`.
PodArrival MakeArrival(const std::shared_ptr<const json::object>& manifest, const std::string& name,
                       const std::string& ns, bool suffix, int64_t index) {
  PodArrival out;
  out.namespace_ = ns;
  out.manifest = manifest;
  if (!name.empty()) out.name = suffix ? name + "-" + std::to_string(index) : name;
  return out;
}

}  // namespace

json::object PodArrival::Manifest() const {
  json::object pod = *manifest;
  if (!name.empty()) pod["metadata"] = Metadata();
  return pod;
}

StatusOr<api::corev1::Pod> PodArrival::Named(const api::corev1::Pod& decoded) const {
  api::corev1::Pod pod = decoded;
  if (name.empty()) return pod;
  api::metav1::ObjectMeta metadata;
  api::FieldErrorList errors;
  api::metav1::Decode(json::value(Metadata()), &metadata, &errors);
  if (!errors.empty()) return InvalidArgumentError(Prefixed(source + ".metadata", errors.front()));
  pod.metadata = std::move(metadata);
  return pod;
}

json::object PodArrival::Metadata() const {
  json::object metadata = manifest->at("metadata").as_object();
  if (!name.empty()) {
    metadata["name"] = name;
    metadata.erase("generateName");
  }
  return metadata;
}

Timestamp StartTime() { return Timestamp(std::chrono::seconds(1'767'225'600)); }

uint64_t DeriveSeed(uint64_t seed, uint64_t purpose) {
  return SplitMix(SplitMix(seed) ^ SplitMix(purpose + 0x5157u));
}

StatusOr<Trace> ParseTrace(std::string_view text, std::string_view source,
                           const ParseOptions& options) {
  auto prefixed = [&](const Status& s) {
    return source.empty() ? s : s.WithPrefix(std::string(source));
  };
  StatusOr<std::vector<api::codec::ManifestObject>> docs =
      api::codec::ParseManifest(text, {.limits = {}, .flatten_lists = false});
  if (!docs.ok()) return prefixed(docs.status());
  if (docs->size() != 1) {
    return prefixed(InvalidArgumentError("a trace file holds exactly one WorkloadTrace document"));
  }
  const json::value& doc = docs->front().value;
  FieldReader r(doc, "");
  Trace trace;
  trace.source = std::string(source);
  std::string api_version = r.String("apiVersion").value_or("");
  std::string kind = r.String("kind").value_or("");
  if (!r.status().ok()) return prefixed(r.status());
  if (api_version != kApiVersion || kind != kTraceKind) {
    return prefixed(InvalidArgumentError("apiVersion/kind: must be " + std::string(kApiVersion) +
                                         " " + std::string(kTraceKind)));
  }
  if (const json::value* meta = r.Raw("metadata")) {
    FieldReader m(*meta, "metadata");
    trace.name = m.String("name").value_or("");
    m.StringMap("labels");
    m.StringMap("annotations");
    r.Merge(m.Finish());
  }
  if (std::optional<int64_t> seed = r.Int("seed")) {
    if (*seed < 0) r.Fail("seed", "must not be negative");
    trace.seed = static_cast<uint64_t>(*seed);
  }
  trace.horizon = ReadDuration(r, "horizon", true);
  if (auto d = ReadDuration(r, "defaultDuration", false)) trace.default_duration = *d;
  if (auto d = ReadDuration(r, "defaultRemaining", false)) trace.default_remaining = *d;
  for (const auto& [item, path] : r.ObjectList("running")) {
    FieldReader p(*item, path);
    RunningPod pod;
    pod.namespace_ = p.String("namespace").value_or("");
    pod.name = p.String("name").value_or("");
    if (pod.namespace_.empty()) p.Fail("namespace", "Required value");
    if (pod.name.empty()) p.Fail("name", "Required value");
    std::optional<Duration> remaining = ReadDuration(p, "remaining", false);
    if (!remaining && p.status().ok()) p.Fail("remaining", "Required value");
    pod.remaining = remaining.value_or(Duration::zero());
    r.Merge(p.Finish());
    trace.running.push_back(std::move(pod));
  }
  std::set<std::string> tenant_names;
  for (const auto& [item, path] : r.ObjectList("tenants")) {
    FieldReader t(*item, path);
    Tenant tenant;
    tenant.namespace_ = t.String("namespace").value_or("");
    if (tenant.namespace_.empty()) t.Fail("namespace", "Required value");
    if (std::vector<std::string> bad = api::validation::NameIsDNSLabel(tenant.namespace_, false);
        !tenant.namespace_.empty() && !bad.empty()) {
      t.Fail("namespace",
             "Invalid value: " + api::RenderValue(tenant.namespace_) + ": " + bad.front());
    }
    if (!tenant_names.insert(tenant.namespace_).second) t.Fail("namespace", "Duplicate value");
    tenant.weight = ReadNumber(t, "weight").value_or(1.0);
    if (!(tenant.weight > 0)) t.Fail("weight", "must be positive");
    r.Merge(t.Finish());
    trace.tenants.push_back(std::move(tenant));
  }
  auto object_list = [&](std::string_view key, auto&& fn) {
    const json::value* list = r.Raw(key);
    if (list == nullptr) return;
    if (!list->is_array()) {
      r.Fail(key, "must be a list");
      return;
    }
    for (size_t i = 0; i < list->as_array().size(); ++i) {
      std::string path = std::string(key) + "[" + std::to_string(i) + "]";
      fn(list->as_array()[i], path);
    }
  };
  object_list("claimTemplates", [&](const json::value& v, const std::string& path) {
    StatusOr<json::object> o = PrepareClaimObject(v, path, true, options);
    if (!o.ok()) return r.Merge(o.status());
    trace.claim_templates.push_back(std::move(*o));
  });
  object_list("claims", [&](const json::value& v, const std::string& path) {
    StatusOr<json::object> o = PrepareClaimObject(v, path, false, options);
    if (!o.ok()) return r.Merge(o.status());
    trace.claims.push_back(std::move(*o));
  });
  object_list("policies", [&](const json::value& v, const std::string& path) {
    const json::object* o = v.if_object();
    if (o == nullptr || o->if_contains("apiVersion") == nullptr ||
        o->if_contains("kind") == nullptr) {
      return r.Merge(InvalidArgumentError(path + ": must be an object with apiVersion and kind"));
    }
    if (Status s = CheckUnknownFields(*o, path, options); !s.ok()) return r.Merge(s);
    trace.policies.push_back(*o);
  });
  for (const auto& [item, path] : r.ObjectList("arrivals")) {
    FieldReader a(*item, path);
    Arrival arrival;
    arrival.path = path;
    std::optional<Duration> at = ReadDuration(a, "at", false);
    if (!at && a.status().ok()) a.Fail("at", "Required value");
    arrival.at = at.value_or(Duration::zero());
    arrival.namespace_ = a.String("namespace").value_or("");
    if (arrival.namespace_.empty()) a.Fail("namespace", "Required value");
    if (auto n = a.Int("count")) arrival.count = *n;
    if (arrival.count < 1) a.Fail("count", "must be at least 1");
    if (auto d = ReadDuration(a, "interval", false)) arrival.interval = *d;
    arrival.duration = ReadDuration(a, "duration", false);
    arrival.delete_after = ReadDuration(a, "deleteAfter", true);
    if (a.status().ok()) {
      StatusOr<json::object> pod =
          PreparePod(a.Raw("pod"), a.PathOf("pod"), arrival.namespace_, options);
      if (pod.ok()) {
        arrival.pod = std::move(*pod);
      } else {
        a.Merge(pod.status());
      }
    } else {
      a.Raw("pod");
    }
    r.Merge(a.Finish());
    trace.arrivals.push_back(std::move(arrival));
  }
  for (const auto& [item, path] : r.ObjectList("generators")) {
    FieldReader g(*item, path);
    Generator gen;
    gen.path = path;
    gen.namespace_ = g.String("namespace").value_or("");
    if (gen.namespace_.empty()) g.Fail("namespace", "Required value");
    std::optional<double> rate = ReadNumber(g, "ratePerMinute");
    if (!rate && g.status().ok()) g.Fail("ratePerMinute", "Required value");
    gen.rate_per_minute = rate.value_or(0);
    if (rate && !(*rate > 0 && *rate <= 1e6)) g.Fail("ratePerMinute", "must be in (0, 1e6]");
    if (auto d = ReadDuration(g, "start", false)) gen.start = *d;
    std::optional<Duration> length = ReadDuration(g, "for", true);
    if (!length && g.status().ok()) g.Fail("for", "Required value");
    gen.length = length.value_or(Duration::zero());
    gen.duration = ReadDurationSpec(g, "duration");
    gen.delete_after = ReadDuration(g, "deleteAfter", true);
    if (g.status().ok()) {
      StatusOr<json::object> pod =
          PreparePod(g.Raw("pod"), g.PathOf("pod"), gen.namespace_, options);
      if (pod.ok()) {
        gen.pod = std::move(*pod);
      } else {
        g.Merge(pod.status());
      }
    } else {
      g.Raw("pod");
    }
    r.Merge(g.Finish());
    trace.generators.push_back(std::move(gen));
  }
  Status s = r.Finish();
  if (!s.ok()) return prefixed(s);
  return trace;
}

StatusOr<Trace> LoadTrace(const std::string& path, const ParseOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot read the trace");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return ParseTrace(buffer.str(), path, options);
}

StatusOr<std::vector<PodArrival>> ExpandTrace(const Trace& trace, uint64_t seed,
                                              std::optional<Duration> until) {
  // The copies of an arrival up to `until`.
  auto copies = [&](const Arrival& a) -> int64_t {
    if (!until) return a.count;
    if (a.at > *until) return 0;
    if (a.interval <= Duration::zero()) return a.count;
    return std::min<int64_t>(a.count, (*until - a.at) / a.interval + 1);
  };
  // A generator's arrivals end at the end of its `for`, or at `until` when that is earlier.
  auto generator_end = [&](const Generator& g) {
    Duration end = g.start + g.length;
    return until ? std::min(end, *until) : end;
  };
  // Refused before anything is expanded: a trace of billions of Pods would exhaust memory.
  double expected = 0;
  for (const Arrival& a : trace.arrivals) expected += static_cast<double>(copies(a));
  for (const Generator& g : trace.generators) {
    Duration length = std::max(generator_end(g) - g.start, Duration::zero());
    expected += g.rate_per_minute * std::chrono::duration<double>(length).count() / 60;
  }
  if (expected > static_cast<double>(kMaxTracePods)) {
    return InvalidArgumentError("the trace submits about " +
                                std::to_string(std::llround(expected)) +
                                " Pods (arrivals' counts, generators' rate × for), more than the "
                                "simulator's limit of " +
                                std::to_string(kMaxTracePods));
  }
  std::vector<PodArrival> out;
  for (const Arrival& a : trace.arrivals) {
    auto manifest = std::make_shared<const json::object>(a.pod);
    const std::string name = internal::MetaField(a.pod, "name");
    for (int64_t i = 0, n = copies(a); i < n; ++i) {
      PodArrival p = MakeArrival(manifest, name, a.namespace_, a.count > 1, i);
      p.at = a.at + a.interval * i;
      p.duration = a.duration.value_or(trace.default_duration);
      p.delete_after = a.delete_after;
      p.source = a.path;
      out.push_back(std::move(p));
    }
  }
  for (size_t g = 0; g < trace.generators.size(); ++g) {
    const Generator& gen = trace.generators[g];
    std::unique_ptr<Random> random = NewSeededRandom(DeriveSeed(seed, 1000 + g));
    double mean_seconds = 60.0 / gen.rate_per_minute;
    double t = std::chrono::duration<double>(gen.start).count();
    double end = std::chrono::duration<double>(gen.start + gen.length).count();
    auto manifest = std::make_shared<const json::object>(gen.pod);
    const std::string name = internal::MetaField(gen.pod, "name");
    for (int64_t i = 0;; ++i) {
      t += -std::log(1.0 - random->UniformDouble()) * mean_seconds;
      if (t >= end) break;
      Duration at =
          ToMillis(std::chrono::duration_cast<Duration>(std::chrono::duration<double>(t)));
      // Past `until` the draws stop; those before it are the ones drawn without it.
      if (until && at > *until) break;
      PodArrival p = MakeArrival(manifest, name, gen.namespace_, true, i);
      p.at = at;
      p.duration = gen.duration ? Draw(*gen.duration, *random) : trace.default_duration;
      p.delete_after = gen.delete_after;
      p.source = gen.path;
      out.push_back(std::move(p));
    }
  }
  // By time, ties in trace order: an order of indices is sorted, and each arrival moved once (a
  // day's 10^5 arrivals moved at every level of a merge sort cost more than the sort).
  std::vector<std::pair<Duration, size_t>> order;
  order.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) order.emplace_back(out[i].at, i);
  std::sort(order.begin(), order.end());
  std::vector<PodArrival> sorted;
  sorted.reserve(out.size());
  for (const auto& [at, i] : order) sorted.push_back(std::move(out[i]));
  out = std::move(sorted);
  std::set<std::string> names;
  for (const PodArrival& p : out) {
    if (p.name.empty()) continue;
    if (!names.insert(p.namespace_ + "/" + p.name).second) {
      return InvalidArgumentError((trace.source.empty() ? "" : trace.source + ": ") + p.source +
                                  ": Pod " + p.namespace_ + "/" + p.name +
                                  " arrives twice (names must be unique in a namespace)");
    }
  }
  return out;
}

Duration ArrivalsEnd(const Trace& trace) {
  Duration end{0};
  for (const Arrival& a : trace.arrivals) end = std::max(end, a.at + a.interval * (a.count - 1));
  for (const Generator& g : trace.generators) end = std::max(end, g.start + g.length);
  return end;
}

std::string TraceToYaml(const Trace& trace) {
  json::object doc;
  doc["apiVersion"] = kApiVersion;
  doc["kind"] = kTraceKind;
  if (!trace.name.empty()) doc["metadata"] = json::object{{"name", trace.name}};
  if (trace.seed) doc["seed"] = *trace.seed;
  if (trace.horizon) doc["horizon"] = FormatDuration(*trace.horizon);
  doc["defaultDuration"] = FormatDuration(trace.default_duration);
  doc["defaultRemaining"] = FormatDuration(trace.default_remaining);
  if (!trace.running.empty()) {
    json::array list;
    for (const RunningPod& p : trace.running) {
      list.push_back(json::object{{"namespace", p.namespace_},
                                  {"name", p.name},
                                  {"remaining", FormatDuration(p.remaining)}});
    }
    doc["running"] = std::move(list);
  }
  if (!trace.tenants.empty()) {
    json::array list;
    for (const Tenant& t : trace.tenants) {
      list.push_back(json::object{{"namespace", t.namespace_}, {"weight", t.weight}});
    }
    doc["tenants"] = std::move(list);
  }
  auto objects = [&](const char* key, const std::vector<json::object>& items) {
    if (items.empty()) return;
    json::array list;
    for (const json::object& o : items) list.push_back(o);
    doc[key] = std::move(list);
  };
  objects("claimTemplates", trace.claim_templates);
  objects("claims", trace.claims);
  objects("policies", trace.policies);
  json::array arrivals;
  for (const Arrival& a : trace.arrivals) {
    json::object o{{"at", FormatDuration(a.at)}, {"namespace", a.namespace_}};
    if (a.count != 1) o["count"] = a.count;
    if (a.interval != Duration::zero()) o["interval"] = FormatDuration(a.interval);
    if (a.duration) o["duration"] = FormatDuration(*a.duration);
    if (a.delete_after) o["deleteAfter"] = FormatDuration(*a.delete_after);
    o["pod"] = a.pod;
    arrivals.push_back(std::move(o));
  }
  if (!arrivals.empty()) doc["arrivals"] = std::move(arrivals);
  json::array generators;
  for (const Generator& g : trace.generators) {
    json::object o{{"namespace", g.namespace_}, {"ratePerMinute", g.rate_per_minute}};
    if (g.start != Duration::zero()) o["start"] = FormatDuration(g.start);
    o["for"] = FormatDuration(g.length);
    if (g.duration) {
      if (g.duration->log_normal) {
        o["duration"] = json::object{{"median", FormatDuration(g.duration->median)},
                                     {"sigma", g.duration->sigma}};
      } else {
        o["duration"] = FormatDuration(g.duration->fixed);
      }
    }
    if (g.delete_after) o["deleteAfter"] = FormatDuration(*g.delete_after);
    o["pod"] = g.pod;
    generators.push_back(std::move(o));
  }
  if (!generators.empty()) doc["generators"] = std::move(generators);
  return api::codec::WriteYaml(doc);
}

}  // namespace draplane::sim
