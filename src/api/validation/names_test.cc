#include "api/validation/names.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace draplane::api::validation {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Render(const FieldErrorList& errs) {
  std::vector<std::string> out;
  for (const FieldError& e : errs) out.push_back(e.ToString());
  return out;
}

TEST(NamesTest, RegexErrorKeepsUpstreamSpacing) {
  EXPECT_EQ(RegexError("m", "re", {"a", "b"}),
            "m (e.g. 'a',  or 'b', regex used for validation is 're')");
  EXPECT_EQ(RegexError("m", "re", {}), "m (regex used for validation is 're')");
}

TEST(NamesTest, DNS1123Label) {
  EXPECT_THAT(IsDNS1123Label("gpu-0"), IsEmpty());
  EXPECT_THAT(IsDNS1123Label("0"), IsEmpty());
  EXPECT_THAT(IsDNS1123Label("a.b"), ElementsAre("must not contain dots"));
  EXPECT_THAT(IsDNS1123Label("GPU"),
              ElementsAre("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                          "characters or '-', and must start and end with an alphanumeric "
                          "character (e.g. 'my-name',  or '123-abc', regex used for validation "
                          "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"));
  EXPECT_THAT(IsDNS1123Label(std::string(64, 'a')),
              ElementsAre("must be no more than 63 characters"));
  EXPECT_EQ(IsDNS1123Label("").size(), 1u);
  EXPECT_EQ(IsDNS1123Label("-a").size(), 1u);
  EXPECT_EQ(IsDNS1123Label("a-").size(), 1u);
}

TEST(NamesTest, DNS1123Subdomain) {
  EXPECT_THAT(IsDNS1123Subdomain("gpu.example.com"), IsEmpty());
  EXPECT_THAT(IsDNS1123Subdomain("a"), IsEmpty());
  EXPECT_EQ(IsDNS1123Subdomain("a..b").size(), 1u);
  EXPECT_EQ(IsDNS1123Subdomain(".a").size(), 1u);
  EXPECT_EQ(IsDNS1123Subdomain("a.").size(), 1u);
  EXPECT_EQ(IsDNS1123Subdomain("a_b").size(), 1u);
  EXPECT_THAT(IsDNS1123Subdomain(std::string(254, 'a')),
              ElementsAre("must be no more than 253 characters"));
  EXPECT_THAT(IsDNS1123SubdomainContent(std::string(254, 'a')),
              ElementsAre("must be no more than 253 bytes"));
}

TEST(NamesTest, QualifiedName) {
  EXPECT_THAT(IsQualifiedName("example.com/My_Name.1"), IsEmpty());
  EXPECT_THAT(IsQualifiedName("a"), IsEmpty());
  EXPECT_THAT(IsQualifiedName("/a"), ElementsAre("prefix part must be non-empty"));
  EXPECT_THAT(IsQualifiedName(""),
              ElementsAre("name part must be non-empty",
                          "name part must consist of alphanumeric characters, '-', '_' or '.', "
                          "and must start and end with an alphanumeric character (e.g. "
                          "'MyName',  or 'my.name',  or '123-abc', regex used for validation "
                          "is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"));
  EXPECT_EQ(IsQualifiedName("a/b/c").size(), 1u);
  EXPECT_EQ(IsQualifiedName("a/b/c")[0].rfind("a valid label key must consist", 0), 0u);
  EXPECT_THAT(IsQualifiedName(std::string(64, 'a')),
              ElementsAre("name part must be no more than 63 bytes"));
  EXPECT_EQ(IsQualifiedName("Example.com/a")[0].rfind("prefix part a lowercase RFC 1123", 0), 0u);
}

TEST(NamesTest, LabelValue) {
  EXPECT_THAT(IsLabelValue(""), IsEmpty());
  EXPECT_THAT(IsLabelValue("my_value-1.2"), IsEmpty());
  EXPECT_EQ(IsLabelValue("-x").size(), 1u);
  EXPECT_EQ(IsLabelValue("a b").size(), 1u);
  EXPECT_THAT(IsLabelValue(std::string(64, 'a')), ElementsAre("must be no more than 63 bytes"));
}

