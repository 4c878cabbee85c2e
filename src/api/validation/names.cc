#include "api/validation/names.h"

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <cstdio>

#include "api/validation/internal/common.h"

namespace draplane::api::validation {
namespace {

using internal::Append;
using internal::ToLowerAscii;

// The regular expressions upstream prints in its messages. The checks below are hand-written
// equivalents (no regex engine on this path); the strings are only quoted.
constexpr std::string_view kDNS1123LabelFmt = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
constexpr std::string_view kDNS1123SubdomainFmt =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
constexpr std::string_view kDNS1123LabelErrMsg =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character";
constexpr std::string_view kDNS1123SubdomainErrMsg =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kLabelKeyFmt = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
constexpr std::string_view kLabelKeyErrMsg =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character";
constexpr std::string_view kLabelValueFmt = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
constexpr std::string_view kLabelValueErrMsg =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character";
constexpr std::string_view kCIdentifierFmt = "[A-Za-z_][A-Za-z0-9_]*";
constexpr std::string_view kCIdentifierErrMsg =
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'";

// Upstream's length messages differ by package: util/validation says "characters",
// validate/content says "bytes".
enum class LengthUnit { kCharacters, kBytes };

std::string MaxLenError(size_t length, LengthUnit unit) {
  return "must be no more than " + std::to_string(length) +
         (unit == LengthUnit::kCharacters ? " characters" : " bytes");
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
bool MatchesDNSLabel(std::string_view s) {
  if (s.empty() || !IsLowerAlnum(s.front()) || !IsLowerAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsLowerAlnum(c) && c != '-') return false;
  }
  return true;
}

// Labels separated by single dots.
bool MatchesDNSSubdomain(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (!MatchesDNSLabel(label)) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
bool MatchesLabelKeyName(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool MatchesCIdentifier(std::string_view s) {
  if (s.empty()) return false;
  char first = s.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || first == '_')) {
    return false;
  }
  for (char c : s) {
    if (!IsAlnum(c) && c != '_') return false;
  }
  return true;
}

std::vector<std::string> DNSLabelMessages(std::string_view value, LengthUnit unit) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123LabelMaxLength) {
    errs.push_back(MaxLenError(kDNS1123LabelMaxLength, unit));
  }
  if (!MatchesDNSLabel(value)) {
    if (MatchesDNSSubdomain(value)) {
      // A valid subdomain but not a label: the length was checked, so it has dots.
      errs.push_back("must not contain dots");
    } else {
      errs.push_back(RegexError(kDNS1123LabelErrMsg, kDNS1123LabelFmt, {"my-name", "123-abc"}));
    }
  }
  return errs;
}

std::vector<std::string> DNSSubdomainMessages(std::string_view value, LengthUnit unit) {
  std::vector<std::string> errs;
  if (value.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back(MaxLenError(kDNS1123SubdomainMaxLength, unit));
  }
  if (!MatchesDNSSubdomain(value)) {
    errs.push_back(RegexError(kDNS1123SubdomainErrMsg, kDNS1123SubdomainFmt, {"example.com"}));
  }
  return errs;
}

FieldErrorList InvalidEach(const std::vector<std::string>& messages, std::string_view value,
                           const FieldPath& path) {
  FieldErrorList errs;
  errs.reserve(messages.size());
  for (const std::string& msg : messages) errs.push_back(Invalid(path, RenderValue(value), msg));
  return errs;
}

// google/uuid Validate: the accepted spellings and their error texts.
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string UUIDFormatError(std::string_view s) {
  switch (s.size()) {
    case 36:
      break;
    case 36 + 9: {
      std::string prefix = ToLowerAscii(s.substr(0, 9));
      if (prefix != "urn:uuid:") {
        return "invalid urn prefix: " + RenderValue(s.substr(0, 9));
      }
      s.remove_prefix(9);
      break;
    }
    case 36 + 2:
      if (s.front() != '{' || s.back() != '}') return "invalid bracketed UUID format";
      s = s.substr(1, 36);
      break;
    case 32:
      for (char c : s) {
        if (!IsHex(c)) return "invalid UUID format";
      }
      return "";
    default:
      return "invalid UUID length: " + std::to_string(s.size());
  }
  if (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return "invalid UUID format";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) continue;
    if (!IsHex(s[i])) return "invalid UUID format";
  }
  return "";
}

// IPv4 as netutils.ParseIPSloppy reads it: four decimal octets, leading zeros allowed.
bool ParseIPv4Sloppy(std::string_view s, std::array<uint8_t, 4>& out) {
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    if (i > 0) {
      if (pos >= s.size() || s[pos] != '.') return false;
      ++pos;
    }
    if (pos >= s.size() || !IsDigit(s[pos])) return false;
    int n = 0;
    while (pos < s.size() && IsDigit(s[pos])) {
      n = n * 10 + (s[pos] - '0');
      if (n > 0xFF) return false;
      ++pos;
    }
    out[i] = static_cast<uint8_t>(n);
  }
  return pos == s.size();
}

