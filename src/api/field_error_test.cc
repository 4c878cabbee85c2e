#include "api/field_error.h"

#include <gtest/gtest.h>

namespace draplane::api {
namespace {

TEST(FieldErrorTest, RendersLikeKubernetes) {
  FieldPath requests = FieldPath("spec").Child("devices").Child("requests");
  EXPECT_EQ(Required(requests.Index(0).Child("name")).ToString(),
            "spec.devices.requests[0].name: Required value");
  EXPECT_EQ(Invalid(requests.Index(0).Child("exactly").Child("count"), RenderValue(int64_t{0}),
                    "must be greater than zero")
                .ToString(),
            "spec.devices.requests[0].exactly.count: Invalid value: 0: must be greater than zero");
  EXPECT_EQ(NotSupported(FieldPath("spec").Child("taint").Child("effect"), RenderValue("Bad"),
                         {"NoExecute", "NoSchedule", "None"})
                .ToString(),
            "spec.taint.effect: Unsupported value: \"Bad\": supported values: \"NoExecute\", "
            "\"NoSchedule\", \"None\"");
  EXPECT_EQ(TooMany(requests, 33, 32).ToString(),
            "spec.devices.requests: Too many: 33: must have at most 32 items");
  EXPECT_EQ(TooLong(FieldPath("x"), 10240).ToString(),
            "x: Too long: may not be more than 10240 bytes");
  EXPECT_EQ(Duplicate(requests.Index(1).Child("name"), RenderValue("gpu")).ToString(),
            "spec.devices.requests[1].name: Duplicate value: \"gpu\"");
  EXPECT_EQ(FieldPath("spec").Child("capacity").Key("memory").String(), "spec.capacity[memory]");
}

TEST(FieldErrorTest, QuotesStringsLikeGo) {
  EXPECT_EQ(RenderValue("a\"b\n\x01"), "\"a\\\"b\\n\\x01\"");
}

TEST(FieldErrorTest, InvalidStatusListsCauses) {
  FieldErrorList errors = {Required(FieldPath("spec").Child("driver")),
                           Invalid(FieldPath("metadata").Child("name"), RenderValue("A"), "bad")};
  Status s = ToInvalidStatus("ResourceSlice.resource.k8s.io", "s1", errors);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "ResourceSlice.resource.k8s.io \"s1\" is invalid: [spec.driver: Required value, "
            "metadata.name: Invalid value: \"A\": bad]");
  ASSERT_EQ(s.causes().size(), 2u);
  EXPECT_EQ(s.causes()[0].type, "FieldValueRequired");
  EXPECT_EQ(s.causes()[0].message, "Required value");
  EXPECT_EQ(s.causes()[1].field, "metadata.name");
}

}  // namespace
}  // namespace draplane::api
