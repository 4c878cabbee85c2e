#include "common/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "common/check.h"
#include "common/mutex.h"
#include "common/string_hash.h"

namespace draplane::metrics {
namespace internal {

// The series of one family by label values. prometheus-cpp's `Family::Add` builds a
// `std::map` of label names to values, hashes it and takes the family's mutex on every call;
// here a series seen before costs one hash lookup of its values (encoded into a reused
// thread-local buffer, so nothing is allocated) under a shared lock. New series still go
// through `Family::Add`, which stays the only place series are created, so what is exported is
// the same. prometheus-cpp drops a series only on `Family::Remove`, called through `Take` by the
// series' one owner (metrics.h), so no other holder of a cached pointer outlives it.
class SeriesCache {
 public:
  // The series for `values` (one per label name, in order), created by `add(labels)` when new.
  template <typename Values, typename Add>
  void* FindOrAdd(const std::vector<std::string>& names, const Values& values, Add add) {
    DRAPLANE_CHECK_MSG(names.size() == values.size(), "wrong number of label values");
    thread_local std::string key;
    key.clear();
    AppendKey(values, key);
    {
      ReaderLock lock(mu_);
      auto it = series_.find(std::string_view(key));
      if (it != series_.end()) return it->second;
    }
    prometheus::Labels labels;
    size_t i = 0;
    for (const auto& value : values) labels.emplace(names[i++], std::string(value));
    void* series = add(labels);
    WriterLock lock(mu_);
    series_.emplace(key, series);
    return series;
  }

  // Forgets the series for `values` and returns it (null when there is none).
  void* Take(const std::vector<std::string>& values) {
    std::string key;
    AppendKey(values, key);
    WriterLock lock(mu_);
    auto it = series_.find(std::string_view(key));
    if (it == series_.end()) return nullptr;
    void* series = it->second;
    series_.erase(it);
    return series;
  }

 private:
  // Length-prefixed values, so that no two different tuples share a key.
  template <typename Values>
  static void AppendKey(const Values& values, std::string& key) {
    for (const auto& value : values) {
      std::string_view v(value);
      key.append(std::to_string(v.size()));
      key.push_back(':');
      key.append(v);
    }
  }

  SharedMutex mu_;
  std::unordered_map<std::string, void*, StringHash, std::equal_to<>> series_
      DRAPLANE_GUARDED_BY(mu_);
};

}  // namespace internal

namespace {

enum class Kind { kCounter, kGauge, kHistogram };

// What was registered under a name, so a second registration can be checked against it.
struct Registration {
  Kind kind;
  std::string help;
  std::vector<std::string> label_names;
  std::vector<double> buckets;
  void* family;
  std::unique_ptr<internal::SeriesCache> cache;  // the registry is never destroyed
};

struct Registry {
  Mutex mu;
  prometheus::Registry registry;
  std::map<std::string, Registration> families DRAPLANE_GUARDED_BY(mu);
};

Registry& GlobalRegistry() {
  static Registry* registry = new Registry();  // Never destroyed: usable during exit.
  return *registry;
}

bool IsValidName(const std::string& name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

// Returns the registration of `name`, creating the family with `create` when new. Aborts when
// the name was registered with a different kind, help, label set or buckets.
template <typename Create>
const Registration& FindOrRegister(Kind kind, const std::string& name, const std::string& help,
                                   const std::vector<std::string>& label_names,
                                   const std::vector<double>& buckets, Create create) {
  DRAPLANE_CHECK_MSG(IsValidName(name, /*allow_colon=*/true), name.c_str());
  for (const std::string& label : label_names) {
    DRAPLANE_CHECK_MSG(IsValidName(label, /*allow_colon=*/false) && label.rfind("__", 0) != 0,
                       label.c_str());
  }
  Registry& global = GlobalRegistry();
  MutexLock lock(global.mu);
  auto it = global.families.find(name);
  if (it != global.families.end()) {
    const Registration& existing = it->second;
    DRAPLANE_CHECK_MSG(existing.kind == kind && existing.help == help &&
                           existing.label_names == label_names && existing.buckets == buckets,
                       ("metric registered twice with different shapes: " + name).c_str());
    return existing;
  }
  void* family = create(global.registry);
  // std::map nodes do not move, so the registration (and its cache) outlives every handle.
  return global.families
      .emplace(name, Registration{kind, help, label_names, buckets, family,
                                  std::make_unique<internal::SeriesCache>()})
      .first->second;
}

}  // namespace

void Counter::Increment(double amount) const { impl_->Increment(amount); }
double Counter::Value() const { return impl_->Value(); }

void Gauge::Set(double value) const { impl_->Set(value); }
void Gauge::Increment(double amount) const { impl_->Increment(amount); }
void Gauge::Decrement(double amount) const { impl_->Decrement(amount); }
double Gauge::Value() const { return impl_->Value(); }

void Histogram::Observe(double value) const { impl_->Observe(value); }

namespace {

template <typename Values>
prometheus::Counter* CounterSeries(prometheus::Family<prometheus::Counter>* family,
                                   internal::SeriesCache* cache,
                                   const std::vector<std::string>& names, const Values& values) {
  return static_cast<prometheus::Counter*>(cache->FindOrAdd(
      names, values,
      [&](const prometheus::Labels& labels) -> void* { return &family->Add(labels); }));
}

template <typename Values>
prometheus::Gauge* GaugeSeries(prometheus::Family<prometheus::Gauge>* family,
                               internal::SeriesCache* cache, const std::vector<std::string>& names,
                               const Values& values) {
  return static_cast<prometheus::Gauge*>(cache->FindOrAdd(
      names, values,
      [&](const prometheus::Labels& labels) -> void* { return &family->Add(labels); }));
}

template <typename Values>
prometheus::Histogram* HistogramSeries(prometheus::Family<prometheus::Histogram>* family,
                                       internal::SeriesCache* cache,
                                       const std::vector<std::string>& names,
                                       const std::vector<double>& buckets, const Values& values) {
  return static_cast<prometheus::Histogram*>(cache->FindOrAdd(
      names, values,
      [&](const prometheus::Labels& labels) -> void* { return &family->Add(labels, buckets); }));
}

}  // namespace

Counter CounterFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Counter(CounterSeries(family_, cache_, label_names_, label_values));
}
Counter CounterFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Counter(CounterSeries(family_, cache_, label_names_, label_values));
}

