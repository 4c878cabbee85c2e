#include "cli/object_ref.h"

#include <gtest/gtest.h>

namespace draplane::cli {
namespace {

TEST(ObjectRefTest, ParsesNamespaceAndName) {
  StatusOr<NamespacedName> ref = ParseNamespacedName("team-a/llm-5", "default", "pod");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->ns, "team-a");
  EXPECT_EQ(ref->name, "llm-5");
}

TEST(ObjectRefTest, BareNameTakesTheDefaultNamespace) {
  StatusOr<NamespacedName> ref = ParseNamespacedName("llm-5", "team-b", "pod");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->ns, "team-b");
  EXPECT_EQ(ref->name, "llm-5");
}

TEST(ObjectRefTest, RejectsEmptyAndMalformedReferences) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {
           Case{"team-a/", "pod \"team-a/\": the name after '/' is empty"},
           Case{"/llm-5", "pod \"/llm-5\": the namespace before '/' is empty"},
           Case{"", "pod \"\": name must not be empty"},
           Case{"a/b/c", "pod \"a/b/c\": expected NAMESPACE/NAME or NAME"},
           Case{"Team/x", "pod namespace \"Team\": a lowercase RFC 1123 label"},
           Case{"team-a/Bad_Name", "pod \"team-a/Bad_Name\": a lowercase RFC 1123 subdomain"},
       }) {
    StatusOr<NamespacedName> ref = ParseNamespacedName(c.text, "default", "pod");
    ASSERT_FALSE(ref.ok()) << c.text;
    EXPECT_EQ(ref.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(ref.status().message()).find(c.message), std::string::npos)
        << ref.status().message();
  }
}

TEST(ObjectRefTest, ValidatesNodeAndNamespaceNames) {
  EXPECT_TRUE(ValidateObjectName("gpu-node-1.example.com", "--node").ok());
  EXPECT_FALSE(ValidateObjectName("", "--node").ok());
  EXPECT_FALSE(ValidateObjectName("GPU_1", "--node").ok());
  EXPECT_TRUE(ValidateNamespaceName("team-a", "--namespace").ok());
  EXPECT_FALSE(ValidateNamespaceName("team.a", "--namespace").ok());
  EXPECT_FALSE(ValidateNamespaceName("", "--namespace").ok());
}

}  // namespace
}  // namespace draplane::cli
