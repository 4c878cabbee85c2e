// Runner of the API server's request/expect suites (tests/server/*/ *.txt; FORMAT.md there).
//
// Each file runs against a fresh in-process server (memory store, plain HTTP on a free loopback
// port) with fixed identities; its cases run in order, so earlier cases set up what later ones
// need. After every case the runner checks that the server still answers /healthz, and after
// every failed request (status >= 400) that the store's revision did not move: a refused request
// changed nothing.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "server/server.h"
#include "server/testing/test_client.h"

namespace draplane::server {
namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name;
  int line = 0;
  std::string identity = "admin";
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  int status = 0;
  std::string reason;
  std::vector<std::string> message_contains;
  std::vector<std::string> body_contains;
  std::vector<std::string> body_lacks;
  std::vector<std::pair<std::string, std::string>> header_contains;
  std::vector<std::pair<std::string, std::string>> captures;  // variable, dotted JSON path
  // `eventually: N`: the request is repeated for up to N seconds until its status and bodies
  // match, for what the server writes on its own after a request (a controller's status).
  std::chrono::seconds eventually{0};
};

// Replaces ${name} by captured values.
std::string Substitute(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [name, value] : vars) {
    std::string token = "${" + name + "}";
    for (size_t pos = text.find(token); pos != std::string::npos; pos = text.find(token, pos)) {
      text.replace(pos, token.size(), value);
      pos += value.size();
    }
  }
  return text;
}

// The string (or number) at a dotted path (`metadata.continue`, `items.0.metadata.name`).
std::optional<std::string> Lookup(const boost::json::value& root, const std::string& path) {
  const boost::json::value* v = &root;
  std::istringstream in(path);
  std::string part;
  while (std::getline(in, part, '.')) {
    if (v->is_object()) {
      v = v->as_object().if_contains(part);
    } else if (v->is_array() && !part.empty() &&
               std::isdigit(static_cast<unsigned char>(part[0]))) {
      size_t i = std::stoul(part);
      v = i < v->as_array().size() ? &v->as_array()[i] : nullptr;
    } else {
      v = nullptr;
    }
    if (v == nullptr) return std::nullopt;
  }
  if (v->is_string()) return std::string(v->as_string());
  return boost::json::serialize(*v);
}

std::string Trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Body directives: `@bytes N` (N bytes of 'x'), `@json-string N` (a JSON object whose one
// string is N bytes long), `@deep N` (N nested arrays).
std::string ExpandBody(const std::string& body) {
  std::string trimmed = Trim(body);
  std::istringstream in(trimmed);
  std::string directive;
  size_t n = 0;
  in >> directive >> n;
  if (directive == "@bytes") return std::string(n, 'x');
  if (directive == "@json-string") {
    return "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"big\"},"
           "\"x\":\"" +
           std::string(n, 'a') + "\"}";
  }
  if (directive == "@deep") return std::string(n, '[') + std::string(n, ']');
  return body;
}

std::vector<Case> ParseFile(const fs::path& path) {
  std::ifstream in(path);
  std::vector<Case> cases;
  std::string line;
  int number = 0;
  enum { kNone, kHeaders, kBody, kExpect } state = kNone;
  Case current;
  auto flush = [&] {
    if (!current.name.empty()) {
      current.body = ExpandBody(current.body);
      cases.push_back(std::move(current));
    }
    current = Case();
  };
  while (std::getline(in, line)) {
    ++number;
    if (state != kBody && !line.empty() && line[0] == '#') continue;
    if (line.rfind("=== ", 0) == 0) {
      flush();
      current.name = Trim(line.substr(4));
      current.line = number;
      state = kNone;
      continue;
    }
    if (line.rfind("--- expect", 0) == 0) {
      if (!current.body.empty() && current.body.back() == '\n') current.body.pop_back();
      std::string rest = Trim(line.substr(10));
      if (!rest.empty()) current.status = std::stoi(rest);
      state = kExpect;
      continue;
    }
    if (current.name.empty()) continue;
    if (state == kNone) {
      std::string t = Trim(line);
      if (t.empty()) continue;
      if (t.rfind("as:", 0) == 0) {
        current.identity = Trim(t.substr(3));
        continue;
      }
      size_t space = t.find(' ');
      current.method = t.substr(0, space);
      current.target = Trim(t.substr(space + 1));
      state = kHeaders;
      continue;
    }
    if (state == kHeaders) {
      if (Trim(line).empty()) {
        state = kBody;
        continue;
      }
      size_t colon = line.find(':');
      current.headers.emplace_back(Trim(line.substr(0, colon)), Trim(line.substr(colon + 1)));
      continue;
    }
    if (state == kBody) {
      current.body += line + "\n";
      continue;
    }
    std::string t = Trim(line);
    if (t.empty()) continue;
    size_t colon = t.find(':');
    std::string key = Trim(t.substr(0, colon));
    std::string value = Trim(t.substr(colon + 1));
    if (key == "status") {
      current.status = std::stoi(value);
    } else if (key == "reason") {
      current.reason = value;
    } else if (key == "message") {
      current.message_contains.push_back(value);
    } else if (key == "body") {
      current.body_contains.push_back(value);
    } else if (key == "body-lacks") {
      current.body_lacks.push_back(value);
    } else if (key == "capture") {
      size_t eq = value.find('=');
      current.captures.emplace_back(Trim(value.substr(0, eq)), Trim(value.substr(eq + 1)));
    } else if (key == "eventually") {
      current.eventually = std::chrono::seconds(std::stoi(value));
    } else if (key == "header") {
      size_t sep = value.find(':');
      current.header_contains.emplace_back(Trim(value.substr(0, sep)), Trim(value.substr(sep + 1)));
    } else {
      ADD_FAILURE() << path << ":" << number << ": unknown expectation " << key;
    }
  }
  flush();
  return cases;
}

// A file's `@server` line, before its first case, configures the server's DRA admission:
// `@server list-attributes=1.37 feature-gates=DRAListTypeAttributes=true,...` (gate names of
// api::validation::ParseFeatureGates); `resource-pool-status=false` is DRAResourcePoolStatus off.
DraAdmission ParseAdmission(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  DraAdmission admission;
  while (std::getline(in, line)) {
    if (line.rfind("=== ", 0) == 0) break;
    if (line.rfind("@server ", 0) != 0) continue;
    std::istringstream words(line.substr(8));
    std::string word;
    while (words >> word) {
      size_t eq = word.find('=');
      std::string key = word.substr(0, eq);
      std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key == "list-attributes") {
        if (value == "1.35") admission.list_attributes = cel::ListAttributeMode::kUnsupported;
        if (value == "1.37") admission.list_attributes = cel::ListAttributeMode::kFirstElement;
      } else if (key == "resource-pool-status") {
        admission.resource_pool_status = value != "false";
      } else if (key == "feature-gates") {
        Status s = api::validation::ParseFeatureGates(value, &admission.features);
        EXPECT_TRUE(s.ok()) << path << ": " << s.ToString();
      } else {
        ADD_FAILURE() << path << ": unknown @server setting " << key;
      }
    }
  }
  return admission;
}

