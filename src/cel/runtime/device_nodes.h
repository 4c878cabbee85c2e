// Nodes that read the DRA `device` variable directly from a DeviceInput, so that the common
// selector shapes cost one hash probe instead of map lookups (the planner emits them for
// `device`, `device.driver`, `device.attributes`, `device.capacity`,
// `device.allowMultipleAllocations`, `device.attributes["<domain>"]` and
// `device.attributes["<domain>"].<id>` with constant keys). Runtime costs equal those of the
// generic attribute path (1 for the variable and 1 per qualifier).
//
// Thread-safety: immutable; evaluate concurrently.
#pragma once

#include <string>

#include "cel/runtime/device_input.h"
#include "cel/runtime/nodes.h"

namespace draplane::cel {

class DeviceRootNode final : public Node {
 public:
  Value Eval(EvalContext& ctx) const override;
};

class DeviceFieldNode final : public Node {
 public:
  enum class Field : uint8_t { kDriver, kAttributes, kCapacity, kAllowMultipleAllocations };
  explicit DeviceFieldNode(Field field) : field_(field) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  Field field_;
};

// device.attributes["<domain>"] / device.capacity["<domain>"]: the domain's map, or the empty
// map for an unknown domain.
class DeviceDomainNode final : public Node {
 public:
  DeviceDomainNode(std::string domain, bool capacity)
      : domain_(std::move(domain)), capacity_(capacity) {}
  Value Eval(EvalContext& ctx) const override;

 private:
  std::string domain_;
  bool capacity_;
};

// device.attributes["<domain>"].<id> (or ["<id>"]) and the capacity equivalent: the value, or
// the error "no such key: <id>".
class DeviceEntryNode final : public Node {
 public:
  DeviceEntryNode(std::string domain, std::string id, bool capacity);
  Value Eval(EvalContext& ctx) const override;

 private:
  std::string domain_;
  std::string id_;
  uint64_t hash_;
  bool capacity_;
  ErrorValue missing_;
  std::string missing_text_;
};

// The error every device node returns when a program of the DRA environment is evaluated
// without a device.
Value NoDeviceError();

}  // namespace draplane::cel
