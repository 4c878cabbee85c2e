// The strategy of scheduling.k8s.io/v1 PriorityClass (strategy.h).
#include <vector>

#include "api/gen/scheduling_v1_codec.h"
#include "api/validation/priority_class_validation.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"

namespace draplane::server::handlers {
namespace {

namespace validation = api::validation;
using api::FieldErrorList;
using api::schedulingv1::PriorityClass;

// pkg/registry/scheduling/priorityclass: defaulted and validated as upstream
// (api/validation/priority_class_validation.h); the one-global-default rule and the undeletable
// system classes are admission's (server/admission).
class PriorityClassStrategyImpl final : public TypedStrategy<PriorityClass> {
 public:
  // printers.go printPriorityClass.
  std::vector<TableColumn> TableColumns() const override {
    return {NameColumn(),
            {"Value", "integer", "", "Value is the integer value of the priority class.", 0},
            {"Global-Default", "boolean", "",
             "Whether this class is the default for Pods that name no class.", 0},
            AgeColumn(),
            {"PreemptionPolicy", "string", "",
             "Whether Pods of this class may preempt Pods of lower priority.", 0}};
  }
  boost::json::array TableCells(const JsonObject& obj, Timestamp now) const override {
    FieldErrorList ignored;
    auto pc = DecodeAs<PriorityClass>(obj, &ignored);
    return {MetaString(obj, "name"), pc.value.value_or(0), pc.global_default.value_or(false),
            AgeCell(obj, now), pc.preemption_policy.value_or("")};
  }

 protected:
  FieldErrorList Admit(PriorityClass& pc) const override {
    validation::SetDefaults(&pc);
    return validation::ValidatePriorityClass(pc);
  }
  FieldErrorList AdmitUpdate(PriorityClass& pc, const PriorityClass& old) const override {
    validation::SetDefaults(&pc);
    return validation::ValidatePriorityClassUpdate(pc, old);
  }
};

}  // namespace

const Strategy& PriorityClassStrategy() { return StrategyInstance<PriorityClassStrategyImpl>(); }

}  // namespace draplane::server::handlers