Gauge GaugeFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Gauge(GaugeSeries(family_, cache_, label_names_, label_values));
}
Gauge GaugeFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Gauge(GaugeSeries(family_, cache_, label_names_, label_values));
}

void GaugeFamily::Remove(const std::vector<std::string>& label_values) const {
  DRAPLANE_CHECK_MSG(label_names_.size() == label_values.size(), "wrong number of label values");
  if (void* series = cache_->Take(label_values)) {
    family_->Remove(static_cast<prometheus::Gauge*>(series));
  }
}

Histogram HistogramFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Histogram(HistogramSeries(family_, cache_, label_names_, buckets_, label_values));
}
Histogram HistogramFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Histogram(HistogramSeries(family_, cache_, label_names_, buckets_, label_values));
}

CounterFamily NewCounterFamily(const std::string& name, const std::string& help,
                               std::vector<std::string> label_names) {
  const Registration& registration = FindOrRegister(
      Kind::kCounter, name, help, label_names, {}, [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
      });
  return CounterFamily(static_cast<prometheus::Family<prometheus::Counter>*>(registration.family),
                       std::move(label_names), registration.cache.get());
}

GaugeFamily NewGaugeFamily(const std::string& name, const std::string& help,
                           std::vector<std::string> label_names) {
  const Registration& registration = FindOrRegister(
      Kind::kGauge, name, help, label_names, {}, [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
      });
  return GaugeFamily(static_cast<prometheus::Family<prometheus::Gauge>*>(registration.family),
                     std::move(label_names), registration.cache.get());
}

HistogramFamily NewHistogramFamily(const std::string& name, const std::string& help,
                                   std::vector<std::string> label_names,
                                   std::vector<double> buckets) {
  DRAPLANE_CHECK_MSG(!buckets.empty() && std::is_sorted(buckets.begin(), buckets.end()) &&
                         std::adjacent_find(buckets.begin(), buckets.end()) == buckets.end(),
                     "histogram buckets must be strictly increasing");
  const Registration& registration = FindOrRegister(
      Kind::kHistogram, name, help, label_names, buckets,
      [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
      });
  return HistogramFamily(
      static_cast<prometheus::Family<prometheus::Histogram>*>(registration.family),
      std::move(label_names), std::move(buckets), registration.cache.get());
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  DRAPLANE_CHECK(start > 0 && factor > 1 && count >= 1);
  std::vector<double> buckets;
  buckets.reserve(count);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    buckets.push_back(bound);
    bound *= factor;
  }
  return buckets;
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double>* buckets =
      new std::vector<double>(ExponentialBuckets(50e-6, 2.0, 19));
  return *buckets;
}

TenantLabels::TenantLabels(std::vector<std::string> allowlist) : allowlist_(std::move(allowlist)) {
  std::sort(allowlist_.begin(), allowlist_.end());
  allowlist_.erase(std::unique(allowlist_.begin(), allowlist_.end()), allowlist_.end());
}

std::string_view TenantLabels::Of(std::string_view namespace_) const {
  auto it = std::lower_bound(allowlist_.begin(), allowlist_.end(), namespace_);
  return it != allowlist_.end() && *it == namespace_ ? std::string_view(*it) : kOther;
}

