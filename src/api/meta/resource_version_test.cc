#include "api/meta/resource_version.h"

#include <gtest/gtest.h>

namespace draplane::api {
namespace {

TEST(ResourceVersionTest, AcceptsOnlyDecimalVersions) {
  EXPECT_EQ(*ParseResourceVersion(""), 0);
  EXPECT_EQ(*ParseResourceVersion("0"), 0);
  EXPECT_EQ(*ParseResourceVersion("12345"), 12345);
  EXPECT_EQ(*ParseResourceVersion("9223372036854775807"), INT64_MAX);
  for (std::string_view bad : {"-1", "12a", " 1", "1.5", "+1", "0x10"}) {
    EXPECT_EQ(ParseResourceVersion(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ResourceVersionTest, OverflowIsAnErrorNotAWrappedNumber) {
  // One past int64_t, and far past uint64_t: a digit loop without a check wraps these.
  for (std::string_view big :
       {"9223372036854775808", "18446744073709551616", "99999999999999999999999"}) {
    StatusOr<int64_t> parsed = ParseResourceVersion(big);
    ASSERT_FALSE(parsed.ok()) << big;
    EXPECT_EQ(parsed.status().message(), "invalid resource version \"" + std::string(big) + "\"");
  }
}

}  // namespace
}  // namespace draplane::api
