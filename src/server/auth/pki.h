// TLS material for the API server, made with OpenSSL's C API: a self-signed CA, the serving
// certificate it signs, and client certificates for `draplane kubeconfig --client-certificate`.
//
// Keys are ECDSA P-256; certificates are X.509 v3 signed with SHA-256, in PEM. Validity starts at
// the clock's `Now()` minus one hour (tolerates skew between machines, as kubeadm does).
// A client certificate's subject carries the Kubernetes identity: CN = user, O = groups.
//
// The data directory layout (`EnsureServingPki`):
//   <dir>/pki/ca.crt, ca.key              the CA (created once, never replaced)
//   <dir>/pki/apiserver.crt, apiserver.key the serving certificate; reissued when it does not
//                                          cover a host the server is asked to serve
// Private keys are written with mode 0600.
//
// Thread-safety: all functions are safe to call concurrently on distinct paths.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::server::auth {

struct CertificateAndKey {
  std::string certificate_pem;
  std::string private_key_pem;
};

struct CertificateRequest {
  std::string common_name;
  std::vector<std::string> organizations;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;  // literal IPv4 / IPv6 addresses
  bool server_auth = false;
  bool client_auth = false;
  Duration validity = std::chrono::hours(24 * 365);
};

// A new self-signed CA named `common_name`, valid for ten years. Returns Internal when OpenSSL
// fails.
StatusOr<CertificateAndKey> CreateCertificateAuthority(const std::string& common_name,
                                                       const Clock& clock);

// A new key and a certificate for `request` signed by `ca`. Returns InvalidArgument for an
// unusable CA or a malformed IP address, Internal when OpenSSL fails.
StatusOr<CertificateAndKey> IssueCertificate(const CertificateAndKey& ca,
                                             const CertificateRequest& request, const Clock& clock);

// The DNS names and IP addresses in a certificate's subjectAltName (IPs in text form).
StatusOr<std::vector<std::string>> SubjectAltNames(const std::string& certificate_pem);

struct ServingPki {
  CertificateAndKey ca;
  CertificateAndKey serving;
};

// Loads the CA and serving certificate from `<data_dir>/pki`, creating what is missing, and
// reissues the serving certificate if it lacks any of `hosts` (DNS names or IP literals;
// "localhost", "127.0.0.1" and "::1" are always included). Returns the I/O error when the
// directory cannot be written.
StatusOr<ServingPki> EnsureServingPki(const std::string& data_dir,
                                      const std::vector<std::string>& hosts, const Clock& clock);

// Reads the CA of a data directory (for `draplane kubeconfig`). NotFound when absent.
StatusOr<CertificateAndKey> LoadCertificateAuthority(const std::string& data_dir);

// Base64 (standard alphabet, padded), as kubeconfig's *-data fields want.
std::string Base64Encode(std::string_view data);

// Reads a whole file. NotFound when it does not exist.
StatusOr<std::string> ReadFile(const std::string& path);
// Writes a whole file atomically (temporary file + rename) with `mode`.
Status WriteFileAtomically(const std::string& path, std::string_view contents, int mode);

}  // namespace draplane::server::auth
