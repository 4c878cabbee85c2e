// The web dashboard `draplane serve` serves at /dashboard/ (docs/design/dashboard.md): static
// files built into the binary, served without authentication and without any data in them. The
// page then calls the API with the viewer's own bearer token, so RBAC decides what each viewer
// sees; the token is typed into the page or passed in the URL fragment (#token=...), which the
// browser never sends to the server.
#pragma once

#include <optional>
#include <string_view>

#include "server/http/http.h"

namespace draplane::server::dashboard {

inline constexpr std::string_view kPathPrefix = "/dashboard";

// The response for a GET or HEAD of `path` under /dashboard (a redirect from /dashboard to
// /dashboard/, index.html for /dashboard/, a file, or 404), or nullopt when `path` is not the
// dashboard's.
std::optional<http::Response> Serve(std::string_view method, std::string_view path);

}  // namespace draplane::server::dashboard
