// json_equal A.json B.json: exits 0 when the two files hold equal JSON values, else prints the
// first difference (as a field path) and exits 1. Used by the roundtrip suite.
#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "api/codec/json.h"

namespace {

bool Read(const char* path, boost::json::value* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "json_equal: cannot open %s\n", path);
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  draplane::StatusOr<boost::json::value> v = draplane::api::codec::ParseJson(text.str());
  if (!v.ok()) {
    std::fprintf(stderr, "json_equal: %s: %s\n", path, std::string(v.status().message()).c_str());
    return false;
  }
  *out = std::move(v).value();
  return true;
}

std::string Show(const boost::json::value& v) {
  std::string s = draplane::api::codec::WriteJson(v, {.indent = 0});
  return s.size() > 120 ? s.substr(0, 120) + "..." : s;
}

// Prints the first difference under `path`; returns false if there is one.
bool Compare(const boost::json::value& a, const boost::json::value& b, const std::string& path) {
  if (a.is_object() && b.is_object()) {
    for (const auto& kv : a.get_object()) {
      const std::string child = path + "." + std::string(kv.key());
      const boost::json::value* other = b.get_object().if_contains(kv.key());
      if (other == nullptr) {
        std::printf("%s: only in the first: %s\n", child.c_str(), Show(kv.value()).c_str());
        return false;
      }
      if (!Compare(kv.value(), *other, child)) return false;
    }
    for (const auto& kv : b.get_object()) {
      if (!a.get_object().contains(kv.key())) {
        std::printf("%s.%s: only in the second: %s\n", path.c_str(), std::string(kv.key()).c_str(),
                    Show(kv.value()).c_str());
        return false;
      }
    }
    return true;
  }
  if (a.is_array() && b.is_array()) {
    const auto& x = a.get_array();
    const auto& y = b.get_array();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!Compare(x[i], y[i], path + "[" + std::to_string(i) + "]")) return false;
    }
    if (x.size() != y.size()) {
      std::printf("%s: %zu items vs %zu\n", path.c_str(), x.size(), y.size());
      return false;
    }
    return true;
  }
  if (a != b) {
    std::printf("%s: %s vs %s\n", path.c_str(), Show(a).c_str(), Show(b).c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: json_equal A.json B.json\n");
    return 2;
  }
  boost::json::value a, b;
  if (!Read(argv[1], &a) || !Read(argv[2], &b)) return 2;
  return Compare(a, b, "") ? 0 : 1;
}