std::string FormatIPv4(const uint8_t* b) {
  return std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) + "." +
         std::to_string(b[3]);
}

// Go's net.IP.String() for a 16-byte address: IPv4-mapped addresses print as dotted quads,
// others in RFC 5952 form (longest run of two or more zero groups compressed, first on ties).
std::string FormatIPv6(const std::array<uint8_t, 16>& b) {
  bool mapped = true;
  for (int i = 0; i < 10; ++i) mapped = mapped && b[i] == 0;
  if (mapped && b[10] == 0xff && b[11] == 0xff) return FormatIPv4(&b[12]);
  uint16_t groups[8];
  for (int i = 0; i < 8; ++i) groups[i] = static_cast<uint16_t>(b[2 * i] << 8 | b[2 * i + 1]);
  int best_start = -1, best_len = 0;
  for (int i = 0; i < 8;) {
    if (groups[i] != 0) {
      ++i;
      continue;
    }
    int j = i;
    while (j < 8 && groups[j] == 0) ++j;
    if (j - i > best_len && j - i >= 2) {
      best_start = i;
      best_len = j - i;
    }
    i = j;
  }
  std::string out;
  char buf[8];
  for (int i = 0; i < 8; ++i) {
    if (i == best_start) {
      out += "::";
      i += best_len - 1;
      continue;
    }
    if (!out.empty() && out.back() != ':') out += ':';
    std::snprintf(buf, sizeof(buf), "%x", groups[i]);
    out += buf;
  }
  return out;
}

}  // namespace

std::string RegexError(std::string_view msg, std::string_view re,
                       const std::vector<std::string_view>& examples) {
  std::string out(msg);
  if (examples.empty()) {
    out += " (regex used for validation is '";
    out += re;
    out += "')";
    return out;
  }
  out += " (e.g. ";
  for (size_t i = 0; i < examples.size(); ++i) {
    if (i > 0) out += " or ";
    out += "'";
    out += examples[i];
    out += "', ";
  }
  out += "regex used for validation is '";
  out += re;
  out += "')";
  return out;
}

std::vector<std::string> IsDNS1123Label(std::string_view value) {
  return DNSLabelMessages(value, LengthUnit::kCharacters);
}

std::vector<std::string> IsDNS1123Subdomain(std::string_view value) {
  return DNSSubdomainMessages(value, LengthUnit::kCharacters);
}

std::vector<std::string> IsDNS1123LabelContent(std::string_view value) {
  return DNSLabelMessages(value, LengthUnit::kBytes);
}

std::vector<std::string> IsDNS1123SubdomainContent(std::string_view value) {
  return DNSSubdomainMessages(value, LengthUnit::kBytes);
}

std::vector<std::string> IsQualifiedName(std::string_view value) {
  std::vector<std::string> errs;
  std::string_view name = value;
  size_t slash = value.find('/');
  if (slash != std::string_view::npos) {
    if (value.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back("a valid label key " +
                     RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}) +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = value.substr(0, slash);
    name = value.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& msg : IsDNS1123SubdomainContent(prefix)) {
        errs.push_back("prefix part " + msg);
      }
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kLabelKeyNameMaxLength) {
    errs.push_back("name part " + MaxLenError(kLabelKeyNameMaxLength, LengthUnit::kBytes));
  }
  if (!MatchesLabelKeyName(name)) {
    errs.push_back("name part " +
                   RegexError(kLabelKeyErrMsg, kLabelKeyFmt, {"MyName", "my.name", "123-abc"}));
  }
  return errs;
}

std::vector<std::string> IsLabelValue(std::string_view value) {
  std::vector<std::string> errs;
  if (value.size() > kLabelValueMaxLength) {
    errs.push_back(MaxLenError(kLabelValueMaxLength, LengthUnit::kBytes));
  }
  if (!value.empty() && !MatchesLabelKeyName(value)) {
    errs.push_back(RegexError(kLabelValueErrMsg, kLabelValueFmt, {"MyValue", "my_value", "12345"}));
  }
  return errs;
}

std::vector<std::string> IsCIdentifier(std::string_view value) {
  if (MatchesCIdentifier(value)) return {};
  return {RegexError(kCIdentifierErrMsg, kCIdentifierFmt, {"my_name", "MY_NAME", "MyName"})};
}

