// resource.Quantity, re-derived from k8s.io/apimachinery/pkg/api/resource (quantity.go,
// amount.go, suffix.go, math.go, scale_int.go). docs/design/api.md ("resource.Quantity") explains
// the representation, the range and every place where draplane deliberately differs.
#include "api/quantity.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace draplane::api {
namespace {

__extension__ typedef unsigned __int128 UInt128;

constexpr std::string_view kErrFormatWrong =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kErrNumeric = "unable to parse numeric part of quantity";
constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";

constexpr int64_t kMaxScale = Quantity::kMaxScale;
constexpr int64_t kNano = -9;
constexpr int kMaxDigits = Quantity::kMaxDigits;
// 2^63 - 1, upstream's cap for BinarySI quantities (`maxAllowed`).
constexpr std::string_view kMaxAllowedDigits = "9223372036854775807";

struct Pow10Table {
  UInt128 v[kMaxDigits + 1];
};
constexpr Pow10Table MakePow10() {
  Pow10Table t{};
  t.v[0] = 1;
  for (int i = 1; i <= kMaxDigits; ++i) t.v[i] = t.v[i - 1] * 10;
  return t;
}
constexpr Pow10Table kPow10 = MakePow10();

UInt128 Magnitude(Int128 v) { return v < 0 ? UInt128(0) - UInt128(v) : UInt128(v); }

// Number of decimal digits of v > 0 (at most 39 for a 128-bit value).
int DigitCount(UInt128 v) {
  int n = 1;
  while (n <= kMaxDigits && v >= kPow10.v[n]) ++n;
  return n;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string U128ToDigits(UInt128 v) {
  if (v == 0) return "0";
  char buf[48];
  int i = sizeof(buf);
  while (v != 0) {
    buf[--i] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  }
  return std::string(buf + i, sizeof(buf) - i);
}

// Precondition: digits has at most 38 characters, all decimal digits.
UInt128 DigitsToU128(std::string_view digits) {
  UInt128 v = 0;
  for (char c : digits) v = v * 10 + static_cast<unsigned>(c - '0');
  return v;
}

void StripLeadingZeros(std::string& digits) {
  size_t i = 0;
  while (i < digits.size() && digits[i] == '0') ++i;
  digits.erase(0, i);
}

// Adds one unit in the last place of a decimal digit string.
void IncrementDigits(std::string& digits) {
  for (size_t i = digits.size(); i-- > 0;) {
    if (digits[i] != '9') {
      ++digits[i];
      return;
    }
    digits[i] = '0';
  }
  digits.insert(digits.begin(), '1');
}

// A non-negative big integer in base 10^9 limbs, little-endian. Used only where the exact
// value does not fit 128 bits: binary suffixes on long fractions, and BinarySI printing of very
// large computed values.
class BigDecimal {
 public:
  static BigDecimal FromDigits(std::string_view digits) {
    BigDecimal b;
    size_t end = digits.size();
    while (end > 0) {
      size_t begin = end >= 9 ? end - 9 : 0;
      uint32_t limb = 0;
      for (size_t i = begin; i < end; ++i)
        limb = limb * 10 + static_cast<uint32_t>(digits[i] - '0');
      b.limbs_.push_back(limb);
      end = begin;
    }
    b.Trim();
    return b;
  }
  // Multiplies by 2^bits.
  void ShiftLeft(int bits) {
    while (bits > 0) {
      const int step = std::min(bits, 30);
      uint64_t carry = 0;
      for (uint32_t& limb : limbs_) {
        const uint64_t cur = (uint64_t{limb} << step) + carry;
        limb = static_cast<uint32_t>(cur % kBase);
        carry = cur / kBase;
      }
      while (carry != 0) {
        limbs_.push_back(static_cast<uint32_t>(carry % kBase));
        carry /= kBase;
      }
      bits -= step;
    }
  }
  // Divides by d (> 0) and returns the remainder.
  uint32_t DivideSmall(uint32_t d) {
    uint64_t rem = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      const uint64_t cur = rem * kBase + limbs_[i];
      limbs_[i] = static_cast<uint32_t>(cur / d);
      rem = cur % d;
    }
    Trim();
    return static_cast<uint32_t>(rem);
  }
  std::string ToDigits() const {
    if (limbs_.empty()) return "";
    std::string out = std::to_string(limbs_.back());
    for (size_t i = limbs_.size() - 1; i-- > 0;) {
      std::string part = std::to_string(limbs_[i]);
      out.append(9 - part.size(), '0');
      out += part;
    }
    return out;
  }

 private:
  static constexpr uint64_t kBase = 1000000000;
  void Trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

// The upstream scanner (parseQuantityString), step for step: an optional sign, leading zeros,
// integer digits, an optional '.' with fraction digits, then suffix letters from
// "eEinumkKMGTP", an optional sign and digits. `value` is the numeric prefix as upstream slices
// it (used to decide whether its decimal fallback finds any digit).
struct Scanned {
  bool positive = true;
  std::string_view value;
  std::string_view num;  // integer digits without leading zeros; "0" when none
  std::string_view denom;
  std::string_view suffix;
};

bool ScanQuantity(std::string_view str, Scanned& out) {
  size_t pos = 0;
  const size_t end = str.size();
  if (pos < end) {
    if (str[0] == '-') {
      out.positive = false;
      ++pos;
    } else if (str[0] == '+') {
      ++pos;
    }
  }
  // Leading zeros; a string of only zeros is "0".
  while (true) {
    if (pos >= end) {
      out.num = "0";
      out.value = "0";
      return true;
    }
    if (str[pos] != '0') break;
    ++pos;
  }
  size_t i = pos;
  while (i < end && IsDigit(str[i])) ++i;
  if (i >= end) {
    out.num = str.substr(pos);
    out.value = str;
    return true;
  }
  out.num = str.substr(pos, i - pos);
  pos = i;
  if (out.num.empty()) out.num = "0";
  if (pos < end && str[pos] == '.') {
    ++pos;
    i = pos;
    while (i < end && IsDigit(str[i])) ++i;
    out.denom = str.substr(pos, i - pos);
    if (i >= end) {
      out.value = str;
      return true;
    }
    pos = i;
  }
  out.value = str.substr(0, pos);
  const size_t suffix_start = pos;
  constexpr std::string_view kSuffixLetters = "eEinumkKMGTP";
  while (pos < end && kSuffixLetters.find(str[pos]) != std::string_view::npos) ++pos;
  if (pos < end && (str[pos] == '-' || str[pos] == '+')) ++pos;
  while (pos < end && IsDigit(str[pos])) ++pos;
  if (pos < end) return false;
  out.suffix = str.substr(suffix_start);
  return true;
}

struct SuffixMeaning {
  int base = 10;
  int64_t exponent = 0;
  Quantity::Format format = Quantity::Format::kDecimalSI;
};

enum class SuffixResult { kOk, kUnknown, kExponentOutOfRange };

// Go's strconv.ParseInt(s, 10, 64): an optional sign and at least one digit, in int64 range.
bool ParseGoInt64(std::string_view s, int64_t& out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return false;
  UInt128 v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
    if (v > (UInt128{1} << 63)) return false;
  }
  if (!negative && v > UInt128{std::numeric_limits<int64_t>::max()}) return false;
  out = negative ? static_cast<int64_t>(UInt128(0) - v) : static_cast<int64_t>(v);
  return true;
}

// upstream suffixer.interpret.
SuffixResult InterpretSuffix(std::string_view s, SuffixMeaning& out) {
  using F = Quantity::Format;
  struct Entry {
    std::string_view suffix;
    int base;
    int exponent;
    F format;
  };
  static constexpr Entry kTable[] = {
      {"", 10, 0, F::kDecimalSI},   {"n", 10, -9, F::kDecimalSI}, {"u", 10, -6, F::kDecimalSI},
      {"m", 10, -3, F::kDecimalSI}, {"k", 10, 3, F::kDecimalSI},  {"M", 10, 6, F::kDecimalSI},
      {"G", 10, 9, F::kDecimalSI},  {"T", 10, 12, F::kDecimalSI}, {"P", 10, 15, F::kDecimalSI},
      {"E", 10, 18, F::kDecimalSI}, {"Ki", 2, 10, F::kBinarySI},  {"Mi", 2, 20, F::kBinarySI},
      {"Gi", 2, 30, F::kBinarySI},  {"Ti", 2, 40, F::kBinarySI},  {"Pi", 2, 50, F::kBinarySI},
      {"Ei", 2, 60, F::kBinarySI},
  };
  for (const Entry& e : kTable) {
    if (e.suffix == s) {
      out = {e.base, e.exponent, e.format};
      return SuffixResult::kOk;
    }
  }
  if (s.size() > 1 && (s[0] == 'e' || s[0] == 'E')) {
    int64_t exponent = 0;
    if (!ParseGoInt64(s.substr(1), exponent)) return SuffixResult::kUnknown;
    // Upstream truncates the int64 to int32 here, silently changing the value; draplane rejects.
    if (exponent < std::numeric_limits<int32_t>::min() ||
        exponent > std::numeric_limits<int32_t>::max()) {
      return SuffixResult::kExponentOutOfRange;
    }
    out = {10, exponent, F::kDecimalExponent};
    return SuffixResult::kOk;
  }
  return SuffixResult::kUnknown;
}

// An exact signed decimal `digits` * 10^scale being normalized into a Quantity representation.
struct Normalized {
  Int128 mantissa = 0;
  int32_t scale = 0;
};

enum class Overflow { kFail, kRound };

// Normalizes |value| = digits * 10^scale (digits without leading zeros, "" for zero): strips
// trailing zeros into the scale (up to kMaxScale), moves scale beyond kMaxScale into the digits,
// and fits the result into 38 digits. With Overflow::kFail returns false when it does not fit;
// with kRound rounds away from zero to 38 significant digits and saturates at the largest
// representable magnitude.
bool NormalizeDigits(std::string digits, int64_t scale, bool negative, Overflow mode,
                     Normalized& out) {
  StripLeadingZeros(digits);
  if (digits.empty()) {
    out = {};
    return true;
  }
  auto strip_trailing = [&] {
    size_t n = digits.size();
    while (n > 1 && digits[n - 1] == '0' && scale < kMaxScale) {
      --n;
      ++scale;
    }
    digits.resize(n);
  };
  strip_trailing();
  bool saturate = false;
  if (scale > kMaxScale) {
    const int64_t extra = scale - kMaxScale;
    if (static_cast<int64_t>(digits.size()) + extra > kMaxDigits) {
      if (mode == Overflow::kFail) return false;
      saturate = true;
    } else {
      digits.append(static_cast<size_t>(extra), '0');
      scale = kMaxScale;
    }
  }
  if (!saturate && digits.size() > static_cast<size_t>(kMaxDigits)) {
    if (mode == Overflow::kFail) return false;
    const size_t cut = digits.size() - kMaxDigits;
    const bool sticky = digits.find_first_not_of('0', kMaxDigits) != std::string::npos;
    digits.resize(kMaxDigits);
    if (sticky) IncrementDigits(digits);
    scale += static_cast<int64_t>(cut);
    strip_trailing();
    if (digits.size() > static_cast<size_t>(kMaxDigits) || scale > kMaxScale) saturate = true;
  }
  if (saturate) {
    out.mantissa = static_cast<Int128>(kPow10.v[kMaxDigits] - 1);
    out.scale = static_cast<int32_t>(kMaxScale);
  } else {
    out.mantissa = static_cast<Int128>(DigitsToU128(digits));
    out.scale = static_cast<int32_t>(scale);
  }
  if (negative) out.mantissa = -out.mantissa;
  return true;
}

// Rounds |value| = digits * 10^scale up (away from zero) to a multiple of 10^-9, as upstream
// ParseQuantity does with inf.RoundUp.
void RoundUpToNano(std::string& digits, int64_t& scale) {
  if (scale >= kNano || digits.empty()) return;
  const int64_t cut = kNano - scale;
  bool sticky;
  if (cut >= static_cast<int64_t>(digits.size())) {
    sticky = true;  // digits is non-empty and has no leading zero, so it is non-zero
    digits.clear();
  } else {
    const size_t keep = digits.size() - static_cast<size_t>(cut);
    sticky = digits.find_first_not_of('0', keep) != std::string::npos;
    digits.resize(keep);
  }
  if (sticky) IncrementDigits(digits);
  StripLeadingZeros(digits);
  scale = kNano;
}

// Compares the non-negative value digits * 10^scale (digits without leading zeros) with 2^63-1.
bool ExceedsMaxAllowed(const std::string& digits, int64_t scale) {
  if (digits.empty()) return false;
  const int64_t top = static_cast<int64_t>(digits.size()) + scale;  // value < 10^top
  if (top > 19) return true;
  if (top < 19) return false;
  // Same number of integer digits: compare digit by digit, fraction digits pad the max with 0s.
  for (size_t i = 0; i < digits.size(); ++i) {
    const char max_digit = i < kMaxAllowedDigits.size() ? kMaxAllowedDigits[i] : '0';
    if (digits[i] != max_digit) return digits[i] > max_digit;
  }
  return false;
}

int64_t SaturatingMulPow10(UInt128 magnitude, int64_t exponent, bool negative) {
  const UInt128 limit =
      negative ? (UInt128{1} << 63) : UInt128{std::numeric_limits<int64_t>::max()};
  if (magnitude == 0) return 0;
  UInt128 r = magnitude;
  if (exponent > 38) {
    r = limit + 1;
  } else if (exponent > 0) {
    const UInt128 p = kPow10.v[exponent];
    r = magnitude > (~UInt128{0}) / p ? limit + 1 : magnitude * p;
  }
  if (r > limit) r = limit;
  return negative ? static_cast<int64_t>(UInt128(0) - r) : static_cast<int64_t>(r);
}

}  // namespace

