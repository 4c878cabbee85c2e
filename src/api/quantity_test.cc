#include "api/quantity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace draplane::api {
namespace {

using Format = Quantity::Format;

// One row of a `|`-separated table under tests/data/quantity/.
struct Row {
  std::string file;
  int line = 0;
  std::vector<std::string> cols;
};

std::string Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

// Undoes the table's quoting: "<empty>" is "", a double-quoted cell keeps its spaces.
std::string Cell(const std::string& cell) {
  if (cell == "<empty>") return "";
  if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
    return cell.substr(1, cell.size() - 2);
  }
  return cell;
}

std::vector<Row> LoadTable(const std::string& name) {
  std::vector<Row> rows;
  const std::string path = std::string(DRAPLANE_SOURCE_DIR) + "/tests/data/quantity/" + name;
  std::ifstream in(path);
  if (!in) {
    rows.push_back({name, 0, {"<missing file " + path + ">"}});
    return rows;
  }
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    Row row{name, number, {}};
    size_t start = 0;
    while (true) {
      const size_t bar = trimmed.find(" | ", start);
      row.cols.push_back(Cell(Trim(trimmed.substr(start, bar - start))));
      if (bar == std::string::npos) break;
      start = bar + 3;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// A test name for a row: the line number and the cells' alphanumerics.
std::string RowName(const testing::TestParamInfo<Row>& info) {
  std::string name = "L" + std::to_string(info.param.line);
  for (size_t i = 0; i < info.param.cols.size() && i < 3; ++i) {
    name += '_';
    for (char c : info.param.cols[i].substr(0, 40)) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        name += c;
      } else if (c == '.') {
        name += "p";
      } else if (c == '-') {
        name += "m";
      } else if (c == '+') {
        name += "P";
      } else {
        name += "_";
      }
    }
  }
  return name;
}

