#include "store/internal/keys.h"

#include <gtest/gtest.h>

namespace draplane::store::internal {
namespace {

TEST(KeysTest, EncodeAndDecodeRoundTrip) {
  for (const Key& key : {Key{"core/pods", "ns", "a"}, Key{"core/nodes", "", "node-1"},
                         Key{"resource.k8s.io/resourceclaims", "team-a", "claim.x"}}) {
    ASSERT_TRUE(ValidateKey(key).ok());
    StatusOr<Key> decoded = DecodeKey(EncodeKey(key));
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, key);
  }
  EXPECT_EQ(EncodeKey(Key{"core/nodes", "", "n"}), "core/nodes//n");
  EXPECT_EQ(DecodeKey("core/pods").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeKey("core/pods/ns/a/b").status().code(), StatusCode::kInvalidArgument);
}

TEST(KeysTest, ResourcesNeedOneSlashAndLowerCase) {
  EXPECT_TRUE(ValidateResource("core/pods").ok());
  EXPECT_TRUE(ValidateResource("resource.k8s.io/device-taint-rules").ok());
  for (std::string_view bad : {"", "pods", "/pods", "core/", "a/b/c", "core/Pods", "core/po ds"}) {
    EXPECT_EQ(ValidateResource(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(KeysTest, ListPrefixesDoNotOverlapBetweenResourcesOrNamespaces) {
  EXPECT_EQ(ListPrefix("core/pods", ""), "core/pods/");
  EXPECT_EQ(ListPrefix("core/pods", "a"), "core/pods/a/");
  const std::string pods = ListPrefix("core/pods", "");
  EXPECT_NE(EncodeKey(Key{"core/podsx", "a", "b"}).rfind(pods, 0), 0u);
  EXPECT_NE(EncodeKey(Key{"core/pods", "ab", "c"}).rfind(ListPrefix("core/pods", "a"), 0), 0u);
}

TEST(KeysTest, PrefixEndIsTheFirstStringAfterThePrefix) {
  EXPECT_EQ(PrefixEnd("core/pods/"), "core/pods0");
  EXPECT_EQ(PrefixEnd(std::string("a\xff", 2)), "b");
  EXPECT_LT(std::string("core/pods/zzzz"), PrefixEnd("core/pods/"));
}

TEST(KeysTest, ContinueTokensRoundTripAndStayInTheirList) {
  const std::string token = EncodeContinueToken(42, "core/pods/ns/b");
  StatusOr<ContinuePosition> position = DecodeContinueToken(token, "core/pods/ns/");
  ASSERT_TRUE(position.ok()) << position.status().ToString();
  EXPECT_EQ(position->revision, 42);
  EXPECT_EQ(position->start_key, "core/pods/ns/b");
  EXPECT_TRUE(DecodeContinueToken(token, "core/pods/").ok());
  EXPECT_EQ(DecodeContinueToken(token, "core/pods/other/").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeContinueToken("not-base64!", "core/pods/").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeContinueToken(Base64Encode("{}"), "core/pods/").status().code(),
            StatusCode::kInvalidArgument);
}

TEST(KeysTest, Base64MatchesRfc4648) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Base64Decode("Zm9vYmE="), "fooba");
  EXPECT_EQ(*Base64Decode("L3AvYQ=="), "/p/a");
  const std::string binary("\x00\xff\x10\x80", 4);
  EXPECT_EQ(*Base64Decode(Base64Encode(binary)), binary);
  EXPECT_EQ(Base64Decode("Zm9v!").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Base64Decode("Z").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace draplane::store::internal
