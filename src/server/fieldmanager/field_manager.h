// metadata.managedFields: who owns which fields of an object, kept on every write, and
// server-side apply (`PATCH` with `application/apply-patch+yaml`), as kube-apiserver's field
// manager (k8s.io/apimachinery managedfields/internal) over structured-merge-diff's updater.
// docs/design/server.md, "Server-side apply", says what is kept and what differs.
//
// Every write names a manager (the `fieldManager` parameter, else the User-Agent's product).
// A create, update or non-apply patch is an `Update` operation: the fields it adds or changes
// become its manager's (entry keyed by manager, apiVersion and subresource) and leave every
// other entry; fields it removes leave every entry. An apply is an `Apply` operation: its
// manager owns exactly the fields of its configuration; changing a field another manager owns
// is a conflict unless forced (then the field changes hands), and a field the manager applied
// before and no longer applies is removed unless another manager owns it.
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/fieldmanager/typed.h"

namespace draplane::server::fieldmanager {

// What one write is, for the bookkeeping.
struct WriteContext {
  KindType type;
  std::string api_version;  // the resource's, "resource.k8s.io/v1"
  std::string subresource;  // "" or "status"
  // The paths the write does not own because the strategy resets them: `status` for a
  // main-resource write of a kind with a status subresource, `spec` for a status write.
  std::vector<std::vector<std::string>> reset_paths;
  std::string now;  // RFC 3339, the time written on changed entries
};

// The reset paths of a write to `subresource` of a kind that has (or not) a status subresource.
std::vector<std::vector<std::string>> ResetPaths(std::string_view subresource,
                                                 bool has_status_subresource);

// The manager of a write without `fieldManager`: the User-Agent up to its first '/', without
// non-printable characters, shorter than 128 bytes (upstream's prefixFromUserAgent).
std::string ManagerFromUserAgent(std::string_view user_agent);

// Sets `updated`'s metadata.managedFields for an Update operation by `manager` from `live`
// (nullptr for a create). The managedFields `updated` carries are the request's: honoured on a
// main-resource write when they are a valid non-empty list, a reset to none when `[{}]`,
// ignored otherwise (`[]` too). An existing object without managed fields stays without (fields are
// tracked from its first apply). Errors only for objects the schema's list types cannot key.
Status TrackUpdate(const boost::json::object* live, boost::json::object& updated,
                   std::string_view manager, const WriteContext& context);

// One manager's conflicting fields.
struct Conflict {
  std::string manager;             // as upstream prints it: "kubectl" using v1
  std::vector<std::string> paths;  // .spec.replicas
};

struct ApplyResult {
  boost::json::object object;       // with its managedFields; meaningful without conflicts
  std::vector<Conflict> conflicts;  // in upstream's order (managers sorted)
};

// Applies `config` by `manager` to `live` (nullptr when the object does not exist yet).
// Conflicts are returned, not applied, unless `force`. kubectl's upgrade from client-side apply
// is honoured: for manager "kubectl", conflicts only on fields whose value is still what the
// last-applied-configuration annotation says are taken over, and that annotation follows the
// configuration. InvalidArgument for a configuration the list types cannot key (duplicate keys,
// an item without its key).
StatusOr<ApplyResult> Apply(const boost::json::object* live, const boost::json::object& config,
                            std::string_view manager, bool force, const WriteContext& context);

// upstream's text: `Apply failed with 1 conflict: conflict with "m" using v1: .spec.x`.
std::string ConflictMessage(const std::vector<Conflict>& conflicts);

}  // namespace draplane::server::fieldmanager
