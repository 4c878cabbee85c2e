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
// Range (docs/design/api.md, "resource.Quantity"): upstream falls back to arbitrary precision
// (inf.Dec); draplane stores value = mantissa * 10^scale with |mantissa| < 10^38 and
// -9 <= scale <= kMaxScale. Every value upstream parses with at most 38 significant digits (after
// its rounding to nano units) is represented exactly; Parse rejects the rest with
// InvalidArgument. Add/Sub are exact whenever the exact result has at most 38 significant digits
// (always the case for operands below 10^28 in magnitude); CheckedAdd/CheckedSub report the other
// cases as InvalidArgument, Add/Sub round them away from zero to 38 significant digits.
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

  // Exact upstream Quantity.String(): the canonical form, e.g. "1536Mi" for "1.5Gi" and "100m"
  // for "0.1" -- except that, like upstream's parser, a parsed text that upstream's fast path
  // deems canonical is returned verbatim (so "+1" and "1.500" print as given).
  std::string ToString() const;
  // Always the canonical form (upstream CanonicalizeBytes), ignoring the parsed text.
  std::string CanonicalString() const;
  // The text this quantity was parsed from; empty for computed quantities.
  const std::string& original_text() const { return original_text_; }
  // The text a lossless encoder writes: original_text() if set, else ToString().
  std::string SerializedText() const;
  // True when the quantity was read from a JSON/YAML number rather than a string; an encoder
  // then writes a number again.
  bool from_number() const { return from_number_; }
  void set_from_number(bool from_number) { from_number_ = from_number; }
  // Forgets how the quantity was written, as a Go resource.Quantity decoded by kube-apiserver
  // does: SerializedText() becomes ToString() (the text itself only where upstream keeps it, "1"
  // but not "1.0" or "1024Mi"), and it is written as a string.
  void ForgetWrittenForm();

  Format format() const { return format_; }

  // -1, 0 or 1: exact numeric comparison.
  int Compare(const Quantity& other) const;
  int Sign() const;
  bool IsZero() const { return Sign() == 0; }
  // Whether the value is a whole number, exactly: upstream's `MilliValue() % 1000 == 0` for every
  // value whose milli-units fit in int64 (beyond, upstream's product wraps).
  bool IsInteger() const { return scale_ >= 0; }
  // Exact sum / difference, keeping this quantity's format (upstream Add / Sub).
  Quantity Add(const Quantity& other) const;
  Quantity Sub(const Quantity& other) const;
  // The same, but InvalidArgument when the exact result needs more than 38 significant digits
  // or a larger scale than kMaxScale (the cases Add/Sub round).
  StatusOr<Quantity> CheckedAdd(const Quantity& other) const;
  StatusOr<Quantity> CheckedSub(const Quantity& other) const;
  // -value, keeping the format (upstream Neg).
  Quantity Neg() const;

  // The value rounded up to an integer (upstream Value()); saturates at the int64 range.
  int64_t Value() const;
  // The value in thousandths rounded up (upstream MilliValue()); saturates.
  int64_t MilliValue() const;
  // ceil(value / 10^scale) away from zero (upstream ScaledValue), e.g. ScaledValue(-3) ==
  // MilliValue(); saturates at the int64 range.
  int64_t ScaledValue(int32_t scale) const;
  // The exact value if it is an integer that fits in int64 (upstream AsInt64).
  std::optional<int64_t> AsInt64() const;
  double AsApproximateDouble() const;

  // Numeric equality (Compare() == 0), as upstream Quantity.Equal / Cmp.
  friend bool operator==(const Quantity& a, const Quantity& b) { return a.Compare(b) == 0; }

  // The exact representation: value == mantissa() * 10^scale(). Normalized: the mantissa has no
  // trailing decimal zero unless scale() == kMaxScale; zero is (0, 0).
  Int128 mantissa() const { return mantissa_; }
  int32_t scale() const { return scale_; }

  static constexpr int kMaxDigits = 38;
  static constexpr int32_t kMaxScale = 2147483584;  // 2^31 - 64: printed exponents stay in int32
  static constexpr int32_t kMinScale = -9;          // nano, upstream's finest unit

  // "DecimalSI", "BinarySI" or "DecimalExponent" (upstream Format values).
  static std::string_view FormatName(Format format);

 private:
  // value = mantissa_ * 10^scale_, exactly.
  Int128 mantissa_ = 0;
  int32_t scale_ = 0;
  Format format_ = Format::kDecimalSI;
  bool from_number_ = false;
  // True when upstream ParseQuantity would cache the input as the String() result.
  bool keeps_text_ = false;
  std::string original_text_;

  friend class QuantityMath;
};

}  // namespace draplane::api
