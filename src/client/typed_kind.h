// A kind's typed operations, type-erased: what a client that keeps objects typed (the in-memory
// API, memory_api.h) needs to store, stamp, compare and encode a `T` it does not know, and what
// an informer needs to take such an object as its cache entry without decoding JSON.
//
// TypedKindOf<T>() is the one instance per kind. The typed helpers (typed.h) write through
// ApiClient::DoTyped with it; a client that stores JSON encodes the object with it.
//
// Thread-safety: the instances are immutable.
#pragma once

#include <boost/json/value.hpp>
#include <memory>
#include <string>
#include <typeinfo>

#include "api/field_error.h"
#include "api/gen/meta_v1_types.h"
#include "client/resource.h"
#include "common/status.h"

namespace draplane::client {

// Why JSON did not decode as a `T`: Internal with the first field errors.
template <typename T>
Status DecodeError(const api::FieldErrorList& errors) {
  std::string message = "cannot decode " + std::string(ResourceOf<T>().kind) + ": ";
  for (size_t i = 0; i < errors.size() && i < 3; ++i) {
    if (i > 0) message += "; ";
    message += errors[i].ToString();
  }
  return InternalError(std::move(message));
}

struct TypedKind {
  const std::type_info* type = nullptr;
  boost::json::value (*encode)(const void* object) = nullptr;
  // Internal with the first field errors when `json` is not a `T`.
  StatusOr<std::shared_ptr<void>> (*decode)(const boost::json::value& json) = nullptr;
  std::shared_ptr<void> (*copy)(const void* object) = nullptr;
  // The generated `operator==` (semantic, as apiequality.Semantic.DeepEqual) and the unknown
  // fields at the top level.
  bool (*equal)(const void* a, const void* b) = nullptr;
  api::metav1::ObjectMeta& (*metadata)(void* object) = nullptr;
  // Sets `kind` and `apiVersion` to the kind's.
  void (*set_type_fields)(void* object) = nullptr;
  // Kinds with a `status`: copies or moves `from`'s status into `to`, or resets it.
  bool has_status = false;
  void (*copy_status)(void* to, const void* from) = nullptr;
  void (*move_status)(void* to, void* from) = nullptr;
  void (*clear_status)(void* object) = nullptr;
  // Whether the specs are equal (kinds without a `spec`: true).
  bool (*spec_equal)(const void* a, const void* b) = nullptr;
};

// The metadata of a typed object of `kind`.
inline const api::metav1::ObjectMeta& MetadataOf(const TypedKind& kind, const void* object) {
  return kind.metadata(const_cast<void*>(object));
}

namespace internal {

// The generated equality leaves unknown fields out; a store must not take a change of them for a
// no-op.
inline bool SameUnknownFields(const api::UnknownFields& a, const api::UnknownFields& b) {
  if (a.empty() || b.empty()) return a.empty() == b.empty();
  return *a.fields() == *b.fields();
}

template <typename T>
TypedKind MakeTypedKind() {
  TypedKind k;
  k.type = &typeid(T);
  k.encode = [](const void* o) -> boost::json::value { return Encode(*static_cast<const T*>(o)); };
  k.decode = [](const boost::json::value& json) -> StatusOr<std::shared_ptr<void>> {
    auto out = std::make_shared<T>();
    api::FieldErrorList errors;
    Decode(json, out.get(), &errors);
    if (!errors.empty()) return DecodeError<T>(errors);
    return std::shared_ptr<void>(std::move(out));
  };
  k.copy = [](const void* o) -> std::shared_ptr<void> {
    return std::make_shared<T>(*static_cast<const T*>(o));
  };
  k.equal = [](const void* a, const void* b) {
    const T& x = *static_cast<const T*>(a);
    const T& y = *static_cast<const T*>(b);
    return x == y && SameUnknownFields(x.unknown, y.unknown);
  };
  k.metadata = [](void* o) -> api::metav1::ObjectMeta& { return static_cast<T*>(o)->metadata; };
  k.set_type_fields = [](void* o) {
    T& t = *static_cast<T*>(o);
    t.kind = std::string(T::kKind);
    t.api_version = std::string(T::kApiVersion);
  };
  if constexpr (requires(T t) { t.status; }) {
    k.has_status = true;
    k.copy_status = [](void* to, const void* from) {
      static_cast<T*>(to)->status = static_cast<const T*>(from)->status;
    };
    k.move_status = [](void* to, void* from) {
      static_cast<T*>(to)->status = std::move(static_cast<T*>(from)->status);
    };
    k.clear_status = [](void* o) { static_cast<T*>(o)->status = {}; };
  }
  if constexpr (requires(T t) { t.spec; }) {
    k.spec_equal = [](const void* a, const void* b) {
      return static_cast<const T*>(a)->spec == static_cast<const T*>(b)->spec;
    };
  } else {
    k.spec_equal = [](const void*, const void*) { return true; };
  }
  return k;
}

}  // namespace internal

template <typename T>
const TypedKind& TypedKindOf() {
  static const TypedKind kind = internal::MakeTypedKind<T>();
  return kind;
}

}  // namespace draplane::client
