// Small helpers over Boost.JSON for the generic parts of Kubernetes objects (metadata, lists),
// and the stored form of objects.
//
// Stored form: compact JSON whose first keys are `apiVersion`, `kind`, `metadata` (in that order)
// and whose metadata has no `resourceVersion` (the store's revision is the resourceVersion, as in
// kube-apiserver's etcd3 store). `WithResourceVersion` turns stored bytes into served bytes by
// splicing `"resourceVersion":"N"` in right after `"metadata":{`, without parsing the object.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::server::handlers {

using JsonObject = boost::json::object;
using StringMap = std::map<std::string, std::string, std::less<>>;

// The member `key` of `obj` if it is an object (else nullptr).
const JsonObject* FindObject(const JsonObject& obj, std::string_view key);
JsonObject* FindObject(JsonObject& obj, std::string_view key);
// The member `key` as an array, or nullptr.
const boost::json::array* FindArray(const JsonObject& obj, std::string_view key);
boost::json::array* FindArray(JsonObject& obj, std::string_view key);
// The member `key` if it is a string (else empty).
std::string_view GetString(const JsonObject& obj, std::string_view key);
// Follows a path of object keys; returns the string at the end or empty.
std::string_view GetPathString(const JsonObject& obj, std::initializer_list<std::string_view> path);
// The member `key`, made an empty object first if absent or not an object.
JsonObject& EnsureObject(JsonObject& obj, std::string_view key);
// A JSON array of the strings, in order.
boost::json::array StringArray(const std::vector<std::string>& values);

// metadata.<field> as a string; empty when absent.
std::string_view MetaString(const JsonObject& obj, std::string_view field);
// metadata.labels / annotations as a sorted map (non-string values are skipped).
StringMap MetaStringMap(const JsonObject& obj, std::string_view field);
// metadata.finalizers.
std::vector<std::string> Finalizers(const JsonObject& obj);
void SetFinalizers(JsonObject& obj, const std::vector<std::string>& finalizers);

// The stored form of an object (see above): reorders the top-level keys and drops
// metadata.resourceVersion. Does not modify `obj`.
std::string ToStoredJson(const JsonObject& obj);
// The same bytes from an object that is not needed afterwards: its members are moved, not copied.
std::string ToStoredJson(JsonObject&& obj);
// Served bytes of a stored object at `revision`. Falls back to a parse when `stored` is not in
// stored form (e.g. written by an older version), so it never fails on valid JSON.
std::string WithResourceVersion(std::string_view stored, int64_t revision);
// Parses stored (or any) JSON that must be an object. InvalidArgument otherwise.
StatusOr<JsonObject> ParseObject(std::string_view text);

// RFC 3339 in UTC with seconds ("2024-05-01T12:00:00Z"), metav1.Time's format.
std::string FormatTime(Timestamp time);
// Parses metav1.Time / MicroTime text; std::nullopt when malformed.
std::optional<Timestamp> ParseTime(std::string_view text);
// duration.HumanDuration (k8s.io/apimachinery/pkg/util/duration): "5s", "3m20s", "2d4h" ...
std::string HumanDuration(Duration d);

// The grace period a delete that names none gives a Pod (upstream's pod strategy,
// CheckGracefulDelete): its spec.terminationGracePeriodSeconds (default 30) when it is bound to
// a node, 0 when it is not yet bound or has finished (nothing has to stop).
int64_t PodDeletionGracePeriod(const JsonObject& pod);

}  // namespace draplane::server::handlers
