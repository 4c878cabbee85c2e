#include "cel/runtime/device_nodes.h"

namespace draplane::cel {
namespace {
Value EmptyMapValue() {
  static const MapValue kEmpty;
  return Value::Map(&kEmpty);
}
}  // namespace

Value NoDeviceError() {
  static constexpr ErrorValue kError{"no such attribute: device"};
  return StaticError(&kError);
}

Value DeviceRootNode::Eval(EvalContext& ctx) const {
  ctx.cost += 1;
  if (ctx.device == nullptr) return NoDeviceError();
  return ctx.device->root(ctx.list_mode);
}

Value DeviceFieldNode::Eval(EvalContext& ctx) const {
  ctx.cost += 2;
  const DeviceInput* d = ctx.device;
  if (d == nullptr) return NoDeviceError();
  switch (field_) {
    case Field::kDriver:
      return Value::String(d->driver());
    case Field::kAttributes:
      return d->attributes(ctx.list_mode);
    case Field::kCapacity:
      return d->capacity();
    case Field::kAllowMultipleAllocations:
      return Value::Bool(d->allow_multiple_allocations());
  }
  return NoDeviceError();
}

Value DeviceDomainNode::Eval(EvalContext& ctx) const {
  ctx.cost += 3;
  const DeviceInput* d = ctx.device;
  if (d == nullptr) return NoDeviceError();
  const Value* m =
      capacity_ ? d->FindCapacityDomain(domain_) : d->FindAttributeDomain(ctx.list_mode, domain_);
  return m != nullptr ? *m : EmptyMapValue();
}

DeviceEntryNode::DeviceEntryNode(std::string domain, std::string id, bool capacity)
    : domain_(std::move(domain)),
      id_(std::move(id)),
      hash_(DeviceInput::HashQualifiedKey(domain_, id_)),
      capacity_(capacity),
      missing_text_("no such key: " + id_) {
  missing_.message = missing_text_;
}

Value DeviceEntryNode::Eval(EvalContext& ctx) const {
  ctx.cost += 4;
  const DeviceInput* d = ctx.device;
  if (d == nullptr) return NoDeviceError();
  const Value* v = capacity_ ? d->FindCapacity(hash_, domain_, id_)
                             : d->FindAttribute(ctx.list_mode, hash_, domain_, id_);
  if (v != nullptr) return *v;
  return StaticError(&missing_);
}

}  // namespace draplane::cel
