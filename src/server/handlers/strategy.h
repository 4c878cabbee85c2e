// Per-kind behaviour of the REST handlers, in the shape of kube-apiserver's registry strategies
// (pkg/registry/<group>/<resource>/strategy.go): what a create or update may set, defaulting,
// validation, selectable fields and the table columns `kubectl get` prints.
//
// The generic code (handlers/rest.cc) calls, for a create:
//   PrepareForCreate → Check (decode through the typed model, default, validate)
// and for an update of the main resource or of the status subresource:
//   PrepareForUpdate / PrepareForStatusUpdate → CheckUpdate / CheckStatusUpdate.
// Objects are JSON objects in the wire form of the served version; Check* replace the object by
// its defaulted re-encoding so that what is stored is what validation saw.
//
// Thread-safety: strategies are stateless singletons.
#pragma once

#include <string>
#include <vector>

#include "api/field_error.h"
#include "common/clock.h"
#include "server/dra_admission.h"
#include "server/handlers/json_util.h"

namespace draplane::server::handlers {

struct TableColumn {
  std::string name;
  std::string type;  // "string", "integer", "date", ...
  std::string format;
  std::string description;
  int priority = 0;  // 1: shown with -o wide only
};

// The outcome of decoding and validating an object: `decode_errors` are values of the wrong
// JSON type (answered 400 BadRequest, as upstream's decoder does); `errors` are validation
// failures (422 Invalid).
struct CheckResult {
  api::FieldErrorList decode_errors;
  api::FieldErrorList errors;
  bool ok() const { return decode_errors.empty() && errors.empty(); }
};

class Strategy {
 public:
  virtual ~Strategy() = default;

  // Defaults that read the clock (upstream's defaulting functions may: SetDefaults_DeviceTaint
  // sets timeAdded to now), applied to every object written through the main resource before
  // PrepareForCreate / PrepareForUpdate. The default sets nothing.
  virtual void DefaultWithTime(JsonObject& obj, Timestamp now) const;
  // Resets what users may not set on create and applies JSON-level defaults.
  virtual void PrepareForCreate(JsonObject& obj) const;
  // An update of the main resource: keeps `status` from `old` when the kind has a status
  // subresource (the default implementation does that when `has_status`).
  virtual void PrepareForUpdate(JsonObject& obj, const JsonObject& old) const;
  // Update rules that read the clock, after PrepareForUpdate (upstream's DeviceTaintRule strategy
  // dates a taint whose effect changes anew). The default changes nothing.
  virtual void PrepareForUpdateWithTime(JsonObject& obj, const JsonObject& old,
                                        Timestamp now) const;
  // An update of the status subresource: keeps everything from `old` except `status`
  // (metav1.ResetObjectMetaForStatus for metadata).
  virtual void PrepareForStatusUpdate(JsonObject& obj, const JsonObject& old) const;

  virtual CheckResult Check(JsonObject& obj) const;
  virtual CheckResult CheckUpdate(JsonObject& obj, const JsonObject& old) const;
  virtual CheckResult CheckStatusUpdate(JsonObject& obj, const JsonObject& old) const;

  // Table columns and one row's cells (upstream pkg/printers/internalversion). The default is
  // the generic table: Name and Created At.
  virtual std::vector<TableColumn> TableColumns() const;
  virtual boost::json::array TableCells(const JsonObject& obj, Timestamp now) const;

 protected:
  // Whether the kind has a status subresource whose content the main resource cannot change.
  virtual bool has_status() const { return false; }
};

const Strategy& BindingStrategy();
const Strategy& CoreEventStrategy();
const Strategy& EventsV1EventStrategy();
const Strategy& NamespaceStrategy();
const Strategy& NodeStrategy();
const Strategy& PodStrategy();
const Strategy& LeaseStrategy();
const Strategy& RbacStrategy();         // Roles, ClusterRoles
const Strategy& RbacBindingStrategy();  // RoleBindings, ClusterRoleBindings
const Strategy& ReviewStrategy();
const Strategy& DeviceTaintRuleStrategy();
const Strategy& ResourceQuotaStrategy();
const Strategy& PriorityClassStrategy();
// resource.k8s.io/v1alpha3 (served unless DRAResourcePoolStatus is off).
const Strategy& ResourcePoolStatusRequestStrategy();
// draplane.dev/v1alpha1 (draplane_strategies.cc).
const Strategy& AllocationDecisionStrategy();
const Strategy& DeviceSharingPolicyStrategy();
// The DRA kinds whose admission depends on the server's release and gates.
const Strategy& DeviceClassStrategy(const DraAdmission& admission);
const Strategy& ResourceClaimStrategy(const DraAdmission& admission);
const Strategy& ResourceClaimTemplateStrategy(const DraAdmission& admission);
const Strategy& ResourceSliceStrategy(const DraAdmission& admission);

// The common columns and cells.
TableColumn NameColumn();
TableColumn AgeColumn();
// The Age cell of an object ("<unknown>" without a creationTimestamp).
std::string AgeCell(const JsonObject& obj, Timestamp now);

}  // namespace draplane::server::handlers
