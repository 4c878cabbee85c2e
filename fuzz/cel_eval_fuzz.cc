// Evaluation fuzz target: random selector expressions (built from the input by a small grammar
// of device paths, literals, operators, library calls and macros) over a random device, compiled
// in the DRA environment (checked and unchecked) and matched with a small and with the default
// cost limit. Properties: no crash or sanitizer report; a successful evaluation never charged
// more than the cost limit; exceeding the limit is reported as upstream's cancellation error.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cel/cel.h"

namespace {

using draplane::cel::CompileOptions;
using draplane::cel::DeviceInput;
using draplane::cel::SelectorResult;

const char* const kDomains[] = {"gpu.example.com", "dra.example.com", "other.example.com"};
const char* const kIds[] = {"model", "index", "mig", "version", "names", "ids", "memory", "cores"};

std::string Pick(FuzzedDataProvider& in, const char* const* items, size_t n) {
  return items[in.ConsumeIntegralInRange<size_t>(0, n - 1)];
}

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string Literal(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0:
      return std::to_string(in.ConsumeIntegral<int32_t>());
    case 1:
      return std::to_string(in.ConsumeIntegral<uint16_t>()) + "u";
    case 2:
      return std::to_string(in.ConsumeIntegralInRange(-1000, 1000)) + ".5";
    case 3:
      return in.ConsumeBool() ? "true" : "false";
    case 4:
      return Quote(in.ConsumeRandomLengthString(12));
    case 5:
      return "quantity(\"" + std::to_string(in.ConsumeIntegralInRange(0, 4096)) + "Mi\")";
    case 6:
      return "semver(\"1." + std::to_string(in.ConsumeIntegralInRange(0, 20)) + ".0\")";
    default:
      return "null";
  }
}

std::string Path(FuzzedDataProvider& in) {
  const std::string map = in.ConsumeBool() ? "attributes" : "capacity";
  const std::string domain = Pick(in, kDomains, 3);
  const std::string id = Pick(in, kIds, 8);
  switch (in.ConsumeIntegralInRange(0, 5)) {
    case 0:
      return "device.driver";
    case 1:
      return "device." + map + "[\"" + domain + "\"]";
    case 2:
      return "device." + map + "[\"" + domain + "\"]." + id;
    case 3:
      return "device." + map + "[\"" + domain + "\"][\"" + id + "\"]";
    case 4:
      return "device." + map + "[\"" + domain + "\"].?" + id;
    default:
      return "device.allowMultipleAllocations";
  }
}

std::string Expr(FuzzedDataProvider& in, int depth) {
  if (depth <= 0 || in.remaining_bytes() < 4) {
    return in.ConsumeBool() ? Path(in) : Literal(in);
  }
  static const char* const kBinary[] = {"&&", "||", "==", "!=", "<", "<=", ">",
                                        ">=", "+",  "-",  "*",  "/", "%",  "in"};
  static const char* const kMethods[] = {"contains",   "startsWith",    "endsWith", "matches",
                                         "compareTo",  "isGreaterThan", "size",     "split",
                                         "lowerAscii", "includes",      "orValue",  "find",
                                         "isLessThan", "hasValue",      "value"};
  static const char* const kMacros[] = {"all", "exists", "exists_one", "map", "filter"};
  auto sub = [&] { return Expr(in, depth - 1); };
  switch (in.ConsumeIntegralInRange(0, 9)) {
    case 0:
    case 1:
      return "(" + sub() + " " + Pick(in, kBinary, 14) + " " + sub() + ")";
    case 2:
      return "!" + sub();
    case 3:
      return "-" + sub();
    case 4:
      return sub() + "." + Pick(in, kMethods, 15) + "(" + (in.ConsumeBool() ? sub() : "") + ")";
    case 5: {
      std::string macro = Pick(in, kMacros, 5);
      return sub() + "." + macro + "(v, " + (macro == "map" ? sub() : "v == " + sub()) + ")";
    }
    case 6:
      return "(" + sub() + " ? " + sub() + " : " + sub() + ")";
    case 7:
      return "[" + sub() + ", " + sub() + "]";
    case 8:
      return "has(" + Path(in) + ")";
    default:
      return "cel.bind(b, " + sub() + ", [b, " + sub() + "].size() > 0)";
  }
}

std::shared_ptr<const DeviceInput> Device(FuzzedDataProvider& in) {
  DeviceInput::Builder b(Pick(in, kDomains, 3));
  b.SetAllowMultipleAllocations(in.ConsumeBool());
  int n = in.ConsumeIntegralInRange(0, 10);
  for (int i = 0; i < n; ++i) {
    std::string name =
        in.ConsumeBool() ? Pick(in, kIds, 8) : Pick(in, kDomains, 3) + "/" + Pick(in, kIds, 8);
    switch (in.ConsumeIntegralInRange(0, 6)) {
      case 0:
        b.AddInt(name, in.ConsumeIntegral<int64_t>());
        break;
      case 1:
        b.AddBool(name, in.ConsumeBool());
        break;
      case 2:
        b.AddString(name, in.ConsumeRandomLengthString(16));
        break;
      case 3:
        b.AddVersion(name, in.ConsumeRandomLengthString(8));
        break;
      case 4:
        b.AddInts(name, {in.ConsumeIntegral<int64_t>(), in.ConsumeIntegral<int64_t>()});
        break;
      case 5:
        b.AddStrings(name, {in.ConsumeRandomLengthString(8), "x"});
        break;
      default: {
        auto q = draplane::api::Quantity::Parse(in.ConsumeRandomLengthString(8));
        if (q.ok()) b.AddCapacity(name, *q);
        break;
      }
    }
  }
  return std::move(b).Build();
}

void Check(const SelectorResult& r, uint64_t limit) {
  if (!r.is_error() && r.cost() > limit) std::abort();  // the limit was not enforced
  if (r.is_error() && r.cost() > limit &&
      r.error() != "operation cancelled: actual cost limit exceeded") {
    std::abort();  // overrun reported as something else
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto env = draplane::cel::Environment::NewDra();
  FuzzedDataProvider in(data, size);
  auto device = Device(in);
  std::string expr = Expr(in, in.ConsumeIntegralInRange(1, 6));
  for (bool check : {true, false}) {
    for (uint64_t limit : {uint64_t{200}, draplane::cel::kSelectorMaxCost}) {
      CompileOptions options;
      options.check = check;
      options.cost_limit = limit;
      auto program = env->Compile(expr, options);
      if (!program.ok()) continue;
      Check((*program)->Match(*device), limit);
    }
  }
  return 0;
}
