// The resources the client knows: where each lives in the REST API and which object-model type
// it decodes into.
//
// `ResourceType` describes one resource (group, version, plural name, kind, scope, whether it has
// a status subresource); `ResourceOf<T>()` maps a generated object type to its description, so the
// typed helpers (typed.h) and informers (informer.h) need only the type. Paths follow the
// Kubernetes REST conventions: `/api/v1/...` for the core group, `/apis/<group>/<version>/...`
// otherwise, with `/namespaces/<ns>/` for namespaced resources.
//
// Thread-safety: immutable data.
#pragma once

#include <string>
#include <string_view>

#include "api/gen/coordination_v1_types.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/draplane_v1alpha1_types.h"
#include "api/gen/events_v1_types.h"
#include "api/gen/resource_v1_types.h"

namespace draplane::client {

struct ResourceType {
  std::string_view group;     // "" for the core group
  std::string_view version;   // "v1"
  std::string_view resource;  // plural, "resourceclaims"
  std::string_view kind;      // "ResourceClaim"
  bool namespaced = false;
  bool has_status = false;  // a `status` subresource exists

  // "v1" or "resource.k8s.io/v1".
  std::string ApiVersion() const;
  // "/api/v1" or "/apis/resource.k8s.io/v1".
  std::string GroupVersionPath() const;
  // The collection path: ".../namespaces/<ns>/<resource>" for a non-empty namespace of a
  // namespaced resource, ".../<resource>" otherwise (cluster-scoped, or every namespace).
  std::string CollectionPath(std::string_view namespace_) const;
  // The object path, plus "/<subresource>" when non-empty.
  std::string ObjectPath(std::string_view namespace_, std::string_view name,
                         std::string_view subresource = "") const;
};

// The description of the resource whose objects are `T` (a generated kind such as
// api::corev1::Pod). Only the specializations declared below exist.
template <typename T>
const ResourceType& ResourceOf();

template <>
const ResourceType& ResourceOf<api::corev1::Pod>();
template <>
const ResourceType& ResourceOf<api::corev1::Node>();
template <>
const ResourceType& ResourceOf<api::corev1::Namespace>();
template <>
const ResourceType& ResourceOf<api::corev1::Event>();
template <>
const ResourceType& ResourceOf<api::coordinationv1::Lease>();
template <>
const ResourceType& ResourceOf<api::eventsv1::Event>();
template <>
const ResourceType& ResourceOf<api::resourcev1::DeviceClass>();
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceSlice>();
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceClaim>();
template <>
const ResourceType& ResourceOf<api::resourcev1::ResourceClaimTemplate>();
template <>
const ResourceType& ResourceOf<api::resourcev1::DeviceTaintRule>();
template <>
const ResourceType& ResourceOf<api::corev1::ResourceQuota>();
template <>
const ResourceType& ResourceOf<api::draplanev1alpha1::AllocationDecision>();
template <>
const ResourceType& ResourceOf<api::draplanev1alpha1::DeviceSharingPolicy>();

// Every resource above, in a fixed order (the in-memory API serves exactly these).
const std::vector<const ResourceType*>& KnownResources();

// The known resource with this group and plural name, or nullptr.
const ResourceType* FindResource(std::string_view group, std::string_view resource);
// The known resource with this apiVersion ("v1", "resource.k8s.io/v1") and kind, or nullptr.
const ResourceType* FindResourceByKind(std::string_view api_version, std::string_view kind);

// "namespace/name" for namespaced objects, "name" otherwise: the key of caches and work queues.
std::string ObjectKey(std::string_view namespace_, std::string_view name);
// Splits an ObjectKey.
void SplitObjectKey(std::string_view key, std::string* namespace_, std::string* name);

}  // namespace draplane::client
