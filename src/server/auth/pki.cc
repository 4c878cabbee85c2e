#include "server/auth/pki.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "common/log.h"
#include "common/random.h"
#include "common/status_macros.h"

namespace draplane::server::auth {
namespace {

// RAII owners for OpenSSL objects.
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct BioFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
};
struct BnFree {
  void operator()(BIGNUM* p) const { BN_free(p); }
};
struct GeneralNamesFree {
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;
using Cert = std::unique_ptr<X509, X509Free>;
using Bio = std::unique_ptr<BIO, BioFree>;
using Bn = std::unique_ptr<BIGNUM, BnFree>;

Status OpenSslError(std::string_view what) {
  std::string message(what);
  unsigned long code = ERR_get_error();
  if (code != 0) {
    char buf[256];
    ERR_error_string_n(code, buf, sizeof(buf));
    message += ": ";
    message += buf;
  }
  ERR_clear_error();
  return InternalError(std::move(message));
}

std::string BioContents(BIO* bio) {
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

StatusOr<Pkey> NewKey() {
  Pkey key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (!key) return OpenSslError("generating an EC key");
  return key;
}

StatusOr<std::string> KeyPem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    return OpenSslError("encoding a private key");
  }
  return BioContents(bio.get());
}

StatusOr<std::string> CertPem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(bio.get(), cert)) return OpenSslError("encoding a certificate");
  return BioContents(bio.get());
}

StatusOr<Pkey> ParseKey(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Pkey key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    ERR_clear_error();
    return InvalidArgumentError("not a PEM private key");
  }
  return key;
}

StatusOr<Cert> ParseCert(const std::string& pem) {
  Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!cert) {
    ERR_clear_error();
    return InvalidArgumentError("not a PEM certificate");
  }
  return cert;
}

Status SetRandomSerial(X509* cert) {
  // 127 random bits: positive and unique with overwhelming probability (RFC 5280 §4.1.2.2).
  unsigned char bytes[16];
  uint64_t hi = SecureRandom().Next64() & 0x7fffffffffffffffULL;
  uint64_t lo = SecureRandom().Next64();
  for (int i = 0; i < 8; ++i) {
    bytes[i] = static_cast<unsigned char>(hi >> (56 - 8 * i));
    bytes[8 + i] = static_cast<unsigned char>(lo >> (56 - 8 * i));
  }
  Bn bn(BN_bin2bn(bytes, sizeof(bytes), nullptr));
  if (!bn || !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert))) {
    return OpenSslError("setting a serial number");
  }
  return Status::Ok();
}

Status SetValidity(X509* cert, const Clock& clock, Duration validity) {
  int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(clock.Now().time_since_epoch()).count();
  int64_t not_before = now - 3600;
  int64_t not_after = now + std::chrono::duration_cast<std::chrono::seconds>(validity).count();
  if (!ASN1_TIME_set(X509_getm_notBefore(cert), static_cast<time_t>(not_before)) ||
      !ASN1_TIME_set(X509_getm_notAfter(cert), static_cast<time_t>(not_after))) {
    return OpenSslError("setting the validity period");
  }
  return Status::Ok();
}

Status SetSubject(X509* cert, const std::string& common_name,
                  const std::vector<std::string>& organizations) {
  X509_NAME* name = X509_get_subject_name(cert);
  for (const std::string& org : organizations) {
    if (!X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
                                    reinterpret_cast<const unsigned char*>(org.c_str()), -1, -1,
                                    0)) {
      return OpenSslError("setting the subject organization");
    }
  }
  if (!X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                  -1, 0)) {
    return OpenSslError("setting the subject common name");
  }
  return Status::Ok();
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslError("building extension " + value);
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (!ok) return OpenSslError("adding extension " + value);
  return Status::Ok();
}

