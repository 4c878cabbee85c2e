// Kubernetes IP and CIDR libraries (apiserver pkg/cel/library/ip.go, cidr.go, pkg/cel/ip.go,
// cidr.go), rewritten with Go netip parsing rules: dotted IPv4 without leading zeros, IPv6 with
// `::` compression and an optional dotted IPv4 tail; zones and dotted IPv4-mapped IPv6
// addresses are rejected.
#include <algorithm>
#include <cstdio>
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

bool ParseIPv4(std::string_view s, uint8_t out[4]) {
  int part = 0;
  size_t i = 0;
  while (part < 4) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
    size_t start = i;
    unsigned v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + static_cast<unsigned>(s[i] - '0');
      if (v > 255 || i - start >= 3) return false;
      ++i;
    }
    if (i - start > 1 && s[start] == '0') return false;  // leading zero
    out[part++] = static_cast<uint8_t>(v);
    if (part < 4) {
      if (i >= s.size() || s[i] != '.') return false;
      ++i;
    }
  }
  return i == s.size();
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// netip.ParseAddr for IPv6 (no zone). `dotted` reports an embedded IPv4 tail.
bool ParseIPv6(std::string_view s, uint8_t out[16], bool* dotted) {
  *dotted = false;
  uint16_t groups[8] = {};
  int n = 0, ellipsis = -1;
  size_t i = 0;
  if (s.size() >= 2 && s[0] == ':' && s[1] == ':') {
    ellipsis = 0;
    i = 2;
    if (i == s.size()) {
      std::fill(out, out + 16, 0);
      return true;
    }
  }
  while (i < s.size()) {
    // An IPv4 tail?
    size_t end = s.find(':', i);
    std::string_view piece = s.substr(i, end == std::string_view::npos ? end : end - i);
    if (end == std::string_view::npos && piece.find('.') != std::string_view::npos) {
      uint8_t v4[4];
      if (n > 6 || !ParseIPv4(piece, v4)) return false;
      groups[n++] = static_cast<uint16_t>(v4[0] << 8 | v4[1]);
      groups[n++] = static_cast<uint16_t>(v4[2] << 8 | v4[3]);
      *dotted = true;
      i = s.size();
      break;
    }
    if (piece.empty() || piece.size() > 4 || n >= 8) return false;
    unsigned v = 0;
    for (char c : piece) {
      int h = Hex(c);
      if (h < 0) return false;
      v = v * 16 + static_cast<unsigned>(h);
    }
    groups[n++] = static_cast<uint16_t>(v);
    i += piece.size();
    if (i == s.size()) break;
    // s[i] == ':'
    ++i;
    if (i < s.size() && s[i] == ':') {
      if (ellipsis >= 0) return false;
      ellipsis = n;
      ++i;
      if (i == s.size()) break;
    } else if (i == s.size()) {
      return false;  // trailing single colon
    }
  }
  if (ellipsis < 0 && n != 8) return false;
  if (ellipsis >= 0) {
    if (n >= 8) return false;
    int tail = n - ellipsis;
    for (int k = 0; k < tail; ++k) groups[7 - k] = groups[n - 1 - k];
    for (int k = ellipsis; k < 8 - tail; ++k) groups[k] = 0;
  }
  for (int k = 0; k < 8; ++k) {
    out[2 * k] = static_cast<uint8_t>(groups[k] >> 8);
    out[2 * k + 1] = static_cast<uint8_t>(groups[k] & 0xFF);
  }
  return true;
}

enum class IPError { kNone, kSyntax, kZone, kMapped };

IPError ParseIP(std::string_view s, IPValue* ip) {
  if (s.find('%') != std::string_view::npos) return IPError::kZone;
  if (s.find(':') == std::string_view::npos) {
    if (!ParseIPv4(s, ip->bytes.data())) return IPError::kSyntax;
    ip->is4 = true;
    return IPError::kNone;
  }
  bool dotted = false;
  if (!ParseIPv6(s, ip->bytes.data(), &dotted)) return IPError::kSyntax;
  ip->is4 = false;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (std::equal(kMapped, kMapped + 12, ip->bytes.begin())) {
    if (dotted) return IPError::kMapped;
    // Unmap to the IPv4 address (`::ffff:c0a8:1` == 192.168.0.1).
    for (int k = 0; k < 4; ++k) ip->bytes[k] = ip->bytes[12 + k];
    std::fill(ip->bytes.begin() + 4, ip->bytes.end(), 0);
    ip->is4 = true;
  }
  return IPError::kNone;
}

