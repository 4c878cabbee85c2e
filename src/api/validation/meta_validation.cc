#include "api/validation/meta_validation.h"

#include <boost/json.hpp>
#include <cstdio>
#include <set>

#include "api/gen/core_v1_codec.h"
#include "api/gen/meta_v1_codec.h"
#include "api/validation/internal/common.h"
#include "api/validation/internal/render.h"
#include "api/validation/names.h"

namespace draplane::api::validation {
namespace {

using internal::Append;
using internal::RenderJson;
using internal::ToLowerAscii;

// A Time as json.Marshal writes a metav1.Time: its text quoted, or null for the zero time.
std::string RenderTime(const Time& t) { return t.empty() ? "null" : RenderValue(t.text()); }

std::string RenderOptionalTime(const std::optional<Time>& t) {
  return t.has_value() ? RenderTime(*t) : "null";
}

FieldErrorList ValidateOwnerReferences(const std::vector<metav1::OwnerReference>& refs,
                                       const FieldPath& path) {
  FieldErrorList errs;
  std::string first_controller;
  for (const metav1::OwnerReference& ref : refs) {
    // schema.FromAPIVersionAndKind / ParseGroupVersion: "v1", "group/version"; more than one
    // slash does not parse and leaves the version empty.
    std::string version;
    std::string group;
    size_t slash = ref.api_version.find('/');
    if (slash == std::string::npos) {
      version = ref.api_version;
    } else if (ref.api_version.find('/', slash + 1) == std::string::npos) {
      group = ref.api_version.substr(0, slash);
      version = ref.api_version.substr(slash + 1);
    }
    if (version.empty()) {
      errs.push_back(Invalid(path.Child("apiVersion"), RenderValue(ref.api_version),
                             "version must not be empty"));
    }
    if (ref.kind.empty()) {
      errs.push_back(Invalid(path.Child("kind"), RenderValue(ref.kind), "must not be empty"));
    }
    if (ref.name.empty()) {
      errs.push_back(Invalid(path.Child("name"), RenderValue(ref.name), "must not be empty"));
    }
    if (ref.uid.empty()) {
      errs.push_back(Invalid(path.Child("uid"), RenderValue(ref.uid), "must not be empty"));
    }
    // BannedOwners: core/v1 Events may not own objects.
    if (group.empty() && version == "v1" && ref.kind == "Event") {
      errs.push_back(Invalid(path, RenderJson(metav1::Encode(ref)),
                             "/v1, Kind=Event is disallowed from being an owner"));
    }
    if (ref.controller.value_or(false)) {
      std::string current = ref.kind + "/" + ref.name;
      if (!first_controller.empty()) {
        boost::json::array all;
        for (const metav1::OwnerReference& r : refs) all.push_back(metav1::Encode(r));
        errs.push_back(Invalid(path, RenderJson(all),
                               "Only one reference can have Controller set to true. Found "
                               "\"true\" in references for " +
                                   first_controller + " and " + current));
      } else {
        first_controller = current;
      }
    }
  }
  return errs;
}

// Go's %#v of a []string: []string{"a", "b"}.
std::string GoStringSlice(const std::vector<std::string>& values) {
  std::string out = "[]string{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ", ";
    out += RenderValue(values[i]);
  }
  return out + "}";
}

FieldErrorList ValidateFinalizers(const std::vector<std::string>& finalizers,
                                  const FieldPath& path) {
  FieldErrorList errs;
  bool orphan = false;
  bool foreground = false;
  for (const std::string& f : finalizers) {
    for (const std::string& msg : IsQualifiedName(f)) {
      errs.push_back(Invalid(path, RenderValue(f), msg));
    }
    orphan = orphan || f == "orphan";
    foreground = foreground || f == "foregroundDeletion";
  }
  if (orphan && foreground) {
    boost::json::array all;
    for (const std::string& f : finalizers) all.emplace_back(f);
    errs.push_back(Invalid(path, RenderJson(all),
                           "finalizer orphan and foregroundDeletion cannot be both set"));
  }
  return errs;
}

// corevalidation.validateKubeFinalizerName: a finalizer without a domain must be a standard
// one.
FieldErrorList ValidateKubeFinalizerNames(const std::vector<std::string>& finalizers,
                                          const FieldPath& path) {
  FieldErrorList errs;
  for (const std::string& f : finalizers) {
    if (f.find('/') != std::string::npos) continue;
    if (f == "kubernetes" || f == "orphan" || f == "foregroundDeletion") continue;
    errs.push_back(Invalid(path, RenderValue(f),
                           "name is neither a standard finalizer name nor is it fully qualified"));
  }
  return errs;
}

FieldErrorList ValidateManagedFields(const std::vector<metav1::ManagedFieldsEntry>& entries,
                                     const FieldPath& path) {
  FieldErrorList errs;
  for (size_t i = 0; i < entries.size(); ++i) {
    const metav1::ManagedFieldsEntry& e = entries[i];
    FieldPath p = path.Index(static_cast<int64_t>(i));
    if (e.operation != "Apply" && e.operation != "Update") {
      errs.push_back(
          Invalid(p.Child("operation"), RenderValue(e.operation), "must be `Apply` or `Update`"));
    }
    if (!e.fields_type.empty() && e.fields_type != "FieldsV1") {
      errs.push_back(
          Invalid(p.Child("fieldsType"), RenderValue(e.fields_type), "must be `FieldsV1`"));
    }
    if (e.manager.size() > 128) errs.push_back(TooLong(p.Child("manager"), 128));
    for (size_t pos = 0; pos < e.manager.size(); ++pos) {
      unsigned char c = static_cast<unsigned char>(e.manager[pos]);
      if (c < 0x20 || c == 0x7f) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), "invalid character U+%04X (at position %zu)", c, pos);
        errs.push_back(Invalid(p.Child("manager"), RenderValue(e.manager), buf));
      }
    }
    if (e.subresource.size() > 256) errs.push_back(TooLong(p.Child("subresource"), 256));
  }
  return errs;
}

