#include "common/random.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace draplane {
namespace {

TEST(RandomTest, SameSeedSameSequence) {
  auto a = NewSeededRandom(42);
  auto b = NewSeededRandom(42);
  auto c = NewSeededRandom(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a->Next64();
    EXPECT_EQ(x, b->Next64());
    differs |= x != c->Next64();
  }
  EXPECT_TRUE(differs);
}

TEST(RandomTest, UniformStaysInRange) {
  auto r = NewSeededRandom(1);
  std::set<uint64_t> seen;
  for (int i = 0; i < 1000; ++i) {
    uint64_t x = r->Uniform(7);
    ASSERT_LT(x, 7u);
    seen.insert(x);
    double d = r->UniformDouble();
    ASSERT_GE(d, 0.0);
    ASSERT_LT(d, 1.0);
  }
  EXPECT_EQ(seen.size(), 7u);
}

TEST(RandomTest, UuidIsVersion4LowerCase) {
  auto r = NewSeededRandom(7);
  const std::regex uuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    std::string id = r->NewUuid();
    EXPECT_TRUE(std::regex_match(id, uuid)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(NewSeededRandom(7)->NewUuid(), NewSeededRandom(7)->NewUuid());
}

}  // namespace
}  // namespace draplane
