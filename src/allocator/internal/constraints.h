// Claim constraints during the search: matchAttribute and distinctAttribute with upstream's
// add/remove shape (`internal/experimental/constraint.go`, the matchAttribute code in
// `allocator_experimental.go`), the known bugs fixed:
//
// * matchAttribute with list values keeps a stack of running intersections, so `Remove` restores
//   the intersection before the removed device (kubernetes#140300 / #140326);
// * distinctAttribute keeps every chosen in-scope value and `Remove` drops exactly the last one,
//   so three or more devices of one request are pairwise distinct (kubernetes#140438 / #140600).
//
// Scalar mode (ListTypeAttributes off) keeps upstream's behaviour: matchAttribute accepts any
// first device that has the attribute, later devices need the same scalar type and value; list
// values are invisible; distinctAttribute compares scalars pairwise.
//
// Thread-safety: not thread-safe; one state per search.
#pragma once

#include <cstdint>
#include <vector>

#include "allocator/internal/problem.h"

namespace draplane::allocator::internal {

class ConstraintState {
 public:
  ConstraintState(const Constraint* constraint, const std::vector<AttributeValue>* values,
                  bool list_type_attributes)
      : constraint_(constraint), values_(values), list_mode_(list_type_attributes) {}

  // Checks a value (an index into the problem's values, kNone for "attribute absent") against
  // the values added so far and, if it fits, adds it. Returns false (state unchanged) when it
  // does not fit. Only called for devices in the constraint's scope.
  bool AddValue(uint32_t value_index);
  // AddValue with the device's own attribute value.
  bool Add(DeviceIndex device) { return AddValue(constraint_->value_of_device[device]); }
  // Undoes the last successful Add (calls are strictly last-in first-out).
  void Remove();

  // Appends a canonical encoding of the state that decides future Add results (for memo keys).
  void AppendKey(std::vector<uint64_t>& key) const;

  // The value a mismatch was against, for explanations: the first device's scalar, the current
  // intersection, or the values held; rendered by the caller.
  uint32_t first_value() const { return first_value_; }
  const std::vector<uint32_t>& held_values() const { return held_; }
  const std::vector<std::vector<int64_t>>& intersections() const { return stack_; }
  AttributeValue::SetType set_type() const { return set_type_; }
  int size() const { return num_devices_; }

 private:
  bool AddMatch(const AttributeValue& value, uint32_t value_index);
  bool AddDistinct(const AttributeValue& value, uint32_t value_index);

  const Constraint* constraint_;
  const std::vector<AttributeValue>* values_;
  bool list_mode_;
  int num_devices_ = 0;
  // matchAttribute, scalar mode: the first device's value.
  uint32_t first_value_ = kNone;
  // matchAttribute, list mode: the running intersections, one per added device.
  AttributeValue::SetType set_type_ = AttributeValue::SetType::kUnknown;
  std::vector<std::vector<int64_t>> stack_;
  // distinctAttribute: the value of every added device.
  std::vector<uint32_t> held_;
};

}  // namespace draplane::allocator::internal