FieldErrorList ImmutableString(std::string_view now, std::string_view old, const FieldPath& path) {
  if (now == old) return {};
  return {Invalid(path, RenderValue(now), "field is immutable")};
}

}  // namespace

FieldErrorList ValidateLabels(const std::map<std::string, std::string, std::less<>>& labels,
                              const FieldPath& path) {
  FieldErrorList errs;
  for (const auto& [key, value] : labels) {
    Append(errs, ValidateLabelName(key, path));
    for (const std::string& msg : IsLabelValue(value)) {
      errs.push_back(Invalid(path, RenderValue(value), msg));
    }
  }
  return errs;
}

FieldErrorList ValidateAnnotations(
    const std::map<std::string, std::string, std::less<>>& annotations, const FieldPath& path) {
  FieldErrorList errs;
  size_t total = 0;
  for (const auto& [key, value] : annotations) {
    // The key rule is a qualified name, case-insensitively.
    for (const std::string& msg : IsQualifiedName(ToLowerAscii(key))) {
      errs.push_back(Invalid(path, RenderValue(key), msg));
    }
    total += key.size() + value.size();
  }
  if (total > kTotalAnnotationSizeLimit) {
    errs.push_back(TooLong(path, static_cast<int64_t>(kTotalAnnotationSizeLimit)));
  }
  return errs;
}

FieldErrorList ValidateFinalizerNames(const std::vector<std::string>& finalizers,
                                      const FieldPath& path) {
  FieldErrorList errs;
  for (const std::string& f : finalizers) {
    for (const std::string& msg : IsQualifiedName(f)) {
      errs.push_back(Invalid(path, RenderValue(f), msg));
    }
  }
  Append(errs, ValidateKubeFinalizerNames(finalizers, path));
  return errs;
}

