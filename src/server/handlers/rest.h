// The resource verbs over the store: get, list, watch, create, update, patch, delete and
// deletecollection for every stored kind of the registry, plus pods/binding. Semantics follow
// kube-apiserver's generic registry (staging/src/k8s.io/apiserver/pkg/registry/generic/
// registry/store.go) and endpoint handlers (.../endpoints/handlers/*.go); docs/design/server.md
// describes them verb by verb.
//
// Every handler runs on a worker thread and may block on the store. Errors are answered as
// metav1.Status (handlers/errors.h).
//
// Thread-safety: safe for concurrent use; state lives in the store.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "server/admission/admission.h"
#include "server/auth/authenticator.h"
#include "server/authz/authorizer.h"
#include "server/authz/rbac.h"
#include "server/handlers/errors.h"
#include "server/handlers/json_util.h"
#include "server/handlers/registry.h"
#include "server/handlers/request_info.h"
#include "server/handlers/watch.h"
#include "server/http/http.h"
#include "store/store.h"

namespace draplane::server::quota {
class QuotaAdmission;
}  // namespace draplane::server::quota

namespace draplane::server::handlers {

// One resource request, parsed.
struct Scope {
  const http::Request* request = nullptr;
  const RequestInfo* info = nullptr;
  const ResourceInfo* resource = nullptr;
  const auth::UserInfo* user = nullptr;
  std::vector<std::pair<std::string, std::string>> query;

  // The first value of query parameter `name` (empty when absent).
  std::string Param(std::string_view name) const;
  bool Has(std::string_view name) const;
};

struct RestDependencies {
  store::Store* store = nullptr;
  const Clock* clock = nullptr;
  admission::Admission* admission = nullptr;
  authz::RbacCache* rbac = nullptr;  // told about this server's RBAC writes
  WatchManager* watches = nullptr;
  // ResourceQuota admission of creates (server/quota/admission.h); none when null.
  quota::QuotaAdmission* quota = nullptr;
  // The request authorizer, asked again when an update or apply turns out to create the object
  // (upstream requires `create` then too); not asked when null.
  const authz::Authorizer* authorizer = nullptr;
};

class Rest {
 public:
  explicit Rest(RestDependencies deps) : deps_(deps) {}

  // Serves a resource request of a stored kind (everything but watch).
  http::Response Handle(const Scope& scope);
  // Serves a watch request by starting a stream on `exchange` (or answering an error).
  void Watch(const Scope& scope, std::shared_ptr<http::Exchange> exchange);

  // The labels / field selectors of a list or watch request, checked against what the kind
  // supports. Errors are answered 400.
  static StatusOr<std::pair<api::labels::Selector, api::labels::FieldSelector>> ParseSelectors(
      const Scope& scope);

  // Decodes a request body (JSON or YAML by Content-Type) that must be one object.
  static std::variant<JsonObject, ApiError> DecodeBody(const http::Request& request);

  // Creates `obj` directly in the store, as the server itself (bootstrap objects, default
  // namespaces): metadata stamped, strategy applied, no admission. AlreadyExists is returned as
  // is.
  StatusOr<store::ObjectPtr> CreateInternal(const ResourceInfo& resource, JsonObject obj);

  // metav1.DeleteOptions, from a request's body and query or from an Eviction.
  struct DeleteOptions {
    bool dry_run = false;  // dryRun: [All]
    std::optional<int64_t> grace_period_seconds;
    std::string propagation_policy;  // "", Orphan, Background, Foreground
    // Which of the two ways to name the policy the request used (both together are refused).
    bool orphan_dependents_given = false;
    bool propagation_policy_given = false;
    std::string precondition_uid;
    std::string precondition_rv;
  };

 private:
  http::Response Get(const Scope& scope);
  http::Response List(const Scope& scope);
  http::Response Create(const Scope& scope);
  http::Response Update(const Scope& scope);
  http::Response Patch(const Scope& scope);
  http::Response Delete(const Scope& scope);
  http::Response DeleteCollection(const Scope& scope);
  http::Response Bind(const Scope& scope, const std::string& ns, const std::string& pod_name);
  // pods/eviction (policy/v1 Eviction): the Pod deleted with the eviction's deleteOptions.
  http::Response Evict(const Scope& scope);
  // Adds DisruptionTarget (EvictionByEvictionAPI) to the evicted Pod; moves a resourceVersion
  // precondition of `options` to the version written.
  std::optional<ApiError> MarkEvicted(const Scope& scope, DeleteOptions& options);

  // What an UpdateWith is: an update (may create where the kind allows), a patch (never
  // creates), or a server-side apply (creates a missing object, keeps its own managed fields).
  enum class WriteKind { kUpdate, kPatch, kApply };
  // An update or apply that creates the object needs `create` permission as well (upstream's
  // withAuthorization on the create path); the 403 when the user lacks it.
  std::optional<ApiError> AuthorizeCreate(const Scope& scope) const;
  // Server-side apply: a PATCH of `application/apply-patch+yaml`.
  http::Response Apply(const Scope& scope);
  // The update pipeline shared by update, patch and apply: `mutate` turns the current object
  // (served form; empty when there is none) into the requested one.
  http::Response UpdateWith(
      const Scope& scope,
      const std::function<std::variant<JsonObject, ApiError>(const JsonObject& current)>& mutate,
      WriteKind kind);

  // Deletes one object with the request's delete options; the answer carries the object.
  std::variant<std::string, ApiError> DeleteOne(const Scope& scope, const std::string& ns,
                                                const std::string& name, bool* deleted_now);
  std::variant<std::string, ApiError> DeleteOne(const Scope& scope, const std::string& ns,
                                                const std::string& name,
                                                const DeleteOptions& options, bool* deleted_now);

  void ObserveWrite(const ResourceInfo& resource, const store::Object& object, bool deleted);

  RestDependencies deps_;
};

// utilrand.String(5)-style suffix for generateName (consonants and digits without vowels).
std::string GenerateNameSuffix(Random& random);

}  // namespace draplane::server::handlers