Status AddSubjectAltNames(X509* cert, const CertificateRequest& request) {
  if (request.dns_names.empty() && request.ip_addresses.empty()) return Status::Ok();
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> names(sk_GENERAL_NAME_new_null());
  for (const std::string& dns : request.dns_names) {
    GENERAL_NAME* gn = GENERAL_NAME_new();
    ASN1_IA5STRING* ia5 = ASN1_IA5STRING_new();
    ASN1_STRING_set(ia5, dns.data(), static_cast<int>(dns.size()));
    GENERAL_NAME_set0_value(gn, GEN_DNS, ia5);
    sk_GENERAL_NAME_push(names.get(), gn);
  }
  for (const std::string& ip : request.ip_addresses) {
    unsigned char raw[16];
    int length = 0;
    if (inet_pton(AF_INET, ip.c_str(), raw) == 1) {
      length = 4;
    } else if (inet_pton(AF_INET6, ip.c_str(), raw) == 1) {
      length = 16;
    } else {
      return InvalidArgumentError("not an IP address: " + ip);
    }
    GENERAL_NAME* gn = GENERAL_NAME_new();
    ASN1_OCTET_STRING* octets = ASN1_OCTET_STRING_new();
    ASN1_OCTET_STRING_set(octets, raw, length);
    GENERAL_NAME_set0_value(gn, GEN_IPADD, octets);
    sk_GENERAL_NAME_push(names.get(), gn);
  }
  if (!X509_add1_ext_i2d(cert, NID_subject_alt_name, names.get(), 0, 0)) {
    return OpenSslError("adding subjectAltName");
  }
  return Status::Ok();
}

bool IsIpLiteral(const std::string& host) {
  unsigned char raw[16];
  return inet_pton(AF_INET, host.c_str(), raw) == 1 || inet_pton(AF_INET6, host.c_str(), raw) == 1;
}

// Canonical text of an IP literal (so "::1" and "0:0::1" compare equal).
std::string CanonicalIp(const std::string& host) {
  unsigned char raw[16];
  char text[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET, host.c_str(), raw) == 1) {
    return inet_ntop(AF_INET, raw, text, sizeof(text)) ? text : host;
  }
  if (inet_pton(AF_INET6, host.c_str(), raw) == 1) {
    return inet_ntop(AF_INET6, raw, text, sizeof(text)) ? text : host;
  }
  return host;
}

}  // namespace

StatusOr<CertificateAndKey> CreateCertificateAuthority(const std::string& common_name,
                                                       const Clock& clock) {
  DRAPLANE_ASSIGN_OR_RETURN(Pkey key, NewKey());
  Cert cert(X509_new());
  if (!cert || !X509_set_version(cert.get(), 2)) return OpenSslError("creating a certificate");
  DRAPLANE_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  DRAPLANE_RETURN_IF_ERROR(SetValidity(cert.get(), clock, std::chrono::hours(24 * 365 * 10)));
  DRAPLANE_RETURN_IF_ERROR(SetSubject(cert.get(), common_name, {}));
  if (!X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) ||
      !X509_set_pubkey(cert.get(), key.get())) {
    return OpenSslError("setting the CA issuer and key");
  }
  DRAPLANE_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  DRAPLANE_RETURN_IF_ERROR(AddExtension(cert.get(), cert.get(), NID_key_usage,
                                        "critical,digitalSignature,keyCertSign,cRLSign"));
  DRAPLANE_RETURN_IF_ERROR(
      AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  if (!X509_sign(cert.get(), key.get(), EVP_sha256())) return OpenSslError("signing the CA");
  CertificateAndKey out;
  DRAPLANE_ASSIGN_OR_RETURN(out.certificate_pem, CertPem(cert.get()));
  DRAPLANE_ASSIGN_OR_RETURN(out.private_key_pem, KeyPem(key.get()));
  return out;
}