// Private arithmetic with access to Quantity's representation.
class QuantityMath {
 public:
  static Quantity Make(Int128 mantissa, int32_t scale, Quantity::Format format) {
    Quantity q;
    q.mantissa_ = mantissa;
    q.scale_ = mantissa == 0 ? 0 : scale;
    q.format_ = format;
    return q;
  }

  static Quantity FromScaledInt64(int64_t value, int32_t scale, Quantity::Format format) {
    Int128 m = value;
    int64_t s = scale;
    if (m == 0) return Make(0, 0, format);
    while (m % 10 == 0) {
      m /= 10;
      ++s;
    }
    return Make(m, static_cast<int32_t>(s), format);
  }

  // Position just above the most significant digit: |value| < 10^Top(q) <= 10 * |value|.
  static int64_t Top(const Quantity& q) {
    return DigitCount(Magnitude(q.mantissa_)) + int64_t{q.scale_};
  }

  static int CompareMagnitude(const Quantity& a, const Quantity& b) {
    const int64_t ta = Top(a), tb = Top(b);
    if (ta != tb) return ta < tb ? -1 : 1;
    UInt128 ma = Magnitude(a.mantissa_), mb = Magnitude(b.mantissa_);
    // Equal tops: the scale difference is below 38, and the shifted mantissa keeps at most the
    // other's digit count.
    if (a.scale_ > b.scale_) ma *= kPow10.v[a.scale_ - b.scale_];
    if (b.scale_ > a.scale_) mb *= kPow10.v[b.scale_ - a.scale_];
    return ma < mb ? -1 : (ma > mb ? 1 : 0);
  }

