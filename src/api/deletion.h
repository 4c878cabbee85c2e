// The generic registry's deletion rules that more than one store applies (the API server's REST
// handlers and the in-memory API), written once.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace draplane::api {

// Whether an update removes the object it writes (upstream's registry ShouldDeleteDuringUpdate):
// the new version has no finalizers left and the stored one is being deleted with no grace
// period to wait out (none, or 0). A Pod in graceful deletion (deletionGracePeriodSeconds > 0)
// stays, whatever status its kubelet writes, until the kubelet deletes it with grace period 0.
inline bool DeletesDuringUpdate(bool stored_deleting, std::optional<int64_t> stored_grace_period,
                                bool new_has_finalizers) {
  return !new_has_finalizers && stored_deleting && stored_grace_period.value_or(0) == 0;
}

// DeletesDuringUpdate of a stored object in its JSON form: being deleted when its metadata has a
// `deletionTimestamp`, with the integer `deletionGracePeriodSeconds` it holds.
inline bool DeletesDuringUpdate(const boost::json::object& stored, bool new_has_finalizers) {
  const boost::json::value* meta_value = stored.if_contains("metadata");
  const boost::json::object* meta =
      meta_value != nullptr && meta_value->is_object() ? &meta_value->get_object() : nullptr;
  if (meta == nullptr) return false;
  const boost::json::value* grace = meta->if_contains("deletionGracePeriodSeconds");
  return DeletesDuringUpdate(meta->contains("deletionTimestamp"),
                             grace != nullptr && grace->is_int64()
                                 ? std::optional<int64_t>(grace->get_int64())
                                 : std::nullopt,
                             new_has_finalizers);
}

// Marks the metadata (a JSON object) of an object as deleting: its deletionTimestamp and
// deletionGracePeriodSeconds, and a generation above 0 bumped, since the object changes with its
// deletion (upstream's rest.BeforeDelete and markAsDeleting).
inline void MarkDeleting(boost::json::object& metadata, std::string deletion_timestamp,
                         int64_t grace_period_seconds) {
  metadata["deletionTimestamp"] = std::move(deletion_timestamp);
  metadata["deletionGracePeriodSeconds"] = grace_period_seconds;
  const boost::json::value* generation = metadata.if_contains("generation");
  if (generation != nullptr && generation->is_int64() && generation->get_int64() > 0 &&
      generation->get_int64() < INT64_MAX) {
    metadata["generation"] = generation->get_int64() + 1;
  }
}

}  // namespace draplane::api
