#include "allocator/internal/constraints.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace draplane::allocator::internal {
namespace {

using SetType = AttributeValue::SetType;

// Builds attribute values and a constraint over devices 0..n-1, one value per device.
class ConstraintFixture {
 public:
  // A scalar int attribute.
  uint32_t Int(int64_t v) {
    AttributeValue a;
    a.present = true;
    a.int_value = v;
    a.set_type = SetType::kInt;
    a.set = {v};
    return Add(a);
  }
  uint32_t String(const std::string& s) {
    AttributeValue a;
    a.present = true;
    a.string_value = Intern(s);
    a.set_type = SetType::kString;
    a.set = {*a.string_value};
    return Add(a);
  }
  uint32_t Version(const std::string& s) {
    AttributeValue a;
    a.present = true;
    a.version_value = Intern(s);
    a.set_type = SetType::kVersion;
    a.set = {*a.version_value};
    return Add(a);
  }
  uint32_t Ints(std::vector<int64_t> v) {
    AttributeValue a;
    a.present = true;
    a.set_type = v.empty() ? SetType::kUnknown : SetType::kInt;
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    a.set = v;
    return Add(a);
  }
  uint32_t Strings(const std::vector<std::string>& v) {
    AttributeValue a;
    a.present = true;
    a.set_type = v.empty() ? SetType::kUnknown : SetType::kString;
    for (const std::string& s : v) a.set.push_back(Intern(s));
    std::sort(a.set.begin(), a.set.end());
    a.set.erase(std::unique(a.set.begin(), a.set.end()), a.set.end());
    return Add(a);
  }
  // An attribute entry with no value at all (`{}`).
  uint32_t Empty() {
    AttributeValue a;
    a.present = true;
    return Add(a);
  }

  ConstraintState Make(Constraint::Kind kind, std::vector<uint32_t> device_values, bool list) {
    constraint_.kind = kind;
    constraint_.attribute = "driver/attr";
    constraint_.value_of_device = std::move(device_values);
    return ConstraintState(&constraint_, &values_, list);
  }

 private:
  int64_t Intern(const std::string& s) {
    for (size_t i = 0; i < interned_.size(); ++i) {
      if (interned_[i] == s) return static_cast<int64_t>(i);
    }
    interned_.push_back(s);
    return static_cast<int64_t>(interned_.size() - 1);
  }
  uint32_t Add(const AttributeValue& a) {
    values_.push_back(a);
    return static_cast<uint32_t>(values_.size() - 1);
  }

  std::vector<AttributeValue> values_;
  std::vector<std::string> interned_;
  Constraint constraint_;
};

TEST(ConstraintTest, MatchScalarRequiresSameTypeAndValue) {
  ConstraintFixture f;
  ConstraintState c =
      f.Make(Constraint::Kind::kMatch, {f.Int(1), f.Int(1), f.Int(2), f.String("1"), kNone}, false);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2)) << "different value";
  EXPECT_FALSE(c.Add(3)) << "different type";
  EXPECT_FALSE(c.Add(4)) << "attribute missing";
  c.Remove();
  c.Remove();
  EXPECT_EQ(c.size(), 0);
  EXPECT_TRUE(c.Add(2)) << "an empty set accepts any value";
  EXPECT_FALSE(c.Add(0));
}

TEST(ConstraintTest, MatchScalarModeAcceptsAnyFirstValueButNoListLater) {
  ConstraintFixture f;
  // Upstream's scalar mode takes the first device's attribute whatever it holds; a list-only
  // attribute can then never be matched.
  ConstraintState c =
      f.Make(Constraint::Kind::kMatch, {f.Strings({"a", "b"}), f.Strings({"a", "b"})}, false);
  EXPECT_TRUE(c.Add(0));
  EXPECT_FALSE(c.Add(1));
}

TEST(ConstraintTest, MatchVersionComparesExactText) {
  ConstraintFixture f;
  ConstraintState c = f.Make(Constraint::Kind::kMatch,
                             {f.Version("1.2.3"), f.Version("1.2.3"), f.Version("1.2.4")}, false);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2));
}

