#include "api/labels/field_selector.h"

#include <algorithm>
#include <boost/json.hpp>

namespace draplane::api::labels {
namespace {

// Splits on unescaped commas (fields.splitTerms).
std::vector<std::string> SplitTerms(std::string_view text) {
  std::vector<std::string> terms;
  std::string current;
  bool escaped = false;
  for (char c : text) {
    if (escaped) {
      current.push_back('\\');
      current.push_back(c);
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == ',') {
      terms.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (escaped) current.push_back('\\');
  terms.push_back(std::move(current));
  return terms;
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out.push_back(s[++i]);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector selector;
  if (text.empty()) return selector;
  for (const std::string& term : SplitTerms(text)) {
    if (term.empty()) continue;
    // fields.splitTerm: the first unescaped "!=", "==" or "=".
    size_t position = std::string::npos;
    size_t op_length = 0;
    bool equals = true;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.compare(i, 2, "!=") == 0) {
        position = i;
        op_length = 2;
        equals = false;
        break;
      }
      if (term.compare(i, 2, "==") == 0) {
        position = i;
        op_length = 2;
        break;
      }
      if (term[i] == '=') {
        position = i;
        op_length = 1;
        break;
      }
    }
    if (position == std::string::npos) {
      return InvalidArgumentError("invalid selector: '" + std::string(text) +
                                  "'; can't understand '" + term + "'");
    }
    FieldRequirement requirement;
    requirement.field = term.substr(0, position);
    requirement.equals = equals;
    requirement.value = Unescape(std::string_view(term).substr(position + op_length));
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

std::optional<std::string> FieldSelector::RequiresExactMatch(std::string_view field) const {
  for (const FieldRequirement& r : requirements_) {
    if (r.field == field && r.equals) return r.value;
  }
  return std::nullopt;
}

bool FieldSelector::Matches(const FieldSet& fields) const {
  for (const FieldRequirement& r : requirements_) {
    auto it = fields.find(r.field);
    std::string_view value = it == fields.end() ? std::string_view() : std::string_view(it->second);
    if ((value == r.value) != r.equals) return false;
  }
  return true;
}

std::vector<std::string> FieldSelector::Fields() const {
  std::vector<std::string> out;
  for (const FieldRequirement& r : requirements_) out.push_back(r.field);
  return out;
}

namespace {

std::string_view StringAt(const boost::json::object* object, std::string_view key) {
  if (object == nullptr) return {};
  const boost::json::value* v = object->if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

const boost::json::object* ObjectAt(const boost::json::object* object, std::string_view key) {
  if (object == nullptr) return nullptr;
  const boost::json::value* v = object->if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

std::string BoolAt(const boost::json::object* object, std::string_view key) {
  const boost::json::value* v = object != nullptr ? object->if_contains(key) : nullptr;
  return v != nullptr && v->is_bool() && v->get_bool() ? "true" : "false";
}

enum class Kind {
  kOther,
  kPod,
  kNode,
  kNamespace,
  kEvent,
  kEventsV1Event,
  kResourceSlice,
  kAllocationDecision
};

Kind KindOf(std::string_view group, std::string_view kind) {
  if (group.empty()) {
    if (kind == "Pod") return Kind::kPod;
    if (kind == "Node") return Kind::kNode;
    if (kind == "Namespace") return Kind::kNamespace;
    if (kind == "Event") return Kind::kEvent;
  } else if (group == "events.k8s.io" && kind == "Event") {
    return Kind::kEventsV1Event;
  } else if (group == "resource.k8s.io" && kind == "ResourceSlice") {
    return Kind::kResourceSlice;
  } else if (group == "draplane.dev" && kind == "AllocationDecision") {
    return Kind::kAllocationDecision;
  }
  return Kind::kOther;
}

}  // namespace

const std::vector<std::string>& SelectableFieldNames(std::string_view group,
                                                     std::string_view kind) {
  // pod.ToSelectableFields
  static const std::vector<std::string> kPod = {
      "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
      "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
  // node.NodeToSelectableFields
  static const std::vector<std::string> kNode = {"spec.unschedulable"};
  // namespace.NamespaceToSelectableFields
  static const std::vector<std::string> kNamespace = {"status.phase"};
  // pkg/registry/core/event/strategy.go ToSelectableFields
  static const std::vector<std::string> kEvent = {"involvedObject.kind",
                                                  "involvedObject.namespace",
                                                  "involvedObject.name",
                                                  "involvedObject.uid",
                                                  "involvedObject.apiVersion",
                                                  "involvedObject.resourceVersion",
                                                  "involvedObject.fieldPath",
                                                  "reason",
                                                  "reportingComponent",
                                                  "source",
                                                  "type"};
  // The same fields under events.k8s.io/v1's names (api/events.h; upstream's
  // events/v1 AddFieldLabelConversionsForEvent). `source` is the deprecated source's component.
  static const std::vector<std::string> kEventsV1Event = {"regarding.kind",
                                                          "regarding.namespace",
                                                          "regarding.name",
                                                          "regarding.uid",
                                                          "regarding.apiVersion",
                                                          "regarding.resourceVersion",
                                                          "regarding.fieldPath",
                                                          "reason",
                                                          "reportingController",
                                                          "source",
                                                          "type"};
  // resourceslice.toSelectableFields
  static const std::vector<std::string> kResourceSlice = {"spec.nodeName", "spec.driver"};
  // draplane's own: `kubectl get allocationdecisions --field-selector spec.pod.name=llm-3`.
  static const std::vector<std::string> kAllocationDecision = {"spec.pod.name", "spec.pod.uid",
                                                               "spec.nodeName", "spec.outcome"};
  static const std::vector<std::string> kNone;
  switch (KindOf(group, kind)) {
    case Kind::kPod:
      return kPod;
    case Kind::kNode:
      return kNode;
    case Kind::kNamespace:
      return kNamespace;
    case Kind::kEvent:
      return kEvent;
    case Kind::kEventsV1Event:
      return kEventsV1Event;
    case Kind::kResourceSlice:
      return kResourceSlice;
    case Kind::kAllocationDecision:
      return kAllocationDecision;
    case Kind::kOther:
      break;
  }
  return kNone;
}

FieldSet SelectableFields(std::string_view group, std::string_view kind,
                          const boost::json::object& object) {
  FieldSet fields;
  const boost::json::object* meta = ObjectAt(&object, "metadata");
  fields["metadata.name"] = std::string(StringAt(meta, "name"));
  fields["metadata.namespace"] = std::string(StringAt(meta, "namespace"));
  const boost::json::object* spec = ObjectAt(&object, "spec");
  const boost::json::object* status = ObjectAt(&object, "status");
  switch (KindOf(group, kind)) {
    case Kind::kPod:
      for (std::string_view f :
           {"nodeName", "restartPolicy", "schedulerName", "serviceAccountName"}) {
        fields["spec." + std::string(f)] = std::string(StringAt(spec, f));
      }
      fields["spec.hostNetwork"] = BoolAt(spec, "hostNetwork");
      for (std::string_view f : {"phase", "podIP", "nominatedNodeName"}) {
        fields["status." + std::string(f)] = std::string(StringAt(status, f));
      }
      break;
    case Kind::kNode:
      fields["spec.unschedulable"] = BoolAt(spec, "unschedulable");
      break;
    case Kind::kNamespace:
      fields["status.phase"] = std::string(StringAt(status, "phase"));
      break;
    case Kind::kEvent: {
      const boost::json::object* involved = ObjectAt(&object, "involvedObject");
      for (std::string_view f :
           {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}) {
        fields["involvedObject." + std::string(f)] = std::string(StringAt(involved, f));
      }
      fields["reason"] = std::string(StringAt(&object, "reason"));
      fields["reportingComponent"] = std::string(StringAt(&object, "reportingComponent"));
      fields["source"] = std::string(StringAt(ObjectAt(&object, "source"), "component"));
      fields["type"] = std::string(StringAt(&object, "type"));
      break;
    }
    case Kind::kEventsV1Event: {
      const boost::json::object* regarding = ObjectAt(&object, "regarding");
      for (std::string_view f :
           {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}) {
        fields["regarding." + std::string(f)] = std::string(StringAt(regarding, f));
      }
      fields["reason"] = std::string(StringAt(&object, "reason"));
      fields["reportingController"] = std::string(StringAt(&object, "reportingController"));
      fields["source"] = std::string(StringAt(ObjectAt(&object, "deprecatedSource"), "component"));
      fields["type"] = std::string(StringAt(&object, "type"));
      break;
    }
    case Kind::kResourceSlice:
      fields["spec.nodeName"] = std::string(StringAt(spec, "nodeName"));
      fields["spec.driver"] = std::string(StringAt(spec, "driver"));
      break;
    case Kind::kAllocationDecision: {
      const boost::json::object* pod = ObjectAt(spec, "pod");
      fields["spec.pod.name"] = std::string(StringAt(pod, "name"));
      fields["spec.pod.uid"] = std::string(StringAt(pod, "uid"));
      fields["spec.nodeName"] = std::string(StringAt(spec, "nodeName"));
      fields["spec.outcome"] = std::string(StringAt(spec, "outcome"));
      break;
    }
    case Kind::kOther:
      break;
  }
  return fields;
}

Status CheckSelectableFields(const FieldSelector& selector, std::string_view group,
                             std::string_view kind) {
  const std::vector<std::string>& own = SelectableFieldNames(group, kind);
  for (const FieldRequirement& r : selector.requirements()) {
    if (r.field == "metadata.name" || r.field == "metadata.namespace") continue;
    if (std::find(own.begin(), own.end(), r.field) == own.end()) {
      return InvalidArgumentError("field label not supported: " + r.field);
    }
  }
  return Status::Ok();
}

}  // namespace draplane::api::labels
