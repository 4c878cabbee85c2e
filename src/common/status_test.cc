#include "common/status.h"

#include <gtest/gtest.h>

#include "common/status_macros.h"

namespace draplane {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(s.causes().empty());
}

TEST(StatusTest, CarriesCodeMessageAndCauses) {
  Status s(StatusCode::kInvalidArgument, "bad claim",
           {{"FieldValueRequired", "Required value", "spec.devices.requests[0].name"}});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "bad claim");
  ASSERT_EQ(s.causes().size(), 1u);
  EXPECT_EQ(s.causes()[0].field, "spec.devices.requests[0].name");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: bad claim");
}

TEST(StatusTest, OkCodeDropsMessage) {
  Status s(StatusCode::kOk, "ignored");
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.message(), "");
}

TEST(StatusTest, WithPrefixKeepsCodeAndCauses) {
  Status s = NotFoundError("class gpu").WithPrefix("claim ns/c");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "claim ns/c: class gpu");
  EXPECT_TRUE(Status().WithPrefix("x").ok());
}

TEST(StatusTest, EqualityComparesContent) {
  EXPECT_EQ(ConflictError("a"), ConflictError("a"));
  EXPECT_FALSE(ConflictError("a") == ConflictError("b"));
  EXPECT_FALSE(ConflictError("a") == ExpiredError("a"));
  EXPECT_EQ(Status(), Status());
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  DRAPLANE_ASSIGN_OR_RETURN(int half, Half(x));
  DRAPLANE_ASSIGN_OR_RETURN(auto quarter, Half(half));
  return quarter;
}

Status CheckEven(int x) {
  DRAPLANE_RETURN_IF_ERROR(Half(x).status());
  return Status();
}

TEST(StatusOrTest, HoldsValueOrStatus) {
  StatusOr<int> ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  StatusOr<int> bad = Half(3);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(StatusOrTest, MacrosPropagate) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_FALSE(CheckEven(1).ok());
}

TEST(StatusOrTest, OkStatusWithoutValueBecomesInternal) {
  StatusOr<std::string> s{Status()};
  EXPECT_EQ(s.status().code(), StatusCode::kInternal);
}

TEST(StatusOrTest, HoldsAnEmptyOptionalAsAValue) {
  StatusOr<std::optional<int>> none = std::nullopt;
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  StatusOr<std::optional<int>> some = std::optional<int>(3);
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(**some, 3);
  std::optional<int> empty;
  StatusOr<std::optional<int>> copied = empty;
  EXPECT_TRUE(copied.ok());
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> bad = Half(3);
  EXPECT_DEATH((void)bad.value(), "odd");
}

}  // namespace
}  // namespace draplane