  // Exact a + b where both are non-zero; false when it does not fit the representation (and
  // with Overflow::kRound never false).
  static bool AddNonZero(const Quantity& a, const Quantity& b, Overflow mode, Normalized& out) {
    const Quantity& hi = a.scale_ >= b.scale_ ? a : b;  // larger scale
    const Quantity& lo = a.scale_ >= b.scale_ ? b : a;
    const int64_t diff = int64_t{hi.scale_} - lo.scale_;
    // Fast path: align in 128 bits.
    if (diff <= kMaxDigits) {
      Int128 shifted;
      Int128 sum;
      if (!__builtin_mul_overflow(hi.mantissa_, static_cast<Int128>(kPow10.v[diff]), &shifted) &&
          !__builtin_add_overflow(shifted, lo.mantissa_, &sum)) {
        if (Magnitude(sum) < kPow10.v[kMaxDigits]) {
          // Normalize in place: trailing zeros move into the scale.
          int64_t scale = lo.scale_;
          if (sum == 0) {
            out = {};
            return true;
          }
          while (scale < kMaxScale && sum % 10 == 0) {
            sum /= 10;
            ++scale;
          }
          out = {sum, static_cast<int32_t>(scale)};
          return true;
        }
      }
    }
    // Exact decimal string arithmetic. When the scales are more than 76 apart the result needs
    // more than 76 digits whatever the values, so only rounding can represent it; a stand-in
    // for `lo` far below the rounding window rounds exactly like `lo` itself.
    if (diff > 2 * kMaxDigits && mode == Overflow::kFail) return false;
    UInt128 lo_mag = Magnitude(lo.mantissa_);
    int64_t lo_scale = lo.scale_;
    if (diff > 2 * kMaxDigits) {
      lo_mag = 1;
      lo_scale = int64_t{hi.scale_} - 2 * kMaxDigits - 2;
    }
    std::string x = U128ToDigits(Magnitude(hi.mantissa_));
    x.append(static_cast<size_t>(int64_t{hi.scale_} - lo_scale), '0');
    std::string y = U128ToDigits(lo_mag);
    const bool x_negative = hi.mantissa_ < 0, y_negative = lo.mantissa_ < 0;
    std::string result;
    bool negative;
    if (x_negative == y_negative) {
      result = AddDigitStrings(x, y);
      negative = x_negative;
    } else if (CompareDigitStrings(x, y) >= 0) {
      result = SubDigitStrings(x, y);
      negative = x_negative;
    } else {
      result = SubDigitStrings(y, x);
      negative = y_negative;
    }
    return NormalizeDigits(std::move(result), lo_scale, negative, mode, out);
  }