TEST(NamesTest, CIdentifier) {
  EXPECT_THAT(IsCIdentifier("_memory0"), IsEmpty());
  EXPECT_THAT(IsCIdentifier("productName"), IsEmpty());
  EXPECT_EQ(IsCIdentifier("0abc").size(), 1u);
  EXPECT_EQ(IsCIdentifier("a-b").size(), 1u);
  EXPECT_EQ(IsCIdentifier("").size(), 1u);
}

TEST(NamesTest, ExtendedResourceName) {
  EXPECT_TRUE(IsExtendedResourceName("example.com/gpu"));
  EXPECT_TRUE(IsExtendedResourceName("nvidia.com/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("gpu"));
  EXPECT_FALSE(IsExtendedResourceName("kubernetes.io/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("example.kubernetes.io/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("requests.example.com/gpu"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/-gpu"));
  EXPECT_FALSE(IsExtendedResourceName("example.com/a/b"));
}

TEST(NamesTest, Semver) {
  for (const char* ok : {"1.2.3", "0.0.0", "1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-0.3.7",
                         "1.0.0-x.7.z.92", "1.0.0+20130313144700", "1.0.0-beta+exp.sha.5114f85",
                         "535.104.5", "1.0.0--", "1.0.0-a-b"}) {
    EXPECT_TRUE(IsSemver(ok)) << ok;
  }
  for (const char* bad : {"1.2", "v1.2.3", "01.2.3", "1.02.3", "1.2.3-01", "1.2.3-", "1.2.3+",
                          "1.2.3-a..b", "1.2.3.4", "", "1.2.3 ", "1.2.3+a_b"}) {
    EXPECT_FALSE(IsSemver(bad)) << bad;
  }
}

TEST(NamesTest, NameWithGenerateNamePrefix) {
  EXPECT_THAT(NameIsDNSSubdomain("gpu-claim-", true), IsEmpty());
  EXPECT_EQ(NameIsDNSSubdomain("gpu-claim-", false).size(), 1u);
  EXPECT_THAT(NameIsDNSLabel("ns-", true), IsEmpty());
}

TEST(NamesTest, DriverName) {
  FieldPath p("spec.driver");
  EXPECT_THAT(Render(ValidateDriverName("gpu.example.com", p)), IsEmpty());
  // Upper case passes: the check runs on the lower-cased name (ValidateCSIDriverName).
  EXPECT_THAT(Render(ValidateDriverName("GPU.example.com", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateDriverName("", p)), ElementsAre("spec.driver: Required value"));
  EXPECT_THAT(Render(ValidateDriverName(std::string(64, 'a'), p)),
              ElementsAre("spec.driver: Too long: may not be more than 63 bytes"));
  EXPECT_EQ(ValidateDriverName("gpu_example", p).size(), 1u);
}

TEST(NamesTest, PoolName) {
  FieldPath p("spec.pool.name");
  EXPECT_THAT(Render(ValidatePoolName("node-1/gpus", p)), IsEmpty());
  EXPECT_THAT(Render(ValidatePoolName("", p)), ElementsAre("spec.pool.name: Required value"));
  FieldErrorList errs = ValidatePoolName("node-1//gpus", p);
  ASSERT_EQ(errs.size(), 1u);
  EXPECT_EQ(errs[0].bad_value, "\"\"");
  std::string long_name = std::string(200, 'a') + "/" + std::string(60, 'b');
  EXPECT_THAT(Render(ValidatePoolName(long_name, p)),
              ElementsAre("spec.pool.name: Too long: may not be more than 253 bytes"));
}

TEST(NamesTest, QualifiedAttributeName) {
  FieldPath p("spec.devices[0].attributes");
  EXPECT_THAT(Render(ValidateQualifiedName("gpu.example.com/productName", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateQualifiedName("memory", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateQualifiedName("a/b/c", p)),
              ElementsAre("spec.devices[0].attributes: Invalid value: \"a/b/c\": must not contain "
                          "more than one slash"));
  EXPECT_THAT(Render(ValidateQualifiedName("/x", p)),
              ElementsAre("spec.devices[0].attributes: Invalid value: \"\": the domain must not "
                          "be empty"));
  EXPECT_THAT(Render(ValidateQualifiedName("d.com/", p)),
              ElementsAre("spec.devices[0].attributes: Invalid value: \"\": the name must not "
                          "be empty"));
  EXPECT_THAT(Render(ValidateQualifiedName(std::string(33, 'a'), p)),
              ElementsAre("spec.devices[0].attributes: Too long: may not be more than 32 bytes"));
  EXPECT_EQ(ValidateQualifiedName("d.com/product-name", p).size(), 1u);
}

TEST(NamesTest, FullyQualifiedNameNeedsDomain) {
  FieldPath p("spec.devices.constraints[0].matchAttribute");
  EXPECT_THAT(Render(ValidateFullyQualifiedName("gpu.nvidia.com/parentUUID", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateFullyQualifiedName("parentUUID", p)),
              ElementsAre("spec.devices.constraints[0].matchAttribute: Invalid value: "
                          "\"parentUUID\": a fully qualified name must be a domain and a name "
                          "separated by a slash"));
}

TEST(NamesTest, UID) {
  FieldPath p("shareID");
  EXPECT_THAT(Render(ValidateUID("123e4567-e89b-12d3-a456-426614174000", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateUID("abc", p)),
              ElementsAre("shareID: Invalid value: \"abc\": error validating uid: invalid UUID "
                          "length: 3"));
  EXPECT_THAT(Render(ValidateUID("123E4567-E89B-12D3-A456-426614174000", p)),
              ElementsAre("shareID: Invalid value: \"123E4567-E89B-12D3-A456-426614174000\": uid "
                          "must be in RFC 4122 normalized form, "
                          "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal "
                          "characters"));
  EXPECT_EQ(ValidateUID("123e4567e89b12d3a456426614174000", p).size(), 1u);
  EXPECT_THAT(Render(ValidateUID("123e4567-e89b-12d3-a456-42661417400g", p)),
              ElementsAre("shareID: Invalid value: \"123e4567-e89b-12d3-a456-42661417400g\": error "
                          "validating uid: invalid UUID format"));
}

TEST(NamesTest, InterfaceAddress) {
  FieldPath p("ips[0]");
  EXPECT_THAT(Render(ValidateInterfaceAddress("10.9.8.7/24", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateInterfaceAddress("2001:db8::1/64", p)), IsEmpty());
  EXPECT_THAT(Render(ValidateInterfaceAddress("10.9.8.7", p)),
              ElementsAre("ips[0]: Invalid value: \"10.9.8.7\": must be a valid address in CIDR "
                          "form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)"));
  EXPECT_THAT(Render(ValidateInterfaceAddress("010.9.8.7/24", p)),
              ElementsAre("ips[0]: Invalid value: \"010.9.8.7/24\": must be in canonical form "
                          "(\"10.9.8.7/24\")"));
  EXPECT_THAT(Render(ValidateInterfaceAddress("2001:DB8:0:0::1/64", p)),
              ElementsAre("ips[0]: Invalid value: \"2001:DB8:0:0::1/64\": must be in canonical "
                          "form (\"2001:db8::1/64\")"));
  EXPECT_EQ(ValidateInterfaceAddress("10.9.8.7/33", p).size(), 1u);
  EXPECT_EQ(ValidateInterfaceAddress("300.1.1.1/8", p).size(), 1u);
}

TEST(NamesTest, TruncatesLongKeysInTheMiddle) {
  EXPECT_EQ(TruncateIfTooLong("short", 96), "short");
  EXPECT_EQ(TruncateIfTooLong(std::string(10, 'a') + std::string(10, 'b'), 16), "aaaaaaa...bbbbbb");
}

}  // namespace
}  // namespace draplane::api::validation
