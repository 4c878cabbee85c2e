// Any Kubernetes object: one of the modelled kinds, or an unmodelled one kept as JSON.
//
// DecodeObject dispatches on `apiVersion` + `kind` to the generated codec of the matching type
// (api/gen/*_codec.h); kinds the model does not know (CRDs, ConfigMaps, `List`, ...) become an
// `Unstructured` that keeps the JSON object as is. EncodeObject is the inverse, so
// EncodeObject(DecodeObject(v)) == v for every object (the round-trip property the ctest suite
// `roundtrip.*` checks over the upstream fixtures).
//
// Usage:
//   FieldErrorList errors;
//   api::Object obj = api::DecodeObject(json, &errors);
//   if (auto* claim = std::get_if<api::resourcev1::ResourceClaim>(&obj)) { ... }
//   boost::json::value out = api::EncodeObject(obj);
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <variant>

#include "api/field_error.h"
#include "api/gen/coordination_v1_types.h"
#include "api/gen/core_v1_types.h"
#include "api/gen/draplane_v1alpha1_types.h"
#include "api/gen/events_v1_types.h"
#include "api/gen/meta_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "api/gen/scheduling_v1_types.h"
#include "api/meta/raw_json.h"

namespace draplane::api {

// An object of a kind the model does not know, kept verbatim.
struct Unstructured {
  // The whole object (a JSON object, or whatever value the input held).
  RawJson json;

  // Top-level `apiVersion` / `kind` / `metadata.name` / `metadata.namespace`; empty when absent
  // or not a string.
  std::string api_version() const;
  std::string kind() const;
  std::string name() const;
  std::string namespace_() const;

  friend bool operator==(const Unstructured&, const Unstructured&) = default;
};

using Object =
    std::variant<Unstructured, metav1::Status, corev1::Pod, corev1::PodList, corev1::Node,
                 corev1::NodeList, corev1::Namespace, corev1::NamespaceList, corev1::Event,
                 corev1::EventList, corev1::Binding, coordinationv1::Lease,
                 coordinationv1::LeaseList, eventsv1::Event, eventsv1::EventList,
                 resourcev1::DeviceClass, resourcev1::DeviceClassList, resourcev1::ResourceSlice,
                 resourcev1::ResourceSliceList, resourcev1::ResourceClaim,
                 resourcev1::ResourceClaimList, resourcev1::ResourceClaimTemplate,
                 resourcev1::ResourceClaimTemplateList, resourcev1::DeviceTaintRule,
                 resourcev1::DeviceTaintRuleList, corev1::ResourceQuota, corev1::ResourceQuotaList,
                 draplanev1alpha1::AllocationDecision, draplanev1alpha1::AllocationDecisionList,
                 schedulingv1::PriorityClass, schedulingv1::PriorityClassList,
                 draplanev1alpha1::DeviceSharingPolicy, draplanev1alpha1::DeviceSharingPolicyList>;

// True when `api_version` + `kind` name a modelled type (one of the Object alternatives other
// than Unstructured).
bool IsModelledKind(std::string_view api_version, std::string_view kind);

// An owner reference naming `pod` as the controller of the object that carries it, with
// blockOwnerDeletion set (apimachinery metav1.NewControllerRef).
metav1::OwnerReference NewControllerRef(const corev1::Pod& pod);

// Decodes `json` as the type its `apiVersion` and `kind` name, Unstructured when unknown.
// Appends field errors (paths relative to the object) for values of the wrong JSON type and for a
// missing or non-string `apiVersion` / `kind` (`kind: Required value`); a non-object `json` is
// reported as a type error on the empty path and returned as Unstructured.
Object DecodeObject(const boost::json::value& json, FieldErrorList* errors);

// Encodes any object (Unstructured: its JSON unchanged).
boost::json::value EncodeObject(const Object& object, boost::json::storage_ptr sp = {});

// apiVersion, kind, metadata.name and metadata.namespace of any object.
std::string ObjectApiVersion(const Object& object);
std::string ObjectKind(const Object& object);
std::string ObjectName(const Object& object);
std::string ObjectNamespace(const Object& object);
// The object's metadata, or nullptr for Unstructured, lists and Status.
const metav1::ObjectMeta* ObjectMetadata(const Object& object);

}  // namespace draplane::api
