#include "api/validation/sharing_policy_validation.h"

#include <map>
#include <optional>
#include <set>
#include <string>

#include "api/meta/duration.h"
#include "api/validation/internal/common.h"
#include "api/validation/internal/render.h"
#include "api/validation/meta_validation.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

namespace d = draplanev1alpha1;
using internal::Append;
using internal::RenderQuantity;

constexpr std::string_view kGreaterThanZero = "must be greater than 0";
constexpr std::string_view kNotNegative = "must be greater than or equal to 0";

std::string Quoted(std::string_view s) { return RenderValue(s); }

// "exactly one of a, b or c is required" when none is set, "..., but multiple fields are set"
// when several are (the wording of the DRA request's exactly / firstAvailable rule).
void ExactlyOne(int set, std::string_view fields, const FieldPath& path, FieldErrorList& errs) {
  const std::string rule = "exactly one of " + std::string(fields) + " is required";
  if (set == 0) errs.push_back(Required(path, rule));
  if (set > 1) {
    errs.push_back(
        Invalid(path, std::string(internal::kNull), rule + ", but multiple fields are set"));
  }
}

void Positive(const Quantity& q, const FieldPath& path, FieldErrorList& errs) {
  if (q.Sign() <= 0) {
    errs.push_back(Invalid(path, RenderQuantity(q), std::string(kGreaterThanZero)));
  }
}

void PositiveDuration(const std::optional<std::string>& text, const FieldPath& path,
                      FieldErrorList& errs) {
  if (!text) return;
  StatusOr<Duration> d = ParseDuration(*text);
  if (!d.ok()) {
    errs.push_back(Invalid(path, Quoted(*text), std::string(d.status().message())));
  } else if (*d <= Duration::zero()) {
    errs.push_back(Invalid(path, Quoted(*text), std::string(kGreaterThanZero)));
  }
}

void ValidateResourceCost(const d::SharingResourceCost& cost, bool counter, const FieldPath& path,
                          FieldErrorList& errs) {
  if (cost.name.empty()) {
    errs.push_back(Required(path.Child("name")));
  } else if (counter) {
    Append(errs, ValidateDeviceName(cost.name, path.Child("name")));  // counters: DNS labels
  } else {
    Append(errs, ValidateQualifiedName(cost.name, path.Child("name")));
  }
  Positive(cost.unit, path.Child("unit"), errs);
  Positive(cost.weight, path.Child("weight"), errs);
}

void ValidateCost(const d::SharingCost& cost, const FieldPath& path, FieldErrorList& errs) {
  int set =
      cost.per_device.has_value() + cost.per_counter.has_value() + cost.per_capacity.has_value();
  ExactlyOne(set, "`perDevice`, `perCounter` or `perCapacity`", path, errs);
  if (cost.per_device) Positive(*cost.per_device, path.Child("perDevice"), errs);
  if (cost.per_counter) {
    ValidateResourceCost(*cost.per_counter, true, path.Child("perCounter"), errs);
  }
  if (cost.per_capacity) {
    ValidateResourceCost(*cost.per_capacity, false, path.Child("perCapacity"), errs);
  }
}

void ValidateDomains(const std::vector<d::SharingDomain>& domains, const FieldPath& path,
                     FieldErrorList& errs) {
  if (domains.empty()) {
    errs.push_back(Required(path));
    return;
  }
  if (internal::TooManyItems(domains, kSharingPolicyMaxDomains, path, errs)) return;
  std::set<std::string, std::less<>> domain_names;
  std::map<std::string, std::string, std::less<>> domain_of_class;
  for (size_t i = 0; i < domains.size(); ++i) {
    const d::SharingDomain& domain = domains[i];
    const FieldPath p = path.Index(static_cast<int64_t>(i));
    if (domain.name.empty()) {
      errs.push_back(Required(p.Child("name")));
    } else {
      Append(errs, ValidateDNS1123Label(domain.name, p.Child("name")));
      if (!domain_names.insert(domain.name).second) {
        errs.push_back(Duplicate(p.Child("name"), Quoted(domain.name)));
      }
    }
    const FieldPath classes = p.Child("deviceClasses");
    if (domain.device_classes.empty()) {
      errs.push_back(Required(classes));
    } else if (!internal::TooManyItems(domain.device_classes, kSharingDomainMaxDeviceClasses,
                                       classes, errs)) {
      for (size_t j = 0; j < domain.device_classes.size(); ++j) {
        const std::string& c = domain.device_classes[j];
        const FieldPath cp = classes.Index(static_cast<int64_t>(j));
        FieldErrorList name_errs = ValidateDeviceClassName(c, cp);
        if (!name_errs.empty()) {
          Append(errs, std::move(name_errs));
          continue;
        }
        auto [it, inserted] = domain_of_class.emplace(c, domain.name);
        if (inserted) continue;
        FieldError dup = Duplicate(cp, Quoted(c));
        // A repeat within this domain is a plain duplicate; in another one, say which.
        if (it->second != domain.name) dup.detail = "already in domain " + Quoted(it->second);
        errs.push_back(std::move(dup));
      }
    }
    for (const auto& [class_name, cost] : domain.cost) {
      const FieldPath cp = p.Child("cost").Key(class_name);
      bool listed = false;
      for (const std::string& c : domain.device_classes) listed = listed || c == class_name;
      if (!listed) {
        FieldError missing = NotFound(cp, Quoted(class_name));
        missing.detail = "must be one of the domain's deviceClasses";
        errs.push_back(std::move(missing));
      }
      ValidateCost(cost, cp, errs);
    }
  }
}

