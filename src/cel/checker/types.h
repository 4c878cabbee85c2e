// CEL types for type checking (cel-go `common/types/types.go` `*types.Type`, rewritten).
//
// A `Type` is an immutable, cheaply copyable handle. Kinds: dyn, any (google.protobuf.Any, the
// "unknown type" Kubernetes gives DRA attributes), error, null, the primitives, timestamp,
// duration, list(E), map(K, V), type(T), opaque types with parameters (optional_type(T),
// kubernetes.Quantity, ...), struct (object) types such as kubernetes.DRADevice, and type
// parameters used by overload declarations.
//
// Thread-safety: immutable values; safe to share.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace draplane::cel {

enum class TypeKind : uint8_t {
  kDyn,
  kAny,
  kError,
  kNull,
  kBool,
  kInt,
  kUint,
  kDouble,
  kString,
  kBytes,
  kTimestamp,
  kDuration,
  kList,
  kMap,
  kType,
  kOpaque,
  kStruct,
  kTypeParam,
};

class Type {
 public:
  // dyn.
  Type();

  static Type Dyn();
  static Type Any();
  static Type Error();
  static Type Null();
  static Type Bool();
  static Type Int();
  static Type Uint();
  static Type Double();
  static Type String();
  static Type Bytes();
  static Type Timestamp();
  static Type Duration();
  static Type List(Type elem);
  static Type Map(Type key, Type value);
  // `type` without a parameter.
  static Type TypeType();
  // type(T).
  static Type TypeOf(Type t);
  static Type Opaque(std::string name, std::vector<Type> params = {});
  static Type Optional(Type t) { return Opaque("optional_type", {std::move(t)}); }
  static Type Struct(std::string name);
  static Type Param(std::string name);

  TypeKind kind() const { return rep_->kind; }
  // The declared name: "int", "list", "map", "type", "optional_type", "kubernetes.Quantity",
  // the struct name, or the type parameter name.
  const std::string& name() const { return rep_->name; }
  const std::vector<Type>& params() const { return rep_->params; }

  bool IsDyn() const { return kind() == TypeKind::kDyn || kind() == TypeKind::kAny; }
  bool IsOptional() const { return kind() == TypeKind::kOpaque && name() == "optional_type"; }

  // Structural identity (cel-go `IsExactType`).
  bool IsExact(const Type& other) const;

  // cel-go `Type.String()`: "int", "list(int)", "map(string, dyn)", "type(int)",
  // "optional_type(int)", "kubernetes.Quantity", "null_type", "google.protobuf.Any" -> "any".
  std::string ToString() const;
  // cel-go `FormatCelType` (used in checker messages): like ToString() but "null", "any",
  // "timestamp", "duration", "!error!".
  std::string Format() const;

 private:
  struct Rep {
    TypeKind kind;
    std::string name;
    std::vector<Type> params;
  };
  explicit Type(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}
  static Type Make(TypeKind kind, std::string name, std::vector<Type> params);

  std::shared_ptr<const Rep> rep_;
};

}  // namespace draplane::cel
