// Process-wide metrics: counters, gauges and histograms with labels, rendered in the Prometheus
// text exposition format (served by the API server at /metrics).
//
// A metric family is registered once by name (`NewCounterFamily` and friends); asking for the
// same name again with the same help and label names returns the same family. `WithLabels`
// returns a cheap handle to the time series for one set of label values; handles stay valid for
// the life of the process. A family remembers its series by label values, so `WithLabels` of a
// series seen before is one hash lookup under a shared lock, without allocating.
//
// The implementation sits on prometheus-cpp core; its headers stay out of this one.
//
// Thread-safety: everything here is safe for concurrent use. Registering a family with an
// invalid name, or the same name with different help or label names, is a programming error and
// aborts (it is never caused by user input).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace draplane::metrics {
namespace internal {
class SeriesCache;
}  // namespace internal

// A monotonically increasing count.
class Counter {
 public:
  // Adds `amount` (which must not be negative).
  void Increment(double amount = 1.0) const;
  double Value() const;

 private:
  friend class CounterFamily;
  explicit Counter(prometheus::Counter* impl) : impl_(impl) {}
  prometheus::Counter* impl_;
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double value) const;
  void Increment(double amount = 1.0) const;
  void Decrement(double amount = 1.0) const;
  double Value() const;

 private:
  friend class GaugeFamily;
  explicit Gauge(prometheus::Gauge* impl) : impl_(impl) {}
  prometheus::Gauge* impl_;
};

// Observations counted into fixed buckets (cumulative, with sum and count).
class Histogram {
 public:
  void Observe(double value) const;

 private:
  friend class HistogramFamily;
  explicit Histogram(prometheus::Histogram* impl) : impl_(impl) {}
  prometheus::Histogram* impl_;
};

// A named family of counters; one time series per set of label values.
class CounterFamily {
 public:
  // The series for `label_values`, given in the order of the family's label names.
  // Precondition: exactly one value per label name.
  Counter WithLabels(std::initializer_list<std::string_view> label_values) const;
  Counter WithLabels(const std::vector<std::string>& label_values) const;

 private:
  friend CounterFamily NewCounterFamily(const std::string&, const std::string&,
                                        std::vector<std::string>);
  CounterFamily(prometheus::Family<prometheus::Counter>* family, std::vector<std::string> labels,
                internal::SeriesCache* cache)
      : family_(family), label_names_(std::move(labels)), cache_(cache) {}
  prometheus::Family<prometheus::Counter>* family_;
  std::vector<std::string> label_names_;
  internal::SeriesCache* cache_;  // shared by every copy of the family; never destroyed
};

class GaugeFamily {
 public:
  Gauge WithLabels(std::initializer_list<std::string_view> label_values) const;
  Gauge WithLabels(const std::vector<std::string>& label_values) const;
  // Drops the series for `label_values` from the exposition (a gauge of an object that is gone);
  // a no-op when there is none. Handles to it must not be used afterwards: only the one owner
  // that sets a series may remove it.
  void Remove(const std::vector<std::string>& label_values) const;

 private:
  friend GaugeFamily NewGaugeFamily(const std::string&, const std::string&,
                                    std::vector<std::string>);
  GaugeFamily(prometheus::Family<prometheus::Gauge>* family, std::vector<std::string> labels,
              internal::SeriesCache* cache)
      : family_(family), label_names_(std::move(labels)), cache_(cache) {}
  prometheus::Family<prometheus::Gauge>* family_;
  std::vector<std::string> label_names_;
  internal::SeriesCache* cache_;  // shared by every copy of the family; never destroyed
};

class HistogramFamily {
 public:
  Histogram WithLabels(std::initializer_list<std::string_view> label_values) const;
  Histogram WithLabels(const std::vector<std::string>& label_values) const;

 private:
  friend HistogramFamily NewHistogramFamily(const std::string&, const std::string&,
                                            std::vector<std::string>, std::vector<double>);
  HistogramFamily(prometheus::Family<prometheus::Histogram>* family,
                  std::vector<std::string> labels, std::vector<double> buckets,
                  internal::SeriesCache* cache)
      : family_(family),
        label_names_(std::move(labels)),
        buckets_(std::move(buckets)),
        cache_(cache) {}
  prometheus::Family<prometheus::Histogram>* family_;
  std::vector<std::string> label_names_;
  std::vector<double> buckets_;
  internal::SeriesCache* cache_;  // shared by every copy of the family; never destroyed
};

// Registers a family in the process-wide registry, or returns the one already registered under
// `name`. Names follow Prometheus rules (`[a-zA-Z_:][a-zA-Z0-9_:]*`; counters end in `_total`
// by convention, durations are in seconds and end in `_seconds`).
CounterFamily NewCounterFamily(const std::string& name, const std::string& help,
                               std::vector<std::string> label_names);
GaugeFamily NewGaugeFamily(const std::string& name, const std::string& help,
                           std::vector<std::string> label_names);
// `buckets` are the upper bounds, strictly increasing; +Inf is implicit.
HistogramFamily NewHistogramFamily(const std::string& name, const std::string& help,
                                   std::vector<std::string> label_names,
                                   std::vector<double> buckets);

// `count` bucket bounds `start, start*factor, start*factor^2, ...`.
// Preconditions: start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Buckets for request latencies in seconds: 50µs to about 13s.
const std::vector<double>& LatencyBuckets();

// The `tenant` label of a namespace: the namespace itself when it is in the allowlist, else
// "other", so that a family labelled by tenant has at most (allowlist size + 1) values for that
// label however many namespaces the cluster has (round2-design §7.3 B). An empty allowlist maps
// every namespace to "other".
class TenantLabels {
 public:
  TenantLabels() = default;
  explicit TenantLabels(std::vector<std::string> allowlist);
  std::string_view Of(std::string_view namespace_) const;
  static constexpr std::string_view kOther = "other";

 private:
  std::vector<std::string> allowlist_;  // sorted, unique
};

// Runs `hook` at the start of every RenderText, for gauges computed at scrape time rather than
// counted (how long work in progress has been running). Returns the id RemoveScrapeHook takes;
// RemoveScrapeHook waits for a call of the hook that is running, so the hook may use what its
// owner destroys right after removing it.
int64_t AddScrapeHook(std::function<void()> hook);
void RemoveScrapeHook(int64_t id);

// Every registered metric in the Prometheus text exposition format (version 0.0.4), families
// sorted by name.
std::string RenderText();

// The Content-Type to serve RenderText() with.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace draplane::metrics
