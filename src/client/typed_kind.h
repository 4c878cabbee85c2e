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
#include "api/gen/meta_v1_codec.h"
#include "api/gen/meta_v1_types.h"
#include "api/patch/patch.h"
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
  // Kinds with a `status`: copies `from`'s status into `to`, gives `to` everything of `from` but
  // the status (a status write: the stored object with the body's status, without copying the
  // stored status only to replace it), or resets it.
  bool has_status = false;
  void (*copy_status)(void* to, const void* from) = nullptr;
  void (*copy_all_but_status)(void* to, const void* from) = nullptr;
  void (*clear_status)(void* object) = nullptr;
  // Whether the statuses are equal (the generated `operator==`); kinds without a `status`: true.
  // A store asks it before `equal`: a write that changes an object mostly changes its status,
  // which the whole comparison reaches last.
  bool (*status_equal)(const void* a, const void* b) = nullptr;
  // Whether the specs are equal (kinds without a `spec`: true).
  bool (*spec_equal)(const void* a, const void* b) = nullptr;
  // Applies `patch`, the value a JSON merge patch (RFC 7386) gives the top-level member `member`
  // ("metadata", "spec" or "status"), to `object` as patching the object's JSON and decoding it
  // would, but member by member: only that member is encoded, patched and decoded. False, with
  // `object` unchanged, when the kind has no such member or the patched member does not decode
  // as one (the caller then patches the JSON, which reports what is wrong as it always does).
  bool (*merge_patch_member)(void* object, std::string_view member,
                             const boost::json::value& patch) = nullptr;
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

// The bit of `T::present` that records the top-level member `member` (the codecs give every plain
// field one, in declaration order): found by decoding an object that has that member alone.
template <typename T>
uint64_t PresentBitOf(std::string_view member) {
  T probe;
  api::FieldErrorList errors;
  Decode(boost::json::value(boost::json::object{{member, boost::json::object()}}), &probe, &errors);
  return probe.present & ~(uint64_t{1} << 63);
}

// Converts to any type: brace-initializing an aggregate from N of them compiles exactly when it
// has at least N members.
struct AnyMember {
  template <typename U>
  operator U() const;  // NOLINT(google-explicit-constructor): only ever unevaluated
};

// Whether the aggregate `T` has exactly seven members (kind, apiVersion, metadata, spec, status,
// unknown fields, present bits).
template <typename T>
concept HasSevenMembers = requires {
  T{AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{}};
}
&&!requires {
  T{AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{},
    AnyMember{}, AnyMember{}, AnyMember{}, AnyMember{}};
};

// Whether `M` has codecs of its own (optional members have not: they are patched as JSON).
template <typename M>
concept HasCodec = requires(const M& in, const boost::json::value& json, M* out,
                            api::FieldErrorList* errors) {
  Encode(in);
  Decode(json, out, errors);
};

// The merge patch `patch` applied to `value` as to its JSON: `value` encoded, patched and decoded
// again. False, with `value` unchanged, when the patched JSON does not decode.
template <HasCodec M>
bool MergePatchValue(M& value, const boost::json::value& patch) {
  M patched;
  if (!patch.is_null()) {
    boost::json::value document = Encode(value);
    api::patch::MergePatchInto(document, patch);
    api::FieldErrorList errors;
    Decode(document, &patched, &errors);
    if (!errors.empty()) return false;
  }
  value = std::move(patched);
  return true;
}

// TypedKind::merge_patch_member for the member `field` of `object`, recorded by `present_bit`.
template <typename T, HasCodec M>
bool MergePatchMember(T& object, M T::*field, uint64_t present_bit,
                      const boost::json::value& patch) {
  if (!MergePatchValue(object.*field, patch)) return false;
  // A patched member is present (as an object at least); a null removes it.
  if (patch.is_null()) {
    object.present &= ~present_bit;
  } else {
    object.present |= present_bit;
  }
  return true;
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
    // The status goes with its `present` bit: an empty status is written where it was present.
    k.copy_status = [](void* to, const void* from) {
      T& t = *static_cast<T*>(to);
      const T& f = *static_cast<const T*>(from);
      static const uint64_t bit = PresentBitOf<T>("status");
      t.status = f.status;
      t.present = (t.present & ~bit) | (f.present & bit);
    };
    k.copy_all_but_status = [](void* to, const void* from) {
      T& t = *static_cast<T*>(to);
      const T& f = *static_cast<const T*>(from);
      static const uint64_t bit = PresentBitOf<T>("status");
      const uint64_t present = (f.present & ~bit) | (t.present & bit);
      if constexpr (requires { t.spec; }) {
        // Every stored kind with a status has exactly these seven members (the check fails when
        // one gains another: copy it here too).
        static_assert(HasSevenMembers<T>);
        t.kind = f.kind;
        t.api_version = f.api_version;
        t.metadata = f.metadata;
        t.spec = f.spec;
        t.unknown = f.unknown;
      } else {
        T next = f;
        next.status = std::move(t.status);
        t = std::move(next);
      }
      t.present = present;
    };
    k.clear_status = [](void* o) { static_cast<T*>(o)->status = {}; };
    k.status_equal = [](const void* a, const void* b) {
      return static_cast<const T*>(a)->status == static_cast<const T*>(b)->status;
    };
  } else {
    k.status_equal = [](const void*, const void*) { return true; };
  }
  if constexpr (requires(T t) { t.spec; }) {
    k.spec_equal = [](const void* a, const void* b) {
      return static_cast<const T*>(a)->spec == static_cast<const T*>(b)->spec;
    };
  } else {
    k.spec_equal = [](const void*, const void*) { return true; };
  }
  k.merge_patch_member = [](void* o, std::string_view member, const boost::json::value& patch) {
    T& t = *static_cast<T*>(o);
    if (member == "metadata") {
      static const uint64_t bit = PresentBitOf<T>("metadata");
      return MergePatchMember(t, &T::metadata, bit, patch);
    }
    if constexpr (requires {
                    t.spec;
                    requires HasCodec<decltype(t.spec)>;
                  }) {
      if (member == "spec") {
        static const uint64_t bit = PresentBitOf<T>("spec");
        return MergePatchMember(t, &T::spec, bit, patch);
      }
    }
    if constexpr (requires {
                    t.status;
                    requires HasCodec<decltype(t.status)>;
                  }) {
      if (member == "status") {
        static const uint64_t bit = PresentBitOf<T>("status");
        return MergePatchMember(t, &T::status, bit, patch);
      }
    }
    return false;
  };
  return k;
}

}  // namespace internal

// The merge patch `patch` of an object's `metadata` applied to `meta` alone, as
// TypedKind::merge_patch_member applies it to the object (false when the result does not decode).
inline bool MergePatchMetadata(api::metav1::ObjectMeta& meta, const boost::json::value& patch) {
  return internal::MergePatchValue(meta, patch);
}

template <typename T>
const TypedKind& TypedKindOf() {
  static const TypedKind kind = internal::MakeTypedKind<T>();
  return kind;
}

}  // namespace draplane::client
