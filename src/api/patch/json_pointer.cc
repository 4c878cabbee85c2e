#include "api/patch/json_pointer.h"

#include <boost/json.hpp>

namespace draplane::api::patch {

StatusOr<std::vector<std::string>> ParseJsonPointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return InvalidArgumentError("invalid JSON pointer \"" + std::string(pointer) +
                                "\": must start with '/'");
  }
  pointer.remove_prefix(1);
  while (true) {
    size_t slash = pointer.find('/');
    std::string_view raw = pointer.substr(0, slash);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(raw[i]);
      }
    }
    tokens.push_back(std::move(token));
    if (slash == std::string_view::npos) break;
    pointer.remove_prefix(slash + 1);
  }
  return tokens;
}

std::optional<size_t> ParseArrayIndex(std::string_view token, size_t max_index) {
  // 18 digits cannot overflow size_t.
  if (token.empty() || token.size() > 18) return std::nullopt;
  if (token.size() > 1 && token[0] == '0') return std::nullopt;
  size_t index = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  if (index > max_index) return std::nullopt;
  return index;
}

boost::json::value* ResolveJsonPointer(boost::json::value& root,
                                       const std::vector<std::string>& tokens) {
  boost::json::value* current = &root;
  for (const std::string& token : tokens) {
    if (current->is_object()) {
      current = current->get_object().if_contains(token);
    } else if (current->is_array()) {
      boost::json::array& array = current->get_array();
      if (array.empty()) return nullptr;
      std::optional<size_t> i = ParseArrayIndex(token, array.size() - 1);
      if (!i) return nullptr;
      current = &array[*i];
    } else {
      return nullptr;
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

}  // namespace draplane::api::patch
