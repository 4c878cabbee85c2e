#include "client/kubeconfig.h"

#include <boost/json.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "api/codec/yaml.h"
#include "common/status_macros.h"

namespace draplane::client {
namespace {

// Standard base64 (RFC 4648 §4) with optional padding; whitespace is skipped, as Go's
// encoding/base64 StdEncoding with line breaks removed by the YAML reader.
StatusOr<std::string> DecodeBase64(std::string_view text, std::string_view field) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t accumulator = 0;
  int bits = 0;
  bool padding = false;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = value_of(c);
    if (v < 0 || padding) return InvalidArgumentError(std::string(field) + ": illegal base64 data");
    accumulator = (accumulator << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((accumulator >> bits) & 0xff));
    }
  }
  return out;
}

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string Resolve(const std::string& base_dir, const std::string& path) {
  if (path.empty() || path.front() == '/' || base_dir.empty()) return path;
  return base_dir + "/" + path;
}

std::string StringField(const boost::json::object& object, std::string_view key) {
  const boost::json::value* v = object.if_contains(key);
  if (v == nullptr || !v->is_string()) return "";
  return std::string(v->as_string());
}

bool BoolField(const boost::json::object& object, std::string_view key) {
  const boost::json::value* v = object.if_contains(key);
  return v != nullptr && v->is_bool() && v->as_bool();
}

// The `inner` object of the entry called `name` in the list `list_key` (clusters / users /
// contexts), or nullptr.
const boost::json::object* FindNamed(const boost::json::object& config, std::string_view list_key,
                                     std::string_view inner, std::string_view name) {
  const boost::json::value* list = config.if_contains(list_key);
  if (list == nullptr || !list->is_array()) return nullptr;
  for (const boost::json::value& entry : list->as_array()) {
    if (!entry.is_object()) continue;
    const boost::json::object& e = entry.as_object();
    if (StringField(e, "name") != name) continue;
    const boost::json::value* in = e.if_contains(inner);
    static const boost::json::object kEmpty;
    if (in == nullptr || in->is_null()) return &kEmpty;
    if (!in->is_object()) return nullptr;
    return &in->as_object();
  }
  return nullptr;
}

// Reads the PEM given inline (`data_key`, base64) or by file (`file_key`).
StatusOr<std::string> PemField(const boost::json::object& object, std::string_view data_key,
                               std::string_view file_key, const std::string& base_dir) {
  std::string data = StringField(object, data_key);
  if (!data.empty()) return DecodeBase64(data, data_key);
  std::string file = StringField(object, file_key);
  if (!file.empty()) return ReadWholeFile(Resolve(base_dir, file));
  return std::string();
}

}  // namespace

StatusOr<RestConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir,
                                     std::string_view context) {
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(text);
  if (!docs.ok()) return docs.status().WithPrefix("kubeconfig");
  if (docs->size() != 1 || !(*docs)[0].value.is_object()) {
    return InvalidArgumentError("kubeconfig: expected one YAML mapping");
  }
  const boost::json::object& config = (*docs)[0].value.as_object();

  std::string context_name(context);
  if (context_name.empty()) context_name = StringField(config, "current-context");
  if (context_name.empty()) return InvalidArgumentError("kubeconfig: no current-context is set");
  const boost::json::object* ctx = FindNamed(config, "contexts", "context", context_name);
  if (ctx == nullptr) {
    return InvalidArgumentError("kubeconfig: context \"" + context_name + "\" not found");
  }
  std::string cluster_name = StringField(*ctx, "cluster");
  std::string user_name = StringField(*ctx, "user");
  const boost::json::object* cluster = FindNamed(config, "clusters", "cluster", cluster_name);
  if (cluster == nullptr) {
    return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" not found");
  }

  RestConfig out;
  out.server = StringField(*cluster, "server");
  if (out.server.empty()) {
    return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" has no server");
  }
  while (out.server.size() > 1 && out.server.back() == '/') out.server.pop_back();
  DRAPLANE_ASSIGN_OR_RETURN(out.ca_pem, PemField(*cluster, "certificate-authority-data",
                                                 "certificate-authority", base_dir));
  out.insecure_skip_tls_verify = BoolField(*cluster, "insecure-skip-tls-verify");
  out.tls_server_name = StringField(*cluster, "tls-server-name");
  std::string ns = StringField(*ctx, "namespace");
  if (!ns.empty()) out.default_namespace = ns;

  if (!user_name.empty()) {
    const boost::json::object* user = FindNamed(config, "users", "user", user_name);
    if (user == nullptr) {
      return InvalidArgumentError("kubeconfig: user \"" + user_name + "\" not found");
    }
    out.bearer_token = StringField(*user, "token");
    if (out.bearer_token.empty()) {
      std::string token_file = StringField(*user, "tokenFile");
      if (!token_file.empty()) {
        DRAPLANE_ASSIGN_OR_RETURN(out.bearer_token, ReadWholeFile(Resolve(base_dir, token_file)));
        while (!out.bearer_token.empty() &&
               (out.bearer_token.back() == '\n' || out.bearer_token.back() == '\r')) {
          out.bearer_token.pop_back();
        }
      }
    }
    DRAPLANE_ASSIGN_OR_RETURN(out.client_certificate_pem, PemField(*user, "client-certificate-data",
                                                                   "client-certificate", base_dir));
    DRAPLANE_ASSIGN_OR_RETURN(out.client_key_pem,
                              PemField(*user, "client-key-data", "client-key", base_dir));
    if (out.client_certificate_pem.empty() != out.client_key_pem.empty()) {
      return InvalidArgumentError("kubeconfig: user \"" + user_name +
                                  "\" needs both a client certificate and a client key");
    }
    bool unsupported = user->if_contains("exec") != nullptr ||
                       user->if_contains("auth-provider") != nullptr ||
                       user->if_contains("username") != nullptr;
    if (unsupported && out.bearer_token.empty() && out.client_certificate_pem.empty()) {
      return InvalidArgumentError(
          "kubeconfig: user \"" + user_name +
          "\" uses exec, auth-provider or basic auth, which draplane does not support; use a "
          "token or a client certificate");
    }
  }
  return out;
}

StatusOr<RestConfig> LoadKubeconfig(const std::string& path, std::string_view context) {
  DRAPLANE_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  std::string base_dir;
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) base_dir = path.substr(0, slash == 0 ? 1 : slash);
  StatusOr<RestConfig> config = ParseKubeconfig(text, base_dir, context);
  if (!config.ok()) return config.status().WithPrefix(path);
  return config;
}

std::string DefaultKubeconfigPath() {
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string value(env);
    size_t colon = value.find(':');
    return colon == std::string::npos ? value : value.substr(0, colon);
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.kube/config";
  }
  return "";
}

}  // namespace draplane::client
