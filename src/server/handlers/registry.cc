#include "server/handlers/registry.h"

#include <algorithm>
#include <map>
#include <utility>

#include "api/events.h"
#include "common/mutex.h"
#include "server/handlers/json_util.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

const std::vector<std::string> kAllVerbs = {"create", "delete", "deletecollection", "get",
                                            "list",   "patch",  "update",           "watch"};
const std::vector<std::string> kStatusVerbs = {"get", "patch", "update"};

ResourceInfo Resource(std::string group, std::string resource, std::string kind,
                      std::string singular, bool namespaced, std::string version = "v1") {
  ResourceInfo info;
  info.group = std::move(group);
  info.version = std::move(version);
  info.resource = std::move(resource);
  info.kind = std::move(kind);
  info.singular = std::move(singular);
  info.namespaced = namespaced;
  info.verbs = kAllVerbs;
  return info;
}

ResourceInfo CreateOnly(std::string group, std::string resource, std::string kind,
                        std::string singular, bool namespaced) {
  ResourceInfo info = Resource(std::move(group), std::move(resource), std::move(kind),
                               std::move(singular), namespaced);
  info.verbs = {"create"};
  info.virtual_resource = true;
  return info;
}

SubresourceInfo StatusSubresource(const std::string& kind) {
  return {"status", kind, kStatusVerbs};
}

// draplane.dev/v1alpha1, draplane's own kinds (their types in api/schema/draplane_v1alpha1.yaml).
// A new kind is one entry here with its strategy (draplane_strategies.cc); discovery, OpenAPI,
// tables, field selectors and the store follow from it. Listed in the category `draplane`, so
// `kubectl get draplane` shows them all.
std::vector<ResourceInfo> DraplaneResources() {
  constexpr std::string_view kGroup = "draplane.dev";
  constexpr std::string_view kVersion = "v1alpha1";
  std::vector<ResourceInfo> out;
  {
    ResourceInfo r = Resource(std::string(kGroup), "allocationdecisions", "AllocationDecision",
                              "allocationdecision", true, std::string(kVersion));
    r.categories = {"draplane"};
    r.strategy = &AllocationDecisionStrategy();
    out.push_back(std::move(r));
  }
  {
    // Cluster scoped; written by admins, its status by the scheduler (authz/bootstrap.cc).
    ResourceInfo r = Resource(std::string(kGroup), "devicesharingpolicies", "DeviceSharingPolicy",
                              "devicesharingpolicy", false, std::string(kVersion));
    r.short_names = {"dsp"};
    r.categories = {"draplane"};
    r.subresources = {StatusSubresource("DeviceSharingPolicy")};
    r.tracks_generation = true;
    r.strategy = &DeviceSharingPolicyStrategy();
    out.push_back(std::move(r));
  }
  {
    // Read-only, computed on request (handlers/pod_explanations.h); not in the category, since
    // `kubectl get draplane` lists and these cannot be listed.
    ResourceInfo r = Resource(std::string(kGroup), "podexplanations", "PodExplanation",
                              "podexplanation", true, std::string(kVersion));
    r.verbs = {"get"};
    r.virtual_resource = true;
    r.computed = true;
    out.push_back(std::move(r));
  }
  return out;
}

