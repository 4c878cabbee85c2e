#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/random.h"
#include "server/auth/authenticator.h"
#include "server/auth/kubeconfig.h"
#include "server/auth/pki.h"

namespace draplane::server::auth {
namespace {

std::string TempDir() {
  std::string tmpl = std::filesystem::temp_directory_path().string() + "/draplane-auth-XXXXXX";
  char* dir = mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

TEST(PkiTest, IssuesServingCertificateCoveringLoopbackAndRequestedHosts) {
  ManualClock clock;
  std::string dir = TempDir();
  StatusOr<ServingPki> pki = EnsureServingPki(dir, {"10.1.2.3", "api.example"}, clock);
  ASSERT_TRUE(pki.ok()) << pki.status().ToString();
  StatusOr<std::vector<std::string>> names = SubjectAltNames(pki->serving.certificate_pem);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names,
            (std::vector<std::string>{"localhost", "api.example", "127.0.0.1", "::1", "10.1.2.3"}));
  std::filesystem::remove_all(dir);
}

TEST(PkiTest, KeepsTheCaAndReissuesServingCertificateOnlyForNewHosts) {
  ManualClock clock;
  std::string dir = TempDir();
  StatusOr<ServingPki> first = EnsureServingPki(dir, {}, clock);
  ASSERT_TRUE(first.ok());
  StatusOr<ServingPki> again = EnsureServingPki(dir, {"127.0.0.1"}, clock);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->ca.certificate_pem, first->ca.certificate_pem);
  EXPECT_EQ(again->serving.certificate_pem, first->serving.certificate_pem);
  StatusOr<ServingPki> wider = EnsureServingPki(dir, {"192.168.0.9"}, clock);
  ASSERT_TRUE(wider.ok());
  EXPECT_EQ(wider->ca.certificate_pem, first->ca.certificate_pem);
  EXPECT_NE(wider->serving.certificate_pem, first->serving.certificate_pem);
  EXPECT_EQ(std::filesystem::status(dir + "/pki/ca.key").permissions() &
                std::filesystem::perms::others_read,
            std::filesystem::perms::none);
  std::filesystem::remove_all(dir);
}

// Half a CA, or a damaged one, is refused naming the file: a new CA would overwrite the key left
// and orphan every credential it signed.
TEST(PkiTest, RefusesToReplaceADamagedOrHalfMissingCa) {
  ManualClock clock;
  std::string dir = TempDir();
  StatusOr<ServingPki> first = EnsureServingPki(dir, {}, clock);
  ASSERT_TRUE(first.ok());
  std::filesystem::remove(dir + "/pki/ca.crt");
  StatusOr<ServingPki> half = EnsureServingPki(dir, {}, clock);
  ASSERT_FALSE(half.ok());
  EXPECT_EQ(half.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(half.status().message().rfind(
                dir + "/pki/ca.crt is missing but " + dir + "/pki/ca.key exists: restore", 0),
            0u)
      << half.status().message();
  StatusOr<std::string> key = ReadFile(dir + "/pki/ca.key");
  ASSERT_TRUE(key.ok());
  EXPECT_EQ(*key, first->ca.private_key_pem) << "the key left was overwritten";
  ASSERT_TRUE(WriteFileAtomically(dir + "/pki/ca.crt", first->ca.certificate_pem, 0644).ok());
  ASSERT_TRUE(WriteFileAtomically(dir + "/pki/ca.key", "garbage", 0600).ok());
  StatusOr<ServingPki> garbled = EnsureServingPki(dir, {}, clock);
  ASSERT_FALSE(garbled.ok());
  EXPECT_EQ(garbled.status().message(), dir + "/pki/ca.key: not a PEM private key");
  std::filesystem::remove_all(dir);
}

TEST(PkiTest, RejectsMalformedIpAddress) {
  ManualClock clock;
  StatusOr<CertificateAndKey> ca = CreateCertificateAuthority("test", clock);
  ASSERT_TRUE(ca.ok());
  CertificateRequest request;
  request.common_name = "x";
  request.ip_addresses = {"300.1.1.1"};
  EXPECT_EQ(IssueCertificate(*ca, request, clock).status().code(), StatusCode::kInvalidArgument);
}

TEST(TokenFileTest, ParsesUpstreamFormatWithQuotedGroups) {
  ParsedTokenFile parsed = ParseTokenFile(
      "# comment\n"
      "abc,alice,uid-1,\"tenants,dev\"\n"
      "\n"
      "def,system:node:n1,uid-2\n");
  EXPECT_TRUE(parsed.errors.empty());
  const std::vector<TokenEntry>* entries = &parsed.entries;
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].token, "abc");
  EXPECT_EQ((*entries)[0].user.name, "alice");
  EXPECT_EQ((*entries)[0].user.groups, (std::vector<std::string>{"tenants", "dev"}));
  EXPECT_EQ((*entries)[1].user.name, "system:node:n1");
  EXPECT_TRUE((*entries)[1].user.groups.empty());
}