std::string IPErrorText(std::string_view s, IPError e) {
  switch (e) {
    case IPError::kZone:
      return "IP Address with zone value is not allowed";
    case IPError::kMapped:
      return "IPv4-mapped IPv6 address is not allowed";
    default:
      return "IP Address '" + std::string(s) + "' parse error during conversion from string";
  }
}

bool ParseCIDR(std::string_view s, CIDRValue* c, std::string* error) {
  size_t slash = s.rfind('/');
  if (slash == std::string_view::npos) {
    *error = "network address parse error during conversion from string: netip.ParsePrefix(\"" +
             std::string(s) + "\"): no '/'";
    return false;
  }
  std::string_view addr = s.substr(0, slash), bits = s.substr(slash + 1);
  IPError e = ParseIP(addr, &c->ip);
  if (e == IPError::kZone) {
    *error = "CIDR with zone value is not allowed";
    return false;
  }
  if (e == IPError::kMapped) {
    *error = "IPv4-mapped IPv6 address is not allowed";
    return false;
  }
  bool bits_ok = !bits.empty() && bits.size() <= 3 && !(bits.size() > 1 && bits[0] == '0');
  int prefix = 0;
  for (char ch : bits) {
    if (ch < '0' || ch > '9') bits_ok = false;
    prefix = prefix * 10 + (ch - '0');
  }
  if (e != IPError::kNone || !bits_ok || prefix > (c->ip.is4 ? 32 : 128)) {
    *error = "network address parse error during conversion from string: netip.ParsePrefix(\"" +
             std::string(s) + "\"): bad prefix";
    return false;
  }
  c->prefix = prefix;
  return true;
}

IPValue Masked(const IPValue& ip, int prefix) {
  IPValue out = ip;
  int nbytes = ip.is4 ? 4 : 16;
  for (int k = 0; k < nbytes; ++k) {
    int keep = prefix - 8 * k;
    if (keep >= 8) continue;
    out.bytes[k] = keep <= 0 ? 0 : static_cast<uint8_t>(out.bytes[k] & (0xFF << (8 - keep)));
  }
  return out;
}

bool PrefixContains(const CIDRValue& c, const IPValue& ip) {
  if (c.ip.is4 != ip.is4) return false;
  return EqualIP(Masked(c.ip, c.prefix), Masked(ip, c.prefix));
}

Value NewIP(EvalContext& ctx, const IPValue& ip) {
  auto* p = ctx.arena->New<IPValue>(ip);
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::IP(p);
}
Value NewCIDR(EvalContext& ctx, const CIDRValue& c) {
  auto* p = ctx.arena->New<CIDRValue>(c);
  if (p == nullptr) return MemoryLimitExceeded();
  return Value::CIDR(p);
}

Value StringToIP(EvalContext& ctx, const Value* a) {
  IPValue ip;
  IPError e = ParseIP(a[0].string_value(), &ip);
  if (e != IPError::kNone) return Error(ctx, IPErrorText(a[0].string_value(), e));
  return NewIP(ctx, ip);
}
Value IsIP(EvalContext&, const Value* a) {
  IPValue ip;
  return Value::Bool(ParseIP(a[0].string_value(), &ip) == IPError::kNone);
}
Value IsCanonical(EvalContext& ctx, const Value* a) {
  IPValue ip;
  IPError e = ParseIP(a[0].string_value(), &ip);
  if (e != IPError::kNone) return Error(ctx, IPErrorText(a[0].string_value(), e));
  return Value::Bool(FormatIP(ip) == a[0].string_value());
}
Value IPToString(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, FormatIP(a[0].ip()));
}
Value Family(EvalContext&, const Value* a) { return Value::Int(a[0].ip().is4 ? 4 : 6); }

