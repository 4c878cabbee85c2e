// Building blocks shared by the validators of the resource.k8s.io/v1 kinds (internal).
//
// The list helpers mirror validateSlice / validateSet / validateMap of
// pkg/apis/resource/validation/validation.go: a list over its limit yields one TooMany error and
// nothing else (a DoS guard), otherwise each item is validated and, for sets, duplicates are
// reported as Duplicate at the later index.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/gen/resource_v1_types.h"
#include "api/meta/raw_json.h"
#include "api/validation/validation.h"

namespace draplane::api::validation::internal {

inline void Append(FieldErrorList& to, FieldErrorList from) {
  for (FieldError& e : from) to.push_back(std::move(e));
}

// ASCII lower case, as strings.ToLower on the ASCII names Kubernetes validates.
inline std::string ToLowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// A set key as a Duplicate error prints it: quoted and escaped.
inline std::string QuotedKey(const std::string& key) { return RenderValue(key); }

// True when the list is over `max` (a TooMany error was appended); the caller then skips the
// items.
template <typename T>
bool TooManyItems(const std::vector<T>& items, size_t max, const FieldPath& path,
                  FieldErrorList& errs) {
  if (items.size() <= max) return false;
  errs.push_back(TooMany(path, static_cast<int64_t>(items.size()), static_cast<int64_t>(max)));
  return true;
}

// validateSlice: the limit, then `item(value, path[i])` for each item. `max` < 0: no limit.
template <typename T, typename ItemFn>
void ValidateList(const std::vector<T>& items, int64_t max, const FieldPath& path, ItemFn item,
                  FieldErrorList& errs) {
  if (max >= 0 && TooManyItems(items, static_cast<size_t>(max), path, errs)) return;
  for (size_t i = 0; i < items.size(); ++i) item(items[i], path.Index(static_cast<int64_t>(i)));
}

// validateSet: ValidateList, then Duplicate at path[i] for each item whose key repeats an earlier
// one. `key(value)` returns the key; `render(key)` how the error prints it.
template <typename T, typename ItemFn, typename KeyFn, typename RenderFn>
void ValidateSet(const std::vector<T>& items, int64_t max, const FieldPath& path, ItemFn item,
                 KeyFn key, RenderFn render, FieldErrorList& errs) {
  if (max >= 0 && TooManyItems(items, static_cast<size_t>(max), path, errs)) return;
  for (size_t i = 0; i < items.size(); ++i) item(items[i], path.Index(static_cast<int64_t>(i)));
  std::set<std::string> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string k = key(items[i]);
    if (!seen.insert(k).second) {
      errs.push_back(Duplicate(path.Index(static_cast<int64_t>(i)), render(k)));
    }
  }
}

// The names of a claim's requests and, for prioritized-list requests, their subrequests
// (gatherRequestNames). A reference is "req" or "req/sub".
class RequestNames {
 public:
  explicit RequestNames(const resourcev1::DeviceClaim& claim);
  bool Has(std::string_view reference) const;

 private:
  std::map<std::string, std::optional<std::set<std::string>>, std::less<>> names_;
};

// validateRequestNameRef: the reference's segments are DNS labels and it names a request or
// subrequest of the claim.
FieldErrorList ValidateRequestNameRef(std::string_view reference, const FieldPath& path,
                                      const RequestNames& names);

// A CEL selector expression: at most 10 KiB (nothing when `stored`: stored expressions were
// valid when they were stored).
FieldErrorList ValidateCELExpression(std::string_view expression, const FieldPath& path,
                                     bool stored);
// A list of device selectors (at most 32), each with a `cel` block.
FieldErrorList ValidateSelectors(const std::vector<resourcev1::DeviceSelector>& selectors,
                                 const FieldPath& path, bool stored);

// An opaque configuration: `opaque` required; its driver a driver name; its parameters a JSON
// object of at most 10 KiB (the size is not checked when `stored`).
FieldErrorList ValidateDeviceConfiguration(
    const std::optional<resourcev1::OpaqueDeviceConfiguration>& opaque, const FieldPath& path,
    bool stored);
// validateRawExtension: present, at most `max_length` bytes of JSON (unless `stored`), a JSON
// object.
FieldErrorList ValidateRawExtension(const RawJson& raw, const FieldPath& path, bool stored,
                                    size_t max_length);

FieldErrorList ValidateDeviceTaint(const resourcev1::DeviceTaint& taint,
                                   const resourcev1::DeviceTaint* old, const FieldPath& path);
FieldErrorList ValidateDeviceToleration(const resourcev1::DeviceToleration& toleration,
                                        const FieldPath& path);
// Binding conditions and binding failure conditions of a device or an allocation result
// (reported under `path`): at most 4 each, label names, no duplicates, no overlap, both or
// neither. `*_present` say whether the lists were present in the input (for the `null` vs `[]`
// rendering of an empty list).
FieldErrorList ValidateBindingParameters(const std::vector<std::string>& conditions,
                                         bool conditions_present,
                                         const std::vector<std::string>& failure_conditions,
                                         bool failure_conditions_present, const FieldPath& path);
// skipNodeOperations: known values (declarative), no duplicates, and NodePrepareResources only
// together with NodeUnprepareResources or "*".
FieldErrorList ValidateSkipNodeOperations(const std::vector<std::string>& operations,
                                          const FieldPath& path);

// The ResourceClaimSpec rules (validateDeviceClaim).
FieldErrorList ValidateDeviceClaim(const resourcev1::DeviceClaim& claim, const FieldPath& path,
                                   bool stored, const Features& features);

// Bits of the generated `present` masks (one bit per plain field in schema order) that the
// validation needs to tell an absent list (Go nil) from an empty one. Pinned by
// validation_test.cc against the codec.
inline constexpr int kSliceSpecDevicesBit = 2;
inline constexpr int kSliceSpecSharedCountersBit = 3;
inline constexpr int kAttributeIntsBit = 0;
inline constexpr int kAttributeBoolsBit = 1;
inline constexpr int kAttributeStringsBit = 2;
inline constexpr int kAttributeVersionsBit = 3;
inline constexpr int kDeviceConsumesCountersBit = 3;
inline constexpr int kDeviceTaintsBit = 4;
inline constexpr int kDeviceBindingConditionsBit = 5;
inline constexpr int kDeviceBindingFailureConditionsBit = 6;
inline constexpr int kResultBindingConditionsBit = 5;
inline constexpr int kResultBindingFailureConditionsBit = 6;
inline constexpr int kNodeSelectorTermsBit = 0;
inline constexpr int kCounterConsumptionCompatibilityGroupsBit = 2;
inline constexpr int kExactRequestTolerationsBit = 4;
inline constexpr int kExactRequestDerivedAttributesBit = 5;
inline constexpr int kSubRequestTolerationsBit = 5;
inline constexpr int kSubRequestDerivedAttributesBit = 6;
inline constexpr int kRequestFirstAvailableBit = 1;

inline bool PresentBit(uint64_t present, int bit) { return (present >> bit) & 1; }
inline void ClearPresentBit(uint64_t& present, int bit) { present &= ~(uint64_t{1} << bit); }

}  // namespace draplane::api::validation::internal
