#include "api/validation/pod_defaults.h"

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "api/meta/codec_support.h"
#include "api/quantity.h"
#include "api/validation/internal/json_access.h"

namespace draplane::api::validation {
namespace {

using internal::FindArray;
using internal::FindObject;
using internal::GetString;

boost::json::object& EnsureObject(boost::json::object& obj, std::string_view key) {
  boost::json::value& v = obj[key];
  if (!v.is_object()) v = boost::json::object();
  return v.get_object();
}

// The quantity a JSON value holds (a string or a number); nullopt when it holds none.
std::optional<Quantity> QuantityIn(const boost::json::value& v) {
  Quantity q;
  api::internal::DecodeContext ctx(nullptr);
  api::internal::DecodeQuantity(v, api::internal::Path{}, ctx, &q);
  if (ctx.error_count() != 0) return std::nullopt;
  return q;
}

// Equal as quantities (upstream compares with Cmp: "1" and "1000m" are equal), or as JSON when
// either is not a quantity.
bool SameQuantity(const boost::json::value& a, const boost::json::value& b) {
  std::optional<Quantity> qa = QuantityIn(a);
  std::optional<Quantity> qb = QuantityIn(b);
  if (qa && qb) return qa->Compare(*qb) == 0;
  return a == b;
}

}  // namespace

std::string PodQosClass(const boost::json::object& pod) {
  const boost::json::object* spec = FindObject(pod, "spec");
  if (spec == nullptr) return "BestEffort";
  bool any = false;
  bool guaranteed = true;
  for (std::string_view list_name : {"initContainers", "containers"}) {
    const boost::json::array* list = FindArray(*spec, list_name);
    if (list == nullptr) continue;
    for (const boost::json::value& c : *list) {
      if (!c.is_object()) continue;
      const boost::json::object* resources = FindObject(c.get_object(), "resources");
      const boost::json::object* requests =
          resources ? FindObject(*resources, "requests") : nullptr;
      const boost::json::object* limits = resources ? FindObject(*resources, "limits") : nullptr;
      auto count = [](const boost::json::object* m) {
        int n = 0;
        if (m == nullptr) return n;
        for (const auto& kv : *m) {
          if (kv.key() == "cpu" || kv.key() == "memory") ++n;
        }
        return n;
      };
      if (count(requests) > 0 || count(limits) > 0) any = true;
      if (count(limits) < 2) guaranteed = false;
      if (requests != nullptr && limits != nullptr) {
        for (std::string_view r : {"cpu", "memory"}) {
          auto ir = requests->find(r);
          auto il = limits->find(r);
          if (ir != requests->end() && il != limits->end() &&
              !SameQuantity(ir->value(), il->value())) {
            guaranteed = false;
          }
        }
      }
    }
  }
  if (!any) return "BestEffort";
  return guaranteed ? "Guaranteed" : "Burstable";
}

void SetPodDefaults(boost::json::object& pod) {
  boost::json::object& spec = EnsureObject(pod, "spec");
  auto set_default = [](boost::json::object& o, std::string_view key, boost::json::value v) {
    if (!o.contains(key)) o[key] = std::move(v);
  };
  set_default(spec, "restartPolicy", "Always");
  set_default(spec, "terminationGracePeriodSeconds", 30);
  set_default(spec, "dnsPolicy", "ClusterFirst");
  set_default(spec, "schedulerName", "default-scheduler");
  set_default(spec, "securityContext", boost::json::object());
  set_default(spec, "enableServiceLinks", true);
  for (std::string_view list_name : {"initContainers", "containers"}) {
    auto it = spec.find(list_name);
    if (it == spec.end() || !it->value().is_array()) continue;
    for (boost::json::value& c : it->value().get_array()) {
      if (!c.is_object()) continue;
      boost::json::object& container = c.get_object();
      std::string image(GetString(container, "image"));
      size_t slash = image.rfind('/');
      std::string last = slash == std::string::npos ? image : image.substr(slash + 1);
      bool latest = last.find(':') == std::string::npos || image.ends_with(":latest");
      if (image.find('@') != std::string::npos) latest = false;
      set_default(container, "imagePullPolicy", latest ? "Always" : "IfNotPresent");
      set_default(container, "terminationMessagePath", "/dev/termination-log");
      set_default(container, "terminationMessagePolicy", "File");
      set_default(container, "resources", boost::json::object());
      // Requests default to the limits of the resources that have none (SetDefaults_Pod).
      boost::json::object& resources = EnsureObject(container, "resources");
      if (const boost::json::object* limits = FindObject(resources, "limits");
          limits != nullptr && !limits->empty()) {
        const boost::json::object copy = *limits;
        boost::json::object& requests = EnsureObject(resources, "requests");
        for (const auto& [name, quantity] : copy) set_default(requests, name, quantity);
      }
    }
  }
}

}  // namespace draplane::api::validation
