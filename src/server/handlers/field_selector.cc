#include "server/handlers/field_selector.h"

namespace draplane::server::handlers {
namespace {

// Splits on unescaped commas (fields.splitTerms).
std::vector<std::string> SplitTerms(std::string_view text) {
  std::vector<std::string> terms;
  std::string current;
  bool escaped = false;
  for (char c : text) {
    if (escaped) {
      current.push_back('\\');
      current.push_back(c);
      escaped = false;
    } else if (c == '\\') {
      escaped = true;
    } else if (c == ',') {
      terms.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (escaped) current.push_back('\\');
  terms.push_back(std::move(current));
  return terms;
}

std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out.push_back(s[++i]);
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

StatusOr<FieldSelector> FieldSelector::Parse(std::string_view text) {
  FieldSelector selector;
  if (text.empty()) return selector;
  for (const std::string& term : SplitTerms(text)) {
    if (term.empty()) continue;
    // fields.splitTerm: the first unescaped "!=", "==" or "=".
    size_t position = std::string::npos;
    size_t op_length = 0;
    bool equals = true;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '\\') {
        ++i;
        continue;
      }
      if (term.compare(i, 2, "!=") == 0) {
        position = i;
        op_length = 2;
        equals = false;
        break;
      }
      if (term.compare(i, 2, "==") == 0) {
        position = i;
        op_length = 2;
        break;
      }
      if (term[i] == '=') {
        position = i;
        op_length = 1;
        break;
      }
    }
    if (position == std::string::npos) {
      return InvalidArgumentError("invalid selector: '" + std::string(text) +
                                  "'; can't understand '" + term + "'");
    }
    FieldRequirement requirement;
    requirement.field = term.substr(0, position);
    requirement.equals = equals;
    requirement.value = Unescape(std::string_view(term).substr(position + op_length));
    selector.requirements_.push_back(std::move(requirement));
  }
  return selector;
}

std::optional<std::string> FieldSelector::RequiresExactMatch(std::string_view field) const {
  for (const FieldRequirement& r : requirements_) {
    if (r.field == field && r.equals) return r.value;
  }
  return std::nullopt;
}

bool FieldSelector::Matches(const std::map<std::string, std::string, std::less<>>& fields) const {
  for (const FieldRequirement& r : requirements_) {
    auto it = fields.find(r.field);
    std::string_view value = it == fields.end() ? std::string_view() : std::string_view(it->second);
    if ((value == r.value) != r.equals) return false;
  }
  return true;
}

std::vector<std::string> FieldSelector::Fields() const {
  std::vector<std::string> out;
  for (const FieldRequirement& r : requirements_) out.push_back(r.field);
  return out;
}

}  // namespace draplane::server::handlers
