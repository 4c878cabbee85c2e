#include "server/auth/authenticator.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "server/auth/pki.h"

namespace draplane::server::auth {
namespace {

// Splits one CSV line into fields, honouring double quotes ("" is a literal quote).
std::optional<std::vector<std::string>> SplitCsv(std::string_view line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          field.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else {
      field.push_back(c);
    }
  }
  if (quoted) return std::nullopt;
  fields.push_back(std::move(field));
  return fields;
}

std::string Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string QuoteCsv(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

void AddAuthenticatedGroup(UserInfo& user) {
  if (!user.InGroup(kAuthenticatedGroup)) user.groups.emplace_back(kAuthenticatedGroup);
}

}  // namespace

bool UserInfo::InGroup(std::string_view group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

namespace {

bool HasControlCharacter(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// `text` with control characters escaped, for messages.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

Status ValidateIdentity(const UserInfo& user) {
  if (user.name.empty()) return InvalidArgumentError("the user name is empty");
  if (HasControlCharacter(user.name)) {
    return InvalidArgumentError("user name \"" + Printable(user.name) +
                                "\" must not contain control characters");
  }
  for (const std::string& group : user.groups) {
    if (HasControlCharacter(group)) {
      return InvalidArgumentError("group name \"" + Printable(group) +
                                  "\" must not contain control characters");
    }
  }
  return Status::Ok();
}

ParsedTokenFile ParseTokenFile(std::string_view contents) {
  ParsedTokenFile out;
  int line_number = 0;
  while (!contents.empty()) {
    size_t newline = contents.find('\n');
    std::string_view line = contents.substr(0, newline);
    contents =
        newline == std::string_view::npos ? std::string_view() : contents.substr(newline + 1);
    ++line_number;
    std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    std::string where = "token file line " + std::to_string(line_number) + ": ";
    std::optional<std::vector<std::string>> fields = SplitCsv(trimmed);
    if (!fields || fields->size() < 3) {
      out.errors.push_back(where + "want token,user,uid[,\"group1,group2\"]");
      continue;
    }
    TokenEntry entry;
    entry.token = Trim((*fields)[0]);
    entry.user.name = Trim((*fields)[1]);
    entry.user.uid = Trim((*fields)[2]);
    if (entry.token.empty() || entry.user.name.empty()) {
      out.errors.push_back(where + "empty token or user");
      continue;
    }
    if (fields->size() > 3) {
      std::optional<std::vector<std::string>> groups = SplitCsv((*fields)[3]);
      for (const std::string& group : groups.value_or(std::vector<std::string>{})) {
        std::string g = Trim(group);
        if (!g.empty()) entry.user.groups.push_back(std::move(g));
      }
    }
    if (Status valid = ValidateIdentity(entry.user); !valid.ok()) {
      out.errors.push_back(where + std::string(valid.message()));
      continue;
    }
    out.entries.push_back(std::move(entry));
  }
  return out;
}

std::string FormatTokenLine(const TokenEntry& entry) {
  std::string groups;
  for (const std::string& group : entry.user.groups) {
    if (!groups.empty()) groups.push_back(',');
    groups += group;
  }
  return entry.token + "," + QuoteCsv(entry.user.name) + "," + QuoteCsv(entry.user.uid) + "," +
         QuoteCsv(groups) + "\n";
}

Status AppendTokenFile(const std::string& path, const TokenEntry& entry) {
  DRAPLANE_RETURN_IF_ERROR(ValidateIdentity(entry.user));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot open " + path + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd);
      return UnavailableError("cannot lock " + path + ": " + std::strerror(errno));
    }
  }
  std::string line = FormatTokenLine(entry);
  size_t written = 0;
  while (written < line.size()) {
    ssize_t n = ::write(fd, line.data() + written, line.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return UnavailableError("cannot write " + path + ": " + std::strerror(errno));
    }
    written += static_cast<size_t>(n);
  }
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return UnavailableError("cannot flush " + path + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string NewToken(Random& random) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(43);
  // 43 characters of 6 bits: 258 random bits, more than 32 bytes.
  uint64_t bits = 0;
  int available = 0;
  while (out.size() < 43) {
    if (available < 6) {
      bits = random.Next64();
      available = 64;
    }
    out.push_back(kAlphabet[bits & 63]);
    bits >>= 6;
    available -= 6;
  }
  return out;
}

Authenticator::Authenticator(AuthenticatorOptions options) : options_(std::move(options)) {
  Status status = Reload();
  if (!status.ok()) log::Warning("authenticator: {}", status.ToString());
}

void Authenticator::AddMemoryToken(std::string token, UserInfo user) {
  AddAuthenticatedGroup(user);
  WriterLock lock(mu_);
  memory_tokens_[std::move(token)] = std::move(user);
}

bool Authenticator::TokenFileChanged() const {
  if (options_.token_file.empty()) return false;
  struct stat st;
  if (::stat(options_.token_file.c_str(), &st) != 0) return false;
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  ReaderLock lock(mu_);
  return mtime != file_mtime_ns_ || static_cast<int64_t>(st.st_size) != file_size_;
}

Status Authenticator::Reload() {
  if (options_.token_file.empty()) return Status::Ok();
  struct stat st;
  if (::stat(options_.token_file.c_str(), &st) != 0) return Status::Ok();
  StatusOr<std::string> contents = ReadFile(options_.token_file);
  if (!contents.ok()) {
    if (contents.status().code() == StatusCode::kNotFound) return Status::Ok();
    return contents.status();
  }
  ParsedTokenFile parsed = ParseTokenFile(*contents);
  for (const std::string& error : parsed.errors) {
    log::Warning("authenticator: {}: {} (line skipped)", options_.token_file, error);
  }
  std::map<std::string, UserInfo, std::less<>> tokens;
  for (TokenEntry& entry : parsed.entries) {
    AddAuthenticatedGroup(entry.user);
    tokens[std::move(entry.token)] = std::move(entry.user);
  }
  WriterLock lock(mu_);
  file_tokens_ = std::move(tokens);
  file_mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  file_size_ = static_cast<int64_t>(st.st_size);
  return Status::Ok();
}

std::optional<UserInfo> Authenticator::Lookup(std::string_view token) const {
  ReaderLock lock(mu_);
  if (auto it = memory_tokens_.find(token); it != memory_tokens_.end()) return it->second;
  if (auto it = file_tokens_.find(token); it != file_tokens_.end()) return it->second;
  return std::nullopt;
}

std::optional<UserInfo> Authenticator::Authenticate(
    std::string_view authorization_header,
    const std::optional<http::ClientCertificate>& certificate, bool certificate_rejected) {
  if (!authorization_header.empty()) {
    std::string_view value = authorization_header;
    size_t space = value.find(' ');
    std::string scheme(value.substr(0, space));
    std::transform(scheme.begin(), scheme.end(), scheme.begin(), ::tolower);
    if (scheme == "bearer" && space != std::string_view::npos) {
      std::string token = Trim(value.substr(space + 1));
      if (token.empty()) return std::nullopt;
      // Checked on every request, not only when a token is unknown: a line removed from the
      // file revokes its token at once (one stat, about a microsecond).
      if (TokenFileChanged()) {
        Status status = Reload();
        if (!status.ok()) log::Warning("authenticator: {}", status.ToString());
      }
      return Lookup(token);
    }
    // Other schemes (Basic) are not supported; the client meant to authenticate, so refuse.
    return std::nullopt;
  }
  if (certificate_rejected) return std::nullopt;
  if (certificate && !certificate->common_name.empty()) {
    UserInfo user{
        .name = certificate->common_name, .uid = "", .groups = certificate->organizations};
    AddAuthenticatedGroup(user);
    return user;
  }
  if (!options_.anonymous) return std::nullopt;
  return UserInfo{.name = std::string(kAnonymousUser),
                  .uid = "",
                  .groups = {std::string(kUnauthenticatedGroup)}};
}

}  // namespace draplane::server::auth