FieldErrorList ValidateObjectMeta(const metav1::ObjectMeta& meta, bool namespaced,
                                  NameValidator name_fn, const FieldPath& path) {
  FieldErrorList errs;
  if (!meta.generate_name.empty()) {
    for (const std::string& msg : name_fn(meta.generate_name, true)) {
      errs.push_back(Invalid(path.Child("generateName"), RenderValue(meta.generate_name), msg));
    }
  }
  if (meta.name.empty()) {
    if (meta.generate_name.empty()) {
      errs.push_back(Required(path.Child("name"), "name or generateName is required"));
    }
  } else {
    for (const std::string& msg : name_fn(meta.name, false)) {
      errs.push_back(Invalid(path.Child("name"), RenderValue(meta.name), msg));
    }
  }
  if (namespaced) {
    if (meta.namespace_.empty()) {
      errs.push_back(Required(path.Child("namespace")));
    } else {
      for (const std::string& msg : NameIsDNSLabel(meta.namespace_, false)) {
        errs.push_back(Invalid(path.Child("namespace"), RenderValue(meta.namespace_), msg));
      }
    }
  } else if (!meta.namespace_.empty()) {
    errs.push_back(Forbidden(path.Child("namespace"), "not allowed on this type"));
  }
  if (meta.generation < 0) {
    errs.push_back(Invalid(path.Child("generation"), RenderValue(meta.generation),
                           "must be greater than or equal to 0"));
  }
  Append(errs, ValidateLabels(meta.labels, path.Child("labels")));
  Append(errs, ValidateAnnotations(meta.annotations, path.Child("annotations")));
  Append(errs, ValidateOwnerReferences(meta.owner_references, path.Child("ownerReferences")));
  Append(errs, ValidateFinalizers(meta.finalizers, path.Child("finalizers")));
  Append(errs, ValidateManagedFields(meta.managed_fields, path.Child("managedFields")));
  Append(errs, ValidateKubeFinalizerNames(meta.finalizers, path.Child("finalizers")));
  return errs;
}

FieldErrorList ValidateObjectMetaUpdate(const metav1::ObjectMeta& meta,
                                        const metav1::ObjectMeta& old, const FieldPath& path) {
  FieldErrorList errs;
  if (old.deletion_timestamp.has_value()) {
    std::set<std::string> before(old.finalizers.begin(), old.finalizers.end());
    std::set<std::string> added;
    for (const std::string& f : meta.finalizers) {
      if (!before.contains(f)) added.insert(f);
    }
    if (!added.empty()) {
      errs.push_back(Forbidden(path.Child("finalizers"),
                               "no new finalizers can be added if the object is being deleted, "
                               "found new finalizers " +
                                   GoStringSlice({added.begin(), added.end()})));
    }
  }
  if (meta.resource_version.empty()) {
    errs.push_back(Invalid(path.Child("resourceVersion"), RenderValue(meta.resource_version),
                           "must be specified for an update"));
  }
  if (meta.generation < old.generation) {
    errs.push_back(
        Invalid(path.Child("generation"), RenderValue(meta.generation), "must not be decremented"));
  }
  Append(errs, ImmutableString(meta.name, old.name, path.Child("name")));
  Append(errs, ImmutableString(meta.namespace_, old.namespace_, path.Child("namespace")));
  Append(errs, ImmutableString(meta.uid, old.uid, path.Child("uid")));
  if (!(meta.creation_timestamp == old.creation_timestamp)) {
    errs.push_back(Invalid(path.Child("creationTimestamp"), RenderTime(meta.creation_timestamp),
                           "field is immutable"));
  }
  if (!(meta.deletion_timestamp == old.deletion_timestamp)) {
    errs.push_back(Invalid(path.Child("deletionTimestamp"),
                           RenderOptionalTime(meta.deletion_timestamp), "field is immutable"));
  }
  if (meta.deletion_grace_period_seconds != old.deletion_grace_period_seconds) {
    errs.push_back(Invalid(path.Child("deletionGracePeriodSeconds"),
                           meta.deletion_grace_period_seconds.has_value()
                               ? RenderValue(*meta.deletion_grace_period_seconds)
                               : "null",
                           "field is immutable"));
  }
  Append(errs, ValidateLabels(meta.labels, path.Child("labels")));
  Append(errs, ValidateAnnotations(meta.annotations, path.Child("annotations")));
  Append(errs, ValidateOwnerReferences(meta.owner_references, path.Child("ownerReferences")));
  Append(errs, ValidateManagedFields(meta.managed_fields, path.Child("managedFields")));
  return errs;
}

