// The strategy of coordination.k8s.io/v1 Lease (strategy.h).
#include <vector>

#include "api/gen/coordination_v1_codec.h"
#include "api/validation/names.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

namespace validation = api::validation;

class LeaseStrategyImpl final : public GenericStrategyOf<api::coordinationv1::Lease> {
 public:
  LeaseStrategyImpl() : GenericStrategyOf(true, validation::NameIsDNSSubdomain, false) {}

  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Holder", "string", "",
             "holderIdentity contains the identity of the holder of a "
             "current lease.",
             0},
            AgeColumn()};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    return {MetaString(obj, "name"), GetPathString(obj, {"spec", "holderIdentity"}),
            AgeCell(obj, now)};
  }

 protected:
  // ValidateLeaseSpec's bounds: a negative duration would make every holder's lease expired at
  // once, so leader election could never settle.
  api::FieldErrorList Validate(const api::coordinationv1::Lease& lease) const override {
    api::FieldErrorList errors;
    const api::FieldPath spec("spec");
    if (lease.spec.lease_duration_seconds && *lease.spec.lease_duration_seconds <= 0) {
      errors.push_back(api::Invalid(spec.Child("leaseDurationSeconds"),
                                    std::to_string(*lease.spec.lease_duration_seconds),
                                    "must be greater than 0"));
    }
    if (lease.spec.lease_transitions && *lease.spec.lease_transitions < 0) {
      errors.push_back(api::Invalid(spec.Child("leaseTransitions"),
                                    std::to_string(*lease.spec.lease_transitions),
                                    "must be greater than or equal to 0"));
    }
    return errors;
  }
};

}  // namespace

const Strategy& LeaseStrategy() { return StrategyInstance<LeaseStrategyImpl>(); }

}  // namespace draplane::server::handlers
