#include "allocator/internal/constraints.h"

#include <algorithm>

#include "common/check.h"

namespace draplane::allocator::internal {
namespace {

using SetType = AttributeValue::SetType;

// Intersection of two sorted unique vectors.
std::vector<int64_t> Intersect(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  std::vector<int64_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Upstream's scalar comparison switch (`matchAttributeConstraint.add`): the new value's first set
// scalar field in the order string, int, bool, version decides which field of `held` is compared.
// Returns true when equal, false when different or when the new value has no scalar.
bool ScalarEqual(const AttributeValue& value, const AttributeValue& held) {
  if (value.string_value) return held.string_value && *held.string_value == *value.string_value;
  if (value.int_value) return held.int_value && *held.int_value == *value.int_value;
  if (value.bool_value) return held.bool_value && *held.bool_value == *value.bool_value;
  if (value.version_value) {
    // Versions compare by exact string: semver 2.0.0 values are in minimal form.
    return held.version_value && *held.version_value == *value.version_value;
  }
  return false;
}

// Upstream's distinct scalar switch: true when `value` duplicates `held`, or when `value` has no
// scalar at all (an unknown type never counts as distinct).
bool ScalarDuplicate(const AttributeValue& value, const AttributeValue& held) {
  if (value.string_value) return held.string_value && *held.string_value == *value.string_value;
  if (value.int_value) return held.int_value && *held.int_value == *value.int_value;
  if (value.bool_value) return held.bool_value && *held.bool_value == *value.bool_value;
  if (value.version_value) return held.version_value && *held.version_value == *value.version_value;
  return true;
}

}  // namespace

bool ConstraintState::AddValue(uint32_t index) {
  if (index == kNone) return false;  // the device does not have the attribute
  const AttributeValue& value = (*values_)[index];
  DRAPLANE_DCHECK(value.present);
  if (constraint_->kind == Constraint::Kind::kMatch) return AddMatch(value, index);
  return AddDistinct(value, index);
}

bool ConstraintState::AddMatch(const AttributeValue& value, uint32_t value_index) {
  if (list_mode_) {
    if (value.set_type == SetType::kUnknown) return false;
    if (num_devices_ == 0) {
      set_type_ = value.set_type;
      stack_.push_back(value.set);
    } else {
      if (value.set_type != set_type_) return false;
      std::vector<int64_t> narrowed = Intersect(stack_.back(), value.set);
      if (narrowed.empty()) return false;
      stack_.push_back(std::move(narrowed));
    }
  } else {
    if (num_devices_ == 0) {
      // The first device can always be picked, whatever its value looks like.
      first_value_ = value_index;
    } else if (!ScalarEqual(value, (*values_)[first_value_])) {
      return false;
    }
  }
  ++num_devices_;
  return true;
}

bool ConstraintState::AddDistinct(const AttributeValue& value, uint32_t value_index) {
  if (list_mode_) {
    if (value.set_type == SetType::kUnknown) return false;
    for (uint32_t held_index : held_) {
      const AttributeValue& held = (*values_)[held_index];
      if (held.set_type == SetType::kUnknown) continue;
      // Values of different types never intersect.
      if (held.set_type == value.set_type && !SortedDisjoint(held.set, value.set)) return false;
    }
  } else {
    for (uint32_t held_index : held_) {
      if (ScalarDuplicate(value, (*values_)[held_index])) return false;
    }
  }
  held_.push_back(value_index);
  ++num_devices_;
  return true;
}

void ConstraintState::Remove() {
  DRAPLANE_CHECK(num_devices_ > 0);
  --num_devices_;
  if (constraint_->kind == Constraint::Kind::kMatch) {
    if (list_mode_) stack_.pop_back();
    if (num_devices_ == 0) {
      first_value_ = kNone;
      set_type_ = SetType::kUnknown;
    }
  } else {
    held_.pop_back();
  }
}

void ConstraintState::AppendKey(std::vector<uint64_t>& key) const {
  key.push_back(static_cast<uint64_t>(num_devices_));
  if (constraint_->kind == Constraint::Kind::kMatch) {
    if (num_devices_ == 0) return;
    if (list_mode_) {
      key.push_back(static_cast<uint64_t>(set_type_));
      key.push_back(stack_.back().size());
      for (int64_t v : stack_.back()) key.push_back(static_cast<uint64_t>(v));
    } else {
      key.push_back(first_value_);
    }
    return;
  }
  // Distinct: the future depends on the set of held values, not their order.
  std::vector<uint32_t> sorted = held_;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t v : sorted) key.push_back(v);
}

}  // namespace draplane::allocator::internal