bool IsExtendedResourceName(std::string_view name) {
  // Native resources: no domain, or a domain in kubernetes.io.
  if (name.find('/') == std::string_view::npos) return false;
  if (name.find("kubernetes.io/") != std::string_view::npos) return false;
  if (name.substr(0, 9) == "requests.") return false;
  std::string for_quota = "requests.";
  for_quota += name;
  return IsQualifiedName(for_quota).empty();
}

bool IsNodeAllocatableResourceName(std::string_view name) {
  return name == "cpu" || name == "memory" || name.substr(0, 10) == "hugepages-";
}

bool IsSemver(std::string_view v) {
  size_t pos = 0;
  // numericIdentifier: 0|[1-9]\d*
  auto numeric = [&]() {
    if (pos >= v.size() || !IsDigit(v[pos])) return false;
    if (v[pos] == '0') {
      ++pos;
      return true;
    }
    while (pos < v.size() && IsDigit(v[pos])) ++pos;
    return true;
  };
  // An identifier of [0-9A-Za-z-]+ ending at '.', '+', or the end.
  auto identifier = [&](bool prerelease) {
    size_t start = pos;
    bool all_digits = true;
    while (pos < v.size() && (IsAlnum(v[pos]) || v[pos] == '-')) {
      all_digits = all_digits && IsDigit(v[pos]);
      ++pos;
    }
    if (pos == start) return false;
    // A numeric pre-release identifier may not have leading zeros.
    if (prerelease && all_digits && pos - start > 1 && v[start] == '0') return false;
    return true;
  };
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      if (pos >= v.size() || v[pos] != '.') return false;
      ++pos;
    }
    if (!numeric()) return false;
  }
  if (pos < v.size() && v[pos] == '-') {
    ++pos;
    if (!identifier(true)) return false;
    while (pos < v.size() && v[pos] == '.') {
      ++pos;
      if (!identifier(true)) return false;
    }
  }
  if (pos < v.size() && v[pos] == '+') {
    ++pos;
    if (!identifier(false)) return false;
    while (pos < v.size() && v[pos] == '.') {
      ++pos;
      if (!identifier(false)) return false;
    }
  }
  return pos == v.size();
}

std::vector<std::string> NameIsDNSSubdomain(std::string_view name, bool prefix) {
  std::string masked(name);
  // maskTrailingDash: a generateName prefix may end in '-'.
  if (prefix && masked.size() > 1 && masked.back() == '-') {
    masked = masked.substr(0, masked.size() - 2) + "a";
  }
  return IsDNS1123Subdomain(masked);
}

std::vector<std::string> NameIsDNSLabel(std::string_view name, bool prefix) {
  std::string masked(name);
  if (prefix && masked.size() > 1 && masked.back() == '-') {
    masked = masked.substr(0, masked.size() - 2) + "a";
  }
  return IsDNS1123Label(masked);
}

FieldErrorList ValidateDNS1123Label(std::string_view value, const FieldPath& path) {
  return InvalidEach(IsDNS1123Label(value), value, path);
}

FieldErrorList ValidateDNS1123Subdomain(std::string_view value, const FieldPath& path) {
  return InvalidEach(IsDNS1123Subdomain(value), value, path);
}

FieldErrorList ValidateLabelName(std::string_view value, const FieldPath& path) {
  return InvalidEach(IsQualifiedName(value), value, path);
}

FieldErrorList ValidateLabelValue(std::string_view value, const FieldPath& path) {
  return InvalidEach(IsLabelValue(value), value, path);
}

FieldErrorList ValidateDriverName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs;
  if (name.empty()) {
    // Upstream's declarative `+k8s:required` short-circuits the format checks.
    errs.push_back(Required(path));
    return errs;
  }
  if (name.size() > kDriverNameMaxLength) errs.push_back(TooLong(path, kDriverNameMaxLength));
  Append(errs, InvalidEach(IsDNS1123Subdomain(ToLowerAscii(name)), name, path));
  return errs;
}

FieldErrorList ValidatePoolName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs;
  if (name.empty()) {
    errs.push_back(Required(path));
    return errs;
  }
  if (name.size() > kPoolNameMaxLength) errs.push_back(TooLong(path, kPoolNameMaxLength));
  size_t start = 0;
  while (true) {
    size_t slash = name.find('/', start);
    std::string_view part =
        name.substr(start, slash == std::string_view::npos ? name.npos : slash - start);
    Append(errs, ValidateDNS1123Subdomain(part, path));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return errs;
}

FieldErrorList ValidateDeviceName(std::string_view name, const FieldPath& path) {
  return ValidateDNS1123Label(name, path);
}

FieldErrorList ValidateDeviceClassName(std::string_view name, const FieldPath& path) {
  if (name.empty()) return {Required(path)};
  return ValidateDNS1123Subdomain(name, path);
}

