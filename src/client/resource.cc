#include "client/resource.h"

#include <vector>

#include "client/resource_scheduling_v1.h"
#include "client/resource_v1alpha3.h"

namespace draplane::client {
namespace {

constexpr ResourceType kPods{"", "v1", "pods", "Pod", true, true};
constexpr ResourceType kNodes{"", "v1", "nodes", "Node", false, true};
constexpr ResourceType kNamespaces{"", "v1", "namespaces", "Namespace", false, true};
constexpr ResourceType kCoreEvents{"", "v1", "events", "Event", true, false};
constexpr ResourceType kLeases{"coordination.k8s.io", "v1", "leases", "Lease", true, false};
constexpr ResourceType kEvents{"events.k8s.io", "v1", "events", "Event", true, false};
constexpr ResourceType kDeviceClasses{"resource.k8s.io", "v1",  "deviceclasses",
                                      "DeviceClass",     false, false};
constexpr ResourceType kResourceSlices{"resource.k8s.io", "v1",  "resourceslices",
                                       "ResourceSlice",   false, false};
constexpr ResourceType kResourceClaims{"resource.k8s.io", "v1", "resourceclaims",
                                       "ResourceClaim",   true, true};
constexpr ResourceType kResourceClaimTemplates{
    "resource.k8s.io", "v1", "resourceclaimtemplates", "ResourceClaimTemplate", true, false};
constexpr ResourceType kDeviceTaintRules{"resource.k8s.io", "v1",  "devicetaintrules",
                                         "DeviceTaintRule", false, true};
constexpr ResourceType kResourceQuotas{"", "v1", "resourcequotas", "ResourceQuota", true, true};
constexpr ResourceType kResourcePoolStatusRequests{
    "resource.k8s.io",           "v1alpha3", "resourcepoolstatusrequests",
    "ResourcePoolStatusRequest", false,      true};
constexpr ResourceType kPriorityClasses{"scheduling.k8s.io", "v1",  "priorityclasses",
                                        "PriorityClass",     false, false};
constexpr ResourceType kAllocationDecisions{"draplane.dev",       "v1alpha1", "allocationdecisions",
                                            "AllocationDecision", true,       false};
constexpr ResourceType kDeviceSharingPolicies{
    "draplane.dev", "v1alpha1", "devicesharingpolicies", "DeviceSharingPolicy", false, true};

}  // namespace

std::string ResourceType::ApiVersion() const {
  if (group.empty()) return std::string(version);
  return std::string(group) + "/" + std::string(version);
}

std::string ResourceType::GroupVersionPath() const {
  if (group.empty()) return "/api/" + std::string(version);
  return "/apis/" + std::string(group) + "/" + std::string(version);
}

std::string ResourceType::CollectionPath(std::string_view namespace_) const {
  std::string path = GroupVersionPath();
  if (namespaced && !namespace_.empty()) {
    path += "/namespaces/";
    path += namespace_;
  }
  path += "/";
  path += resource;
  return path;
}

std::string ResourceType::ObjectPath(std::string_view namespace_, std::string_view name,
                                     std::string_view subresource) const {
  std::string path = CollectionPath(namespace_);
  path += "/";
  path += name;
  if (!subresource.empty()) {
    path += "/";
    path += subresource;
  }
  return path;
}

template <>
const ResourceType& ResourceOf<api::corev1::Pod>() {
  return kPods;
}
template <>
const ResourceType& ResourceOf<api::corev1::Node>() {
  return kNodes;
}
template <>
const ResourceType& ResourceOf<api::corev1::Namespace>() {
  return kNamespaces;
}
template <>
const ResourceType& ResourceOf<api::corev1::Event>() {
  return kCoreEvents;
}
template <>
const ResourceType& ResourceOf<api::coordinationv1::Lease>() {
  return kLeases;
}
template <>
const ResourceType& ResourceOf<api::eventsv1::Event>() {
  return kEvents;
}
template <>
const ResourceType& ResourceOf<api::resourcev1::DeviceClass>() {
  return kDeviceClasses;
}
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceSlice>() {
  return kResourceSlices;
}
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceClaim>() {
  return kResourceClaims;
}
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceClaimTemplate>() {
  return kResourceClaimTemplates;
}
template <>
const ResourceType& ResourceOf<api::resourcev1::DeviceTaintRule>() {
  return kDeviceTaintRules;
}

template <>
const ResourceType& ResourceOf<api::corev1::ResourceQuota>() {
  return kResourceQuotas;
}
template <>
const ResourceType& ResourceOf<api::schedulingv1::PriorityClass>() {
  return kPriorityClasses;
}
template <>
const ResourceType& ResourceOf<api::draplanev1alpha1::AllocationDecision>() {
  return kAllocationDecisions;
}
template <>
const ResourceType& ResourceOf<api::draplanev1alpha1::DeviceSharingPolicy>() {
  return kDeviceSharingPolicies;
}

template <>
const ResourceType& ResourceOf<api::resourcev1alpha3::ResourcePoolStatusRequest>() {
  return kResourcePoolStatusRequests;
}

const std::vector<const ResourceType*>& KnownResources() {
  static const std::vector<const ResourceType*> kAll = {&kPods,
                                                        &kNodes,
                                                        &kNamespaces,
                                                        &kCoreEvents,
                                                        &kLeases,
                                                        &kEvents,
                                                        &kDeviceClasses,
                                                        &kResourceSlices,
                                                        &kResourceClaims,
                                                        &kResourceClaimTemplates,
                                                        &kDeviceTaintRules,
                                                        &kResourceQuotas,
                                                        &kPriorityClasses,
                                                        &kAllocationDecisions,
                                                        &kDeviceSharingPolicies,
                                                        &kResourcePoolStatusRequests};
  return kAll;
}

const ResourceType* FindResource(std::string_view group, std::string_view resource) {
  for (const ResourceType* type : KnownResources()) {
    if (type->group == group && type->resource == resource) return type;
  }
  return nullptr;
}

const ResourceType* FindResourceByKind(std::string_view api_version, std::string_view kind) {
  for (const ResourceType* type : KnownResources()) {
    if (type->kind == kind && type->ApiVersion() == api_version) return type;
  }
  return nullptr;
}

std::string ObjectKey(std::string_view namespace_, std::string_view name) {
  if (namespace_.empty()) return std::string(name);
  std::string key;
  key.reserve(namespace_.size() + 1 + name.size());
  key += namespace_;
  key += '/';
  key += name;
  return key;
}

void SplitObjectKey(std::string_view key, std::string* namespace_, std::string* name) {
  size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    namespace_->clear();
    *name = std::string(key);
  } else {
    *namespace_ = std::string(key.substr(0, slash));
    *name = std::string(key.substr(slash + 1));
  }
}

}  // namespace draplane::client