std::string ErrorMessageFor(const std::string& kind) {
  if (kind == "format") {
    return "quantities must match the regular expression "
           "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  }
  if (kind == "suffix") return "unable to parse quantity's suffix";
  if (kind == "numeric") return "unable to parse numeric part of quantity";
  return "";  // "range": draplane's own wording, checked by prefix below
}

Quantity MustParse(const std::string& text) {
  StatusOr<Quantity> q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status().ToString();
  return q.ok() ? *q : Quantity();
}

class QuantityParseTable : public testing::TestWithParam<Row> {};

TEST_P(QuantityParseTable, MatchesUpstream) {
  const Row& row = GetParam();
  SCOPED_TRACE(row.file + ":" + std::to_string(row.line));
  ASSERT_GE(row.cols.size(), 2u) << row.cols[0];
  const std::string& input = row.cols[0];
  StatusOr<Quantity> parsed = Quantity::Parse(input);
  if (row.cols[1].starts_with("error: ")) {
    const std::string kind = row.cols[1].substr(7);
    ASSERT_FALSE(parsed.ok()) << "parsed as " << parsed->ToString();
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    if (kind == "range") {
      EXPECT_TRUE(parsed.status().message().starts_with("quantity ")) << parsed.status().message();
      EXPECT_NE(parsed.status().message().find("range"), std::string_view::npos);
    } else {
      EXPECT_EQ(parsed.status().message(), ErrorMessageFor(kind));
    }
    return;
  }
  ASSERT_EQ(row.cols.size(), 6u);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const Quantity& q = *parsed;
  EXPECT_EQ(q.ToString(), row.cols[1]);
  EXPECT_EQ(q.CanonicalString(), row.cols[2]);
  EXPECT_EQ(q.Value(), std::stoll(row.cols[3]));
  EXPECT_EQ(q.MilliValue(), std::stoll(row.cols[4]));
  EXPECT_EQ(Quantity::FormatName(q.format()), row.cols[5]);
  EXPECT_EQ(q.original_text(), input);
  EXPECT_EQ(q.SerializedText(), input);

  // Both printed forms parse back to the same value and are fixed points, except that a BinarySI
  // value printed without a suffix parses as DecimalSI and may then print differently (upstream:
  // "62.5Ki" prints "64000", which prints "64k").
  for (const std::string& printed : {q.ToString(), q.CanonicalString()}) {
    StatusOr<Quantity> again = Quantity::Parse(printed);
    ASSERT_TRUE(again.ok()) << printed << ": " << again.status().ToString();
    EXPECT_EQ(again->Compare(q), 0) << printed;
    if (q.format() != Format::kBinarySI || again->format() == Format::kBinarySI) {
      EXPECT_EQ(again->ToString(), printed);
    }
  }
  // Negating the input negates the value (upstream's "try the negative version").
  if (!input.empty() && input[0] != '-' && input[0] != '+') {
    StatusOr<Quantity> negative = Quantity::Parse("-" + input);
    ASSERT_TRUE(negative.ok()) << negative.status().ToString();
    EXPECT_EQ(negative->Compare(q.Neg()), 0);
    EXPECT_EQ(negative->format(), q.format());
    StatusOr<Quantity> positive = Quantity::Parse("+" + input);
    ASSERT_TRUE(positive.ok()) << positive.status().ToString();
    EXPECT_EQ(positive->Compare(q), 0);
    if (!q.IsZero()) {
      EXPECT_EQ(negative->CanonicalString(), "-" + q.CanonicalString());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, QuantityParseTable, testing::ValuesIn(LoadTable("parse.txt")),
                         RowName);

class QuantityArithmeticTable : public testing::TestWithParam<Row> {};

TEST_P(QuantityArithmeticTable, MatchesExpectation) {
  const Row& row = GetParam();
  SCOPED_TRACE(row.file + ":" + std::to_string(row.line));
  ASSERT_GE(row.cols.size(), 4u) << row.cols[0];
  const std::string& op = row.cols[0];
  const Quantity a = MustParse(row.cols[1]);
  const Quantity b = MustParse(row.cols[2]);
  if (op == "cmp") {
    const int want = std::stoi(row.cols[3]);
    EXPECT_EQ(a.Compare(b), want);
    EXPECT_EQ(b.Compare(a), -want);
    EXPECT_EQ(a == b, want == 0);
    return;
  }
  ASSERT_EQ(row.cols.size(), 5u);
  const bool add = op == "add" || op == "add!";
  const bool exact = op == "add" || op == "sub";
  ASSERT_TRUE(add || op == "sub" || op == "sub!") << op;
  const Quantity result = add ? a.Add(b) : a.Sub(b);
  EXPECT_EQ(result.ToString(), row.cols[3]);
  EXPECT_EQ(result.CanonicalString(), row.cols[3]);
  EXPECT_EQ(Quantity::FormatName(result.format()), row.cols[4]);
  EXPECT_TRUE(result.original_text().empty());
  const StatusOr<Quantity> checked = add ? a.CheckedAdd(b) : a.CheckedSub(b);
  if (exact) {
    ASSERT_TRUE(checked.ok()) << checked.status().ToString();
    EXPECT_EQ(checked->Compare(result), 0);
    EXPECT_EQ(checked->format(), result.format());
    // Exact arithmetic undoes itself.
    const Quantity back = add ? result.Sub(b) : result.Add(b);
    EXPECT_EQ(back.Compare(a), 0) << back.ToString();
  } else {
    ASSERT_FALSE(checked.ok());
    EXPECT_EQ(checked.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(checked.status().message().starts_with("quantity arithmetic overflow"));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, QuantityArithmeticTable,
                         testing::ValuesIn(LoadTable("arithmetic.txt")), RowName);

TEST(QuantityTest, DefaultIsZeroDecimalSI) {
  Quantity q;
  EXPECT_TRUE(q.IsZero());
  EXPECT_EQ(q.Sign(), 0);
  EXPECT_EQ(q.ToString(), "0");
  EXPECT_EQ(q.SerializedText(), "0");
  EXPECT_EQ(q.format(), Format::kDecimalSI);
  EXPECT_EQ(q.Value(), 0);
  EXPECT_EQ(q.MilliValue(), 0);
  EXPECT_EQ(q.AsInt64(), 0);
  EXPECT_EQ(q.AsApproximateDouble(), 0.0);
}

// upstream TestNewSet.
TEST(QuantityTest, FromInt64PrintsCanonically) {
  struct Case {
    int64_t value;
    Format format;
    const char* want;
  };
  for (const Case& c :
       {Case{1, Format::kDecimalSI, "1"}, Case{1000, Format::kDecimalSI, "1k"},
        Case{1234000, Format::kDecimalSI, "1234k"}, Case{1024, Format::kBinarySI, "1Ki"},
        Case{1000000, Format::kDecimalExponent, "1e6"}, Case{1024 * 1024, Format::kBinarySI, "1Mi"},
        Case{-5, Format::kBinarySI, "-5"}, Case{0, Format::kBinarySI, "0"},
        Case{std::numeric_limits<int64_t>::min(), Format::kDecimalSI, "-9223372036854775808"},
        Case{std::numeric_limits<int64_t>::min(), Format::kBinarySI, "-8Ei"}}) {
    const Quantity q = Quantity::FromInt64(c.value, c.format);
    EXPECT_EQ(q.ToString(), c.want) << c.value;
    EXPECT_EQ(q.Value(), c.value);
    EXPECT_EQ(q.AsInt64(), c.value);
    EXPECT_TRUE(q.original_text().empty());
    // "-8Ei" is the one spelling that does not round-trip: parsing caps BinarySI at 2^63-1
    // (upstream issue #140674).
    if (c.format != Format::kBinarySI || c.value != std::numeric_limits<int64_t>::min()) {
      EXPECT_EQ(MustParse(q.ToString()).Value(), c.value);
    }
  }
}

// upstream TestMilliNewSet: BinarySI prints fractions (and values below 1024) as DecimalSI.
TEST(QuantityTest, FromMilliPrintsCanonically) {
  struct Case {
    int64_t milli;
    Format format;
    const char* want;
  };
  for (const Case& c :
       {Case{1, Format::kDecimalSI, "1m"}, Case{1000, Format::kDecimalSI, "1"},
        Case{1234000, Format::kDecimalSI, "1234"}, Case{1024, Format::kBinarySI, "1024m"},
        Case{1000000, Format::kDecimalExponent, "1e3"},
        Case{1024 * 1024, Format::kBinarySI, "1048576m"}}) {
    const Quantity q = Quantity::FromMilli(c.milli, c.format);
    EXPECT_EQ(q.ToString(), c.want) << c.milli;
    EXPECT_EQ(q.MilliValue(), c.milli);
  }
}

// upstream TestScaledValue: NewScaledQuantity(1, from).ScaledValue(to).
TEST(QuantityTest, ScaledValueRoundsUp) {
  struct Case {
    const char* text;
    int32_t scale;
    int64_t want;
  };
  for (const Case& c :
       {Case{"1n", -9, 1}, Case{"1n", -6, 1}, Case{"1n", -3, 1}, Case{"1n", 0, 1},
        Case{"1u", -9, 1000}, Case{"1u", 0, 1}, Case{"1m", -9, 1000000}, Case{"1m", -6, 1000},
        Case{"1", -9, 1000000000}, Case{"1", -6, 1000000}, Case{"1", 0, 1}, Case{"100", -2, 10000},
        Case{"1G", 6, 1000}, Case{"1500M", 9, 2}, Case{"-1500M", 9, -2}, Case{"1n", 20, 1},
        Case{"-1n", 40, -1}, Case{"1", -40, std::numeric_limits<int64_t>::max()},
        Case{"-1", -40, std::numeric_limits<int64_t>::min()}}) {
    EXPECT_EQ(MustParse(c.text).ScaledValue(c.scale), c.want) << c.text << " @" << c.scale;
  }
}

TEST(QuantityTest, AsInt64OnlyForIntegersInRange) {
  EXPECT_EQ(MustParse("1k").AsInt64(), 1000);
  EXPECT_EQ(MustParse("1.000").AsInt64(), 1);  // upstream answers false here; see api.md
  EXPECT_EQ(MustParse("-9223372036854775808").AsInt64(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(MustParse("9223372036854775807").AsInt64(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(MustParse("9223372036854775808").AsInt64(), std::nullopt);
  EXPECT_EQ(MustParse("1.5").AsInt64(), std::nullopt);
  EXPECT_EQ(MustParse("1n").AsInt64(), std::nullopt);
  EXPECT_EQ(MustParse("1e19").AsInt64(), std::nullopt);
  EXPECT_EQ(MustParse("9E").AsInt64(), int64_t{9000000000000000000});
}

// upstream TestStringQuantityAsApproximateFloat64 and the large/infinite rows of
// TestQuantityAsApproximateFloat64.
TEST(QuantityTest, AsApproximateDouble) {
  EXPECT_EQ(MustParse("2Ki").AsApproximateDouble(), 2048.0);
  EXPECT_EQ(MustParse("1.1Ki").AsApproximateDouble(), 1126.4);
  EXPECT_EQ(MustParse("1Mi").AsApproximateDouble(), 1.048576e+06);
  EXPECT_EQ(MustParse("2Gi").AsApproximateDouble(), 2.147483648e+09);
  EXPECT_EQ(MustParse("12E").AsApproximateDouble(), 1.2e19);
  EXPECT_EQ(MustParse("9Ei").AsApproximateDouble(), 9223372036854775807.0);
  EXPECT_EQ(MustParse("-1.5").AsApproximateDouble(), -1.5);
  EXPECT_EQ(MustParse("12e500").AsApproximateDouble(), HUGE_VAL);
  EXPECT_EQ(MustParse("-12e500").AsApproximateDouble(), -HUGE_VAL);
}

TEST(QuantityTest, FromNumberFlagIsKept) {
  Quantity q = MustParse("1.5");
  EXPECT_FALSE(q.from_number());
  q.set_from_number(true);
  EXPECT_TRUE(q.from_number());
  EXPECT_EQ(q.SerializedText(), "1.5");
  EXPECT_EQ(q.ToString(), "1500m");
  const Quantity sum = q.Add(q);
  EXPECT_FALSE(sum.from_number());
  EXPECT_EQ(sum.SerializedText(), "3");
}

TEST(QuantityTest, IsIntegerIsExactAtAnySize) {
  for (const char* text : {"0", "1", "10", "1k", "1Gi", "9223372036854775807", "12e500"}) {
    EXPECT_TRUE(MustParse(text).IsInteger()) << text;
  }
  for (const char* text : {"0.5", "1500m", "1.0001", "1n", "9223372036854775807.5"}) {
    EXPECT_FALSE(MustParse(text).IsInteger()) << text;
  }
}

// What kube-apiserver stores: upstream's String() of the parsed value, a string.
TEST(QuantityTest, ForgetWrittenFormLeavesWhatUpstreamKeeps) {
  for (auto [written, stored] :
       std::vector<std::pair<const char*, const char*>>{{"0.5", "500m"},
                                                        {"1.0", "1"},
                                                        {"1024Mi", "1Gi"},
                                                        {"1000", "1k"},
                                                        {"80Gi", "80Gi"},
                                                        {"1", "1"},
                                                        {"+1", "+1"},
                                                        {"250e-3", "250e-3"},
                                                        {"0.25", "250m"},
                                                        {"0", "0"}}) {
    Quantity q = MustParse(written);
    q.set_from_number(true);
    q.ForgetWrittenForm();
    EXPECT_FALSE(q.from_number()) << written;
    EXPECT_EQ(q.SerializedText(), stored) << written;
  }
}

// upstream TestQuantityAddZeroPreservesSuffix / TestQuantitySubZeroPreservesSuffix.
TEST(QuantityTest, ZeroOperandKeepsTheOtherSuffix) {
  const Quantity zero = MustParse("0");
  for (const char* text : {"100m", "1Gi"}) {
    const Quantity value = MustParse(text);
    EXPECT_EQ(value.Add(zero).ToString(), text);
    EXPECT_EQ(zero.Add(value).ToString(), text);
    EXPECT_EQ(value.Sub(zero).ToString(), text);
    EXPECT_EQ(zero.Sub(value).ToString(), value.Neg().ToString());
  }
}

// upstream TestAddSubRoundTrip / TestAddSubRoundTripAcrossScales, with a fixed sequence.
TEST(QuantityTest, AddThenSubCancelsAcrossScales) {
  Quantity sum;
  std::vector<Quantity> added;
  uint64_t x = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < 200; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const int64_t value = static_cast<int64_t>(x >> 1);
    const int scale = static_cast<int>(x % 20) - 10;
    const std::string text = std::to_string(value) + "e" + std::to_string(scale);
    added.push_back(MustParse(text));
    sum = sum.Add(added.back());
  }
  for (const Quantity& q : added) sum = sum.Sub(q);
  EXPECT_TRUE(sum.IsZero()) << sum.ToString();
}

// upstream TestQuantityNeg / TestNeg.
TEST(QuantityTest, NegKeepsFormat) {
  EXPECT_EQ(MustParse("9.01").Neg().ToString(), "-9010m");
  EXPECT_EQ(MustParse("10").Neg().Neg().ToString(), "10");
  EXPECT_EQ(MustParse("1Ki").Neg().format(), Format::kBinarySI);
  EXPECT_TRUE(Quantity().Neg().IsZero());
  EXPECT_EQ(Quantity::FromInt64(std::numeric_limits<int64_t>::min()).Neg().ToString(),
            "9223372036854775808");
}

TEST(QuantityTest, HugeInputsStayLinear) {
  // A 4 MB fraction on a binary suffix takes the big-number path; 4 MB of zeros the string one.
  const std::string fraction = "1." + std::string(4 << 20, '0') + "1Ki";
  EXPECT_EQ(MustParse(fraction).ToString(), "1024000000001n");
  const std::string zeros = "1" + std::string(4 << 20, '0');
  EXPECT_EQ(MustParse(zeros).ToString(), "10e4194303");
  const std::string tiny = "0." + std::string(4 << 20, '0') + "1";
  EXPECT_EQ(MustParse(tiny).ToString(), "1n");
}

}  // namespace
}  // namespace draplane::api
