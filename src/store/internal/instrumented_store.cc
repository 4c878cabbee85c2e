#include "store/internal/instrumented_store.h"

#include <array>
#include <map>
#include <optional>
#include <type_traits>

#include "common/metrics.h"
#include "common/mutex.h"
#include "common/status_macros.h"

namespace draplane::store::internal {
namespace {

enum class Op { kGet, kList, kCreate, kUpdate, kDelete, kWatch, kCurrentRevision, kCompact };
constexpr std::array<std::string_view, 8> kOpNames = {
    "get", "list", "create", "update", "delete", "watch", "current_revision", "compact"};
constexpr size_t kCodeCount = static_cast<size_t>(StatusCode::kInternal) + 1;

struct Families {
  metrics::CounterFamily requests =
      metrics::NewCounterFamily("draplane_store_requests_total",
                                "Store operations by backend, resource, operation and result code.",
                                {"backend", "resource", "operation", "code"});
  metrics::HistogramFamily latency = metrics::NewHistogramFamily(
      "draplane_store_request_duration_seconds", "Store operation latency in seconds.",
      {"backend", "resource", "operation"}, metrics::LatencyBuckets());
};

const Families& GetFamilies() {
  static const Families* families = new Families();
  return *families;
}

class InstrumentedStore final : public Store {
 public:
  InstrumentedStore(std::unique_ptr<Store> inner, Clock& clock, size_t max_value_bytes)
      : inner_(std::move(inner)), clock_(clock), max_value_bytes_(max_value_bytes) {}

  std::string_view backend() const override { return inner_->backend(); }

  StatusOr<ObjectPtr> Get(const Key& key) override {
    return Measure(key.resource, Op::kGet, [&] { return inner_->Get(key); });
  }
  StatusOr<ListResult> List(std::string_view resource, const ListOptions& options) override {
    return Measure(resource, Op::kList, [&] { return inner_->List(resource, options); });
  }
  StatusOr<ObjectPtr> Create(const Key& key, std::string value) override {
    DRAPLANE_RETURN_IF_ERROR(CheckValueSize(key, value));
    return Measure(key.resource, Op::kCreate,
                   [&] { return inner_->Create(key, std::move(value)); });
  }
  StatusOr<ObjectPtr> Update(const Key& key, std::string value,
                             const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(CheckValueSize(key, value));
    return Measure(key.resource, Op::kUpdate,
                   [&] { return inner_->Update(key, std::move(value), preconditions); });
  }
  StatusOr<ObjectPtr> Delete(const Key& key, const Preconditions& preconditions) override {
    return Measure(key.resource, Op::kDelete, [&] { return inner_->Delete(key, preconditions); });
  }
  StatusOr<std::unique_ptr<Watcher>> Watch(std::string_view resource,
                                           WatchOptions options) override {
    return Measure(resource, Op::kWatch,
                   [&] { return inner_->Watch(resource, std::move(options)); });
  }
  StatusOr<Revision> CurrentRevision() override {
    return Measure("", Op::kCurrentRevision, [&] { return inner_->CurrentRevision(); });
  }
  Status Compact(Revision revision) override {
    return Measure("", Op::kCompact, [&] { return inner_->Compact(revision); });
  }

 private:
  // The metric handles of one (resource, operation), looked up once.
  struct Series {
    std::optional<metrics::Histogram> latency;
    std::array<std::optional<metrics::Counter>, kCodeCount> by_code;
  };
  using PerOp = std::array<Series, kOpNames.size()>;

  template <typename Call>
  std::invoke_result_t<Call> Measure(std::string_view resource, Op op, Call call) {
    const Duration start = clock_.MonotonicNow();
    auto result = call();
    const double seconds = std::chrono::duration<double>(clock_.MonotonicNow() - start).count();
    StatusCode code;
    if constexpr (std::is_same_v<decltype(result), Status>) {
      code = result.code();
    } else {
      code = result.status().code();
    }
    Record(resource, op, code, seconds);
    return result;
  }

  void Record(std::string_view resource, Op op, StatusCode code, double seconds) {
    MutexLock lock(mu_);
    auto it = series_.find(resource);
    if (it == series_.end()) it = series_.emplace(std::string(resource), PerOp{}).first;
    Series& series = it->second[static_cast<size_t>(op)];
    const std::string_view name = kOpNames[static_cast<size_t>(op)];
    if (!series.latency.has_value()) {
      series.latency = GetFamilies().latency.WithLabels({backend(), resource, name});
    }
    std::optional<metrics::Counter>& counter = series.by_code[static_cast<size_t>(code)];
    if (!counter.has_value()) {
      counter =
          GetFamilies().requests.WithLabels({backend(), resource, name, StatusCodeName(code)});
    }
    counter->Increment();
    series.latency->Observe(seconds);
  }

  // etcd refuses a request over its --max-request-bytes (1.5 MiB by default) with "request is too
  // large"; every backend refuses a value over the same limit, so an object the embedded store
  // accepts can also move to etcd, and one write cannot pin unbounded memory.
  Status CheckValueSize(const Key& key, const std::string& value) const {
    if (max_value_bytes_ == 0 || value.size() <= max_value_bytes_) return Status::Ok();
    return Status(StatusCode::kInvalidArgument,
                  "the stored object " + KeyToString(key) + " would be " +
                      std::to_string(value.size()) + " bytes, over the store's limit of " +
                      std::to_string(max_value_bytes_) + " bytes",
                  {StatusCause{.type = "FieldValueTooLong",
                               .message = "Too long: may not be more than " +
                                          std::to_string(max_value_bytes_) + " bytes",
                               .field = "<root>"}});
  }

  std::unique_ptr<Store> inner_;
  Clock& clock_;
  const size_t max_value_bytes_;
  Mutex mu_;
  std::map<std::string, PerOp, std::less<>> series_ DRAPLANE_GUARDED_BY(mu_);  // by resource
};

}  // namespace

std::unique_ptr<Store> NewInstrumentedStore(std::unique_ptr<Store> inner, Clock& clock,
                                            size_t max_value_bytes) {
  return std::make_unique<InstrumentedStore>(std::move(inner), clock, max_value_bytes);
}

}  // namespace draplane::store::internal
