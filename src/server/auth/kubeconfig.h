// Kubeconfig files for identities of a draplane API server, and minting those identities.
//
// `draplane serve` writes `<data-dir>/admin.kubeconfig` (a client certificate for user `admin`
// in group `system:masters`); `draplane kubeconfig` mints a token or a client certificate for any
// user and prints a kubeconfig for it. Tokens are appended to `<data-dir>/tokens.csv`, which a
// running server re-reads (auth/authenticator.h).
//
// Thread-safety: plain functions over files; see AppendTokenFile for concurrent minting.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/random.h"
#include "common/status.h"

namespace draplane::server::auth {

struct KubeconfigSpec {
  std::string cluster_name = "draplane";
  std::string server;  // "https://127.0.0.1:6443"
  std::string ca_pem;  // empty for plain HTTP
  std::string user;
  std::string token;                   // either a token ...
  std::string client_certificate_pem;  // ... or a client certificate and key
  std::string client_key_pem;
  std::string default_namespace;  // optional
};

// The kubeconfig YAML (apiVersion v1, kind Config) with one cluster, user and context
// (`<user>@<cluster>`, current).
std::string RenderKubeconfig(const KubeconfigSpec& spec);

// Files of a data directory.
std::string TokenFilePath(const std::string& data_dir);        // <dir>/tokens.csv
std::string AdminKubeconfigPath(const std::string& data_dir);  // <dir>/admin.kubeconfig
std::string ServerUrlPath(const std::string& data_dir);        // <dir>/server-url

struct IdentityRequest {
  std::string data_dir;
  std::string user;
  std::vector<std::string> groups;
  std::string server;               // empty: read `<dir>/server-url`, else https://127.0.0.1:6443
  bool client_certificate = false;  // false: a bearer token
  std::string default_namespace;
};

// Mints the identity (a token appended to the token file, or a client certificate signed by the
// data directory's CA) and returns its kubeconfig. NotFound when the data directory has no CA
// (the server never ran there); InvalidArgument for an empty user.
StatusOr<std::string> MintKubeconfig(const IdentityRequest& request, const Clock& clock,
                                     Random& random);

}  // namespace draplane::server::auth
