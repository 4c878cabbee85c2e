#include "store/store.h"

#include <utility>

#include "common/status_macros.h"
#include "store/etcd/etcd_store.h"
#include "store/internal/instrumented_store.h"
#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"

namespace draplane::store {

std::string KeyToString(const Key& key) {
  std::string out = key.resource;
  out.push_back('/');
  if (!key.ns.empty()) {
    out.append(key.ns);
    out.push_back('/');
  }
  out.append(key.name);
  return out;
}

// Follows kube-apiserver's etcd3 store GuaranteedUpdate
// (staging/src/k8s.io/apiserver/pkg/storage/etcd3/store.go): read, check preconditions, apply
// the function, skip the write when nothing changed, write conditioned on the revision read,
// and start over from a fresh read when that condition fails.
StatusOr<ObjectPtr> Store::GuaranteedUpdate(const Key& key, const UpdateFunction& update,
                                            const GuaranteedUpdateOptions& options) {
  while (true) {
    StatusOr<ObjectPtr> current = Get(key);
    const Object* input = nullptr;
    if (current.ok()) {
      input = current->get();
    } else if (current.status().code() != StatusCode::kNotFound || !options.allow_create) {
      return current.status();
    }
    const Revision want = options.preconditions.revision;
    if (want != 0 && (input == nullptr || input->revision != want)) {
      return ConflictError("precondition failed for " + KeyToString(key) + ": expected revision " +
                           std::to_string(want) +
                           (input == nullptr
                                ? std::string(", the object does not exist")
                                : ", stored revision is " + std::to_string(input->revision)));
    }
    DRAPLANE_ASSIGN_OR_RETURN(std::string next, update(input));
    if (input != nullptr && next == input->value) return current;
    if (input == nullptr) {
      StatusOr<ObjectPtr> created = Create(key, std::move(next));
      if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) continue;
      return created;
    }
    StatusOr<ObjectPtr> updated = Update(key, std::move(next), Preconditions{input->revision});
    if (!updated.ok() && (updated.status().code() == StatusCode::kConflict ||
                          updated.status().code() == StatusCode::kNotFound)) {
      continue;  // Changed or deleted since the read: start over from the new state.
    }
    return updated;
  }
}

namespace {

// Splits "HOSTS[?name=value&...]" into the endpoint list and the options it sets.
StatusOr<std::string> ParseEtcdUrl(std::string_view rest, EtcdOptions* options) {
  const size_t question = rest.find('?');
  std::string endpoints(rest.substr(0, question));
  if (endpoints.empty()) return InvalidArgumentError("store URL \"etcd://\" names no endpoint");
  if (question == std::string_view::npos) return endpoints;
  std::string_view query = rest.substr(question + 1);
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    const size_t eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (name == "prefix") {
      options->prefix = value;
    } else if (name == "cacert") {
      options->ca_file = value;
    } else if (name == "cert") {
      options->cert_file = value;
    } else if (name == "key") {
      options->key_file = value;
    } else {
      return InvalidArgumentError("unknown etcd store URL parameter \"" + std::string(name) +
                                  "\" (known: prefix, cacert, cert, key)");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return endpoints;
}

}  // namespace

StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view url, const StoreOptions& options) {
  Clock& clock = options.clock != nullptr ? *options.clock : RealClock();
  std::unique_ptr<Store> backend;
  if (url == "memory://") {
    backend = NewMemoryStore(options);
  } else if (url.starts_with("sqlite://")) {
    const std::string path(url.substr(std::string_view("sqlite://").size()));
    if (path.empty()) return InvalidArgumentError("store URL \"sqlite://\" names no file");
    DRAPLANE_ASSIGN_OR_RETURN(backend, OpenSqliteStore(path, options));
  } else if (url.starts_with("etcd://")) {
    StoreOptions etcd_options = options;
    DRAPLANE_ASSIGN_OR_RETURN(
        std::string endpoints,
        ParseEtcdUrl(url.substr(std::string_view("etcd://").size()), &etcd_options.etcd));
    DRAPLANE_ASSIGN_OR_RETURN(backend, OpenEtcdStore(endpoints, etcd_options));
  } else {
    return InvalidArgumentError("unsupported store URL \"" + std::string(url) +
                                "\": want memory://, sqlite://PATH or etcd://HOST:PORT[,...]");
  }
  return internal::NewInstrumentedStore(std::move(backend), clock, options.max_value_bytes);
}

}  // namespace draplane::store
