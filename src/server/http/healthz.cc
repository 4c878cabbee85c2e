#include "server/http/healthz.h"

#include <set>

namespace draplane::server::http {

Response AnswerHealth(std::string_view path, std::string_view query,
                      const std::vector<HealthCheck>& checks) {
  std::string_view endpoint = path.substr(1);
  std::string_view only;
  if (size_t slash = endpoint.find('/'); slash != std::string_view::npos) {
    only = endpoint.substr(slash + 1);
    endpoint = endpoint.substr(0, slash);
  }
  if (!only.empty()) {
    for (const HealthCheck& check : checks) {
      if (check.name != only) continue;
      if (check.status.ok()) return PlainText(200, "ok");
      return PlainText(500, "internal server error: " + std::string(check.status.message()));
    }
    return PlainText(404, "404 page not found");
  }
  std::optional<std::vector<std::pair<std::string, std::string>>> params = ParseQuery(query);
  bool verbose = false;
  std::set<std::string> excluded;
  for (const auto& [name, value] : params.value_or(decltype(params)::value_type{})) {
    if (name == "verbose") verbose = true;
    if (name == "exclude") excluded.insert(value);
  }
  std::string list;
  bool failed = false;
  for (const HealthCheck& check : checks) {
    if (excluded.erase(check.name) > 0) {
      list += "[+]" + check.name + " excluded: ok\n";
      continue;
    }
    if (check.status.ok()) {
      list += "[+]" + check.name + " ok\n";
    } else {
      failed = true;
      list += "[-]" + check.name + " failed: reason withheld\n";
    }
  }
  if (!excluded.empty()) {
    std::string names;
    for (const std::string& name : excluded) {
      names += (names.empty() ? "\"" : ",\"") + name + "\"";
    }
    list += "warn: some health checks cannot be excluded: no matches for " + names + "\n";
  }
  if (failed) return PlainText(500, list + std::string(endpoint) + " check failed\n");
  if (!verbose) return PlainText(200, "ok");
  return PlainText(200, list + std::string(endpoint) + " check passed\n");
}

}  // namespace draplane::server::http
