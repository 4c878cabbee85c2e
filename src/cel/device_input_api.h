// Building a DeviceInput from the generated API types (api/gen resource.k8s.io/v1).
//
// Follows dynamic-resource-allocation cel/compile.go `getAttributeValue`: the list fields (ints,
// bools, strings, versions; present even when empty) win, then the scalar fields (int, bool,
// string, version); an attribute with no value set is "unsupported attribute value". How a list
// reads is the evaluating program's business (list_attribute_mode.h). Capacities contribute their
// `value`.
//
// Thread-safety: pure function.
#pragma once

#include <memory>
#include <string_view>

#include "api/gen/resource_v1_types.h"
#include "cel/runtime/device_input.h"

namespace draplane::cel {

// Converts `device` of a ResourceSlice whose `spec.driver` is `driver`. The allocator calls this
// once per device per slice generation and keeps the result next to the device.
std::shared_ptr<const DeviceInput> DeviceInputFromApi(const api::resourcev1::Device& device,
                                                      std::string_view driver);

}  // namespace draplane::cel
