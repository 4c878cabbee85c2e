// The object metadata the store owns, applied to an object's JSON bytes by the API server
// (docs/design/store.md, "Metadata").
//
// The store keeps values as opaque bytes and reports each object's revision beside them
// (`Object::revision`), because with etcd a write's revision is known only after it commits.
// kube-apiserver likewise stores objects without `metadata.resourceVersion` and stamps it on the
// way out (storage/etcd3 APIObjectVersioner). These helpers do that, and set the fields
// kube-apiserver's rest.BeforeCreate / BeforeUpdate own: `uid`, `creationTimestamp`,
// `generation`. They touch only `metadata` (Boost.JSON); every other field is re-serialised
// unchanged in value (numbers in Boost.JSON's canonical spelling).
//
// Typical use by the server:
//   create:  bytes = PrepareForCreate(encoded, clock, random, {.set_generation = has_spec});
//            created = store.Create(key, bytes);  reply WithResourceVersion(*created).
//   update:  inside GuaranteedUpdate's function:
//            return PrepareForUpdate(current->value, encoded_new, {.bump_generation =
//            spec_changed});
//   read:    reply WithResourceVersion(*object) (a DELETED event's object carries the delete's
//            revision, as in kube-apiserver).
//
// Errors: InvalidArgument when the bytes are not a JSON object, or `metadata` is present but not
// an object. Thread-safety: pure functions (the Clock and Random must be usable from the caller's
// thread).
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/random.h"
#include "common/status.h"
#include "store/store.h"

namespace draplane::store {

// The bytes with `metadata.resourceVersion` set to the decimal revision (metadata is created
// if absent).
StatusOr<std::string> SetResourceVersion(std::string_view json, Revision revision);
// SetResourceVersion(object.value, object.revision).
StatusOr<std::string> WithResourceVersion(const Object& object);

// "2006-01-02T15:04:05Z": metav1.Time's wire format (RFC 3339, whole seconds, UTC).
std::string FormatTimestamp(Timestamp time);

struct CreateMetadataOptions {
  // Sets metadata.generation = 1 (kinds with a spec; kube's strategies do this on create).
  bool set_generation = true;
};

// For a create: sets metadata.uid to a new random UUID, metadata.creationTimestamp to now,
// metadata.generation to 1 when asked, and removes metadata.resourceVersion (the store's
// revision is the only source of it).
StatusOr<std::string> PrepareForCreate(std::string_view json, const Clock& clock, Random& random,
                                       const CreateMetadataOptions& options = {});

struct UpdateMetadataOptions {
  // metadata.generation becomes the stored generation + 1 (the spec changed); otherwise it
  // stays the stored generation.
  bool bump_generation = false;
};

// For an update: copies metadata.uid, metadata.creationTimestamp and metadata.generation from
// `stored` (clients cannot change them; generation moves only by `bump_generation`) into
// `updated`, and removes metadata.resourceVersion. Fields absent from `stored` are removed from
// the result.
StatusOr<std::string> PrepareForUpdate(std::string_view stored, std::string_view updated,
                                       const UpdateMetadataOptions& options = {});

}  // namespace draplane::store
