#include "api/priority.h"

#include <algorithm>

#include "api/gen/core_v1_types.h"

namespace draplane::api {
namespace {

schedulingv1::PriorityClass SystemClass(std::string_view name, int32_t value,
                                        std::string_view description) {
  schedulingv1::PriorityClass pc;
  pc.metadata.name = std::string(name);
  pc.value = value;
  pc.description = std::string(description);
  pc.preemption_policy = std::string(corev1::kPreemptionPolicyPreemptLowerPriority);
  return pc;
}

const boost::json::object* FindObject(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

}  // namespace

std::vector<schedulingv1::PriorityClass> SystemPriorityClasses() {
  return {SystemClass(kSystemClusterCritical, kSystemCriticalPriority,
                      "For system-critical Pods that must run in the cluster but may move to "
                      "another node."),
          SystemClass(kSystemNodeCritical, kSystemCriticalPriority + 1000,
                      "For system-critical Pods that must stay on their node.")};
}

const schedulingv1::PriorityClass* FindSystemPriorityClass(std::string_view name) {
  static const std::vector<schedulingv1::PriorityClass>* classes =
      new std::vector<schedulingv1::PriorityClass>(SystemPriorityClasses());
  for (const schedulingv1::PriorityClass& pc : *classes) {
    if (pc.metadata.name == name) return &pc;
  }
  return nullptr;
}

const schedulingv1::PriorityClass* DefaultPriorityClass(
    const std::vector<schedulingv1::PriorityClass>& classes) {
  const schedulingv1::PriorityClass* best = nullptr;
  for (const schedulingv1::PriorityClass& pc : classes) {
    if (!pc.global_default.value_or(false)) continue;
    int32_t value = pc.value.value_or(0);
    if (best == nullptr || value < best->value.value_or(0) ||
        (value == best->value.value_or(0) && pc.metadata.name < best->metadata.name)) {
      best = &pc;
    }
  }
  return best;
}

std::optional<std::string> AdmitPodPriority(
    boost::json::object& pod, const std::vector<schedulingv1::PriorityClass>& classes) {
  boost::json::value& spec_value = pod["spec"];
  if (!spec_value.is_object()) spec_value = boost::json::object();
  boost::json::object& spec = spec_value.get_object();
  std::string class_name;
  if (const boost::json::value* v = spec.if_contains("priorityClassName"); v && v->is_string()) {
    class_name = std::string(v->get_string());
  }
  int32_t priority = kDefaultPriorityWhenNoDefaultClassExists;
  std::string preemption_policy(corev1::kPreemptionPolicyPreemptLowerPriority);
  if (class_name.empty()) {
    if (const schedulingv1::PriorityClass* pc = DefaultPriorityClass(classes)) {
      spec["priorityClassName"] = pc->metadata.name;
      priority = pc->value.value_or(0);
      preemption_policy = pc->preemption_policy.value_or(preemption_policy);
    }
  } else {
    auto it = std::find_if(classes.begin(), classes.end(),
                           [&](const auto& pc) { return pc.metadata.name == class_name; });
    if (it == classes.end()) return "no PriorityClass with name " + class_name + " was found";
    priority = it->value.value_or(0);
    preemption_policy = it->preemption_policy.value_or(preemption_policy);
  }
  // Upstream refuses a priority the Pod states itself unless it is the computed one: a Pod
  // cannot raise itself above its class.
  if (const boost::json::value* v = spec.if_contains("priority"); v && !v->is_null()) {
    // Not an integer: left for the Pod's decoding to refuse (400, as upstream's decoder).
    if (!v->is_int64() && !v->is_uint64()) return std::nullopt;
    int64_t given = v->is_int64() ? v->get_int64() : static_cast<int64_t>(v->get_uint64());
    if (given != priority) {
      return "the integer value of priority (" + std::to_string(given) +
             ") must not be provided in pod spec; priority admission controller computed " +
             std::to_string(priority) + " from the given PriorityClass name";
    }
  }
  if (const boost::json::value* v = spec.if_contains("preemptionPolicy");
      v && v->is_string() && v->get_string() != preemption_policy) {
    return "the string value of PreemptionPolicy (" + std::string(v->get_string()) +
           ") must not be provided in pod spec; priority admission controller computed " +
           preemption_policy + " from the given PriorityClass name";
  }
  spec["priority"] = priority;
  spec["preemptionPolicy"] = preemption_policy;
  return std::nullopt;
}

void KeepPodPriority(boost::json::object& pod, const boost::json::object& old) {
  const boost::json::object* old_spec = FindObject(old, "spec");
  boost::json::value* spec = pod.if_contains("spec");
  if (old_spec == nullptr || spec == nullptr || !spec->is_object()) return;
  for (std::string_view field : {"priority", "preemptionPolicy"}) {
    const boost::json::value* kept = old_spec->if_contains(field);
    boost::json::value* now = spec->get_object().if_contains(field);
    if (kept != nullptr && (now == nullptr || now->is_null())) spec->get_object()[field] = *kept;
  }
}

}  // namespace draplane::api
