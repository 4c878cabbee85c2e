// Authentication: who is making a request.
//
// Three sources, tried in this order (kube-apiserver's union authenticator does the same):
//  1. `Authorization: Bearer <token>` looked up in the static token file (CSV, upstream's
//     `--token-auth-file` format: `token,user,uid,"group1,group2"`) or in tokens registered in
//     memory for components embedded in the server process. An unknown token is a failure
//     (401), even if a client certificate is also present, as upstream.
//  2. A client certificate that verified against the cluster CA: user = subject CN, groups =
//     subject O entries.
//  3. Otherwise the anonymous user `system:anonymous` in group `system:unauthenticated` (when
//     anonymous access is enabled), which RBAC then allows only the public endpoints.
// Every authenticated user also gets the group `system:authenticated`.
//
// The token file is re-read when its modification time or size changes, checked on every bearer
// token request, so `draplane kubeconfig` can add identities to a running server and removing a
// line revokes its token at once.
//
// Thread-safety: all methods are safe for concurrent use.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/random.h"
#include "common/status.h"
#include "server/http/http.h"

namespace draplane::server::auth {

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;

  bool InGroup(std::string_view group) const;
};

inline constexpr std::string_view kAnonymousUser = "system:anonymous";
inline constexpr std::string_view kUnauthenticatedGroup = "system:unauthenticated";
inline constexpr std::string_view kAuthenticatedGroup = "system:authenticated";
inline constexpr std::string_view kMastersGroup = "system:masters";

struct TokenEntry {
  std::string token;
  UserInfo user;
};

struct ParsedTokenFile {
  std::vector<TokenEntry> entries;
  // One message per malformed line ("token file line 3: ..."); such a line is skipped and the
  // others still count, so one bad line cannot lock every identity out after a restart.
  std::vector<std::string> errors;
};
// Parses a token file.
ParsedTokenFile ParseTokenFile(std::string_view contents);
// Renders one line of a token file (with a trailing newline).
std::string FormatTokenLine(const TokenEntry& entry);
// InvalidArgument when the user name is empty or the user or a group name holds a control
// character (a line break would split its token file line; a certificate subject or an audit
// line could not show it either).
Status ValidateIdentity(const UserInfo& user);
// Appends `entry` to the token file at `path` (created with mode 0600), under an exclusive
// file lock so concurrent writers do not interleave. InvalidArgument when ValidateIdentity
// refuses the entry's user.
Status AppendTokenFile(const std::string& path, const TokenEntry& entry);
// A new random token: 32 bytes from `random`, URL-safe base64 without padding.
std::string NewToken(Random& random);

struct AuthenticatorOptions {
  std::string token_file;  // empty: no token file
  bool anonymous = true;
};

class Authenticator {
 public:
  explicit Authenticator(AuthenticatorOptions options);

  // The user making a request with these credentials, or std::nullopt for a failure that must
  // be answered with 401 (unknown token; or no credentials when anonymous access is off).
  // `certificate_rejected`: the client presented a certificate that did not verify, which fails
  // (401) unless a bearer token authenticates the request, as upstream's x509 authenticator
  // error does before anonymous access is considered.
  std::optional<UserInfo> Authenticate(std::string_view authorization_header,
                                       const std::optional<http::ClientCertificate>& certificate,
                                       bool certificate_rejected = false);

  // Registers a token that is valid until the process exits (for embedded components).
  void AddMemoryToken(std::string token, UserInfo user);

  // Loads the token file now. Returns the parse or read error (a missing file is not one).
  Status Reload();

 private:
  std::optional<UserInfo> Lookup(std::string_view token) const;
  bool TokenFileChanged() const;

  AuthenticatorOptions options_;
  mutable SharedMutex mu_;
  std::map<std::string, UserInfo, std::less<>> file_tokens_ DRAPLANE_GUARDED_BY(mu_);
  std::map<std::string, UserInfo, std::less<>> memory_tokens_ DRAPLANE_GUARDED_BY(mu_);
  int64_t file_mtime_ns_ DRAPLANE_GUARDED_BY(mu_) = -1;
  int64_t file_size_ DRAPLANE_GUARDED_BY(mu_) = -1;
};

}  // namespace draplane::server::auth