// The served resources, described as kube-apiserver 1.33 describes them in discovery
// (api/discovery/*.json upstream), plus resource.k8s.io/v1 DeviceTaintRule and, with
// DRAResourcePoolStatus (on by default), resource.k8s.io/v1alpha3 ResourcePoolStatusRequest.
std::vector<ResourceInfo> DefaultResources(const DraAdmission& admission) {
  std::vector<ResourceInfo> out;

  // Core group.
  {
    ResourceInfo r = CreateOnly("", "bindings", "Binding", "binding", true);
    r.strategy = &BindingStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("", "events", "Event", "event", true);
    r.short_names = {"ev"};
    r.allow_create_on_update = true;
    r.strategy = &CoreEventStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("", "namespaces", "Namespace", "namespace", false);
    r.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
    r.short_names = {"ns"};
    r.subresources = {{"finalize", "Namespace", {"update"}}, StatusSubresource("Namespace")};
    r.strategy = &NamespaceStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("", "nodes", "Node", "node", false);
    r.short_names = {"no"};
    r.subresources = {StatusSubresource("Node")};
    r.strategy = &NodeStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("", "resourcequotas", "ResourceQuota", "resourcequota", true);
    r.short_names = {"quota"};
    r.subresources = {StatusSubresource("ResourceQuota")};
    r.strategy = &ResourceQuotaStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("", "pods", "Pod", "pod", true);
    r.short_names = {"po"};
    r.categories = {"all"};
    r.subresources = {{"binding", "Binding", {"create"}},
                      {"eviction", "Eviction", {"create"}, "policy", "v1"},
                      StatusSubresource("Pod")};
    r.tracks_generation = true;
    r.strategy = &PodStrategy();
    out.push_back(std::move(r));
  }

  // events.k8s.io
  {
    ResourceInfo r = Resource("events.k8s.io", "events", "Event", "event", true);
    r.short_names = {"ev"};
    r.allow_create_on_update = true;
    r.stored_as = StoredAs{"", "events", &api::EventsV1ToCoreEvent, &api::CoreEventToEventsV1};
    r.strategy = &EventsV1EventStrategy();
    out.push_back(std::move(r));
  }
  // authentication.k8s.io
  {
    ResourceInfo r = CreateOnly("authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview",
                                "selfsubjectreview", false);
    r.strategy = &ReviewStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r =
        CreateOnly("authentication.k8s.io", "tokenreviews", "TokenReview", "tokenreview", false);
    r.strategy = &ReviewStrategy();
    out.push_back(std::move(r));
  }
  // authorization.k8s.io
  for (auto [resource, kind, namespaced] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"localsubjectaccessreviews", "LocalSubjectAccessReview", true},
           {"selfsubjectaccessreviews", "SelfSubjectAccessReview", false},
           {"selfsubjectrulesreviews", "SelfSubjectRulesReview", false},
           {"subjectaccessreviews", "SubjectAccessReview", false}}) {
    std::string singular = resource.substr(0, resource.size() - 1);
    ResourceInfo r = CreateOnly("authorization.k8s.io", resource, kind, singular, namespaced);
    r.strategy = &ReviewStrategy();
    out.push_back(std::move(r));
  }
  // rbac.authorization.k8s.io
  for (auto [resource, kind, namespaced] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"clusterrolebindings", "ClusterRoleBinding", false},
           {"clusterroles", "ClusterRole", false},
           {"rolebindings", "RoleBinding", true},
           {"roles", "Role", true}}) {
    std::string singular = resource.substr(0, resource.size() - 1);
    ResourceInfo r = Resource("rbac.authorization.k8s.io", resource, kind, singular, namespaced);
    r.strategy = kind.ends_with("Binding") ? &RbacBindingStrategy() : &RbacStrategy();
    out.push_back(std::move(r));
  }
  // scheduling.k8s.io
  {
    ResourceInfo r =
        Resource("scheduling.k8s.io", "priorityclasses", "PriorityClass", "priorityclass", false);
    r.short_names = {"pc"};
    r.strategy = &PriorityClassStrategy();
    out.push_back(std::move(r));
  }
  // coordination.k8s.io
  {
    ResourceInfo r = Resource("coordination.k8s.io", "leases", "Lease", "lease", true);
    r.allow_create_on_update = true;
    r.strategy = &LeaseStrategy();
    out.push_back(std::move(r));
  }
  // resource.k8s.io
  {
    ResourceInfo r =
        Resource("resource.k8s.io", "deviceclasses", "DeviceClass", "deviceclass", false);
    r.tracks_generation = true;
    r.strategy = &DeviceClassStrategy(admission);
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("resource.k8s.io", "devicetaintrules", "DeviceTaintRule",
                              "devicetaintrule", false);
    r.subresources = {StatusSubresource("DeviceTaintRule")};
    r.tracks_generation = true;
    r.strategy = &DeviceTaintRuleStrategy();
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r =
        Resource("resource.k8s.io", "resourceclaims", "ResourceClaim", "resourceclaim", true);
    r.subresources = {StatusSubresource("ResourceClaim")};
    r.strategy = &ResourceClaimStrategy(admission);
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r = Resource("resource.k8s.io", "resourceclaimtemplates", "ResourceClaimTemplate",
                              "resourceclaimtemplate", true);
    r.strategy = &ResourceClaimTemplateStrategy(admission);
    out.push_back(std::move(r));
  }
  {
    ResourceInfo r =
        Resource("resource.k8s.io", "resourceslices", "ResourceSlice", "resourceslice", false);
    r.tracks_generation = true;
    r.strategy = &ResourceSliceStrategy(admission);
    out.push_back(std::move(r));
  }
  if (admission.resource_pool_status) {
    ResourceInfo r =
        Resource("resource.k8s.io", "resourcepoolstatusrequests", "ResourcePoolStatusRequest",
                 "resourcepoolstatusrequest", false, "v1alpha3");
    r.subresources = {StatusSubresource("ResourcePoolStatusRequest")};
    r.strategy = &ResourcePoolStatusRequestStrategy();
    out.push_back(std::move(r));
  }
  for (ResourceInfo& r : DraplaneResources()) out.push_back(std::move(r));
  return out;
}

}  // namespace

