#include "server/auth/kubeconfig.h"

#include "common/status_macros.h"
#include "server/auth/authenticator.h"
#include "server/auth/pki.h"

namespace draplane::server::auth {
namespace {

// A YAML double-quoted scalar.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace

std::string RenderKubeconfig(const KubeconfigSpec& spec) {
  const std::string context = spec.user + "@" + spec.cluster_name;
  std::string out;
  out += "apiVersion: v1\n";
  out += "kind: Config\n";
  out += "clusters:\n";
  out += "- name: " + Quote(spec.cluster_name) + "\n";
  out += "  cluster:\n";
  out += "    server: " + Quote(spec.server) + "\n";
  if (!spec.ca_pem.empty()) {
    out += "    certificate-authority-data: " + Base64Encode(spec.ca_pem) + "\n";
  }
  out += "users:\n";
  out += "- name: " + Quote(spec.user) + "\n";
  out += "  user:\n";
  if (!spec.token.empty()) out += "    token: " + Quote(spec.token) + "\n";
  if (!spec.client_certificate_pem.empty()) {
    out += "    client-certificate-data: " + Base64Encode(spec.client_certificate_pem) + "\n";
    out += "    client-key-data: " + Base64Encode(spec.client_key_pem) + "\n";
  }
  out += "contexts:\n";
  out += "- name: " + Quote(context) + "\n";
  out += "  context:\n";
  out += "    cluster: " + Quote(spec.cluster_name) + "\n";
  out += "    user: " + Quote(spec.user) + "\n";
  if (!spec.default_namespace.empty()) {
    out += "    namespace: " + Quote(spec.default_namespace) + "\n";
  }
  out += "current-context: " + Quote(context) + "\n";
  out += "preferences: {}\n";
  return out;
}

std::string TokenFilePath(const std::string& data_dir) { return data_dir + "/tokens.csv"; }
std::string AdminKubeconfigPath(const std::string& data_dir) {
  return data_dir + "/admin.kubeconfig";
}
std::string ServerUrlPath(const std::string& data_dir) { return data_dir + "/server-url"; }

StatusOr<std::string> MintKubeconfig(const IdentityRequest& request, const Clock& clock,
                                     Random& random) {
  if (request.user.empty()) return InvalidArgumentError("a user name is required");
  DRAPLANE_RETURN_IF_ERROR(
      ValidateIdentity(UserInfo{.name = request.user, .uid = "", .groups = request.groups}));
  StatusOr<CertificateAndKey> ca = LoadCertificateAuthority(request.data_dir);
  if (!ca.ok()) {
    if (ca.status().code() == StatusCode::kNotFound) {
      return NotFoundError("no CA in " + request.data_dir +
                           "/pki: start `draplane serve --data-dir " + request.data_dir +
                           "` once first");
    }
    return ca.status();
  }
  KubeconfigSpec spec;
  spec.server = request.server;
  if (spec.server.empty()) {
    StatusOr<std::string> url = ReadFile(ServerUrlPath(request.data_dir));
    spec.server = url.ok() ? Trim(*url) : "https://127.0.0.1:6443";
  }
  if (spec.server.rfind("https://", 0) == 0) spec.ca_pem = ca->certificate_pem;
  spec.user = request.user;
  spec.default_namespace = request.default_namespace;
  if (request.client_certificate) {
    CertificateRequest cert_request;
    cert_request.common_name = request.user;
    cert_request.organizations = request.groups;
    cert_request.client_auth = true;
    DRAPLANE_ASSIGN_OR_RETURN(CertificateAndKey cert, IssueCertificate(*ca, cert_request, clock));
    spec.client_certificate_pem = std::move(cert.certificate_pem);
    spec.client_key_pem = std::move(cert.private_key_pem);
  } else {
    TokenEntry entry;
    entry.token = NewToken(random);
    entry.user.name = request.user;
    entry.user.uid = random.NewUuid();
    entry.user.groups = request.groups;
    DRAPLANE_RETURN_IF_ERROR(AppendTokenFile(TokenFilePath(request.data_dir), entry));
    spec.token = std::move(entry.token);
  }
  return RenderKubeconfig(spec);
}

}  // namespace draplane::server::auth