StatusOr<CertificateAndKey> IssueCertificate(const CertificateAndKey& ca,
                                             const CertificateRequest& request,
                                             const Clock& clock) {
  DRAPLANE_ASSIGN_OR_RETURN(Cert ca_cert, ParseCert(ca.certificate_pem));
  DRAPLANE_ASSIGN_OR_RETURN(Pkey ca_key, ParseKey(ca.private_key_pem));
  DRAPLANE_ASSIGN_OR_RETURN(Pkey key, NewKey());
  Cert cert(X509_new());
  if (!cert || !X509_set_version(cert.get(), 2)) return OpenSslError("creating a certificate");
  DRAPLANE_RETURN_IF_ERROR(SetRandomSerial(cert.get()));
  DRAPLANE_RETURN_IF_ERROR(SetValidity(cert.get(), clock, request.validity));
  DRAPLANE_RETURN_IF_ERROR(SetSubject(cert.get(), request.common_name, request.organizations));
  if (!X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) ||
      !X509_set_pubkey(cert.get(), key.get())) {
    return OpenSslError("setting the issuer and key");
  }
  DRAPLANE_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE"));
  DRAPLANE_RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_key_usage,
                                        "critical,digitalSignature,keyEncipherment"));
  std::string usages;
  if (request.server_auth) usages += "serverAuth";
  if (request.client_auth) usages += usages.empty() ? "clientAuth" : ",clientAuth";
  if (!usages.empty()) {
    DRAPLANE_RETURN_IF_ERROR(AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, usages));
  }
  DRAPLANE_RETURN_IF_ERROR(
      AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid:always"));
  DRAPLANE_RETURN_IF_ERROR(AddSubjectAltNames(cert.get(), request));
  if (!X509_sign(cert.get(), ca_key.get(), EVP_sha256())) {
    return OpenSslError("signing the certificate");
  }
  CertificateAndKey out;
  DRAPLANE_ASSIGN_OR_RETURN(out.certificate_pem, CertPem(cert.get()));
  DRAPLANE_ASSIGN_OR_RETURN(out.private_key_pem, KeyPem(key.get()));
  return out;
}

