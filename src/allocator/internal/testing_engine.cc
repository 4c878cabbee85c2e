#include "allocator/internal/testing_engine.h"

#include <map>
#include <string>
#include <vector>

namespace draplane::allocator::internal {
namespace {

struct Term {
  enum class Kind { kTrue, kFalse, kDriver, kAttribute, kError };
  Kind kind;
  std::string name;
  std::string value;
};

class TestingSelector final : public CompiledSelector {
 public:
  std::vector<Term> terms;
};

class TestingDevice final : public PreparedDevice {
 public:
  std::map<std::string, std::string> attributes;  // name -> scalar text
  std::map<std::string, api::resourcev1::DeviceAttribute> values;
  std::string driver;
};

std::string ScalarText(const Attribute& a) {
  switch (a.kind) {
    case Attribute::Kind::kInt:
      return std::to_string(a.number);
    case Attribute::Kind::kBool:
      return a.number != 0 ? "true" : "false";
    case Attribute::Kind::kString:
    case Attribute::Kind::kVersion:
      return a.text;
    case Attribute::Kind::kNone:
    case Attribute::Kind::kFull:
      return "";
  }
  return "";
}

class TestingEngine final : public SelectorEngine {
 public:
  explicit TestingEngine(int* evaluations) : evaluations_(evaluations) {}

  // Derived attributes (spec.derived) understand `attr:<name>` (the attribute's value, an error
  // when the device lacks it) and `error:<message>`.
  StatusOr<std::shared_ptr<const CompiledSelector>> Compile(std::string_view expression,
                                                            const ExpressionSpec& spec) override {
    if (spec.derived) {
      auto selector = std::make_shared<TestingSelector>();
      Term t;
      if (expression.substr(0, 5) == "attr:") {
        t.kind = Term::Kind::kAttribute;
        t.name = std::string(expression.substr(5));
      } else if (expression.substr(0, 6) == "error:") {
        t.kind = Term::Kind::kError;
        t.value = std::string(expression.substr(6));
      } else {
        return InvalidArgumentError("unknown test derived attribute: " + std::string(expression));
      }
      selector->terms.push_back(std::move(t));
      return std::shared_ptr<const CompiledSelector>(selector);
    }
    auto selector = std::make_shared<TestingSelector>();
    std::string_view rest = expression;
    while (!rest.empty()) {
      size_t and_pos = rest.find(" && ");
      std::string_view term = rest.substr(0, and_pos);
      rest = and_pos == std::string_view::npos ? std::string_view() : rest.substr(and_pos + 4);
      Term t;
      if (term == "true") {
        t.kind = Term::Kind::kTrue;
      } else if (term == "false") {
        t.kind = Term::Kind::kFalse;
      } else if (term.substr(0, 7) == "driver=") {
        t.kind = Term::Kind::kDriver;
        t.value = std::string(term.substr(7));
      } else if (term.substr(0, 5) == "attr:" && term.find('=') != std::string_view::npos) {
        t.kind = Term::Kind::kAttribute;
        size_t eq = term.find('=');
        t.name = std::string(term.substr(5, eq - 5));
        t.value = std::string(term.substr(eq + 1));
      } else if (term.substr(0, 6) == "error:") {
        t.kind = Term::Kind::kError;
        t.value = std::string(term.substr(6));
      } else {
        return InvalidArgumentError("unknown test selector: " + std::string(term));
      }
      selector->terms.push_back(std::move(t));
    }
    return std::shared_ptr<const CompiledSelector>(selector);
  }

  std::unique_ptr<PreparedDevice> Prepare(const DeviceSource& source) override {
    auto d = std::make_unique<TestingDevice>();
    for (const Attribute& a : source.data->attributes) {
      d->attributes[source.names->Name(a.name)] = ScalarText(a);
      d->values[source.names->Name(a.name)] = a.ToApi();
    }
    d->driver = std::string(source.driver);
    return d;
  }

  SelectorVerdict Evaluate(const CompiledSelector& selector,
                           const PreparedDevice& device) override {
    const auto& terms = static_cast<const TestingSelector&>(selector).terms;
    const auto& d = static_cast<const TestingDevice&>(device);
    if (evaluations_ != nullptr) ++*evaluations_;
    SelectorVerdict v;
    v.matches = true;
    v.cost = 1;  // one cost unit per evaluation
    for (const Term& t : terms) {
      switch (t.kind) {
        case Term::Kind::kTrue:
          break;
        case Term::Kind::kFalse:
          v.matches = false;
          return v;
        case Term::Kind::kDriver:
          if (d.driver != t.value) {
            v.matches = false;
            return v;
          }
          break;
        case Term::Kind::kAttribute: {
          auto it = d.attributes.find(t.name);
          if (it == d.attributes.end() || it->second != t.value) {
            v.matches = false;
            return v;
          }
          break;
        }
        case Term::Kind::kError:
          v.error = true;
          v.matches = false;
          v.message = t.value;
          return v;
      }
    }
    return v;
  }

  DerivedValue EvaluateValue(const CompiledSelector& derived,
                             const PreparedDevice& device) override {
    const Term& t = static_cast<const TestingSelector&>(derived).terms.front();
    const auto& d = static_cast<const TestingDevice&>(device);
    if (evaluations_ != nullptr) ++*evaluations_;
    DerivedValue v;
    if (t.kind == Term::Kind::kAttribute) {
      auto it = d.values.find(t.name);
      if (it != d.values.end()) {
        v.value = it->second;
        return v;
      }
      v.message = "no such key: " + t.name;
    } else {
      v.message = t.value;
    }
    v.error = true;
    return v;
  }

 private:
  int* evaluations_;
};

}  // namespace

std::unique_ptr<SelectorEngine> NewTestingSelectorEngine(int* evaluations) {
  return std::make_unique<TestingEngine>(evaluations);
}

}  // namespace draplane::allocator::internal