  static StatusOr<Quantity> AddImpl(const Quantity& a, const Quantity& b, Overflow mode) {
    // upstream Add: a zero receiver takes the other's format.
    const Quantity::Format format = a.IsZero() ? b.format_ : a.format_;
    if (b.IsZero()) return Make(a.mantissa_, a.scale_, format);
    if (a.IsZero()) return Make(b.mantissa_, b.scale_, format);
    Normalized n;
    if (!AddNonZero(a, b, mode, n)) {
      return InvalidArgumentError("quantity arithmetic overflow: " + a.CanonicalString() + " + " +
                                  b.CanonicalString() + " needs more than 38 significant digits");
    }
    return Make(n.mantissa, n.scale, format);
  }

  static std::string AddDigitStrings(const std::string& x, const std::string& y) {
    std::string out;
    out.reserve(std::max(x.size(), y.size()) + 1);
    int carry = 0;
    for (size_t i = 0; i < x.size() || i < y.size() || carry; ++i) {
      int d = carry;
      if (i < x.size()) d += x[x.size() - 1 - i] - '0';
      if (i < y.size()) d += y[y.size() - 1 - i] - '0';
      out.push_back(static_cast<char>('0' + d % 10));
      carry = d / 10;
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  // Precondition: x >= y.
  static std::string SubDigitStrings(const std::string& x, const std::string& y) {
    std::string out;
    out.reserve(x.size());
    int borrow = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      int d = (x[x.size() - 1 - i] - '0') - borrow;
      if (i < y.size()) d -= y[y.size() - 1 - i] - '0';
      borrow = d < 0 ? 1 : 0;
      out.push_back(static_cast<char>('0' + d + 10 * borrow));
    }
    std::reverse(out.begin(), out.end());
    return out;
  }
  static int CompareDigitStrings(const std::string& x, const std::string& y) {
    if (x.size() != y.size()) return x.size() < y.size() ? -1 : 1;
    const int c = x.compare(y);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }

  // upstream CanonicalizeBytes for DecimalSI / DecimalExponent: trailing zeros into the
  // exponent, then the exponent lowered to a multiple of three.
  static std::string CanonicalDecimal(const Quantity& q, Quantity::Format format) {
    std::string digits = U128ToDigits(Magnitude(q.mantissa_));
    int64_t exponent = q.scale_;
    while (digits.size() > 1 && digits.back() == '0') {
      digits.pop_back();
      ++exponent;
    }
    const int64_t r = ((exponent % 3) + 3) % 3;
    digits.append(static_cast<size_t>(r), '0');
    exponent -= r;
    std::string out = q.mantissa_ < 0 ? "-" : "";
    out += digits;
    if (format == Quantity::Format::kDecimalSI && exponent >= -9 && exponent <= 18) {
      static constexpr std::string_view kSuffixes[] = {"n", "u", "m", "",  "k",
                                                       "M", "G", "T", "P", "E"};
      out += kSuffixes[(exponent + 9) / 3];
    } else if (exponent != 0) {
      // DecimalExponent, or DecimalSI beyond "E": upstream falls back to exponent notation.
      out += 'e';
      out += std::to_string(exponent);
    }
    return out;
  }

  // upstream CanonicalizeBytes for BinarySI; nullopt when the value must print as DecimalSI.
  static std::optional<std::string> CanonicalBinary(const Quantity& q) {
    // Between -1024 and 1024 exclusive, or fractional: DecimalSI.
    if (q.scale_ < 0) return std::nullopt;
    const UInt128 mag = Magnitude(q.mantissa_);
    if (q.scale_ <= 3 && mag < 1024 && mag * kPow10.v[q.scale_] < 1024) return std::nullopt;
    // The number of 1024 factors: the power of two in mantissa * 2^scale * 5^scale, over ten.
    const uint64_t low = static_cast<uint64_t>(mag);
    const int64_t twos =
        low != 0 ? __builtin_ctzll(low) : 64 + __builtin_ctzll(static_cast<uint64_t>(mag >> 64));
    const int64_t count = (twos + q.scale_) / 10;
    // Upstream has no suffix past "Ei" and would drop the exponent, printing a wrong value;
    // draplane prints such values (only reachable by arithmetic) in DecimalSI instead.
    if (count > 6) return std::nullopt;
    std::string number;
    if (q.scale_ <= kMaxDigits && mag <= (~UInt128{0}) / kPow10.v[q.scale_]) {
      number = U128ToDigits((mag * kPow10.v[q.scale_]) >> (10 * count));
    } else {
      std::string digits = U128ToDigits(mag);
      digits.append(static_cast<size_t>(q.scale_), '0');
      BigDecimal big = BigDecimal::FromDigits(digits);
      for (int64_t i = 0; i < count; ++i) big.DivideSmall(1024);
      number = big.ToDigits();
    }
    static constexpr std::string_view kSuffixes[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    std::string out = q.mantissa_ < 0 ? "-" : "";
    out += number;
    out += kSuffixes[count];
    return out;
  }

  static StatusOr<Quantity> Parse(std::string_view text);
};

StatusOr<Quantity> QuantityMath::Parse(std::string_view text) {
  using F = Quantity::Format;
  if (text.empty()) return InvalidArgumentError(std::string(kErrFormatWrong));
  if (text == "0") {
    Quantity q;
    q.keeps_text_ = true;
    q.original_text_ = "0";
    return q;
  }
  Scanned sc;
  if (!ScanQuantity(text, sc)) return InvalidArgumentError(std::string(kErrFormatWrong));
  SuffixMeaning suffix;
  switch (InterpretSuffix(sc.suffix, suffix)) {
    case SuffixResult::kOk:
      break;
    case SuffixResult::kUnknown:
      return InvalidArgumentError(std::string(kErrSuffix));
    case SuffixResult::kExponentOutOfRange:
      return InvalidArgumentError(
          "quantity exponent out of range: it must fit in 32 bits (upstream would wrap it)");
  }
  F format = suffix.format;

  // Upstream's int64 fast path (precision >= 0 and scale >= nano) decides two observable
  // things: whether String() reuses the input, and whether an input without digits fails in the
  // inf.Dec fallback. Its precision rule, with maxInt64Factors = 18.
  const int64_t num_len = static_cast<int64_t>(sc.num.size());
  const int64_t den_len = static_cast<int64_t>(sc.denom.size());
  bool fast = false;
  bool keeps_text = false;
  if (suffix.base == 2) {
    if (den_len == 0) {
      const int64_t precision = 15 - num_len - (suffix.exponent * 3) / 10 - 1;
      fast = precision >= 0;
      // Canonical when the mantissa is not a multiple of 8 (upstream's `value&0x07 != 0`).
      // (A number is a multiple of 8 exactly when its last three digits are.)
      if (fast) {
        int last3 = 0;
        for (char c : sc.num.substr(num_len > 3 ? num_len - 3 : 0)) last3 = last3 * 10 + (c - '0');
        keeps_text = last3 % 8 != 0;
      }
    }
  } else {
    const int64_t precision = 18 - num_len - den_len;
    const int64_t scale = suffix.exponent - den_len;
    fast = precision >= 0 && scale >= kNano;
    if (fast) {
      const std::string shifted = std::string(sc.num) + std::string(sc.denom);
      keeps_text = scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
    }
  }
  if (!fast && sc.value.find_first_of("0123456789") == std::string_view::npos) {
    return InvalidArgumentError(std::string(kErrNumeric));
  }

  // The exact value: digits * 10^scale (* 2^exponent for binary suffixes).
  std::string digits = sc.num == "0" ? std::string() : std::string(sc.num);
  digits.append(sc.denom);
  StripLeadingZeros(digits);
  int64_t scale = -den_len;
  bool capped = false;
  if (suffix.base == 10) {
    scale += suffix.exponent;
  } else if (!digits.empty()) {
    // At least 10^20 * 2^10 is far above the cap; skip the multiplication.
    if (sc.num != "0" && num_len > 20) {
      capped = true;
    } else if (digits.size() <= 20) {  // < 2^67, times at most 2^60 fits 128 bits
      digits = U128ToDigits(DigitsToU128(digits) << suffix.exponent);
    } else {
      BigDecimal big = BigDecimal::FromDigits(digits);
      big.ShiftLeft(static_cast<int>(suffix.exponent));
      digits = big.ToDigits();
    }
  }
  if (!capped) {
    RoundUpToNano(digits, scale);
    if (format == F::kBinarySI && ExceedsMaxAllowed(digits, scale)) capped = true;
  }
  if (capped) {
    digits = std::string(kMaxAllowedDigits);
    scale = 0;
  }
  // BinarySI values strictly between 0 and 1 switch to DecimalSI.
  if (format == F::kBinarySI && !digits.empty() &&
      static_cast<int64_t>(digits.size()) + scale <= 0) {
    format = F::kDecimalSI;
  }
  Normalized n;
  if (!NormalizeDigits(std::move(digits), scale, !sc.positive, Overflow::kFail, n)) {
    return InvalidArgumentError(
        "quantity out of range: draplane supports at most 38 significant digits and a decimal "
        "exponent up to 2147483584");
  }
  Quantity q = Make(n.mantissa, n.scale, format);
  q.keeps_text_ = keeps_text;
  q.original_text_ = std::string(text);
  return q;
}

StatusOr<Quantity> Quantity::Parse(std::string_view text) { return QuantityMath::Parse(text); }

Quantity Quantity::FromInt64(int64_t value, Format format) {
  return QuantityMath::FromScaledInt64(value, 0, format);
}

Quantity Quantity::FromMilli(int64_t milli, Format format) {
  return QuantityMath::FromScaledInt64(milli, -3, format);
}

std::string Quantity::ToString() const {
  if (keeps_text_) return original_text_;
  return CanonicalString();
}

std::string Quantity::CanonicalString() const {
  if (mantissa_ == 0) return "0";
  if (format_ == Format::kBinarySI) {
    if (auto binary = QuantityMath::CanonicalBinary(*this)) return *binary;
    return QuantityMath::CanonicalDecimal(*this, Format::kDecimalSI);
  }
  return QuantityMath::CanonicalDecimal(*this, format_);
}

void Quantity::ForgetWrittenForm() {
  from_number_ = false;
  if (!keeps_text_) original_text_.clear();
}

std::string Quantity::SerializedText() const {
  return original_text_.empty() ? ToString() : original_text_;
}

int Quantity::Sign() const { return mantissa_ < 0 ? -1 : (mantissa_ > 0 ? 1 : 0); }

int Quantity::Compare(const Quantity& other) const {
  const int sa = Sign(), sb = other.Sign();
  if (sa != sb) return sa < sb ? -1 : 1;
  if (sa == 0) return 0;
  const int magnitude = QuantityMath::CompareMagnitude(*this, other);
  return sa > 0 ? magnitude : -magnitude;
}

Quantity Quantity::Add(const Quantity& other) const {
  return *QuantityMath::AddImpl(*this, other, Overflow::kRound);
}

Quantity Quantity::Sub(const Quantity& other) const {
  // upstream Sub: a zero receiver takes the other's format, as in Add.
  Quantity negated = other.Neg();
  return *QuantityMath::AddImpl(*this, negated, Overflow::kRound);
}

StatusOr<Quantity> Quantity::CheckedAdd(const Quantity& other) const {
  return QuantityMath::AddImpl(*this, other, Overflow::kFail);
}

StatusOr<Quantity> Quantity::CheckedSub(const Quantity& other) const {
  return QuantityMath::AddImpl(*this, other.Neg(), Overflow::kFail);
}

Quantity Quantity::Neg() const { return QuantityMath::Make(-mantissa_, scale_, format_); }

int64_t Quantity::Value() const { return ScaledValue(0); }

int64_t Quantity::MilliValue() const { return ScaledValue(-3); }

int64_t Quantity::ScaledValue(int32_t scale) const {
  if (mantissa_ == 0) return 0;
  const bool negative = mantissa_ < 0;
  const UInt128 mag = Magnitude(mantissa_);
  const int64_t delta = int64_t{scale_} - scale;
  if (delta >= 0) return SaturatingMulPow10(mag, delta, negative);
  // Scaling down rounds away from zero (upstream int64Amount.AsScaledInt64).
  UInt128 r = 1;
  if (-delta <= kMaxDigits) {
    const UInt128 p = kPow10.v[-delta];
    r = mag / p + (mag % p != 0 ? 1 : 0);
  }
  return SaturatingMulPow10(r, 0, negative);
}

std::optional<int64_t> Quantity::AsInt64() const {
  if (mantissa_ == 0) return int64_t{0};
  // Normalized: a negative scale means a fraction.
  if (scale_ < 0 || scale_ > 18) return std::nullopt;
  const bool negative = mantissa_ < 0;
  const UInt128 mag = Magnitude(mantissa_);
  const UInt128 limit =
      negative ? (UInt128{1} << 63) : UInt128{std::numeric_limits<int64_t>::max()};
  const UInt128 p = kPow10.v[scale_];
  if (mag > limit / p) return std::nullopt;
  const UInt128 v = mag * p;
  return negative ? static_cast<int64_t>(UInt128(0) - v) : static_cast<int64_t>(v);
}

double Quantity::AsApproximateDouble() const {
  const double m = static_cast<double>(mantissa_);
  if (scale_ == 0 || mantissa_ == 0) return m;
  // Dividing by an exact power of ten rounds once, more accurately than multiplying by 10^-k.
  if (scale_ < 0 && scale_ >= -22) return m / std::pow(10.0, -scale_);
  return m * std::pow(10.0, scale_);
}

std::string_view Quantity::FormatName(Format format) {
  switch (format) {
    case Format::kDecimalExponent:
      return "DecimalExponent";
    case Format::kBinarySI:
      return "BinarySI";
    case Format::kDecimalSI:
      return "DecimalSI";
  }
  return "DecimalSI";
}

}  // namespace draplane::api
