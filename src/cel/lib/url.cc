// Kubernetes URL library (apiserver pkg/cel/library/urls.go, pkg/cel/url.go), over a rewrite of
// the parts of Go's net/url the library uses: url.ParseRequestURI validation (an absolute URI or
// an absolute path), then url.Parse (scheme, authority, path, query, fragment).
#include <algorithm>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Global;
using internal::Member;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Go url.unescape; `plus_is_space` for query components.
bool Unescape(std::string_view s, bool plus_is_space, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      if (i + 2 >= s.size()) return false;
      int h = HexDigit(s[i + 1]), l = HexDigit(s[i + 2]);
      if (h < 0 || l < 0) return false;
      out->push_back(static_cast<char>(h * 16 + l));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out->push_back(' ');
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool ValidPort(std::string_view port) {
  for (char c : port) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Go url.ParseRequestURI followed by url.Parse; false with `*error` on failure.
bool ParseUrl(std::string_view raw, URLValue* u, std::string* error) {
  for (char c : raw) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      *error = "net/url: invalid control character in URL";
      return false;
    }
  }
  if (raw.empty()) {
    *error = "empty url";
    return false;
  }
  u->text = std::string(raw);
  std::string_view rest = raw;
  // The fragment (url.Parse strips it; ParseRequestURI keeps it in the path/query).
  if (size_t hash = rest.find('#'); hash != std::string_view::npos) {
    u->fragment = std::string(rest.substr(hash + 1));
    rest = rest.substr(0, hash);
  }
  // Scheme.
  for (size_t i = 0; i < rest.size(); ++i) {
    char c = rest[i];
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (letter) continue;
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.') {
      if (i == 0) break;
      continue;
    }
    if (c == ':') {
      if (i == 0) {
        *error = "missing protocol scheme";
        return false;
      }
      u->scheme = std::string(rest.substr(0, i));
      std::transform(u->scheme.begin(), u->scheme.end(), u->scheme.begin(),
                     [](char ch) { return static_cast<char>(std::tolower(ch)); });
      rest = rest.substr(i + 1);
    }
    break;
  }
  if (size_t q = rest.find('?'); q != std::string_view::npos) {
    u->raw_query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  if (rest.empty() || rest[0] != '/') {
    if (!u->scheme.empty()) {
      u->opaque = std::string(rest);
      return true;
    }
    *error = "invalid URI for request";
    return false;
  }
  if (!u->scheme.empty() && rest.size() >= 2 && rest[0] == '/' && rest[1] == '/') {
    rest.remove_prefix(2);
    size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
      u->user_info = std::string(authority.substr(0, at));
      authority = authority.substr(at + 1);
    }
    // Host: "[ipv6]:port" or "name:port".
    if (!authority.empty() && authority[0] == '[') {
      size_t close = authority.find(']');
      if (close == std::string_view::npos) {
        *error = "missing ']' in host";
        return false;
      }
      std::string_view after = authority.substr(close + 1);
      if (!after.empty() && (after[0] != ':' || !ValidPort(after.substr(1)))) {
        *error = "invalid port \"" + std::string(after) + "\" after host";
        return false;
      }
    } else if (size_t colon = authority.rfind(':'); colon != std::string_view::npos) {
      if (!ValidPort(authority.substr(colon + 1))) {
        *error = "invalid port \"" + std::string(authority.substr(colon)) + "\" after host";
        return false;
      }
    }
    std::string host;
    if (!Unescape(authority, false, &host)) {
      *error = "invalid URL escape in host";
      return false;
    }
    u->host = std::string(authority);
  }
  std::string path;
  if (!Unescape(rest, false, &path)) {
    *error = "invalid URL escape \"" + std::string(rest) + "\"";
    return false;
  }
  u->path = std::move(path);
  u->raw_path = std::string(rest);
  return true;
}

std::string Hostname(const URLValue& u) {
  std::string_view h = u.host;
  if (!h.empty() && h[0] == '[') {
    size_t close = h.find(']');
    return std::string(h.substr(1, close - 1));
  }
  if (size_t colon = h.rfind(':'); colon != std::string_view::npos) {
    return std::string(h.substr(0, colon));
  }
  return std::string(h);
}