std::string ResourceInfo::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string ResourceInfo::GroupKind() const { return group.empty() ? kind : kind + "." + group; }

std::string ResourceInfo::StoreResource() const {
  const std::string& store_group = stored_as ? stored_as->group : group;
  const std::string& store_resource = stored_as ? stored_as->resource : resource;
  return (store_group.empty() ? std::string("core") : store_group) + "/" + store_resource;
}

std::string ResourceInfo::ToStored(JsonObject&& served) const {
  if (stored_as) stored_as->to_stored(served);
  return ToStoredJson(std::move(served));
}

std::string ResourceInfo::Served(std::string_view stored, int64_t revision) const {
  if (!stored_as)
    return revision == 0 ? std::string(stored) : WithResourceVersion(stored, revision);
  StatusOr<JsonObject> object = ParseObject(stored);
  // Stored bytes always parse; were they not, the caller's own parse reports it.
  if (!object.ok()) return std::string(stored);
  stored_as->to_served(*object);
  std::string served = ToStoredJson(std::move(object).value());
  return revision == 0 ? served : WithResourceVersion(served, revision);
}

void ResourceInfo::ToServed(JsonObject& stored) const {
  if (stored_as) stored_as->to_served(stored);
}

const SubresourceInfo* ResourceInfo::FindSubresource(std::string_view name) const {
  for (const SubresourceInfo& s : subresources) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

bool ResourceInfo::HasVerb(std::string_view verb) const {
  return std::find(verbs.begin(), verbs.end(), verb) != verbs.end();
}

Registry::Registry(std::vector<ResourceInfo> resources) {
  std::vector<std::string> group_order;
  for (ResourceInfo& info : resources) {
    std::string gv = info.ApiVersion();
    if (std::find(group_order.begin(), group_order.end(), gv) == group_order.end()) {
      group_order.push_back(gv);
    }
    resources_.push_back(std::make_unique<ResourceInfo>(std::move(info)));
  }
  for (const std::string& gv : group_order) {
    GroupVersionInfo group_version;
    for (const auto& info : resources_) {
      if (info->ApiVersion() != gv) continue;
      group_version.group = info->group;
      group_version.version = info->version;
      group_version.resources.push_back(info.get());
    }
    std::sort(
        group_version.resources.begin(), group_version.resources.end(),
        [](const ResourceInfo* a, const ResourceInfo* b) { return a->resource < b->resource; });
    group_versions_.push_back(std::move(group_version));
  }
}

const Registry& Registry::Default() { return For(DraAdmission{}); }

const Registry& Registry::For(const DraAdmission& admission) {
  // One registry per admission configuration in use; never destroyed.
  static Mutex mu;
  static auto* registries = new std::vector<std::pair<DraAdmission, const Registry*>>();
  MutexLock lock(mu);
  for (const auto& [a, r] : *registries) {
    if (a == admission) return *r;
  }
  registries->emplace_back(admission, new Registry(DefaultResources(admission)));
  return *registries->back().second;
}

const ResourceInfo* Registry::Find(std::string_view group, std::string_view version,
                                   std::string_view resource) const {
  for (const auto& info : resources_) {
    if (info->group == group && info->version == version && info->resource == resource) {
      return info.get();
    }
  }
  return nullptr;
}

const ResourceInfo* Registry::FindKind(std::string_view group, std::string_view kind) const {
  for (const auto& info : resources_) {
    if (info->group == group && info->kind == kind && !info->virtual_resource) return info.get();
  }
  return nullptr;
}

std::vector<const ResourceInfo*> Registry::StoredResources() const {
  std::vector<const ResourceInfo*> out;
  for (const auto& info : resources_) {
    // A resource kept in another's storage is that one's objects (listed once, as that one).
    if (!info->virtual_resource && !info->stored_as) out.push_back(info.get());
  }
  return out;
}

}  // namespace draplane::server::handlers
