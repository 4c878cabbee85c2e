#include "api/object.h"

#include <boost/json.hpp>
#include <type_traits>

#include "api/gen/coordination_v1_codec.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/draplane_v1alpha1_codec.h"
#include "api/gen/events_v1_codec.h"
#include "api/gen/meta_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/gen/scheduling_v1_codec.h"
#include "api/meta/codec_support.h"

namespace draplane::api {
namespace {

std::string StringMember(const boost::json::value* v, std::string_view key) {
  if (v == nullptr || !v->is_object()) return "";
  const boost::json::value* m = v->get_object().if_contains(key);
  if (m == nullptr || !m->is_string()) return "";
  return std::string(m->get_string().data(), m->get_string().size());
}

const boost::json::value* Metadata(const Unstructured& u) {
  if (!u.json.has_value() || !u.json.value().is_object()) return nullptr;
  return u.json.value().get_object().if_contains("metadata");
}

// Tries every modelled alternative (index 1 on) for `api_version` + `kind`.
template <size_t I = 1>
bool DecodeModelled(std::string_view api_version, std::string_view kind,
                    const boost::json::value& json, FieldErrorList* errors, Object* out) {
  if constexpr (I < std::variant_size_v<Object>) {
    using T = std::variant_alternative_t<I, Object>;
    if (api_version == T::kApiVersion && kind == T::kKind) {
      T typed;
      Decode(json, &typed, errors);
      *out = std::move(typed);
      return true;
    }
    return DecodeModelled<I + 1>(api_version, kind, json, errors, out);
  } else {
    return false;
  }
}

template <size_t I = 1>
bool Modelled(std::string_view api_version, std::string_view kind) {
  if constexpr (I < std::variant_size_v<Object>) {
    using T = std::variant_alternative_t<I, Object>;
    return (api_version == T::kApiVersion && kind == T::kKind) ||
           Modelled<I + 1>(api_version, kind);
  } else {
    return false;
  }
}

// Reads the top-level string `key`, reporting a missing or non-string value.
std::string TypeField(const boost::json::object& obj, std::string_view key,
                      FieldErrorList* errors) {
  const boost::json::value* v = obj.if_contains(key);
  if (v == nullptr) {
    if (errors != nullptr) errors->push_back(Required(FieldPath(key)));
    return "";
  }
  if (!v->is_string()) {
    if (errors != nullptr) {
      errors->push_back(FieldError{
          FieldErrorType::kTypeInvalid, std::string(key), api::internal::RenderJsonValue(*v),
          "expected string, got " + std::string(api::internal::JsonTypeName(*v))});
    }
    return "";
  }
  return std::string(v->get_string().data(), v->get_string().size());
}

}  // namespace

std::string Unstructured::api_version() const {
  return StringMember(json.has_value() ? &json.value() : nullptr, "apiVersion");
}
std::string Unstructured::kind() const {
  return StringMember(json.has_value() ? &json.value() : nullptr, "kind");
}
std::string Unstructured::name() const { return StringMember(Metadata(*this), "name"); }
std::string Unstructured::namespace_() const { return StringMember(Metadata(*this), "namespace"); }

metav1::OwnerReference NewControllerRef(const corev1::Pod& pod) {
  metav1::OwnerReference owner;
  owner.api_version = "v1";
  owner.kind = "Pod";
  owner.name = pod.metadata.name;
  owner.uid = pod.metadata.uid;
  owner.controller = true;
  owner.block_owner_deletion = true;
  return owner;
}

bool IsModelledKind(std::string_view api_version, std::string_view kind) {
  return Modelled(api_version, kind);
}

Object DecodeObject(const boost::json::value& json, FieldErrorList* errors) {
  const boost::json::object* obj = json.if_object();
  if (obj == nullptr) {
    if (errors != nullptr) {
      errors->push_back(
          FieldError{FieldErrorType::kTypeInvalid, "", api::internal::RenderJsonValue(json),
                     "expected object, got " + std::string(api::internal::JsonTypeName(json))});
    }
    return Unstructured{RawJson(json)};
  }
  const std::string api_version = TypeField(*obj, "apiVersion", errors);
  const std::string kind = TypeField(*obj, "kind", errors);
  Object out;
  if (!DecodeModelled(api_version, kind, json, errors, &out)) out = Unstructured{RawJson(json)};
  return out;
}

boost::json::value EncodeObject(const Object& object, boost::json::storage_ptr sp) {
  return std::visit(
      [&](const auto& o) -> boost::json::value {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, Unstructured>) {
          if (!o.json.has_value()) return boost::json::value(nullptr, sp);
          return boost::json::value(o.json.value(), sp);
        } else {
          return Encode(o, sp);
        }
      },
      object);
}

std::string ObjectApiVersion(const Object& object) {
  return std::visit(
      [](const auto& o) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(o)>, Unstructured>) {
          return o.api_version();
        } else {
          return o.api_version;
        }
      },
      object);
}

std::string ObjectKind(const Object& object) {
  return std::visit(
      [](const auto& o) -> std::string {
        if constexpr (std::is_same_v<std::decay_t<decltype(o)>, Unstructured>) {
          return o.kind();
        } else {
          return o.kind;
        }
      },
      object);
}

const metav1::ObjectMeta* ObjectMetadata(const Object& object) {
  return std::visit(
      [](const auto& o) -> const metav1::ObjectMeta* {
        using T = std::decay_t<decltype(o)>;
        if constexpr (requires { o.metadata; }) {
          if constexpr (std::is_same_v<std::decay_t<decltype(o.metadata)>, metav1::ObjectMeta>) {
            return &o.metadata;
          }
        }
        (void)sizeof(T);
        return nullptr;
      },
      object);
}

std::string ObjectName(const Object& object) {
  if (const auto* u = std::get_if<Unstructured>(&object)) return u->name();
  const metav1::ObjectMeta* meta = ObjectMetadata(object);
  return meta != nullptr ? meta->name : "";
}

std::string ObjectNamespace(const Object& object) {
  if (const auto* u = std::get_if<Unstructured>(&object)) return u->namespace_();
  const metav1::ObjectMeta* meta = ObjectMetadata(object);
  return meta != nullptr ? meta->namespace_ : "";
}

}  // namespace draplane::api