FieldErrorList ValidateTemplateObjectMeta(const metav1::ObjectMeta& meta, const FieldPath& path) {
  FieldErrorList errs = ValidateAnnotations(meta.annotations, path.Child("annotations"));
  Append(errs, ValidateLabels(meta.labels, path.Child("labels")));
  // validateFieldAllowList: every other field that is not its zero value is Forbidden, named as
  // upstream names it (the Go field name with a lower-case first letter, hence "uID").
  auto forbid = [&](bool set, std::string_view name) {
    if (set) errs.push_back(Forbidden(path.Child(name), "cannot be set"));
  };
  forbid(!meta.name.empty(), "name");
  forbid(!meta.generate_name.empty(), "generateName");
  forbid(!meta.namespace_.empty(), "namespace");
  forbid(!meta.self_link.empty(), "selfLink");
  forbid(!meta.uid.empty(), "uID");
  forbid(!meta.resource_version.empty(), "resourceVersion");
  forbid(meta.generation != 0, "generation");
  forbid(!meta.creation_timestamp.empty(), "creationTimestamp");
  forbid(meta.deletion_timestamp.has_value(), "deletionTimestamp");
  forbid(meta.deletion_grace_period_seconds.has_value(), "deletionGracePeriodSeconds");
  forbid(!meta.owner_references.empty(), "ownerReferences");
  forbid(!meta.finalizers.empty(), "finalizers");
  forbid(!meta.managed_fields.empty(), "managedFields");
  return errs;
}

