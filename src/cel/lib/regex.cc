// Kubernetes regex library (apiserver pkg/cel/library/regex.go), rewritten over RE2.
#include <re2/re2.h>

#include <vector>

#include "cel/lib/helpers.h"
#include "cel/lib/library.h"
#include "cel/lib/regex_cache.h"

namespace draplane::cel {
namespace {

using internal::Error;
using internal::Member;

Value FindAllN(EvalContext& ctx, std::string_view s, std::string_view pattern, int64_t n) {
  std::string error;
  std::shared_ptr<const RE2> re = internal::CompileRegex(pattern, &error);
  if (!re) return Error(ctx, error);
  std::vector<Value> out;
  for (std::string_view m : internal::FindAllMatches(*re, s, n)) out.push_back(Value::String(m));
  return MakeList(ctx.arena, out.data(), out.size());
}

Value Find(EvalContext& ctx, const Value* a) {
  std::string error;
  std::shared_ptr<const RE2> re = internal::CompileRegex(a[1].string_value(), &error);
  if (!re) return Error(ctx, error);
  std::string_view s = a[0].string_value();
  re2::StringPiece match;
  if (!re->Match(re2::StringPiece(s.data(), s.size()), 0, s.size(), RE2::UNANCHORED, &match, 1)) {
    return Value::String("");
  }
  return Value::String(std::string_view(match.data(), match.size()));
}
Value FindAll(EvalContext& ctx, const Value* a) {
  return FindAllN(ctx, a[0].string_value(), a[1].string_value(), -1);
}
Value FindAllLimit(EvalContext& ctx, const Value* a) {
  return FindAllN(ctx, a[0].string_value(), a[1].string_value(), a[2].int_value());
}

}  // namespace

void RegisterRegexLibrary(FunctionRegistry& r) {
  const Type S = Type::String();
  Member(r, "find", "string_find_string", {S, S}, S, Find, internal::CostRegex);
  Member(r, "findAll", "string_find_all_string", {S, S}, Type::List(S), FindAll,
         internal::CostRegex);
  Member(r, "findAll", "string_find_all_string_int", {S, S, Type::Int()}, Type::List(S),
         FindAllLimit, internal::CostRegex);
}

}  // namespace draplane::cel