std::string Port(const URLValue& u) {
  std::string_view h = u.host;
  size_t start = 0;
  if (!h.empty() && h[0] == '[') start = h.find(']');
  size_t colon = h.find(':', start == std::string_view::npos ? 0 : start);
  if (colon == std::string_view::npos) return "";
  if (h[0] != '[' && h.rfind(':') != colon) return "";
  return std::string(h.substr(colon + 1));
}

Value NewUrl(EvalContext& ctx, URLValue u) {
  auto* p = ctx.arena->New<URLValue>(std::move(u));
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::URL(p);
}

Value StringToUrl(EvalContext& ctx, const Value* a) {
  URLValue u;
  std::string error;
  if (!ParseUrl(a[0].string_value(), &u, &error)) {
    return Error(ctx, "URL parse error during conversion from string: " + error);
  }
  return NewUrl(ctx, std::move(u));
}
Value IsUrl(EvalContext&, const Value* a) {
  URLValue u;
  std::string error;
  return Value::Bool(ParseUrl(a[0].string_value(), &u, &error));
}
Value GetScheme(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, a[0].url().scheme);
}
Value GetHost(EvalContext& ctx, const Value* a) { return MakeString(ctx.arena, a[0].url().host); }
Value GetHostname(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, Hostname(a[0].url()));
}
Value GetPort(EvalContext& ctx, const Value* a) { return MakeString(ctx.arena, Port(a[0].url())); }
Value GetEscapedPath(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, a[0].url().raw_path);
}
// Go url.ParseQuery: pairs separated by '&'; pairs with invalid escapes or ';' are dropped.
Value GetQuery(EvalContext& ctx, const Value* a) {
  std::map<std::string, std::vector<std::string>> query;
  std::string_view q = a[0].url().raw_query;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
    if (pair.empty() || pair.find(';') != std::string_view::npos) continue;
    size_t eq = pair.find('=');
    std::string key, value;
    if (!Unescape(pair.substr(0, eq), true, &key)) continue;
    if (eq != std::string_view::npos && !Unescape(pair.substr(eq + 1), true, &value)) continue;
    query[key].push_back(value);
  }
  std::vector<MapEntryValue> entries;
  for (const auto& [k, vs] : query) {
    std::vector<Value> list;
    for (const std::string& v : vs) {
      Value sv = MakeString(ctx.arena, v);
      if (sv.IsError()) return sv;
      list.push_back(sv);
    }
    Value key = MakeString(ctx.arena, k);
    Value lv = MakeList(ctx.arena, list.data(), list.size());
    if (key.IsError() || lv.IsError()) return MemoryLimitExceeded();
    entries.push_back({key, lv});
  }
  return MakeMap(ctx.arena, entries.data(), entries.size());
}

}  // namespace

bool EqualURL(const URLValue& a, const URLValue& b) { return a.text == b.text; }

void RegisterUrlLibrary(FunctionRegistry& r) {
  const Type U = Type::Opaque("kubernetes.URL");
  const Type S = Type::String();
  using internal::CostTraverseArg0;
  Global(r, "url", "string_to_url", {S}, U, StringToUrl, CostTraverseArg0);
  Global(r, "isURL", "is_url_string", {S}, Type::Bool(), IsUrl, CostTraverseArg0);
  Member(r, "getScheme", "url_get_scheme", {U}, S, GetScheme);
  Member(r, "getHost", "url_get_host", {U}, S, GetHost);
  Member(r, "getHostname", "url_get_hostname", {U}, S, GetHostname);
  Member(r, "getPort", "url_get_port", {U}, S, GetPort);
  Member(r, "getEscapedPath", "url_get_escaped_path", {U}, S, GetEscapedPath);
  Member(r, "getQuery", "url_get_query", {U}, Type::Map(S, Type::List(S)), GetQuery);
}

}  // namespace draplane::cel