FieldErrorList ValidateConditions(const std::vector<metav1::Condition>& conditions,
                                  const FieldPath& path) {
  static constexpr std::string_view kReasonFmt = "[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?";
  static constexpr std::string_view kReasonMsg =
      "a condition reason must start with alphabetic character, optionally followed by a string "
      "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'";
  FieldErrorList errs;
  std::set<std::string_view> seen;
  for (size_t i = 0; i < conditions.size(); ++i) {
    const metav1::Condition& c = conditions[i];
    FieldPath p = path.Index(static_cast<int64_t>(i));
    if (!seen.insert(c.type).second) {
      errs.push_back(Duplicate(p.Child("type"), RenderValue(c.type)));
    }
    Append(errs, ValidateLabelName(c.type, p.Child("type")));
    if (c.status != "True" && c.status != "False" && c.status != "Unknown") {
      errs.push_back(
          NotSupported(p.Child("status"), RenderValue(c.status), {"False", "True", "Unknown"}));
    }
    if (c.observed_generation < 0) {
      errs.push_back(Invalid(p.Child("observedGeneration"), RenderValue(c.observed_generation),
                             "must be greater than or equal to zero"));
    }
    if (c.last_transition_time.empty()) {
      errs.push_back(Required(p.Child("lastTransitionTime"), "must be set"));
    }
    if (c.reason.empty()) {
      errs.push_back(Required(p.Child("reason"), "must be set"));
    } else {
      bool ok = (c.reason.front() >= 'A' && c.reason.front() <= 'Z') ||
                (c.reason.front() >= 'a' && c.reason.front() <= 'z');
      for (char ch : c.reason) {
        bool alnum =
            (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        ok = ok && (alnum || ch == '_' || ch == ',' || ch == ':');
      }
      char last = c.reason.back();
      ok = ok && last != ',' && last != ':';
      if (!ok) {
        errs.push_back(Invalid(
            p.Child("reason"), RenderValue(c.reason),
            RegexError(kReasonMsg, kReasonFmt,
                       {"my_name", "MY_NAME", "MyName", "ReasonA,ReasonB", "ReasonA:ReasonB"})));
      }
      if (c.reason.size() > 1024) errs.push_back(TooLong(p.Child("reason"), 1024));
    }
    if (c.message.size() > 32 * 1024) errs.push_back(TooLong(p.Child("message"), 32 * 1024));
  }
  return errs;
}

namespace {

// One requirement of a node selector (upstream ValidateNodeSelectorRequirement, `numeric`: Gt and
// Lt allowed) or of a metav1.LabelSelector (ValidateLabelSelectorRequirement), with invalid label
// values rejected: the operator's value count, the key a label name, each value a label value.
FieldErrorList ValidateSelectorRequirement(std::string_view key, const std::string& op,
                                           const std::vector<std::string>& values, bool numeric,
                                           const FieldPath& path) {
  FieldErrorList errs;
  if (op == "In" || op == "NotIn") {
    if (values.empty()) {
      errs.push_back(
          Required(path.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"));
    }
  } else if (op == "Exists" || op == "DoesNotExist") {
    if (!values.empty()) {
      errs.push_back(Forbidden(path.Child("values"),
                               "may not be specified when `operator` is 'Exists' or "
                               "'DoesNotExist'"));
    }
  } else if (numeric && (op == "Gt" || op == "Lt")) {
    if (values.size() != 1) {
      errs.push_back(Required(path.Child("values"),
                              "must be specified single value when `operator` is 'Lt' or 'Gt'"));
    }
  } else {
    errs.push_back(
        Invalid(path.Child("operator"), RenderValue(op), "not a valid selector operator"));
  }
  Append(errs, ValidateLabelName(key, path.Child("key")));
  for (size_t i = 0; i < values.size(); ++i) {
    for (const std::string& msg : IsLabelValue(values[i])) {
      errs.push_back(Invalid(path.Child("values").Index(static_cast<int64_t>(i)),
                             RenderValue(values[i]), msg));
    }
  }
  return errs;
}

FieldErrorList ValidateNodeFieldSelectorRequirement(const corev1::NodeSelectorRequirement& req,
                                                    const FieldPath& path) {
  FieldErrorList errs;
  if (req.operator_ == "In" || req.operator_ == "NotIn") {
    if (req.values.size() != 1) {
      errs.push_back(Required(path.Child("values"),
                              "must be only one value when `operator` is 'In' or 'NotIn' for "
                              "node field selector"));
    }
  } else {
    errs.push_back(Invalid(path.Child("operator"), RenderValue(req.operator_),
                           "not a valid selector operator"));
  }
  if (req.key != "metadata.name") {
    errs.push_back(
        Invalid(path.Child("key"), RenderValue(req.key), "not a valid field selector key"));
  } else {
    for (size_t i = 0; i < req.values.size(); ++i) {
      for (const std::string& msg : NameIsDNSSubdomain(req.values[i], false)) {
        errs.push_back(Invalid(path.Child("values").Index(static_cast<int64_t>(i)),
                               RenderValue(req.values[i]), msg));
      }
    }
  }
  return errs;
}

}  // namespace

FieldErrorList ValidateNodeSelector(const corev1::NodeSelector& selector, const FieldPath& path) {
  FieldErrorList errs;
  FieldPath terms = path.Child("nodeSelectorTerms");
  if (selector.node_selector_terms.empty()) {
    errs.push_back(Required(terms, "must have at least one node selector term"));
    return errs;
  }
  for (size_t i = 0; i < selector.node_selector_terms.size(); ++i) {
    const corev1::NodeSelectorTerm& term = selector.node_selector_terms[i];
    FieldPath tp = terms.Index(static_cast<int64_t>(i));
    for (size_t j = 0; j < term.match_expressions.size(); ++j) {
      const corev1::NodeSelectorRequirement& req = term.match_expressions[j];
      Append(errs, ValidateSelectorRequirement(
                       req.key, req.operator_, req.values, /*numeric=*/true,
                       tp.Child("matchExpressions").Index(static_cast<int64_t>(j))));
    }
    for (size_t j = 0; j < term.match_fields.size(); ++j) {
      Append(errs,
             ValidateNodeFieldSelectorRequirement(
                 term.match_fields[j], tp.Child("matchFields").Index(static_cast<int64_t>(j))));
    }
  }
  return errs;
}

FieldErrorList ValidateLabelSelector(const metav1::LabelSelector& selector, const FieldPath& path) {
  FieldErrorList errs = ValidateLabels(selector.match_labels, path.Child("matchLabels"));
  for (size_t i = 0; i < selector.match_expressions.size(); ++i) {
    const metav1::LabelSelectorRequirement& req = selector.match_expressions[i];
    Append(errs, ValidateSelectorRequirement(
                     req.key, req.operator_, req.values, /*numeric=*/false,
                     path.Child("matchExpressions").Index(static_cast<int64_t>(i))));
  }
  return errs;
}

}  // namespace draplane::api::validation