TEST(ConstraintTest, MatchListIntersectionIsRestoredOnRemove) {
  // kubernetes#140300: numa = [1,2], [1], [2], [2]; {0, 2, 3} is the valid combination, found
  // only if removing device 1 restores the intersection {1, 2}.
  ConstraintFixture f;
  ConstraintState c = f.Make(Constraint::Kind::kMatch,
                             {f.Ints({1, 2}), f.Ints({1}), f.Ints({2}), f.Ints({2})}, true);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2));
  c.Remove();
  EXPECT_TRUE(c.Add(2));
  EXPECT_TRUE(c.Add(3));
  EXPECT_EQ(c.size(), 3);
  ASSERT_FALSE(c.intersections().empty());
  EXPECT_EQ(c.intersections().back(), std::vector<int64_t>({2}));
}

TEST(ConstraintTest, MatchListTreatsScalarsAsSingletonSetsAndRejectsEmptyLists) {
  ConstraintFixture f;
  ConstraintState c = f.Make(
      Constraint::Kind::kMatch,
      {f.String("a"), f.Strings({"a", "b"}), f.Strings({"b"}), f.Strings({}), f.Empty()}, true);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2)) << "{a} and {b} do not intersect";
  EXPECT_FALSE(c.Add(3)) << "an empty list has no usable value";
  EXPECT_FALSE(c.Add(4)) << "no value at all";
}

TEST(ConstraintTest, MatchListRejectsTypeMismatch) {
  ConstraintFixture f;
  ConstraintState c = f.Make(Constraint::Kind::kMatch, {f.Ints({1}), f.Strings({"1"})}, true);
  EXPECT_TRUE(c.Add(0));
  EXPECT_FALSE(c.Add(1));
}

TEST(ConstraintTest, DistinctThreeDevicesAreCheckedPairwise) {
  // kubernetes#140438: with three devices of one request, the third must differ from both.
  ConstraintFixture f;
  ConstraintState c =
      f.Make(Constraint::Kind::kDistinct, {f.Int(1), f.Int(2), f.Int(1), f.Int(3)}, false);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2)) << "duplicates the first device";
  EXPECT_TRUE(c.Add(3));
  c.Remove();
  c.Remove();
  EXPECT_TRUE(c.Add(3)) << "remove dropped exactly one value each time";
  EXPECT_EQ(c.held_values().size(), 2u);
}

TEST(ConstraintTest, DistinctScalarRejectsUnknownTypeOnlyAfterTheFirst) {
  ConstraintFixture f;
  ConstraintState c = f.Make(Constraint::Kind::kDistinct, {f.Empty(), f.Int(1), f.Empty()}, false);
  EXPECT_TRUE(c.Add(0)) << "nothing to compare against";
  EXPECT_TRUE(c.Add(1)) << "an int differs from a value without int";
  EXPECT_FALSE(c.Add(2)) << "a value without scalar is never distinct";
}

TEST(ConstraintTest, DistinctListRequiresDisjointSets) {
  ConstraintFixture f;
  ConstraintState c = f.Make(
      Constraint::Kind::kDistinct,
      {f.Strings({"a", "b"}), f.Strings({"c"}), f.String("b"), f.Ints({1}), f.Strings({})}, true);
  EXPECT_TRUE(c.Add(0));
  EXPECT_TRUE(c.Add(1));
  EXPECT_FALSE(c.Add(2)) << "b is held by device 0";
  EXPECT_TRUE(c.Add(3)) << "values of another type never intersect";
  EXPECT_FALSE(c.Add(4)) << "an empty list is unusable";
}

TEST(ConstraintTest, MemoKeyIgnoresOrderOfDistinctValues) {
  ConstraintFixture f;
  std::vector<uint32_t> values = {f.Int(1), f.Int(2)};
  ConstraintState a = f.Make(Constraint::Kind::kDistinct, values, false);
  ASSERT_TRUE(a.Add(0));
  ASSERT_TRUE(a.Add(1));
  std::vector<uint64_t> key_a;
  a.AppendKey(key_a);
  ConstraintState b = f.Make(Constraint::Kind::kDistinct, values, false);
  ASSERT_TRUE(b.Add(1));
  ASSERT_TRUE(b.Add(0));
  std::vector<uint64_t> key_b;
  b.AppendKey(key_b);
  EXPECT_EQ(key_a, key_b);
}

}  // namespace
}  // namespace draplane::allocator::internal