StatusOr<std::vector<std::string>> SubjectAltNames(const std::string& certificate_pem) {
  DRAPLANE_ASSIGN_OR_RETURN(Cert cert, ParseCert(certificate_pem));
  std::vector<std::string> out;
  std::unique_ptr<GENERAL_NAMES, GeneralNamesFree> names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert.get(), NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return out;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
    if (gn->type == GEN_DNS) {
      const ASN1_IA5STRING* s = gn->d.dNSName;
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                       static_cast<size_t>(ASN1_STRING_length(s)));
    } else if (gn->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* s = gn->d.iPAddress;
      char text[INET6_ADDRSTRLEN];
      int length = ASN1_STRING_length(s);
      int family = length == 4 ? AF_INET : length == 16 ? AF_INET6 : -1;
      if (family != -1 && inet_ntop(family, ASN1_STRING_get0_data(s), text, sizeof(text))) {
        out.emplace_back(text);
      }
    }
  }
  return out;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFoundError(path + " does not exist");
    return UnavailableError("cannot open " + path + ": " + std::strerror(errno));
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return UnavailableError("cannot read " + path + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomically(const std::string& path, std::string_view contents, int mode) {
  std::string temp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return UnavailableError("cannot create " + temp + ": " + std::strerror(errno));
  size_t written = 0;
  while (written < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      ::unlink(temp.c_str());
      return UnavailableError("cannot write " + temp + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    return UnavailableError("cannot flush " + temp + ": " + std::strerror(errno));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    return UnavailableError("cannot rename " + temp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

std::string Base64Encode(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()),
                          static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

namespace {

Status EnsureDirectory(const std::string& path, int mode) {
  if (::mkdir(path.c_str(), mode) == 0 || errno == EEXIST) return Status::Ok();
  return UnavailableError("cannot create directory " + path + ": " + std::strerror(errno));
}

StatusOr<CertificateAndKey> LoadPair(const std::string& cert_path, const std::string& key_path) {
  CertificateAndKey out;
  DRAPLANE_ASSIGN_OR_RETURN(out.certificate_pem, ReadFile(cert_path));
  DRAPLANE_ASSIGN_OR_RETURN(out.private_key_pem, ReadFile(key_path));
  return out;
}

Status SavePair(const CertificateAndKey& pair, const std::string& cert_path,
                const std::string& key_path) {
  DRAPLANE_RETURN_IF_ERROR(WriteFileAtomically(key_path, pair.private_key_pem, 0600));
  return WriteFileAtomically(cert_path, pair.certificate_pem, 0644);
}

}  // namespace

StatusOr<CertificateAndKey> LoadCertificateAuthority(const std::string& data_dir) {
  const std::string pki = data_dir + "/pki";
  const std::string cert_path = pki + "/ca.crt", key_path = pki + "/ca.key";
  StatusOr<std::string> cert = ReadFile(cert_path);
  StatusOr<std::string> key = ReadFile(key_path);
  const bool cert_missing = cert.status().code() == StatusCode::kNotFound;
  const bool key_missing = key.status().code() == StatusCode::kNotFound;
  if (cert_missing && key_missing) return NotFoundError("no cluster CA in " + pki);
  // Half a CA is a damaged data directory, never a reason to make a new one: that would destroy
  // the remaining half and every credential it signed.
  if (cert_missing != key_missing) {
    return FailedPreconditionError(
        (cert_missing ? cert_path : key_path) + " is missing but " +
        (cert_missing ? key_path : cert_path) +
        " exists: restore the cluster CA from a backup (removing both creates a new CA, and "
        "every certificate and kubeconfig the old one signed stops working)");
  }
  DRAPLANE_RETURN_IF_ERROR(cert.status());
  DRAPLANE_RETURN_IF_ERROR(key.status());
  if (Status parsed = ParseCert(*cert).status(); !parsed.ok()) {
    return FailedPreconditionError(cert_path + ": " + std::string(parsed.message()));
  }
  if (Status parsed = ParseKey(*key).status(); !parsed.ok()) {
    return FailedPreconditionError(key_path + ": " + std::string(parsed.message()));
  }
  return CertificateAndKey{.certificate_pem = std::move(*cert), .private_key_pem = std::move(*key)};
}

StatusOr<ServingPki> EnsureServingPki(const std::string& data_dir,
                                      const std::vector<std::string>& hosts, const Clock& clock) {
  DRAPLANE_RETURN_IF_ERROR(EnsureDirectory(data_dir, 0755));
  std::string pki = data_dir + "/pki";
  DRAPLANE_RETURN_IF_ERROR(EnsureDirectory(pki, 0700));
  // Serialises servers sharing a data directory, so only one creates the CA.
  int lock_fd = ::open((pki + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0)
    return UnavailableError("cannot open " + pki + "/.lock: " + std::strerror(errno));
  struct LockGuard {
    int fd;
    ~LockGuard() { ::close(fd); }  // closing releases the flock
  } guard{lock_fd};
  while (::flock(lock_fd, LOCK_EX) != 0) {
    if (errno != EINTR) return UnavailableError("cannot lock " + pki + "/.lock");
  }
  ServingPki out;
  StatusOr<CertificateAndKey> ca = LoadCertificateAuthority(data_dir);
  if (ca.ok()) {
    out.ca = std::move(ca).value();
  } else if (ca.status().code() == StatusCode::kNotFound) {
    DRAPLANE_ASSIGN_OR_RETURN(out.ca, CreateCertificateAuthority("draplane-ca", clock));
    DRAPLANE_RETURN_IF_ERROR(SavePair(out.ca, pki + "/ca.crt", pki + "/ca.key"));
    log::Info("created a new cluster CA in {} (no ca.crt and ca.key were there)", pki);
  } else {
    return ca.status();
  }

  std::vector<std::string> wanted = {"localhost", "127.0.0.1", "::1"};
  for (const std::string& host : hosts) {
    if (host.empty() || host == "0.0.0.0" || host == "::") continue;
    std::string canonical = CanonicalIp(host);
    if (std::find(wanted.begin(), wanted.end(), canonical) == wanted.end()) {
      wanted.push_back(canonical);
    }
  }
  StatusOr<CertificateAndKey> serving = LoadPair(pki + "/apiserver.crt", pki + "/apiserver.key");
  if (serving.ok()) {
    StatusOr<std::vector<std::string>> names = SubjectAltNames(serving->certificate_pem);
    bool covers = names.ok();
    for (const std::string& host : wanted) {
      if (!covers) break;
      covers = std::find(names->begin(), names->end(), host) != names->end();
    }
    if (covers) {
      out.serving = std::move(serving).value();
      return out;
    }
  } else if (serving.status().code() != StatusCode::kNotFound) {
    return serving.status();
  }
  CertificateRequest request;
  request.common_name = "draplane-apiserver";
  request.server_auth = true;
  for (const std::string& host : wanted) {
    (IsIpLiteral(host) ? request.ip_addresses : request.dns_names).push_back(host);
  }
  DRAPLANE_ASSIGN_OR_RETURN(out.serving, IssueCertificate(out.ca, request, clock));
  DRAPLANE_RETURN_IF_ERROR(SavePair(out.serving, pki + "/apiserver.crt", pki + "/apiserver.key"));
  return out;
}

}  // namespace draplane::server::auth
