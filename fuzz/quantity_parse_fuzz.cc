// Fuzzes Quantity::Parse with arbitrary bytes. Whenever parsing succeeds:
//   1. ToString() and CanonicalString() both parse back to an equal quantity; printing is a fixed
//      point from the second round on, and from the first unless the format is BinarySI;
//   2. exact arithmetic is consistent: q - q == 0, (q + q) - q == q when exact, and the sign of
//      q + q is the sign of q;
//   3. Value() and MilliValue() bracket the value (rounded away from zero).
// Violations abort through DRAPLANE_CHECK so libFuzzer records the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "api/quantity.h"
#include "common/check.h"

using draplane::api::Quantity;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto parsed = Quantity::Parse(text);
  if (!parsed.ok()) return 0;
  const Quantity& q = *parsed;
  DRAPLANE_CHECK(q.original_text() == text);

  // Printing may change the format once (upstream prints BinarySI 64000 as "64000", which parses
  // as DecimalSI and prints as "64k"); from the second print on, text is a fixed point.
  for (const bool canonical : {false, true}) {
    auto print = [canonical](const Quantity& x) {
      return canonical ? x.CanonicalString() : x.ToString();
    };
    const std::string first = print(q);
    const auto once = Quantity::Parse(first);
    DRAPLANE_CHECK_MSG(once.ok(), first.c_str());
    DRAPLANE_CHECK_MSG(once->Compare(q) == 0, first.c_str());
    const std::string second = print(*once);
    const auto twice = Quantity::Parse(second);
    DRAPLANE_CHECK_MSG(twice.ok(), second.c_str());
    DRAPLANE_CHECK_MSG(twice->Compare(q) == 0, second.c_str());
    DRAPLANE_CHECK_MSG(print(*twice) == second, second.c_str());
    if (q.format() != Quantity::Format::kBinarySI) {
      DRAPLANE_CHECK_MSG(second == first, first.c_str());
    }
  }

  DRAPLANE_CHECK(q.Sub(q).IsZero());
  const auto twice = q.CheckedAdd(q);
  if (twice.ok()) {
    DRAPLANE_CHECK(twice->Sign() == q.Sign());
    DRAPLANE_CHECK(twice->Sub(q).Compare(q) == 0);
  }
  DRAPLANE_CHECK(q.Add(q).Sign() == q.Sign());

  // Value() is the integer next to q away from zero: |Value()| >= |q| unless saturated.
  const Quantity value = Quantity::FromInt64(q.Value());
  const int64_t max = INT64_MAX;
  if (q.Sign() > 0 && q.Value() != max) DRAPLANE_CHECK(value.Compare(q) >= 0);
  if (q.Sign() < 0 && q.Value() != INT64_MIN) DRAPLANE_CHECK(value.Compare(q) <= 0);
  const Quantity milli = Quantity::FromMilli(q.MilliValue());
  if (q.Sign() > 0 && q.MilliValue() != max) DRAPLANE_CHECK(milli.Compare(q) >= 0);
  if (q.Sign() < 0 && q.MilliValue() != INT64_MIN) DRAPLANE_CHECK(milli.Compare(q) <= 0);
  return 0;
}
