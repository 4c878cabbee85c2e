// Kubeconfig files: where an API server is and how to authenticate to it.
//
// A kubeconfig (apiVersion v1, kind Config) names clusters (server URL, CA), users (bearer token,
// client certificate and key) and contexts joining them; `current-context` picks one. This file
// reads one into a `RestConfig`, the connection settings every client in draplane uses, following
// client-go's `clientcmd` rules for the fields it supports:
//   - `certificate-authority-data`, `client-certificate-data`, `client-key-data` are base64 PEM
//     and win over their file counterparts (`certificate-authority`, `client-certificate`,
//     `client-key`), which are read at load time; relative paths are relative to the directory
//     of the kubeconfig file;
//   - `token` wins over `tokenFile`;
//   - `insecure-skip-tls-verify: true` turns off server certificate verification;
//   - `tls-server-name` overrides the name the server certificate is checked against;
//   - the context's `namespace` becomes `RestConfig::default_namespace` ("default" when unset).
// Exec and auth-provider plugins, basic auth and proxies are not supported; a user that only has
// them is rejected with a clear message.
//
// Thread-safety: plain values and stateless functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace draplane::client {

struct RestConfig {
  // "https://127.0.0.1:6443" (a path prefix is allowed: "https://host/k8s").
  std::string server{};
  // PEM of the CAs the server certificate must chain to; empty: the system trust store.
  std::string ca_pem{};
  bool insecure_skip_tls_verify = false;
  // The name checked against the server certificate; empty: the host of `server`.
  std::string tls_server_name{};
  // Bearer token, or a client certificate + key (PEM). Both may be empty (anonymous).
  std::string bearer_token{};
  std::string client_certificate_pem{};
  std::string client_key_pem{};
  // Namespace of the selected context ("default" when it names none).
  std::string default_namespace = "default";
  // Sent as User-Agent.
  std::string user_agent = "draplane";
};

// Parses kubeconfig text. `base_dir` resolves relative file references; `context` selects a
// context by name (empty: `current-context`). InvalidArgument for malformed YAML, a missing or
// unknown context / cluster / user, a cluster without `server`, invalid base64, or a user relying
// on unsupported mechanisms; NotFound when a referenced file does not exist.
StatusOr<RestConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir,
                                     std::string_view context = "");

// Reads and parses the kubeconfig at `path` (see ParseKubeconfig). NotFound when the file does
// not exist.
StatusOr<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context = "");

// The kubeconfig path a command uses when `--kubeconfig` is not given: `$KUBECONFIG` (its first
// entry), else `$HOME/.kube/config`; empty when neither is set.
std::string DefaultKubeconfigPath();

}  // namespace draplane::client
