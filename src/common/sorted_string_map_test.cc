#include "common/sorted_string_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace draplane {
namespace {

std::vector<std::string> Keys(const SortedStringMap<int>& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key);
  return keys;
}

TEST(SortedStringMapTest, ListsInKeyOrderAndFindsByKey) {
  SortedStringMap<int> map;
  EXPECT_TRUE(map.try_emplace("team-b/train-x", 2).second);
  EXPECT_TRUE(map.try_emplace("team-a/serve-y", 1).second);
  EXPECT_TRUE(map.try_emplace("team-c/a", 3).second);
  EXPECT_EQ(Keys(map), (std::vector<std::string>{"team-a/serve-y", "team-b/train-x", "team-c/a"}));
  EXPECT_EQ(map.size(), 3u);

  ASSERT_NE(map.find("team-b/train-x"), map.end());
  EXPECT_EQ(map.find("team-b/train-x")->second, 2);
  EXPECT_EQ(map.find(std::string("team-c/a"))->second, 3);
  EXPECT_EQ(map.find("team-b/train"), map.end());
  EXPECT_TRUE(map.contains("team-a/serve-y"));
  EXPECT_FALSE(map.contains("team-a"));

  // A taken key keeps its value, as std::map::try_emplace.
  auto [it, inserted] = map.try_emplace("team-a/serve-y", 9);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(it->second, 1);
  it->second = 4;
  EXPECT_EQ(map.find("team-a/serve-y")->second, 4);

  // Paging: the first key after a continue token.
  EXPECT_EQ(map.upper_bound("team-a/serve-y")->first, "team-b/train-x");
  EXPECT_EQ(map.upper_bound("team-c/a"), map.end());
}

TEST(SortedStringMapTest, ErasedKeysAreGoneFromTheOrderAndTheIndex) {
  SortedStringMap<int> map;
  for (int i = 0; i < 100; ++i) map.try_emplace("ns/pod-" + std::to_string(i), i);
  for (int i = 0; i < 100; i += 2) {
    auto it = map.find("ns/pod-" + std::to_string(i));
    ASSERT_NE(it, map.end());
    map.erase(it);
  }
  EXPECT_EQ(map.size(), 50u);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(map.contains("ns/pod-" + std::to_string(i)), i % 2 == 1) << i;
  }
  // Erase returns the next element in key order; re-inserting an erased key works.
  auto next = map.erase(map.find("ns/pod-1"));
  EXPECT_EQ(next->first, "ns/pod-11");
  EXPECT_TRUE(map.try_emplace("ns/pod-1", 1).second);
  EXPECT_EQ(map.find("ns/pod-1")->second, 1);

  map.clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.find("ns/pod-3"), map.end());
}

TEST(SortedStringMapTest, CopiesAndMovesKeepTheirOwnIndex) {
  SortedStringMap<int> original;
  original.try_emplace("b", 2);
  original.try_emplace("a", 1);

  SortedStringMap<int> copy = original;
  copy.find("a")->second = 10;
  copy.erase(copy.find("b"));
  EXPECT_EQ(original.find("a")->second, 1);
  EXPECT_TRUE(original.contains("b"));
  EXPECT_EQ(Keys(copy), (std::vector<std::string>{"a"}));

  SortedStringMap<int> moved = std::move(original);
  EXPECT_EQ(moved.find("b")->second, 2);
  moved.try_emplace("c", 3);
  EXPECT_EQ(Keys(moved), (std::vector<std::string>{"a", "b", "c"}));

  SortedStringMap<int> assigned;
  assigned.try_emplace("z", 26);
  assigned = std::move(moved);
  EXPECT_FALSE(assigned.contains("z"));
  EXPECT_EQ(assigned.find("c")->second, 3);
  assigned.erase(assigned.find("a"));
  EXPECT_EQ(Keys(assigned), (std::vector<std::string>{"b", "c"}));

  copy = assigned;
  EXPECT_EQ(copy.find("b")->second, 2);
  EXPECT_FALSE(copy.contains("a"));
}

}  // namespace
}  // namespace draplane