bool AllZero(const IPValue& ip) {
  int n = ip.is4 ? 4 : 16;
  for (int k = 0; k < n; ++k) {
    if (ip.bytes[k] != 0) return false;
  }
  return true;
}
bool IsLoopbackIP(const IPValue& ip) {
  if (ip.is4) return ip.bytes[0] == 127;
  for (int k = 0; k < 15; ++k) {
    if (ip.bytes[k] != 0) return false;
  }
  return ip.bytes[15] == 1;
}
bool IsMulticast(const IPValue& ip) {
  return ip.is4 ? (ip.bytes[0] & 0xF0) == 0xE0 : ip.bytes[0] == 0xFF;
}
bool IsLLMulticast(const IPValue& ip) {
  if (ip.is4) return ip.bytes[0] == 224 && ip.bytes[1] == 0 && ip.bytes[2] == 0;
  return ip.bytes[0] == 0xFF && (ip.bytes[1] & 0x0F) == 0x02;
}
bool IsLLUnicast(const IPValue& ip) {
  if (ip.is4) return ip.bytes[0] == 169 && ip.bytes[1] == 254;
  return ip.bytes[0] == 0xFE && (ip.bytes[1] & 0xC0) == 0x80;
}
Value IsUnspecified(EvalContext&, const Value* a) { return Value::Bool(AllZero(a[0].ip())); }
Value IsLoopback(EvalContext&, const Value* a) { return Value::Bool(IsLoopbackIP(a[0].ip())); }
Value IsLinkLocalMulticast(EvalContext&, const Value* a) {
  return Value::Bool(IsLLMulticast(a[0].ip()));
}
Value IsLinkLocalUnicast(EvalContext&, const Value* a) {
  return Value::Bool(IsLLUnicast(a[0].ip()));
}
// netip.Addr.IsGlobalUnicast.
Value IsGlobalUnicast(EvalContext&, const Value* a) {
  const IPValue& ip = a[0].ip();
  if (ip.is4 && ip.bytes[0] == 255 && ip.bytes[1] == 255 && ip.bytes[2] == 255 &&
      ip.bytes[3] == 255) {
    return Value::Bool(false);
  }
  return Value::Bool(!AllZero(ip) && !IsLoopbackIP(ip) && !IsMulticast(ip) && !IsLLUnicast(ip));
}

Value StringToCIDR(EvalContext& ctx, const Value* a) {
  CIDRValue c;
  std::string error;
  if (!ParseCIDR(a[0].string_value(), &c, &error)) return Error(ctx, error);
  return NewCIDR(ctx, c);
}
Value IsCIDR(EvalContext&, const Value* a) {
  CIDRValue c;
  std::string error;
  return Value::Bool(ParseCIDR(a[0].string_value(), &c, &error));
}
Value CIDRToString(EvalContext& ctx, const Value* a) {
  return MakeString(ctx.arena, FormatCIDR(a[0].cidr()));
}
Value ContainsIP(EvalContext&, const Value* a) {
  return Value::Bool(PrefixContains(a[0].cidr(), a[1].ip()));
}
Value ContainsIPString(EvalContext& ctx, const Value* a) {
  IPValue ip;
  IPError e = ParseIP(a[1].string_value(), &ip);
  if (e != IPError::kNone) return Error(ctx, IPErrorText(a[1].string_value(), e));
  return Value::Bool(PrefixContains(a[0].cidr(), ip));
}
bool ContainsPrefix(const CIDRValue& c, const CIDRValue& other) {
  return other.prefix >= c.prefix && PrefixContains(c, other.ip);
}
Value ContainsCIDR(EvalContext&, const Value* a) {
  return Value::Bool(ContainsPrefix(a[0].cidr(), a[1].cidr()));
}
Value ContainsCIDRString(EvalContext& ctx, const Value* a) {
  CIDRValue other;
  std::string error;
  if (!ParseCIDR(a[1].string_value(), &other, &error)) return Error(ctx, error);
  return Value::Bool(ContainsPrefix(a[0].cidr(), other));
}
Value CIDRIP(EvalContext& ctx, const Value* a) { return NewIP(ctx, a[0].cidr().ip); }
Value CIDRMasked(EvalContext& ctx, const Value* a) {
  CIDRValue c = a[0].cidr();
  c.ip = Masked(c.ip, c.prefix);
  return NewCIDR(ctx, c);
}
Value PrefixLength(EvalContext&, const Value* a) { return Value::Int(a[0].cidr().prefix); }

}  // namespace

