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
// These are the server's rules (handlers/rest.cc applies them to PATCH requests); every other
// ApiClient that applies patches itself (client::MemoryApi) uses them too, so a patch means the
// same thing whichever API a component talks to.
//
// Errors: a patch document of the wrong shape is InvalidArgument without causes (answered 400);
// a patch that does not apply (JSON patch `test` failure, missing path) is FailedPrecondition
// (answered 422, as upstream answers a patch that cannot be applied); a JSON patch past its
// JsonPatchLimits is ResourceExhausted (answered 413 for too many operations, 422 for copies that
// grow the object too much). A client sees all of them as InvalidArgument with the same message
// (client/rest_client.h maps 400, 413 and 422 alike);
// `AsClientError` does that mapping for APIs that apply patches in the client's process.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace draplane::api::patch {

enum class PatchFormat {
  kJson,            // application/json-patch+json
  kMerge,           // application/merge-patch+json
  kStrategicMerge,  // application/strategic-merge-patch+json
};

// The format a request's Content-Type names, or nullopt for any other media type.
std::optional<PatchFormat> PatchFormatOf(std::string_view content_type);

// Whether `patch` has the shape its format needs (a JSON patch is an array, the merge formats
// take an object); InvalidArgument with the API server's message otherwise.
Status CheckPatchShape(const boost::json::value& patch, PatchFormat format);

// Applies `patch` in `format` to `document`, an object of `kind` (strategic merge looks up the
// kind's list strategies). CheckPatchShape's errors, then those of the format's function below.
StatusOr<boost::json::value> ApplyPatch(const boost::json::value& document,
                                        const boost::json::value& patch, PatchFormat format,
                                        std::string_view kind);

// Bounds on one JSON patch, as kube-apiserver sets them (apiserver handlers/patch.go, PR 74000):
// a patch of more operations is refused before it is applied; `copy` operations may add at most
// `max_copy_bytes` to the document in all (evanphx/json-patch AccumulatedCopySizeLimit, which
// kube-apiserver sets to its 3 MiB request body limit). Without the second bound a few hundred
// bytes of patch copying a member into itself double the document with every operation.
struct JsonPatchLimits {
  size_t max_operations = 10'000;
  size_t max_copy_bytes = 3 * 1024 * 1024;
};

// ResourceExhausted (upstream's message) when `patch` is a list of more than
// `limits.max_operations` operations; kube-apiserver answers it 413 before applying anything.
Status CheckJsonPatchOperations(const boost::json::value& patch, const JsonPatchLimits& limits);

// RFC 6902: add, remove, replace, move, copy, test (evanphx/json-patch's messages), applied to
// a copy of `document`. InvalidArgument for a malformed patch;
// FailedPrecondition when an operation does not apply; ResourceExhausted when the patch has more
// than `limits.max_operations` operations or its copies add more than `limits.max_copy_bytes`
// (checked at each copy, before the copy is made).
StatusOr<boost::json::value> ApplyJsonPatch(const boost::json::value& document,
                                            const boost::json::value& patch,
                                            const JsonPatchLimits& limits = {});

// RFC 7386. A patch that is not an object replaces the document.

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

// The Status a client of the API server sees for a patch error (see the file comment).
Status AsClientError(const Status& patch_error);

}  // namespace draplane::api::patch