void ValidateTenants(const std::vector<d::SharingTenant>& tenants, const FieldPath& path,
                     FieldErrorList& errs) {
  if (internal::TooManyItems(tenants, kSharingPolicyMaxTenants, path, errs)) return;
  std::map<std::string, size_t, std::less<>> tenant_of_namespace;
  for (size_t i = 0; i < tenants.size(); ++i) {
    const d::SharingTenant& tenant = tenants[i];
    const FieldPath p = path.Index(static_cast<int64_t>(i));
    ExactlyOne(!tenant.namespaces.empty() + tenant.namespace_selector.has_value(),
               "`namespaces` or `namespaceSelector`", p, errs);
    for (size_t j = 0; j < tenant.namespaces.size(); ++j) {
      const std::string& ns = tenant.namespaces[j];
      const FieldPath np = p.Child("namespaces").Index(static_cast<int64_t>(j));
      if (ns.empty()) {
        errs.push_back(Required(np));
        continue;
      }
      FieldErrorList name_errs = ValidateDNS1123Label(ns, np);
      if (!name_errs.empty()) {
        Append(errs, std::move(name_errs));
        continue;
      }
      auto [it, inserted] = tenant_of_namespace.emplace(ns, i);
      if (inserted) continue;
      FieldError dup = Duplicate(np, Quoted(ns));
      if (it->second != i) {
        dup.detail = "already in " + path.Index(static_cast<int64_t>(it->second)).String();
      }
      errs.push_back(std::move(dup));
    }
    if (tenant.namespace_selector) {
      Append(errs, ValidateLabelSelector(*tenant.namespace_selector, p.Child("namespaceSelector")));
    }
    if (!tenant.weight) {
      errs.push_back(Required(p.Child("weight")));
    } else if (*tenant.weight <= 0) {
      errs.push_back(
          Invalid(p.Child("weight"), RenderValue(*tenant.weight), std::string(kGreaterThanZero)));
    }
  }
}

FieldErrorList ValidateSpec(const d::DeviceSharingPolicySpec& spec) {
  const FieldPath path("spec");
  FieldErrorList errs;
  ValidateDomains(spec.domains, path.Child("domains"), errs);
  ValidateTenants(spec.tenants, path.Child("tenants"), errs);
  if (spec.default_weight && *spec.default_weight <= 0) {
    errs.push_back(Invalid(path.Child("defaultWeight"), RenderValue(*spec.default_weight),
                           std::string(kGreaterThanZero)));
  }
  if (spec.usage) {
    const FieldPath p = path.Child("usage");
    PositiveDuration(spec.usage->half_life, p.Child("halfLife"), errs);
    if (const std::optional<Quantity>& f = spec.usage->history_fraction;
        f && (f->Sign() < 0 || f->Compare(Quantity::FromInt64(1)) > 0)) {
      errs.push_back(Invalid(p.Child("historyFraction"), RenderQuantity(*f),
                             "must be between 0 and 1, inclusive"));
    }
  }
  if (spec.aging) {
    const FieldPath p = path.Child("aging");
    PositiveDuration(spec.aging->full_credit_after, p.Child("fullCreditAfter"), errs);
    PositiveDuration(spec.aging->starvation_threshold, p.Child("starvationThreshold"), errs);
    PositiveDuration(spec.aging->max_hold, p.Child("maxHold"), errs);
  }
  if (spec.priority && *spec.priority != d::kSharingPriorityModeStrictBands) {
    errs.push_back(NotSupported(path.Child("priority"), Quoted(*spec.priority),
                                {std::string(d::kSharingPriorityModeStrictBands)}));
  }
  return errs;
}

