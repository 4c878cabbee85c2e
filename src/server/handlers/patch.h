// The three patch formats kube-apiserver applies to built-in kinds:
//   application/json-patch+json            RFC 6902 (evanphx/json-patch semantics)
//   application/merge-patch+json           RFC 7386
//   application/strategic-merge-patch+json Kubernetes strategic merge patch
//     (k8s.io/apimachinery/pkg/util/strategicpatch): maps merge recursively; `null` deletes;
//     lists whose field declares `patchStrategy: merge` merge their items by `patchMergeKey`
//     (lists of primitives: union), other lists are replaced; directives `$patch: replace |
//     delete | merge`, `$retainKeys`, `$deleteFromPrimitiveList/<f>` and `$setElementOrder/<f>`
//     are understood (the order directive is honoured for merged lists).
// Which list fields merge, and by which key, comes from `MergeKeyFor`: the Go struct tags of the
// served kinds (ObjectMeta.finalizers/ownerReferences, PodSpec.containers, status conditions,
// ResourceClaimStatus.reservedFor, ...).
//
// Errors: a patch document of the wrong shape is InvalidArgument without causes (answered 400);
// a patch that does not apply (JSON patch `test` failure, missing path) is FailedPrecondition
// (answered 422, as upstream answers a patch that cannot be applied).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace draplane::server::handlers {

StatusOr<boost::json::value> ApplyJsonPatch(const boost::json::value& document,
                                            const boost::json::value& patch);

boost::json::value ApplyMergePatch(const boost::json::value& document,
                                   const boost::json::value& patch);
// The same merge in place: `document` becomes what ApplyMergePatch returns (patched members keep
// their position, new ones are appended), without copying the parts the patch does not touch.
void MergePatchInto(boost::json::value& document, const boost::json::value& patch);

// How a list field is patched strategically.
struct ListStrategy {
  bool merge = false;     // patchStrategy: merge
  std::string merge_key;  // patchMergeKey; empty for lists of primitives
};

// The strategy of the list at `path` (field names joined by '.', list items as "[]", e.g.
// "spec.containers[].ports") in objects of `kind`; replace when none is declared.
ListStrategy MergeKeyFor(std::string_view kind, std::string_view path);

StatusOr<boost::json::value> ApplyStrategicMergePatch(const boost::json::value& document,
                                                      const boost::json::value& patch,
                                                      std::string_view kind);

}  // namespace draplane::server::handlers
