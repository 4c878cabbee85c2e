// resource.Quantity with exact Kubernetes semantics (k8s.io/apimachinery/pkg/api/resource).
//
// A Quantity is an exact decimal number with a preferred serialization format. Parsing accepts
// every suffix Kubernetes accepts (binary Ki..Ei, decimal n u m "" k M G T P E, exponents e/E);
// ToString() yields the canonical form `kubectl` prints back; comparison and arithmetic are
// exact (no floating point); Value() and MilliValue() round up as upstream does.
//
// A parsed Quantity also remembers the text it came from and whether it was a JSON/YAML number,
// so codecs can round-trip manifests losslessly; computed quantities have no original text.
//
// Thread-safety: a value type; const access is safe from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace draplane::api {

// A 128-bit integer; `__extension__` keeps -Wpedantic quiet about the GNU type.
__extension__ typedef __int128 Int128;

class Quantity {
 public:
  enum class Format : uint8_t { kDecimalExponent, kBinarySI, kDecimalSI };

  // Zero, formatted as DecimalSI ("0").
  Quantity() = default;

  // Parses `text` like upstream ParseQuantity. InvalidArgument with upstream's wording
  // ("quantities must match the regular expression ...") when malformed or out of range.
  static StatusOr<Quantity> Parse(std::string_view text);
  static Quantity FromInt64(int64_t value, Format format = Format::kDecimalSI);
  // `milli` thousandths, e.g. FromMilli(1500) == 1.5.
  static Quantity FromMilli(int64_t milli, Format format = Format::kDecimalSI);

  // The canonical serialization (upstream Quantity.String()), e.g. "1536Mi" for "1.5Gi".
  std::string ToString() const;
  // The text this quantity was parsed from; empty for computed quantities.
  const std::string& original_text() const { return original_text_; }
  // The text a lossless encoder writes: original_text() if set, else ToString().
  std::string SerializedText() const;
  // True when the quantity was read from a JSON/YAML number rather than a string; an encoder
  // then writes a number again.
  bool from_number() const { return from_number_; }
  void set_from_number(bool from_number) { from_number_ = from_number; }

  Format format() const { return format_; }

  // -1, 0 or 1: exact numeric comparison.
  int Compare(const Quantity& other) const;
  int Sign() const;
  bool IsZero() const { return Sign() == 0; }
  // Exact sum / difference, keeping this quantity's format (upstream Add / Sub).
  Quantity Add(const Quantity& other) const;
  Quantity Sub(const Quantity& other) const;

  // The value rounded up to an integer (upstream Value()); saturates at the int64 range.
  int64_t Value() const;
  // The value in thousandths rounded up (upstream MilliValue()); saturates.
  int64_t MilliValue() const;
  // The exact value if it is an integer that fits in int64 (upstream AsInt64).
  std::optional<int64_t> AsInt64() const;
  double AsApproximateDouble() const;

  // Numeric equality (Compare() == 0), as upstream Quantity.Equal / Cmp.
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.Compare(b) == 0; }

 private:
  // value = mantissa_ * 10^scale_, exactly.
  Int128 mantissa_ = 0;
  int32_t scale_ = 0;
  Format format_ = Format::kDecimalSI;
  bool from_number_ = false;
  std::string original_text_;
};

}  // namespace draplane::api
