#include "api/resource_health.h"

#include <set>

namespace draplane::api {

namespace {

// "claim:<name>" or "claim:<name>/<request>".
std::string EntryName(const corev1::ResourceClaim& ref) {
  std::string name = "claim:" + ref.name;
  if (!ref.request.empty()) name += "/" + ref.request;
  return name;
}

bool CoversRequest(const std::string& result_request, const std::string& request) {
  if (request.empty() || result_request == request) return true;
  return result_request.size() > request.size() && result_request.starts_with(request) &&
         result_request[request.size()] == '/';
}

const boost::json::object* ObjectAt(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_object() ? &it->value().get_object() : nullptr;
}

const boost::json::array* ArrayAt(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_array() ? &it->value().get_array() : nullptr;
}

const boost::json::array& ArrayOrEmpty(const boost::json::array* a) {
  static const boost::json::array kEmpty;
  return a != nullptr ? *a : kEmpty;
}

std::string StringAt(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  return it != o.end() && it->value().is_string() ? std::string(it->value().get_string())
                                                  : std::string();
}

}  // namespace

std::map<std::string, boost::json::array> AllocatedResourcesStatus(
    const corev1::Pod& pod, const std::map<std::string, const resourcev1::ResourceClaim*>& claims,
    const DeviceHealthFn& health) {
  std::map<std::string, boost::json::array> out;
  for (const auto* list : {&pod.spec.init_containers, &pod.spec.containers}) {
    for (const corev1::Container& c : *list) {
      boost::json::array entries;
      for (const corev1::ResourceClaim& ref : c.resources.claims) {
        auto claim = claims.find(ref.name);
        if (claim == claims.end() || claim->second == nullptr ||
            !claim->second->status.allocation.has_value()) {
          continue;
        }
        boost::json::array resources;
        // Two shares of one device (consumable capacity) are one resourceID: listed once, with
        // the device's health (the API server refuses a resourceID twice in an entry, which
        // left such a Pod Pending for good).
        std::set<std::string> listed;
        for (const resourcev1::DeviceRequestAllocationResult& r :
             claim->second->status.allocation->devices.results) {
          if (!CoversRequest(r.request, ref.request)) continue;
          std::string id = r.driver + "/" + r.pool + "/" + r.device;
          if (!listed.insert(id).second) continue;
          resources.push_back(boost::json::object{{"resourceID", std::move(id)},
                                                  {"health", health(r.driver, r.pool, r.device)}});
        }
        if (resources.empty()) continue;
        entries.push_back(
            boost::json::object{{"name", EntryName(ref)}, {"resources", std::move(resources)}});
      }
      if (!entries.empty()) out[c.name] = std::move(entries);
    }
  }
  return out;
}

bool SetAllocatedResourcesStatus(boost::json::array& container_statuses,
                                 const std::map<std::string, boost::json::array>& desired) {
  bool changed = false;
  for (boost::json::value& v : container_statuses) {
    if (!v.is_object()) continue;
    boost::json::object& status = v.get_object();
    auto want = desired.find(StringAt(status, "name"));
    auto have = status.find("allocatedResourcesStatus");
    if (want == desired.end()) {
      if (have != status.end()) {
        status.erase(have);
        changed = true;
      }
      continue;
    }
    if (have != status.end() && have->value() == boost::json::value(want->second)) continue;
    status["allocatedResourcesStatus"] = want->second;
    changed = true;
  }
  return changed;
}

FieldErrorList ValidateAllocatedResourcesStatus(const boost::json::object& pod) {
  FieldErrorList errors;
  const boost::json::object* spec = ObjectAt(pod, "spec");
  const boost::json::object* status = ObjectAt(pod, "status");
  if (status == nullptr) return errors;
  const boost::json::object empty;
  if (spec == nullptr) spec = &empty;
  for (auto [statuses_key, containers_key] :
       {std::pair<std::string_view, std::string_view>{"initContainerStatuses", "initContainers"},
        {"containerStatuses", "containers"}}) {
    const boost::json::array* statuses = ArrayAt(*status, statuses_key);
    if (statuses == nullptr) continue;
    const boost::json::array* containers = ArrayAt(*spec, containers_key);
    FieldPath statuses_path = FieldPath("status").Child(statuses_key);
    for (size_t i = 0; i < statuses->size(); ++i) {
      if (!(*statuses)[i].is_object()) continue;
      const boost::json::object& cs = (*statuses)[i].get_object();
      const boost::json::array* allocated = ArrayAt(cs, "allocatedResourcesStatus");
      if (allocated == nullptr) continue;
      // The container of this status; a missing one is not an error here (upstream ignores it,
      // kubernetes/kubernetes#124915).
      const boost::json::object* container = nullptr;
      for (const boost::json::value& c : ArrayOrEmpty(containers)) {
        if (c.is_object() && StringAt(c.get_object(), "name") == StringAt(cs, "name")) {
          container = &c.get_object();
        }
      }
      const boost::json::object* resources =
          container != nullptr ? ObjectAt(*container, "resources") : nullptr;
      for (size_t j = 0; j < allocated->size(); ++j) {
        FieldPath entry_path = statuses_path.Index(static_cast<int64_t>(i))
                                   .Child("allocatedResourcesStatus")
                                   .Index(static_cast<int64_t>(j));
        if (!(*allocated)[j].is_object()) continue;
        const boost::json::object& entry = (*allocated)[j].get_object();
        const std::string name = StringAt(entry, "name");
        if (container != nullptr) {
          bool found = false;
          std::string detail;
          if (name.starts_with("claim:")) {
            detail =
                "must match one of the container's resource claims in a format "
                "'claim:<claimName>/<request>' or 'claim:<claimName>' if request is empty";
            const boost::json::array* claims = resources ? ArrayAt(*resources, "claims") : nullptr;
            for (const boost::json::value& c : ArrayOrEmpty(claims)) {
              if (!c.is_object()) continue;
              corev1::ResourceClaim ref;
              ref.name = StringAt(c.get_object(), "name");
              ref.request = StringAt(c.get_object(), "request");
              if (EntryName(ref) == name) found = true;
            }
          } else {
            detail = "must match one of the container's resource requests";
            const boost::json::object* requests =
                resources ? ObjectAt(*resources, "requests") : nullptr;
            found = requests != nullptr && requests->contains(name);
          }
          if (!found)
            errors.push_back(Invalid(entry_path.Child("name"), RenderValue(name), detail));
        }
        const boost::json::array* list = ArrayAt(entry, "resources");
        std::set<std::string> ids;
        for (size_t k = 0; list != nullptr && k < list->size(); ++k) {
          if (!(*list)[k].is_object()) continue;
          const boost::json::object& r = (*list)[k].get_object();
          FieldPath path = entry_path.Child("resources").Index(static_cast<int64_t>(k));
          const std::string health = StringAt(r, "health");
          if (health != kResourceHealthy && health != kResourceUnhealthy &&
              health != kResourceHealthUnknown) {
            errors.push_back(
                NotSupported(path.Child("health"), RenderValue(health),
                             {std::string(kResourceHealthy), std::string(kResourceUnhealthy),
                              std::string(kResourceHealthUnknown)}));
          }
          const std::string id = StringAt(r, "resourceID");
          if (!ids.insert(id).second) {
            errors.push_back(Duplicate(path.Child("resourceID"), RenderValue(id)));
          }
        }
      }
    }
  }
  return errors;
}

}  // namespace draplane::api