bool EqualIP(const IPValue& a, const IPValue& b) { return a.is4 == b.is4 && a.bytes == b.bytes; }

std::string FormatIP(const IPValue& ip) {
  char buf[64];
  if (ip.is4) {
    std::snprintf(buf, sizeof buf, "%u.%u.%u.%u", ip.bytes[0], ip.bytes[1], ip.bytes[2],
                  ip.bytes[3]);
    return buf;
  }
  uint16_t g[8];
  for (int k = 0; k < 8; ++k)
    g[k] = static_cast<uint16_t>(ip.bytes[2 * k] << 8 | ip.bytes[2 * k + 1]);
  // RFC 5952: compress the longest run (>= 2) of zero groups, the first on ties.
  int best = -1, best_len = 0;
  for (int k = 0; k < 8;) {
    if (g[k] != 0) {
      ++k;
      continue;
    }
    int start = k;
    while (k < 8 && g[k] == 0) ++k;
    if (k - start > best_len && k - start >= 2) {
      best = start;
      best_len = k - start;
    }
  }
  std::string out;
  for (int k = 0; k < 8; ++k) {
    if (k == best) {
      out += "::";
      k += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ":";
    std::snprintf(buf, sizeof buf, "%x", g[k]);
    out += buf;
  }
  return out;
}

bool EqualCIDR(const CIDRValue& a, const CIDRValue& b) {
  return a.prefix == b.prefix && EqualIP(a.ip, b.ip);
}

std::string FormatCIDR(const CIDRValue& c) {
  return FormatIP(c.ip) + "/" + std::to_string(c.prefix);
}

void RegisterNetworkLibrary(FunctionRegistry& r) {
  const Type IP = Type::Opaque("net.IP"), CIDR = Type::Opaque("net.CIDR");
  const Type S = Type::String(), B = Type::Bool(), I = Type::Int();
  using internal::CostTraverseArg0;
  using internal::CostTraverseArg0Twice;
  Global(r, "ip", "string_to_ip", {S}, IP, StringToIP, CostTraverseArg0);
  Global(r, "isIP", "is_ip", {S}, B, IsIP, CostTraverseArg0);
  Global(r, "ip.isCanonical", "ip_is_canonical", {S}, B, IsCanonical, CostTraverseArg0Twice);
  Global(r, "string", "ip_to_string", {IP}, S, IPToString);
  Member(r, "family", "ip_family", {IP}, I, Family);
  Member(r, "isUnspecified", "ip_is_unspecified", {IP}, B, IsUnspecified);
  Member(r, "isLoopback", "ip_is_loopback", {IP}, B, IsLoopback);
  Member(r, "isLinkLocalMulticast", "ip_is_link_local_multicast", {IP}, B, IsLinkLocalMulticast);
  Member(r, "isLinkLocalUnicast", "ip_is_link_local_unicast", {IP}, B, IsLinkLocalUnicast);
  Member(r, "isGlobalUnicast", "ip_is_global_unicast", {IP}, B, IsGlobalUnicast);

  Global(r, "cidr", "string_to_cidr", {S}, CIDR, StringToCIDR, CostTraverseArg0);
  Global(r, "isCIDR", "is_cidr", {S}, B, IsCIDR, CostTraverseArg0);
  Global(r, "string", "cidr_to_string", {CIDR}, S, CIDRToString);
  Member(r, "containsIP", "cidr_contains_ip_ip", {CIDR, IP}, B, ContainsIP);
  Member(r, "containsIP", "cidr_contains_ip_string", {CIDR, S}, B, ContainsIPString);
  Member(r, "containsCIDR", "cidr_contains_cidr", {CIDR, CIDR}, B, ContainsCIDR);
  Member(r, "containsCIDR", "cidr_contains_cidr_string", {CIDR, S}, B, ContainsCIDRString);
  Member(r, "ip", "cidr_ip", {CIDR}, IP, CIDRIP);
  Member(r, "masked", "cidr_masked", {CIDR}, CIDR, CIDRMasked);
  Member(r, "prefixLength", "cidr_prefix_length", {CIDR}, I, PrefixLength);
}

}  // namespace draplane::cel
