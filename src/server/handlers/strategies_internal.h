// What the strategies of the API groups share (strategy.h): the two shapes a kind's checks take
// and the helpers their files have in common. One file per API group holds the kinds:
// strategies_core.cc, strategies_events.cc, strategies_coordination.cc, strategies_rbac.cc,
// strategies_resource.cc, draplane_strategies.cc; strategy.cc holds the defaults.
//
// Thread-safety: strategies are stateless singletons (StrategyInstance).
#pragma once

#include <iterator>
#include <string_view>
#include <utility>

#include "api/field_error.h"
#include "api/gen/meta_v1_types.h"
#include "api/validation/meta_validation.h"
#include "server/handlers/strategy.h"
#include "server/handlers/typed_json.h"

namespace draplane::server::handlers {

inline void Append(api::FieldErrorList& to, api::FieldErrorList from) {
  to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}

// `metadata` decoded through the typed model; its wrong JSON types are appended to
// `decode_errors` with their path under metadata.
api::metav1::ObjectMeta DecodeMeta(const JsonObject& obj, api::FieldErrorList* decode_errors);

// Reset of metadata a status update may not change (metav1.ResetObjectMetaForStatus), applied
// by taking `old` and carrying over only the new status and resourceVersion.
void KeepAllButStatus(JsonObject& obj, const JsonObject& old);

// A duration since an RFC 3339 time as `kubectl get` prints it ("<unknown>" when unparsable).
std::string SinceCell(std::string_view time, Timestamp now);

// The one instance of a strategy without configuration, never destroyed.
template <typename Impl>
const Strategy& StrategyInstance() {
  static const Impl* s = new Impl();
  return *s;
}

// A strategy over plain JSON with generic metadata validation; kinds add to it.
class GenericStrategy : public Strategy {
 public:
  GenericStrategy(bool namespaced, api::validation::NameValidator names, bool status)
      : namespaced_(namespaced), names_(names), status_(status) {}

  CheckResult Check(JsonObject& obj) const override;
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override;
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override;

 protected:
  bool has_status() const override { return status_; }

  bool namespaced_;
  api::validation::NameValidator names_;
  bool status_;
};

// A GenericStrategy whose objects must also decode through T's model (values of the wrong JSON
// type are decode errors); the object is stored as sent.
template <typename T>
class GenericStrategyOf : public GenericStrategy {
 public:
  using GenericStrategy::GenericStrategy;

  CheckResult Check(JsonObject& obj) const override {
    CheckResult r = GenericStrategy::Check(obj);
    T typed = DecodeAs<T>(obj, &r.decode_errors);
    if (r.decode_errors.empty()) Append(r.errors, Validate(typed));
    return r;
  }
  // Updates too, the status subresource's included: a status of the wrong shape would be
  // stored, and every typed client (informers, kubectl describe) would fail on the object.
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = GenericStrategy::CheckUpdate(obj, old);
    T typed = DecodeAs<T>(obj, &r.decode_errors);
    if (r.decode_errors.empty()) Append(r.errors, Validate(typed));
    return r;
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    CheckResult r = GenericStrategy::CheckStatusUpdate(obj, old);
    DecodeAs<T>(obj, &r.decode_errors);
    return r;
  }

 protected:
  // The kind's own rules beyond metadata, for an object that decoded cleanly, on create and on
  // update of the main resource (a status update keeps the rest of the object as stored).
  virtual api::FieldErrorList Validate(const T&) const { return {}; }
};

// A kind checked through its typed model T: the object is decoded (values of the wrong JSON type
// stop there), defaulted and validated by the kind's Admit hooks, and replaced by its
// re-encoding, so that what is stored is what validation saw. On update the old object is
// decoded as well; its decode errors are ignored (it was accepted when stored).
template <typename T>
class TypedStrategy : public Strategy {
 public:
  CheckResult Check(JsonObject& obj) const override {
    CheckResult r;
    T typed = DecodeAs<T>(obj, &r.decode_errors, decode_options());
    if (!r.decode_errors.empty()) return r;
    r.errors = Admit(typed);
    EncodeInto(typed, obj);
    return r;
  }
  CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const override {
    return CheckAgainstOld(obj, old, &TypedStrategy::AdmitUpdate);
  }
  CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const override {
    return CheckAgainstOld(obj, old, &TypedStrategy::AdmitStatusUpdate);
  }

 protected:
  // Defaulting (and dropping of disabled fields) of `obj`, then its validation errors: for a
  // create, an update of the main resource, an update of the status subresource (by default
  // checked as the main resource).
  virtual api::FieldErrorList Admit(T& obj) const = 0;
  virtual api::FieldErrorList AdmitUpdate(T& obj, const T& old) const = 0;
  virtual api::FieldErrorList AdmitStatusUpdate(T& obj, const T& old) const {
    return AdmitUpdate(obj, old);
  }
  // How the object is decoded before it is re-encoded for storage: quantities as kube-apiserver
  // keeps the built-in kinds' ("500m" for a written 0.5). draplane.dev's kinds keep them as
  // written, as a custom resource's objects are stored.
  virtual api::DecodeOptions decode_options() const {
    return api::DecodeOptions{.canonical_quantities = true};
  }

 private:
  using AdmitAgainstOld = api::FieldErrorList (TypedStrategy::*)(T&, const T&) const;

  CheckResult CheckAgainstOld(JsonObject& obj, const JsonObject& old, AdmitAgainstOld admit) const {
    CheckResult r;
    T typed = DecodeAs<T>(obj, &r.decode_errors, decode_options());
    api::FieldErrorList ignored;
    T old_typed = DecodeAs<T>(old, &ignored, decode_options());
    if (!r.decode_errors.empty()) return r;
    r.errors = (this->*admit)(typed, old_typed);
    EncodeInto(typed, obj);
    return r;
  }
};

}  // namespace draplane::server::handlers
