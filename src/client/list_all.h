// Every object of a cluster-wide list, read in pages of 500 (what reads the whole cluster once:
// `draplane pools`, the Pod explanations of scheduler/explain_pod.h).
//
// Thread-safety: a plain function over the caller's client.
#pragma once

#include <utility>
#include <vector>

#include "client/api_client.h"
#include "client/typed.h"
#include "common/status.h"

namespace draplane::client {

template <typename T>
StatusOr<std::vector<T>> ListAll(ApiClient& api) {
  std::vector<T> out;
  ListOptions options;
  options.limit = 500;
  while (true) {
    StatusOr<ObjectList<T>> page = List<T>(api, "", options);
    if (!page.ok()) return page.status();
    for (T& item : page->items) out.push_back(std::move(item));
    if (page->continue_token.empty()) return out;
    options.continue_token = page->continue_token;
  }
}

}  // namespace draplane::client
