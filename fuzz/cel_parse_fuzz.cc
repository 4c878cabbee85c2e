// Parser fuzz target: any input is parsed; what parses is also type-checked, cost-estimated and
// planned in the DRA environment and in a generic one (unchecked too). Nothing may crash, leak
// or trip a sanitizer, and every failure must be a Status, never an exception.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cel/cel.h"
#include "cel/parser/parser.h"

namespace {

const std::shared_ptr<const draplane::cel::Environment>& DraEnv() {
  static const auto env = draplane::cel::Environment::NewDra();
  return env;
}

const std::shared_ptr<const draplane::cel::Environment>& GenericEnv() {
  static const auto env = [] {
    draplane::cel::GenericEnvironmentOptions options;
    options.variables = {{"x", draplane::cel::Type::Dyn()}, {"y", draplane::cel::Type::Int()}};
    return draplane::cel::Environment::NewGeneric(std::move(options));
  }();
  return env;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  draplane::cel::ParseResult parsed = draplane::cel::Parse(text);
  if (!parsed.issues.empty()) {
    (void)draplane::cel::FormatIssues(parsed.ast, parsed.issues);
    return 0;
  }
  (void)draplane::cel::DebugString(*parsed.ast.root);
  (void)DraEnv()->Compile(text);
  (void)GenericEnv()->Compile(text);
  draplane::cel::CompileOptions unchecked;
  unchecked.check = false;
  (void)GenericEnv()->Compile(text, unchecked);
  return 0;
}