FieldErrorList ValidateCIdentifier(std::string_view id, const FieldPath& path) {
  FieldErrorList errs;
  if (id.size() > kDeviceMaxIDLength) errs.push_back(TooLong(path, kDeviceMaxIDLength));
  Append(errs, InvalidEach(IsCIdentifier(id), id, path));
  return errs;
}

FieldErrorList ValidateQualifiedName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs;
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return ValidateCIdentifier(name, path);
  if (name.find('/', slash + 1) != std::string_view::npos) {
    errs.push_back(Invalid(path, RenderValue(name), "must not contain more than one slash"));
    return errs;
  }
  std::string_view domain = name.substr(0, slash);
  std::string_view id = name.substr(slash + 1);
  if (domain.empty()) {
    errs.push_back(Invalid(path, RenderValue(""), "the domain must not be empty"));
  } else {
    Append(errs, ValidateDriverName(domain, path));
  }
  if (id.empty()) {
    errs.push_back(Invalid(path, RenderValue(""), "the name must not be empty"));
  } else {
    Append(errs, ValidateCIdentifier(id, path));
  }
  return errs;
}

FieldErrorList ValidateFullyQualifiedName(std::string_view name, const FieldPath& path) {
  FieldErrorList errs = ValidateQualifiedName(name, path);
  if (name.find('/') == std::string_view::npos) {
    errs.push_back(Invalid(path, RenderValue(name),
                           "a fully qualified name must be a domain and a name separated by a "
                           "slash"));
  }
  return errs;
}

FieldErrorList ValidateNodeName(std::string_view name, const FieldPath& path) {
  return InvalidEach(NameIsDNSSubdomain(name, false), name, path);
}

FieldErrorList ValidateUID(std::string_view uid, const FieldPath& path) {
  std::string format_error = UUIDFormatError(uid);
  if (!format_error.empty()) {
    return {Invalid(path, RenderValue(uid), "error validating uid: " + format_error)};
  }
  if (uid.size() != 36 || ToLowerAscii(uid) != uid) {
    return {Invalid(path, RenderValue(uid),
                    "uid must be in RFC 4122 normalized form, "
                    "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                    "characters")};
  }
  return {};
}

FieldErrorList ValidateInterfaceAddress(std::string_view value, const FieldPath& path) {
  static constexpr char kNotCIDR[] =
      "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)";
  size_t slash = value.find('/');
  if (slash == std::string_view::npos) return {Invalid(path, RenderValue(value), kNotCIDR)};
  std::string_view addr = value.substr(0, slash);
  std::string_view mask = value.substr(slash + 1);
  if (mask.empty() || mask.size() > 3) return {Invalid(path, RenderValue(value), kNotCIDR)};
  int bits = 0;
  for (char c : mask) {
    if (!IsDigit(c)) return {Invalid(path, RenderValue(value), kNotCIDR)};
    bits = bits * 10 + (c - '0');
  }
  std::string canonical;
  std::array<uint8_t, 4> v4;
  if (ParseIPv4Sloppy(addr, v4)) {
    if (bits > 32) return {Invalid(path, RenderValue(value), kNotCIDR)};
    canonical = FormatIPv4(v4.data()) + "/" + std::to_string(bits);
  } else {
    std::array<uint8_t, 16> v6;
    std::string addr_str(addr);
    if (addr.find(':') == std::string_view::npos ||
        inet_pton(AF_INET6, addr_str.c_str(), v6.data()) != 1 || bits > 128) {
      return {Invalid(path, RenderValue(value), kNotCIDR)};
    }
    bool mapped = true;
    for (int i = 0; i < 10; ++i) mapped = mapped && v6[i] == 0;
    mapped = mapped && v6[10] == 0xff && v6[11] == 0xff;
    // A mapped IPv4 address with a 128-bit mask prints with the mask reduced by 96 bits.
    int shown_bits = mapped && bits > 32 ? bits - 96 : bits;
    canonical = FormatIPv6(v6) + "/" + std::to_string(shown_bits);
  }
  if (canonical != value) {
    return {Invalid(path, RenderValue(value),
                    "must be in canonical form (" + RenderValue(canonical) + ")")};
  }
  return {};
}

std::string TruncateIfTooLong(std::string_view key, size_t max_length) {
  if (max_length < 16) max_length = 16;
  if (key.size() <= max_length) return std::string(key);
  size_t remaining = max_length - 3;
  std::string out(key.substr(0, (remaining + 1) / 2));
  out += "...";
  out += key.substr(key.size() - remaining / 2);
  return out;
}

}  // namespace draplane::api::validation
