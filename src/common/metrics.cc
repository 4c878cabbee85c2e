#include "common/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>

#include "common/check.h"

namespace draplane::metrics {
namespace {

enum class Kind { kCounter, kGauge, kHistogram };

// What was registered under a name, so a second registration can be checked against it.
struct Registration {
  Kind kind;
  std::string help;
  std::vector<std::string> label_names;
  std::vector<double> buckets;
  void* family;
};

struct Registry {
  std::mutex mu;
  prometheus::Registry registry;
  std::map<std::string, Registration> families;  // guarded by mu
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

// Returns the family registered under `name`, creating it with `create` when new. Aborts when
// the name was registered with a different kind, help, label set or buckets.
template <typename Create>
void* FindOrRegister(Kind kind, const std::string& name, const std::string& help,
                     const std::vector<std::string>& label_names,
                     const std::vector<double>& buckets, Create create) {
  DRAPLANE_CHECK_MSG(IsValidName(name, /*allow_colon=*/true), name.c_str());
  for (const std::string& label : label_names) {
    DRAPLANE_CHECK_MSG(IsValidName(label, /*allow_colon=*/false) && label.rfind("__", 0) != 0,
                       label.c_str());
  }
  Registry& global = GlobalRegistry();
  std::lock_guard<std::mutex> lock(global.mu);
  auto it = global.families.find(name);
  if (it != global.families.end()) {
    const Registration& existing = it->second;
    DRAPLANE_CHECK_MSG(existing.kind == kind && existing.help == help &&
                           existing.label_names == label_names && existing.buckets == buckets,
                       ("metric registered twice with different shapes: " + name).c_str());
    return existing.family;
  }
  void* family = create(global.registry);
  global.families.emplace(name, Registration{kind, help, label_names, buckets, family});
  return family;
}

template <typename Values>
prometheus::Labels MakeLabels(const std::vector<std::string>& names, const Values& values) {
  DRAPLANE_CHECK_MSG(names.size() == values.size(), "wrong number of label values");
  prometheus::Labels labels;
  size_t i = 0;
  for (const auto& value : values) {
    labels.emplace(names[i++], std::string(value));
  }
  return labels;
}

}  // namespace

void Counter::Increment(double amount) const { impl_->Increment(amount); }
double Counter::Value() const { return impl_->Value(); }

void Gauge::Set(double value) const { impl_->Set(value); }
void Gauge::Increment(double amount) const { impl_->Increment(amount); }
void Gauge::Decrement(double amount) const { impl_->Decrement(amount); }
double Gauge::Value() const { return impl_->Value(); }

void Histogram::Observe(double value) const { impl_->Observe(value); }

Counter CounterFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Counter(&family_->Add(MakeLabels(label_names_, label_values)));
}
Counter CounterFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Counter(&family_->Add(MakeLabels(label_names_, label_values)));
}

Gauge GaugeFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Gauge(&family_->Add(MakeLabels(label_names_, label_values)));
}
Gauge GaugeFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Gauge(&family_->Add(MakeLabels(label_names_, label_values)));
}

Histogram HistogramFamily::WithLabels(std::initializer_list<std::string_view> label_values) const {
  return Histogram(&family_->Add(MakeLabels(label_names_, label_values), buckets_));
}
Histogram HistogramFamily::WithLabels(const std::vector<std::string>& label_values) const {
  return Histogram(&family_->Add(MakeLabels(label_names_, label_values), buckets_));
}

CounterFamily NewCounterFamily(const std::string& name, const std::string& help,
                               std::vector<std::string> label_names) {
  void* family = FindOrRegister(
      Kind::kCounter, name, help, label_names, {}, [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildCounter().Name(name).Help(help).Register(registry);
      });
  return CounterFamily(static_cast<prometheus::Family<prometheus::Counter>*>(family),
                       std::move(label_names));
}

GaugeFamily NewGaugeFamily(const std::string& name, const std::string& help,
                           std::vector<std::string> label_names) {
  void* family = FindOrRegister(
      Kind::kGauge, name, help, label_names, {}, [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
      });
  return GaugeFamily(static_cast<prometheus::Family<prometheus::Gauge>*>(family),
                     std::move(label_names));
}

HistogramFamily NewHistogramFamily(const std::string& name, const std::string& help,
                                   std::vector<std::string> label_names,
                                   std::vector<double> buckets) {
  DRAPLANE_CHECK_MSG(!buckets.empty() && std::is_sorted(buckets.begin(), buckets.end()) &&
                         std::adjacent_find(buckets.begin(), buckets.end()) == buckets.end(),
                     "histogram buckets must be strictly increasing");
  void* family = FindOrRegister(
      Kind::kHistogram, name, help, label_names, buckets,
      [&](prometheus::Registry& registry) -> void* {
        return &prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
      });
  return HistogramFamily(static_cast<prometheus::Family<prometheus::Histogram>*>(family),
                         std::move(label_names), std::move(buckets));
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

std::string RenderText() {
  std::vector<prometheus::MetricFamily> collected = GlobalRegistry().registry.Collect();
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