std::vector<fs::path> CaseFiles() {
  std::vector<fs::path> files;
  for (const char* dir : {"bad_input", "authz", "api"}) {
    fs::path root = fs::path(DRAPLANE_SOURCE_DIR) / "tests/server" / dir;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::directory_iterator(root)) {
      if (entry.path().extension() == ".txt") files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Whether a response has the case's status and bodies (what `eventually` waits for; the checks
// below report each difference).
bool Matches(const Case& c, const testing::TestResponse& response,
             const std::map<std::string, std::string>& vars) {
  if (response.status != c.status) return false;
  for (const std::string& raw : c.body_contains) {
    if (response.body.find(Substitute(raw, vars)) == std::string::npos) return false;
  }
  for (const std::string& raw : c.body_lacks) {
    if (response.body.find(Substitute(raw, vars)) != std::string::npos) return false;
  }
  return true;
}

// Waits (up to 5 s) until the store's revision has not moved for 60 ms.
void SettleStore(Server& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  StatusOr<store::Revision> seen = server.store()->CurrentRevision();
  int quiet = 0;
  while (quiet < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    StatusOr<store::Revision> now = server.store()->CurrentRevision();
    quiet = now.ok() && seen.ok() && *now == *seen ? quiet + 1 : 0;
    seen = now;
  }
}

class ServerCasesTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(ServerCasesTest, FileCasesPass) {
  std::vector<Case> cases = ParseFile(GetParam());
  ASSERT_FALSE(cases.empty()) << GetParam();

  ServerOptions options;
  options.listen = "127.0.0.1:0";
  options.plain_http = true;
  options.store_url = "memory://";
  options.worker_threads = 2;
  options.io_threads = 1;
  options.dra_admission = ParseAdmission(GetParam());
  fs::path data_dir = fs::temp_directory_path() / ("draplane-cases-" + std::to_string(::getpid()) +
                                                   "-" + GetParam().stem().string());
  fs::remove_all(data_dir);
  options.data_dir = data_dir.string();
  StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  std::string url = (*server)->url();
  uint16_t port = static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));

  std::map<std::string, std::string> tokens;
  tokens["admin"] = (*server)->IssueCredentials("admin", {"system:masters"}).token;
  tokens["alice"] = (*server)->IssueCredentials("alice", {"tenants"}).token;
  tokens["bob"] = (*server)->IssueCredentials("bob", {"tenants"}).token;
  tokens["node-1"] = (*server)->IssueCredentials("system:node:node-1", {"system:nodes"}).token;
  tokens["node-2"] = (*server)->IssueCredentials("system:node:node-2", {"system:nodes"}).token;
  tokens["scheduler"] = (*server)->IssueCredentials("system:kube-scheduler", {}).token;

  std::map<std::string, std::string> vars;
  for (const Case& c : cases) {
    SCOPED_TRACE(GetParam().filename().string() + ":" + std::to_string(c.line) + " " + c.name);
    std::vector<std::pair<std::string, std::string>> headers = c.headers;
    for (auto& [k, v] : headers) v = Substitute(v, vars);
    if (c.identity != "anonymous") {
      ASSERT_TRUE(tokens.count(c.identity)) << "unknown identity " << c.identity;
      headers.emplace_back("Authorization", "Bearer " + tokens[c.identity]);
    }
    // A refused request must leave the store's revision as it was; the server's own writers
    // (a controller finishing what an earlier case started) must be done first. The cases wait
    // for the writes they know of (`eventually`); this waits out the tail of any other.
    if (c.status >= 400) SettleStore(**server);
    StatusOr<store::Revision> before = (*server)->store()->CurrentRevision();
    ASSERT_TRUE(before.ok());
    auto send = [&]() -> StatusOr<testing::TestResponse> {
      auto connection = testing::TestConnection::Connect(port);
      if (!connection.ok()) return connection.status();
      return (*connection)->Do(c.method, Substitute(c.target, vars), headers,
                               Substitute(c.body, vars));
    };
    StatusOr<testing::TestResponse> response = send();
    const auto deadline = std::chrono::steady_clock::now() + c.eventually;
    while (response.ok() && !Matches(c, *response, vars) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      response = send();
    }
    ASSERT_TRUE(response.ok()) << response.status().ToString();
    EXPECT_EQ(response->status, c.status) << response->body;
    boost::system::error_code ec;
    boost::json::value json = boost::json::parse(response->body, ec);
    if (!c.reason.empty() || !c.message_contains.empty()) {
      ASSERT_FALSE(ec) << "not JSON: " << response->body;
      ASSERT_TRUE(json.is_object());
      const boost::json::object& o = json.get_object();
      if (!c.reason.empty()) {
        const boost::json::value* reason = o.if_contains("reason");
        EXPECT_TRUE(reason != nullptr && reason->is_string() && reason->get_string() == c.reason)
            << response->body;
      }
      for (const std::string& m : c.message_contains) {
        const boost::json::value* message = o.if_contains("message");
        EXPECT_TRUE(message != nullptr && message->is_string() &&
                    std::string(message->get_string()).find(m) != std::string::npos)
            << "message lacks \"" << m << "\": " << response->body;
      }
    }
    for (const auto& [name, path] : c.captures) {
      std::optional<std::string> value;
      if (!ec) value = Lookup(json, path);
      ASSERT_TRUE(value.has_value()) << "nothing at " << path << " to capture: " << response->body;
      vars[name] = *value;
    }
    for (const std::string& raw : c.body_contains) {
      std::string b = Substitute(raw, vars);
      EXPECT_NE(response->body.find(b), std::string::npos)
          << "body lacks \"" << b << "\": " << response->body;
    }
    for (const std::string& raw : c.body_lacks) {
      std::string b = Substitute(raw, vars);
      EXPECT_EQ(response->body.find(b), std::string::npos) << "body has \"" << b << "\"";
    }
    for (const auto& [name, value] : c.header_contains) {
      EXPECT_NE(response->Header(name).find(value), std::string::npos)
          << "header " << name << " lacks \"" << value << "\": " << response->Header(name);
    }
    if (response->status >= 400) {
      StatusOr<store::Revision> after = (*server)->store()->CurrentRevision();
      ASSERT_TRUE(after.ok());
      EXPECT_EQ(*after, *before) << "a refused request changed the store";
    }
    auto health = testing::TestConnection::Connect(port);
    ASSERT_TRUE(health.ok()) << "the server stopped accepting connections";
    StatusOr<testing::TestResponse> ok = (*health)->Do("GET", "/healthz", {});
    ASSERT_TRUE(ok.ok() && ok->status == 200) << "the server stopped answering /healthz";
  }
  (*server)->Shutdown();
  fs::remove_all(data_dir);
}

std::string CaseName(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name =
      info.param.parent_path().filename().string() + "_" + info.param.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Suites, ServerCasesTest, ::testing::ValuesIn(CaseFiles()), CaseName);

}  // namespace
}  // namespace draplane::server
