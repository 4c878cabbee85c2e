// One informer per resource type, shared by every component of a process (client-go's
// SharedInformerFactory): the controllers of a controller-manager, and in `draplane serve` the
// embedded scheduler and controller-manager together, so that each object change is watched,
// decoded and cached once rather than once per component.
//
// Components take the informers they need with Get<T>() and register handlers (which they may
// remove again when they stop; informer.h) and indexes; Start() starts every informer created so
// far and may be called again after more were created.
//
// With `InformerOptions::manual` (the simulator) no informer runs a thread: Start() lists on the
// calling thread and DeliverPending() hands every ready event to the caches and handlers, across
// all informers in resourceVersion order (the order the API committed them).
//
// Thread-safety: every method may be called from any thread; DeliverPending from one at a time.
#pragma once

#include <map>
#include <memory>
#include <typeindex>

#include "client/informer.h"
#include "common/mutex.h"

namespace draplane::client {

class SharedInformers {
 public:
  explicit SharedInformers(ApiClient& api, InformerOptions options = {})
      : api_(api), options_(std::move(options)) {}
  ~SharedInformers() { Stop(); }
  SharedInformers(const SharedInformers&) = delete;
  SharedInformers& operator=(const SharedInformers&) = delete;

  // The informer for `T`, created (not started) on first use.
  template <typename T>
  Informer<T>& Get() {
    MutexLock lock(mu_);
    auto it = informers_.find(std::type_index(typeid(T)));
    if (it == informers_.end()) {
      auto informer = std::make_unique<Informer<T>>(api_, options_);
      Informer<T>* raw = informer.get();
      informers_.emplace(std::type_index(typeid(T)), std::move(informer));
      return *raw;
    }
    return static_cast<Informer<T>&>(*it->second);
  }

  // Starts every informer not started yet.
  void Start() {
    MutexLock lock(mu_);
    for (auto& [type, informer] : informers_) informer->Start();
  }
  // Blocks until every informer listed once; false when one was stopped first.
  bool WaitForSync() {
    for (InformerBase* informer : All()) {
      if (!informer->WaitForSync()) return false;
    }
    return true;
  }
  void Stop() {
    for (InformerBase* informer : All()) informer->Stop();
  }

  // Manual mode: delivers every event ready now, the lowest resourceVersion first, until none is
  // left. Returns how many were delivered, or the first informer's failure to re-open its watch.
  StatusOr<size_t> DeliverPending() {
    {
      // The list is remade only when an informer was added (the simulator delivers after
      // every step, most times nothing or one event).
      MutexLock lock(mu_);
      if (delivery_order_.size() != informers_.size()) delivery_order_ = AllLocked();
    }
    size_t delivered = 0;
    while (true) {
      InformerBase* next = nullptr;
      uint64_t lowest = 0;
      for (InformerBase* informer : delivery_order_) {
        if (informer->ManualIdle()) continue;
        StatusOr<std::optional<uint64_t>> rv = informer->PeekManual();
        if (!rv.ok()) return rv.status();
        if (rv->has_value() && (next == nullptr || **rv < lowest)) {
          next = informer;
          lowest = **rv;
        }
      }
      if (next == nullptr) return delivered;
      next->DeliverManual();
      ++delivered;
    }
  }

 private:
  std::vector<InformerBase*> All() {
    MutexLock lock(mu_);
    return AllLocked();
  }
  std::vector<InformerBase*> AllLocked() DRAPLANE_REQUIRES(mu_) {
    std::vector<InformerBase*> out;
    for (auto& [type, informer] : informers_) out.push_back(informer.get());
    return out;
  }

  ApiClient& api_;
  const InformerOptions options_;
  Mutex mu_;
  std::map<std::type_index, std::unique_ptr<InformerBase>> informers_ DRAPLANE_GUARDED_BY(mu_);
  // DeliverPending's copy of All(), read only by the one thread delivering.
  std::vector<InformerBase*> delivery_order_;
};

}  // namespace draplane::client
