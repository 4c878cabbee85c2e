// The resources the server serves, described once: what discovery reports for each (as
// kube-apiserver describes the same resource), where it is stored, and which generic behaviours
// apply (status subresource, generation, graceful deletion ...). Kind-specific logic (defaulting,
// validation, selectable fields, table columns) hangs off `ResourceInfo::strategy`.
//
// Thread-safety: the registry is immutable after construction.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/dra_admission.h"
#include "server/handlers/errors.h"

namespace draplane::server::handlers {

class Strategy;

struct SubresourceInfo {
  std::string name;  // "status", "binding", "finalize", "eviction"
  // The kind the subresource takes and answers with (pods/binding: core/v1 Binding), and its
  // group and version when they differ from the parent's (pods/eviction: policy/v1 Eviction).
  std::string kind;
  std::vector<std::string> verbs;
  std::string group{};
  std::string version{};
};

// Where a resource kept in another resource's storage lives, and how its objects change form on
// the way (upstream stores one internal kind per storage: events.k8s.io/v1 Events are core
// Events, api/events.h).
struct StoredAs {
  std::string group;  // the storage's resource: "" and "events" for core/v1 Events
  std::string resource;
  void (*to_stored)(boost::json::object&);  // served form -> stored form
  void (*to_served)(boost::json::object&);  // stored form -> served form
};

struct ResourceInfo {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // "resourceclaims"
  std::string kind;      // "ResourceClaim"
  std::string singular;  // "resourceclaim"
  bool namespaced = false;
  std::vector<std::string> verbs;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<SubresourceInfo> subresources;
  // Create-only virtual resources (SelfSubjectAccessReview ...) are not stored.
  bool virtual_resource = false;
  // A get-only virtual resource computed on request (draplane.dev podexplanations,
  // pod_explanations.h).
  bool computed = false;
  // Objects carry metadata.generation, 1 on create, bumped when `spec` changes.
  bool tracks_generation = false;
  // An update of the object may create it (leases, events: AllowCreateOnUpdate).
  bool allow_create_on_update = false;
  // Set when the objects live in another resource's storage, in that resource's form.
  std::optional<StoredAs> stored_as;
  const Strategy* strategy = nullptr;

  // "resource.k8s.io/v1" or "v1".
  std::string ApiVersion() const;
  // "ResourceClaim.resource.k8s.io" or "Pod".
  std::string GroupKind() const;
  // The store's resource name: "resource.k8s.io/resourceclaims", "core/pods" (the storage's
  // for a resource `stored_as` another).
  std::string StoreResource() const;
  // The stored bytes of `served`, an object of this resource (converted to the storage's form
  // first when `stored_as` says so).
  std::string ToStored(boost::json::object&& served) const;
  // The served bytes of this resource's stored bytes at `revision`; a revision of 0 leaves
  // metadata.resourceVersion out (what a dry-run create answers).
  std::string Served(std::string_view stored, int64_t revision) const;
  // The served form of a stored object already parsed (no change unless `stored_as`).
  void ToServed(boost::json::object& stored) const;
  GroupResource Gr() const { return GroupResource{group, resource}; }
  const SubresourceInfo* FindSubresource(std::string_view name) const;
  bool HasVerb(std::string_view verb) const;
};

// A served group version.
struct GroupVersionInfo {
  std::string group;
  std::string version;
  std::vector<const ResourceInfo*> resources;  // sorted by resource name
};

class Registry {
 public:
  // The registry of everything draplane serves (docs/design/server.md lists it).
  static const Registry& Default();
  // The built-in resources with the DRA kinds admitted as `admission` says (Default() is the
  // Kubernetes 1.36 defaults). Cached per configuration.
  static const Registry& For(const DraAdmission& admission);

  // The resource `resource` of group/version, or nullptr.
  const ResourceInfo* Find(std::string_view group, std::string_view version,
                           std::string_view resource) const;
  // The resource whose kind is `kind` in group `group` (any served version), or nullptr.
  const ResourceInfo* FindKind(std::string_view group, std::string_view kind) const;
  // Every served group version: the core group first, then the groups in the order discovery
  // lists them.
  const std::vector<GroupVersionInfo>& group_versions() const { return group_versions_; }
  // Every storage's resource (not virtual, not `stored_as` another), in a fixed order.
  std::vector<const ResourceInfo*> StoredResources() const;

  explicit Registry(std::vector<ResourceInfo> resources);

 private:
  std::vector<std::unique_ptr<ResourceInfo>> resources_;
  std::vector<GroupVersionInfo> group_versions_;
};

}  // namespace draplane::server::handlers
