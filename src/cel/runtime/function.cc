#include "cel/runtime/function.h"

namespace draplane::cel {

bool ArgKindMatches(ArgKind k, const Value& v) {
  switch (k) {
    case ArgKind::kAny:
      return true;
    case ArgKind::kNull:
      return v.kind() == ValueKind::kNull;
    case ArgKind::kBool:
      return v.kind() == ValueKind::kBool;
    case ArgKind::kInt:
      return v.kind() == ValueKind::kInt;
    case ArgKind::kUint:
      return v.kind() == ValueKind::kUint;
    case ArgKind::kDouble:
      return v.kind() == ValueKind::kDouble;
    case ArgKind::kString:
      return v.kind() == ValueKind::kString;
    case ArgKind::kBytes:
      return v.kind() == ValueKind::kBytes;
    case ArgKind::kList:
      return v.kind() == ValueKind::kList;
    case ArgKind::kMap:
      return v.kind() == ValueKind::kMap;
    case ArgKind::kType:
      return v.kind() == ValueKind::kType;
    case ArgKind::kOptional:
      return v.kind() == ValueKind::kOptional;
    case ArgKind::kTimestamp:
      return v.kind() == ValueKind::kTimestamp;
    case ArgKind::kDuration:
      return v.kind() == ValueKind::kDuration;
    case ArgKind::kQuantity:
      return v.kind() == ValueKind::kQuantity;
    case ArgKind::kSemver:
      return v.kind() == ValueKind::kSemver;
    case ArgKind::kIP:
      return v.kind() == ValueKind::kIP;
    case ArgKind::kCIDR:
      return v.kind() == ValueKind::kCIDR;
    case ArgKind::kURL:
      return v.kind() == ValueKind::kURL;
  }
  return false;
}

ArgKind ArgKindOf(const Type& t) {
  switch (t.kind()) {
    case TypeKind::kNull:
      return ArgKind::kNull;
    case TypeKind::kBool:
      return ArgKind::kBool;
    case TypeKind::kInt:
      return ArgKind::kInt;
    case TypeKind::kUint:
      return ArgKind::kUint;
    case TypeKind::kDouble:
      return ArgKind::kDouble;
    case TypeKind::kString:
      return ArgKind::kString;
    case TypeKind::kBytes:
      return ArgKind::kBytes;
    case TypeKind::kTimestamp:
      return ArgKind::kTimestamp;
    case TypeKind::kDuration:
      return ArgKind::kDuration;
    case TypeKind::kList:
      return ArgKind::kList;
    case TypeKind::kMap:
      return ArgKind::kMap;
    case TypeKind::kType:
      return ArgKind::kType;
    case TypeKind::kOpaque:
      if (t.name() == "optional_type") return ArgKind::kOptional;
      if (t.name() == "kubernetes.Quantity") return ArgKind::kQuantity;
      if (t.name() == "kubernetes.Semver") return ArgKind::kSemver;
      if (t.name() == "net.IP") return ArgKind::kIP;
      if (t.name() == "net.CIDR") return ArgKind::kCIDR;
      if (t.name() == "kubernetes.URL") return ArgKind::kURL;
      return ArgKind::kAny;
    default:
      return ArgKind::kAny;
  }
}

void FunctionRegistry::Add(const std::string& function, OverloadDecl decl, FunctionImpl impl,
                           CostFn cost, bool non_strict) {
  auto& slot = functions_[function];
  if (!slot) {
    slot = std::make_unique<Function>();
    slot->decl.name = function;
    index_[slot->decl.name] = slot.get();
  }
  // Overload ids are unique within a function; re-adding replaces (used by versioned libs).
  for (size_t i = 0; i < slot->decl.overloads.size(); ++i) {
    if (slot->decl.overloads[i].id == decl.id) {
      slot->decl.overloads.erase(slot->decl.overloads.begin() + static_cast<long>(i));
      slot->impls.erase(slot->impls.begin() + static_cast<long>(i));
      break;
    }
  }
  slot->decl.overloads.push_back(std::move(decl));
  OverloadImpl oi;
  oi.impl = impl;
  oi.cost = cost;
  oi.non_strict = non_strict;
  slot->impls.push_back(std::move(oi));
  // Re-point every impl at its decl (the vector may have reallocated).
  for (size_t i = 0; i < slot->impls.size(); ++i) {
    const OverloadDecl& d = slot->decl.overloads[i];
    slot->impls[i].decl = &d;
    slot->impls[i].kinds.clear();
    for (const Type& p : d.params) slot->impls[i].kinds.push_back(ArgKindOf(p));
  }
}

void FunctionRegistry::Remove(std::string_view function) {
  auto it = functions_.find(function);
  if (it != functions_.end()) {
    index_.erase(it->second->decl.name);
    functions_.erase(it);
  }
}

const Function* FunctionRegistry::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const OverloadImpl* FunctionRegistry::FindOverload(std::string_view function,
                                                   std::string_view overload_id) const {
  const Function* f = Find(function);
  if (f == nullptr) return nullptr;
  for (const OverloadImpl& oi : f->impls) {
    if (oi.decl->id == overload_id) return &oi;
  }
  return nullptr;
}

uint64_t CostSize(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kString:
    case ValueKind::kBytes:
      return v.string_value().size();
    case ValueKind::kList:
      return v.list().size;
    case ValueKind::kMap:
      return v.map().size();
    default:
      return 1;
  }
}

}  // namespace draplane::cel