// Issue 17: a bad line is reported and skipped; the other identities keep working.
TEST(TokenFileTest, SkipsBadLinesAndKeepsTheOthers) {
  ParsedTokenFile parsed = ParseTokenFile(
      "abc\n"
      "good,alice,1\n"
      "abc,\"unterminated,u\n"
      "ctl,\"x\ty\",2\n"
      "also,bob,3\n");
  ASSERT_EQ(parsed.entries.size(), 2u);
  EXPECT_EQ(parsed.entries[0].user.name, "alice");
  EXPECT_EQ(parsed.entries[1].user.name, "bob");
  ASSERT_EQ(parsed.errors.size(), 3u);
  EXPECT_EQ(parsed.errors[0], "token file line 1: want token,user,uid[,\"group1,group2\"]");
  EXPECT_EQ(parsed.errors[2],
            "token file line 4: user name \"x\\x09y\" must not contain control characters");
}

TEST(TokenFileTest, RefusesControlCharactersInIdentities) {
  std::string dir = TempDir();
  std::string file = dir + "/tokens.csv";
  Status status =
      AppendTokenFile(file, {.token = "t", .user = {.name = "x\ny", .uid = "1", .groups = {}}});
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "user name \"x\\x0ay\" must not contain control characters");
  EXPECT_EQ(
      AppendTokenFile(file, {.token = "t", .user = {.name = "ok", .uid = "2", .groups = {"a\rb"}}})
          .code(),
      StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(file));
  std::filesystem::remove_all(dir);
}

TEST(TokenFileTest, FormatRoundTrips) {
  TokenEntry entry{.token = "t0k", .user = {.name = "bob", .uid = "u", .groups = {"a", "b"}}};
  ParsedTokenFile parsed = ParseTokenFile(FormatTokenLine(entry));
  ASSERT_TRUE(parsed.errors.empty());
  ASSERT_EQ(parsed.entries.size(), 1u);
  EXPECT_EQ(parsed.entries[0].user.groups, entry.user.groups);
}

TEST(AuthenticatorTest, TokenCertificateAndAnonymous) {
  std::string dir = TempDir();
  std::string file = dir + "/tokens.csv";
  ASSERT_TRUE(AppendTokenFile(file, {.token = "good",
                                     .user = {.name = "alice", .uid = "1", .groups = {"tenants"}}})
                  .ok());
  Authenticator authenticator({.token_file = file, .anonymous = true});

  std::optional<UserInfo> alice = authenticator.Authenticate("Bearer good", std::nullopt);
  ASSERT_TRUE(alice.has_value());
  EXPECT_EQ(alice->name, "alice");
  EXPECT_EQ(alice->groups, (std::vector<std::string>{"tenants", "system:authenticated"}));

  EXPECT_FALSE(authenticator.Authenticate("Bearer bad", std::nullopt).has_value());
  EXPECT_FALSE(authenticator.Authenticate("Basic YTpi", std::nullopt).has_value());

  http::ClientCertificate cert{.common_name = "system:node:n1", .organizations = {"system:nodes"}};
  std::optional<UserInfo> node = authenticator.Authenticate("", cert);
  ASSERT_TRUE(node.has_value());
  EXPECT_EQ(node->name, "system:node:n1");
  EXPECT_TRUE(node->InGroup("system:nodes"));
  EXPECT_TRUE(node->InGroup("system:authenticated"));

  std::optional<UserInfo> anonymous = authenticator.Authenticate("", std::nullopt);
  ASSERT_TRUE(anonymous.has_value());
  EXPECT_EQ(anonymous->name, "system:anonymous");
  EXPECT_EQ(anonymous->groups, (std::vector<std::string>{"system:unauthenticated"}));

  // A certificate that did not verify is a failure (401), not anonymous access; a bearer token
  // still authenticates the request.
  EXPECT_FALSE(authenticator.Authenticate("", std::nullopt, /*certificate_rejected=*/true));
  std::optional<UserInfo> with_token =
      authenticator.Authenticate("Bearer good", std::nullopt, /*certificate_rejected=*/true);
  ASSERT_TRUE(with_token.has_value());
  EXPECT_EQ(with_token->name, "alice");
  std::filesystem::remove_all(dir);
}

