#include "cel/device_input_api.h"

namespace draplane::cel {
namespace {

// `present` bits of DeviceAttribute's plain (list) fields, in declaration order.
constexpr uint64_t kIntsPresent = uint64_t{1} << 0;
constexpr uint64_t kBoolsPresent = uint64_t{1} << 1;
constexpr uint64_t kStringsPresent = uint64_t{1} << 2;
constexpr uint64_t kVersionsPresent = uint64_t{1} << 3;

}  // namespace

std::shared_ptr<const DeviceInput> DeviceInputFromApi(const api::resourcev1::Device& device,
                                                      std::string_view driver) {
  DeviceInput::Builder b(driver);
  b.SetAllowMultipleAllocations(device.allow_multiple_allocations.value_or(false));
  for (const auto& [name, a] : device.attributes) {
    // A list is set when non-empty or present in the input (upstream checks `IntValues != nil`).
    auto add_list = [&, &name = name, &a = a]() {
      if (!a.ints.empty() || (a.present & kIntsPresent)) {
        b.AddInts(name, a.ints);
      } else if (!a.bools.empty() || (a.present & kBoolsPresent)) {
        b.AddBools(name, a.bools);
      } else if (!a.strings.empty() || (a.present & kStringsPresent)) {
        b.AddStrings(name, a.strings);
      } else if (!a.versions.empty() || (a.present & kVersionsPresent)) {
        b.AddVersions(name, a.versions);
      } else {
        return false;
      }
      return true;
    };
    if (add_list()) continue;
    if (a.int_value) {
      b.AddInt(name, *a.int_value);
    } else if (a.bool_value) {
      b.AddBool(name, *a.bool_value);
    } else if (a.string_value) {
      b.AddString(name, *a.string_value);
    } else if (a.version_value) {
      b.AddVersion(name, *a.version_value);
    } else {
      b.AddUnsupported(name);
    }
  }
  for (const auto& [name, c] : device.capacity) b.AddCapacity(name, c.value);
  return std::move(b).Build();
}

}  // namespace draplane::cel
