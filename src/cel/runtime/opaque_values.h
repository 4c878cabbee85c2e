// The Kubernetes CEL library value types (k8s.io/apiserver/pkg/cel: quantity.go, semver.go,
// ip.go, cidr.go, url.go), as held by `Value`s of the matching kinds. Parsing and the library
// functions live in lib/; the comparisons and renderings the runtime needs are declared here.
//
// Thread-safety: immutable after construction.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "api/quantity.h"

namespace draplane::cel {

// kubernetes.Quantity.
struct QuantityValue {
  api::Quantity quantity;
  // Upstream keeps a Quantity either as int64Amount{value, scale} or as an inf.Dec; isInteger()
  // and asInteger() succeed only for the former with a non-negative scale (apimachinery
  // `Quantity.AsInt64`). We track that form next to the exact value.
  bool int64_amount = false;
  int64_t amount_value = 0;
  int32_t amount_scale = 0;
  // value * 10^9 when |value| < 2^100 (every quantity a device reports): a fast exact ordering
  // key.
  bool has_nanos = false;
  api::Int128 nanos = 0;
};

// -1, 0 or 1 (apimachinery `Quantity.Cmp`).
int CompareQuantity(const QuantityValue& a, const QuantityValue& b);

// kubernetes.Semver (blang/semver v4 `Version`).
struct SemverValue {
  struct PreRelease {
    std::string str;
    uint64_t num = 0;
    bool is_num = false;
  };
  uint64_t major = 0;
  uint64_t minor = 0;
  uint64_t patch = 0;
  std::vector<PreRelease> pre;
  std::vector<std::string> build;
};

// Semantic Versioning 2.0 precedence: -1, 0 or 1; build metadata is ignored.
int CompareSemver(const SemverValue& a, const SemverValue& b);
// "1.2.3-rc.1+build".
std::string FormatSemver(const SemverValue& v);

// net.IP (Go netip.Addr without zone; IPv4-mapped IPv6 addresses are rejected on parse).
struct IPValue {
  std::array<uint8_t, 16> bytes{};  // IPv4 in the first 4 bytes
  bool is4 = false;
};
bool EqualIP(const IPValue& a, const IPValue& b);
// The canonical text (netip.Addr.String()).
std::string FormatIP(const IPValue& ip);

// net.CIDR (Go netip.Prefix).
struct CIDRValue {
  IPValue ip;
  int prefix = 0;
};
bool EqualCIDR(const CIDRValue& a, const CIDRValue& b);
std::string FormatCIDR(const CIDRValue& c);

// kubernetes.URL (Go url.URL as parsed by url.ParseRequestURI).
struct URLValue {
  std::string text;  // the original string
  std::string scheme;
  std::string opaque;
  std::string user_info;
  std::string host;  // host[:port]
  std::string path;  // unescaped
  std::string raw_path;
  std::string raw_query;
  std::string fragment;
};
bool EqualURL(const URLValue& a, const URLValue& b);

}  // namespace draplane::cel