TEST(AuthenticatorTest, PicksUpTokensAppendedLater) {
  std::string dir = TempDir();
  std::string file = dir + "/tokens.csv";
  Authenticator authenticator({.token_file = file, .anonymous = false});
  EXPECT_FALSE(authenticator.Authenticate("Bearer later", std::nullopt).has_value());
  EXPECT_FALSE(authenticator.Authenticate("", std::nullopt).has_value());
  ASSERT_TRUE(
      AppendTokenFile(file, {.token = "later", .user = {.name = "bob", .uid = "2", .groups = {}}})
          .ok());
  std::optional<UserInfo> bob = authenticator.Authenticate("Bearer later", std::nullopt);
  ASSERT_TRUE(bob.has_value());
  EXPECT_EQ(bob->name, "bob");
  std::filesystem::remove_all(dir);
}

// An admin revokes a token by removing its line: the next request with it is refused, even
// though the token was known (before, the file was re-read only for unknown tokens).
TEST(AuthenticatorTest, ARemovedTokenStopsWorkingAtOnce) {
  std::string dir = TempDir();
  std::string file = dir + "/tokens.csv";
  for (const char* token : {"keep", "revoke"}) {
    ASSERT_TRUE(
        AppendTokenFile(file, {.token = token, .user = {.name = token, .uid = token, .groups = {}}})
            .ok());
  }
  Authenticator authenticator({.token_file = file, .anonymous = false});
  ASSERT_TRUE(authenticator.Authenticate("Bearer revoke", std::nullopt).has_value());
  std::filesystem::remove(file);
  ASSERT_TRUE(AppendTokenFile(
                  file, {.token = "keep", .user = {.name = "keep", .uid = "keep", .groups = {}}})
                  .ok());
  EXPECT_FALSE(authenticator.Authenticate("Bearer revoke", std::nullopt).has_value());
  std::optional<UserInfo> kept = authenticator.Authenticate("Bearer keep", std::nullopt);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->name, "keep");
  std::filesystem::remove_all(dir);
}

TEST(AuthenticatorTest, MemoryTokens) {
  Authenticator authenticator({.token_file = "", .anonymous = false});
  authenticator.AddMemoryToken("mem", {.name = "system:kube-scheduler", .uid = "", .groups = {}});
  std::optional<UserInfo> user = authenticator.Authenticate("bearer mem", std::nullopt);
  ASSERT_TRUE(user.has_value());
  EXPECT_EQ(user->name, "system:kube-scheduler");
}

TEST(KubeconfigTest, RendersTokenIdentity) {
  KubeconfigSpec spec;
  spec.server = "https://127.0.0.1:6443";
  spec.ca_pem = "CA";
  spec.user = "system:node:n1";
  spec.token = "tok";
  spec.default_namespace = "team-a";
  EXPECT_EQ(RenderKubeconfig(spec),
            "apiVersion: v1\n"
            "kind: Config\n"
            "clusters:\n"
            "- name: \"draplane\"\n"
            "  cluster:\n"
            "    server: \"https://127.0.0.1:6443\"\n"
            "    certificate-authority-data: Q0E=\n"
            "users:\n"
            "- name: \"system:node:n1\"\n"
            "  user:\n"
            "    token: \"tok\"\n"
            "contexts:\n"
            "- name: \"system:node:n1@draplane\"\n"
            "  context:\n"
            "    cluster: \"draplane\"\n"
            "    user: \"system:node:n1\"\n"
            "    namespace: \"team-a\"\n"
            "current-context: \"system:node:n1@draplane\"\n"
            "preferences: {}\n");
}

TEST(KubeconfigTest, MintNeedsACa) {
  ManualClock clock;
  std::string dir = TempDir();
  IdentityRequest request;
  request.data_dir = dir;
  request.user = "alice";
  EXPECT_EQ(MintKubeconfig(request, clock, SecureRandom()).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE(EnsureServingPki(dir, {}, clock).ok());
  StatusOr<std::string> config = MintKubeconfig(request, clock, SecureRandom());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_NE(config->find("token: "), std::string::npos);
  StatusOr<std::string> tokens = ReadFile(TokenFilePath(dir));
  ASSERT_TRUE(tokens.ok());
  EXPECT_NE(tokens->find("\"alice\""), std::string::npos);
  request.client_certificate = true;
  config = MintKubeconfig(request, clock, SecureRandom());
  ASSERT_TRUE(config.ok());
  EXPECT_NE(config->find("client-certificate-data: "), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace draplane::server::auth
