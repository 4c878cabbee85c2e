#include "server/dashboard/dashboard.h"

#include <string>

#include "server/dashboard/internal/assets.h"

namespace draplane::server::dashboard {
namespace {

std::string_view ContentType(std::string_view path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() && path.substr(path.size() - suffix.size()) == suffix;
  };
  if (ends_with(".html")) return "text/html; charset=utf-8";
  if (ends_with(".js")) return "text/javascript; charset=utf-8";
  if (ends_with(".css")) return "text/css; charset=utf-8";
  if (ends_with(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

}  // namespace

std::optional<http::Response> Serve(std::string_view method, std::string_view path) {
  if (path.substr(0, kPathPrefix.size()) != kPathPrefix) return std::nullopt;
  std::string_view rest = path.substr(kPathPrefix.size());
  if (!rest.empty() && rest.front() != '/') return std::nullopt;  // e.g. /dashboards
  if (method != "GET" && method != "HEAD") return http::PlainText(405, "method not allowed\n");
  if (rest.empty()) {
    http::Response r = http::PlainText(301, "");
    r.headers.push_back({"Location", "/dashboard/"});
    return r;
  }
  std::string_view file = rest.substr(1);
  if (file.empty()) file = "index.html";
  for (int i = 0; i < internal::kAssetCount; ++i) {
    const internal::Asset& asset = internal::kAssets[i];
    if (file != asset.path) continue;
    http::Response r;
    r.headers.push_back({"Content-Type", std::string(ContentType(file))});
    r.headers.push_back({"X-Content-Type-Options", "nosniff"});
    // The page loads only its own files and talks only to this server; no framing, no referrer
    // (the fragment never leaves the browser, and neither does a token through a Referer).
    r.headers.push_back({"Content-Security-Policy",
                         "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                         "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                         "base-uri 'none'; form-action 'none'"});
    r.headers.push_back({"Referrer-Policy", "no-referrer"});
    r.headers.push_back({"X-Frame-Options", "DENY"});
    r.headers.push_back({"Cache-Control", "no-cache"});
    if (method == "GET") r.body.assign(reinterpret_cast<const char*>(asset.data), asset.size);
    return r;
  }
  return http::PlainText(404, "404 page not found\n");
}

}  // namespace draplane::server::dashboard
