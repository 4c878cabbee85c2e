#include "cel/checker/types.h"

namespace draplane::cel {
Type Type::Make(TypeKind kind, std::string name, std::vector<Type> params) {
  auto rep = std::make_shared<Rep>();
  rep->kind = kind;
  rep->name = std::move(name);
  rep->params = std::move(params);
  return Type(std::move(rep));
}

// The primitive types are built once and shared; Type() (dyn) copies the shared dyn rep.
Type::Type() : rep_(Dyn().rep_) {}

#define DRAPLANE_CEL_PRIMITIVE(fn, kind, text)                       \
  Type Type::fn() {                                                  \
    static const Type* t = new Type(Make(TypeKind::kind, text, {})); \
    return *t;                                                       \
  }
DRAPLANE_CEL_PRIMITIVE(Dyn, kDyn, "dyn")
DRAPLANE_CEL_PRIMITIVE(Any, kAny, "google.protobuf.Any")
DRAPLANE_CEL_PRIMITIVE(Error, kError, "*error*")
DRAPLANE_CEL_PRIMITIVE(Null, kNull, "null_type")
DRAPLANE_CEL_PRIMITIVE(Bool, kBool, "bool")
DRAPLANE_CEL_PRIMITIVE(Int, kInt, "int")
DRAPLANE_CEL_PRIMITIVE(Uint, kUint, "uint")
DRAPLANE_CEL_PRIMITIVE(Double, kDouble, "double")
DRAPLANE_CEL_PRIMITIVE(String, kString, "string")
DRAPLANE_CEL_PRIMITIVE(Bytes, kBytes, "bytes")
DRAPLANE_CEL_PRIMITIVE(Timestamp, kTimestamp, "google.protobuf.Timestamp")
DRAPLANE_CEL_PRIMITIVE(Duration, kDuration, "google.protobuf.Duration")
DRAPLANE_CEL_PRIMITIVE(TypeType, kType, "type")
#undef DRAPLANE_CEL_PRIMITIVE

Type Type::List(Type elem) { return Make(TypeKind::kList, "list", {std::move(elem)}); }
Type Type::Map(Type key, Type value) {
  return Make(TypeKind::kMap, "map", {std::move(key), std::move(value)});
}
Type Type::TypeOf(Type t) { return Make(TypeKind::kType, "type", {std::move(t)}); }
Type Type::Opaque(std::string name, std::vector<Type> params) {
  return Make(TypeKind::kOpaque, std::move(name), std::move(params));
}
Type Type::Struct(std::string name) { return Make(TypeKind::kStruct, std::move(name), {}); }
Type Type::Param(std::string name) { return Make(TypeKind::kTypeParam, std::move(name), {}); }

bool Type::IsExact(const Type& other) const {
  if (rep_ == other.rep_) return true;
  if (kind() != other.kind() || name() != other.name()) return false;
  if (params().size() != other.params().size()) return false;
  for (size_t i = 0; i < params().size(); ++i) {
    if (!params()[i].IsExact(other.params()[i])) return false;
  }
  return true;
}

std::string Type::ToString() const {
  std::string out = kind() == TypeKind::kAny ? "google.protobuf.Any" : name();
  if (params().empty()) return out;
  out += "(";
  for (size_t i = 0; i < params().size(); ++i) {
    if (i) out += ", ";
    out += params()[i].ToString();
  }
  out += ")";
  return out;
}

std::string Type::Format() const {
  switch (kind()) {
    case TypeKind::kAny:
      return "any";
    case TypeKind::kDuration:
      return "duration";
    case TypeKind::kError:
      return "!error!";
    case TypeKind::kNull:
      return "null";
    case TypeKind::kTimestamp:
      return "timestamp";
    default:
      break;
  }
  if (params().empty()) return name();
  std::string out = name() + "(";
  for (size_t i = 0; i < params().size(); ++i) {
    if (i) out += ", ";
    out += params()[i].Format();
  }
  out += ")";
  return out;
}

}  // namespace draplane::cel