FieldErrorList ValidateStatus(const d::DeviceSharingPolicyStatus& status) {
  const FieldPath path("status");
  FieldErrorList errs;
  if (status.observed_generation && *status.observed_generation < 0) {
    errs.push_back(Invalid(path.Child("observedGeneration"),
                           RenderValue(*status.observed_generation), std::string(kNotNegative)));
  }
  auto not_negative = [&errs](const Quantity& q, const FieldPath& p) {
    if (q.Sign() < 0) errs.push_back(Invalid(p, RenderQuantity(q), std::string(kNotNegative)));
  };
  auto count = [&errs](int64_t n, const FieldPath& p) {
    if (n < 0) errs.push_back(Invalid(p, RenderValue(n), std::string(kNotNegative)));
  };
  internal::ValidateSet(
      status.domains, static_cast<int64_t>(kSharingPolicyMaxDomains), path.Child("domains"),
      [&](const d::SharingDomainStatus& domain, const FieldPath& p) {
        not_negative(domain.capacity_units, p.Child("capacityUnits"));
        internal::ValidateSet(
            domain.tenants, -1, p.Child("tenants"),
            [&](const d::SharingTenantStatus& t, const FieldPath& tp) {
              count(t.weight, tp.Child("weight"));
              not_negative(t.fair_share, tp.Child("fairShare"));
              not_negative(t.current, tp.Child("current"));
              not_negative(t.decayed, tp.Child("decayed"));
              not_negative(t.effective, tp.Child("effective"));
              count(t.pending, tp.Child("pending"));
              count(t.starving, tp.Child("starving"));
            },
            [](const d::SharingTenantStatus& t) { return t.namespace_; }, Quoted, errs);
      },
      [](const d::SharingDomainStatus& domain) { return domain.name; }, Quoted, errs);
  Append(errs, ValidateConditions(status.conditions, path.Child("conditions")));
  return errs;
}

}  // namespace

void SetDefaults(d::DeviceSharingPolicy* policy) {
  d::DeviceSharingPolicySpec& spec = policy->spec;
  if (!spec.default_weight) spec.default_weight = kSharingDefaultWeight;
  if (!spec.usage) spec.usage.emplace();
  if (!spec.usage->half_life) spec.usage->half_life = std::string(kSharingDefaultHalfLife);
  if (!spec.usage->history_fraction) {
    spec.usage->history_fraction = Quantity::FromMilli(kSharingDefaultHistoryFractionMilli);
  }
  if (!spec.aging) spec.aging.emplace();
  d::SharingAging& aging = *spec.aging;
  if (!aging.full_credit_after) {
    aging.full_credit_after = std::string(kSharingDefaultFullCreditAfter);
  }
  if (!aging.starvation_threshold) {
    aging.starvation_threshold = std::string(kSharingDefaultStarvationThreshold);
  }
  if (!aging.max_hold) aging.max_hold = std::string(kSharingDefaultMaxHold);
  if (!aging.holds) aging.holds = true;
  if (!spec.priority) spec.priority = std::string(d::kSharingPriorityModeStrictBands);
}

FieldErrorList ValidateDeviceSharingPolicy(const d::DeviceSharingPolicy& policy) {
  FieldErrorList errs = ValidateObjectMeta(policy.metadata, /*namespaced=*/false,
                                           NameIsDNSSubdomain, FieldPath("metadata"));
  Append(errs, ValidateSpec(policy.spec));
  if (policy.status) Append(errs, ValidateStatus(*policy.status));
  return errs;
}

FieldErrorList ValidateDeviceSharingPolicyUpdate(const d::DeviceSharingPolicy& policy,
                                                 const d::DeviceSharingPolicy& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(policy.metadata, old.metadata, FieldPath("metadata"));
  Append(errs, ValidateSpec(policy.spec));
  return errs;
}

FieldErrorList ValidateDeviceSharingPolicyStatusUpdate(const d::DeviceSharingPolicy& policy,
                                                       const d::DeviceSharingPolicy& old) {
  FieldErrorList errs =
      ValidateObjectMetaUpdate(policy.metadata, old.metadata, FieldPath("metadata"));
  if (policy.status) Append(errs, ValidateStatus(*policy.status));
  return errs;
}

}  // namespace draplane::api::validation