namespace {

prometheus::MetricFamily ProcessFamily(std::string name, std::string help,
                                       prometheus::MetricType type, double value) {
  prometheus::MetricFamily family{std::move(name), std::move(help), type, {}};
  prometheus::ClientMetric& metric = family.metric.emplace_back();
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = value;
  } else {
    metric.gauge.value = value;
  }
  return family;
}

// The process families every Kubernetes component exports (the Prometheus client's process
// collector, under its names), read from /proc at scrape time; none when /proc is unreadable.
std::vector<prometheus::MetricFamily> ProcessFamilies() {
  std::vector<prometheus::MetricFamily> out;
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  // Fields after the command (which may hold spaces), from field 3 (state) on.
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return out;
  std::istringstream fields(stat.substr(close + 2));
  std::vector<std::string> f((std::istream_iterator<std::string>(fields)),
                             std::istream_iterator<std::string>());
  if (f.size() < 22) return out;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // f[i] is field i + 3: utime 14, stime 15, starttime 22, vsize 23, rss 24.
  const double cpu = (std::stod(f[11]) + std::stod(f[12])) / ticks;
  double boot = 0;
  std::ifstream proc_stat("/proc/stat");
  for (std::string line; std::getline(proc_stat, line);) {
    if (line.starts_with("btime ")) boot = std::stod(line.substr(6));
  }
  out.push_back(ProcessFamily("process_cpu_seconds_total",
                              "Total user and system CPU time spent in seconds.",
                              prometheus::MetricType::Counter, cpu));
  out.push_back(ProcessFamily("process_start_time_seconds",
                              "Start time of the process since unix epoch in seconds.",
                              prometheus::MetricType::Gauge, boot + std::stod(f[19]) / ticks));
  out.push_back(ProcessFamily("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                              prometheus::MetricType::Gauge, std::stod(f[20])));
  out.push_back(ProcessFamily("process_resident_memory_bytes", "Resident memory size in bytes.",
                              prometheus::MetricType::Gauge, std::stod(f[21]) * page));
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  out.push_back(ProcessFamily("process_open_fds", "Number of open file descriptors.",
                              prometheus::MetricType::Gauge, fds));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
    out.push_back(ProcessFamily("process_max_fds", "Maximum number of open file descriptors.",
                                prometheus::MetricType::Gauge,
                                static_cast<double>(limit.rlim_cur)));
  }
  return out;
}

}  // namespace

namespace {

struct ScrapeHooks {
  Mutex mu;
  int64_t next_id DRAPLANE_GUARDED_BY(mu) = 1;
  std::map<int64_t, std::function<void()>> hooks DRAPLANE_GUARDED_BY(mu);
};

ScrapeHooks& GlobalScrapeHooks() {
  static ScrapeHooks* hooks = new ScrapeHooks();  // Never destroyed: usable during exit.
  return *hooks;
}

}  // namespace

int64_t AddScrapeHook(std::function<void()> hook) {
  ScrapeHooks& hooks = GlobalScrapeHooks();
  MutexLock lock(hooks.mu);
  const int64_t id = hooks.next_id++;
  hooks.hooks.emplace(id, std::move(hook));
  return id;
}

void RemoveScrapeHook(int64_t id) {
  ScrapeHooks& hooks = GlobalScrapeHooks();
  MutexLock lock(hooks.mu);  // waits for a RenderText running the hook
  hooks.hooks.erase(id);
}

std::string RenderText() {
  {
    ScrapeHooks& hooks = GlobalScrapeHooks();
    MutexLock lock(hooks.mu);
    for (const auto& [id, hook] : hooks.hooks) hook();
  }
  std::vector<prometheus::MetricFamily> collected = GlobalRegistry().registry.Collect();
  for (prometheus::MetricFamily& family : ProcessFamilies()) {
    collected.push_back(std::move(family));
  }
  std::stable_sort(collected.begin(), collected.end(),
                   [](const prometheus::MetricFamily& a, const prometheus::MetricFamily& b) {
                     return a.name < b.name;
                   });
  for (prometheus::MetricFamily& family : collected) {
    // Series within a family in label order, so the output does not depend on hash order.
    std::stable_sort(family.metric.begin(), family.metric.end(),
                     [](const prometheus::ClientMetric& a, const prometheus::ClientMetric& b) {
                       return std::lexicographical_compare(
                           a.label.begin(), a.label.end(), b.label.begin(), b.label.end(),
                           [](const prometheus::ClientMetric::Label& x,
                              const prometheus::ClientMetric::Label& y) {
                             return x.name != y.name ? x.name < y.name : x.value < y.value;
                           });
                     });
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, collected);
  return out.str();
}

}  // namespace draplane::metrics
