// The answers of /healthz, /livez and /readyz as Kubernetes components give them (the healthz
// package of k8s.io/apiserver), shared by `draplane serve` and the long-lived client components
// (scheduler, controller-manager, agent):
//   200 `ok`, or with `?verbose` the list `[+]name ok` and `<endpoint> check passed`;
//   on any failure 500 with the list, `[-]name failed: reason withheld` and
//   `<endpoint> check failed`;
//   `?exclude=<check>` (repeatable) reports the check as `[+]name excluded: ok`, and an exclude
//   that names no check adds `warn: some health checks cannot be excluded: no matches for "x"`;
//   `/<endpoint>/<check>` answers that one check (`ok`, or 500 `internal server error: why`).
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "server/http/http.h"

namespace draplane::server::http {

struct HealthCheck {
  std::string name;
  Status status;
};

// Answers GET `path` (`/healthz`, `/livez`, `/readyz` or `/<endpoint>/<check>`) with the raw
// `query` from `checks`, the checks of that endpoint in the order they are listed.
Response AnswerHealth(std::string_view path, std::string_view query,
                      const std::vector<HealthCheck>& checks);

}  // namespace draplane::server::http
