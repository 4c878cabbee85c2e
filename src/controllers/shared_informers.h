// One informer per resource type, shared by every controller of a controller-manager process
// (client-go's SharedInformerFactory): controllers register handlers and indexes before Start(),
// then read the shared caches.
//
// Thread-safety: Get<T>() and the registration calls happen before Start(), on one thread; the
// informers themselves are thread-safe afterwards.
#pragma once

#include <map>
#include <memory>
#include <typeindex>

#include "client/informer.h"

namespace draplane::controllers {

class SharedInformers {
 public:
  explicit SharedInformers(client::ApiClient& api, client::InformerOptions options = {})
      : api_(api), options_(std::move(options)) {}
  ~SharedInformers() { Stop(); }

  // The informer for `T`, created on first use.
  template <typename T>
  client::Informer<T>& Get() {
    auto it = informers_.find(std::type_index(typeid(T)));
    if (it == informers_.end()) {
      auto informer = std::make_unique<client::Informer<T>>(api_, options_);
      client::Informer<T>* raw = informer.get();
      informers_.emplace(std::type_index(typeid(T)), std::move(informer));
      return *raw;
    }
    return static_cast<client::Informer<T>&>(*it->second);
  }

  void Start() {
    for (auto& [type, informer] : informers_) informer->Start();
  }
  // Blocks until every informer listed once; false when one was stopped first.
  bool WaitForSync() {
    for (auto& [type, informer] : informers_) {
      if (!informer->WaitForSync()) return false;
    }
    return true;
  }
  void Stop() {
    for (auto& [type, informer] : informers_) informer->Stop();
  }

 private:
  client::ApiClient& api_;
  client::InformerOptions options_;
  std::map<std::type_index, std::unique_ptr<client::InformerBase>> informers_;
};

}  // namespace draplane::controllers
