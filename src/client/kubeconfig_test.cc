#include "client/kubeconfig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace draplane::client {
namespace {

// "-----BEGIN CERTIFICATE-----\nCA\n" in base64.
constexpr char kCaData[] = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCg==";

TEST(KubeconfigTest, ReadsServerCaAndTokenOfTheCurrentContext) {
  std::string text = std::string(R"(apiVersion: v1
kind: Config
current-context: admin@draplane
clusters:
- name: draplane
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: )") +
                     kCaData + R"(
users:
- name: admin
  user:
    token: abc
contexts:
- name: admin@draplane
  context: {cluster: draplane, user: admin, namespace: team-a}
- name: other
  context: {cluster: draplane, user: admin}
)";
  StatusOr<RestConfig> config = ParseKubeconfig(text, "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");
  EXPECT_EQ(config->ca_pem, "-----BEGIN CERTIFICATE-----\nCA\n");
  EXPECT_EQ(config->bearer_token, "abc");
  EXPECT_EQ(config->default_namespace, "team-a");
  StatusOr<RestConfig> other = ParseKubeconfig(text, "", "other");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->default_namespace, "default");
  EXPECT_EQ(ParseKubeconfig(text, "", "nope").status().code(), StatusCode::kInvalidArgument);
}

TEST(KubeconfigTest, ResolvesFilesRelativeToTheKubeconfig) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kubeconfig-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "ca.crt") << "CA PEM";
  std::ofstream(dir / "client.crt") << "CERT PEM";
  std::ofstream(dir / "client.key") << "KEY PEM";
  std::ofstream(dir / "token") << "tok\n";
  std::ofstream(dir / "config") << R"(apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster: {server: "https://example:1", certificate-authority: ca.crt, tls-server-name: api}
users:
- name: cert
  user: {client-certificate: client.crt, client-key: client.key}
- name: tok
  user: {tokenFile: token}
contexts:
- name: c
  context: {cluster: k, user: cert}
- name: t
  context: {cluster: k, user: tok}
)";
  StatusOr<RestConfig> config = LoadKubeconfig((dir / "config").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->ca_pem, "CA PEM");
  EXPECT_EQ(config->client_certificate_pem, "CERT PEM");
  EXPECT_EQ(config->client_key_pem, "KEY PEM");
  EXPECT_EQ(config->tls_server_name, "api");
  StatusOr<RestConfig> token = LoadKubeconfig((dir / "config").string(), "t");
  ASSERT_TRUE(token.ok());
  EXPECT_EQ(token->bearer_token, "tok");
  EXPECT_EQ(LoadKubeconfig((dir / "missing").string()).status().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(KubeconfigTest, RejectsIncompleteOrUnsupportedUsers) {
  EXPECT_EQ(ParseKubeconfig("current-context: x\n", "").status().code(),
            StatusCode::kInvalidArgument);
  const char* no_server = R"(current-context: c
clusters: [{name: k, cluster: {}}]
contexts: [{name: c, context: {cluster: k}}]
)";
  EXPECT_EQ(ParseKubeconfig(no_server, "").status().code(), StatusCode::kInvalidArgument);
  const char* exec = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h"}}]
users: [{name: u, user: {exec: {command: x}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  Status s = ParseKubeconfig(exec, "").status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("does not support"), std::string_view::npos);
  const char* half = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h"}}]
users: [{name: u, user: {client-certificate-data: QQ==}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)";
  EXPECT_EQ(ParseKubeconfig(half, "").status().code(), StatusCode::kInvalidArgument);
  const char* bad64 = R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h", certificate-authority-data: "@@"}}]
contexts: [{name: c, context: {cluster: k}}]
)";
  EXPECT_EQ(ParseKubeconfig(bad64, "").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace draplane::client
