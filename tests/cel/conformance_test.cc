// Data-driven CEL conformance suites (one gtest case, hence one ctest case, per JSON case):
//
//  - ../shared/conformance/cel/spec/*.json: the cel-spec conformance export
//    (../shared/conformance/cel/FORMAT.md). Cases marked `k8s: false` are skipped with their
//    note (Kubernetes' CEL lacks the feature or cel-go differs); cases listed in
//    tests/cel/skip_list.txt are skipped with the reason given there.
//  - ../shared/conformance/cel/k8s/*.json: Kubernetes' own tables for DRA device selectors,
//    the quantity library and the semver library. A DRA case that does not pin
//    DRAListTypeAttributes runs with the gate both off and on, as upstream's compile tests do:
//    the gate changes what the API accepts, not how the scheduler reads list attributes.
//  - tests/cel/data/*.json: draplane's own DRA selector tables in the same format, with a
//    `kubernetesVersion` ("1.35", "1.36", "1.37") choosing the release's reading of list
//    attributes (KEP-5491: lists in 1.36; first element and `asList()` in 1.37).
//
// At the end of a run the pass/skip/fail counts per file are printed.
#include <gtest/gtest.h>
#include <re2/re2.h>

#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "api/quantity.h"
#include "cel/environment.h"
#include "cel/runtime/device_input.h"
#include "cel/runtime/opaque_values.h"
#include "cel/runtime/value.h"

namespace draplane::cel {
namespace {

namespace json = boost::json;

const std::string kShared = DRAPLANE_SHARED_DIR;
const std::string kSource = DRAPLANE_SOURCE_DIR;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::value ParseJsonFile(const std::string& path) {
  boost::system::error_code ec;
  json::value v = json::parse(ReadFile(path), ec);
  if (ec) return json::array();
  return v;
}

// --- results bookkeeping ------------------------------------------------------------------------

struct Counts {
  int pass = 0, skip = 0, fail = 0;
};

std::map<std::string, Counts>& Tally() {
  static auto* t = new std::map<std::string, Counts>();
  return *t;
}

std::map<std::string, std::string>& SkipList() {
  static auto* list = [] {
    auto* m = new std::map<std::string, std::string>();
    std::ifstream in(kSource + "/tests/cel/skip_list.txt");
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      size_t hash = line.find('#');
      std::string id = line.substr(0, hash);
      while (!id.empty() && (id.back() == ' ' || id.back() == '\t')) id.pop_back();
      std::string reason = hash == std::string::npos ? "" : line.substr(hash + 1);
      while (!reason.empty() && reason.front() == ' ') reason.erase(0, 1);
      if (!id.empty()) (*m)[id] = reason;
    }
    return m;
  }();
  return *list;
}

class TallyListener : public testing::EmptyTestEventListener {
 public:
  void OnTestEnd(const testing::TestInfo& info) override {
    const char* param = info.value_param();
    if (param == nullptr) return;
    // The value parameter prints as "<file>|...".
    std::string file(param);
    file = file.substr(0, file.find('|'));
    Counts& c = Tally()[file];
    const testing::TestResult* r = info.result();
    if (r->Skipped()) {
      ++c.skip;
    } else if (r->Passed()) {
      ++c.pass;
    } else {
      ++c.fail;
    }
  }
  void OnTestProgramEnd(const testing::UnitTest&) override {
    if (Tally().empty()) return;
    std::printf("\nCEL conformance: pass/skip/fail per file\n");
    Counts total;
    for (const auto& [file, c] : Tally()) {
      std::printf("  %-28s %5d %5d %5d\n", file.c_str(), c.pass, c.skip, c.fail);
      total.pass += c.pass;
      total.skip += c.skip;
      total.fail += c.fail;
    }
    std::printf("  %-28s %5d %5d %5d\n", "total", total.pass, total.skip, total.fail);
  }
};

// --- tagged values --------------------------------------------------------------------------

std::string Base64Decode(std::string_view in) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t buf = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    size_t v = kAlphabet.find(c);
    if (v == std::string::npos) continue;
    buf = (buf << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xFF));
    }
  }
  return out;
}

// Builds the CEL value of a tagged JSON value in `arena`.
Value FromTagged(const json::value& tv, Arena* arena) {
  const json::object& o = tv.as_object();
  const auto& [tag, v] = *o.begin();
  if (tag == "int") return Value::Int(std::stoll(std::string(v.as_string())));
  if (tag == "uint") return Value::Uint(std::stoull(std::string(v.as_string())));
  if (tag == "double") {
    if (v.is_string()) {
      std::string s(v.as_string());
      if (s == "NaN") return Value::Double(std::nan(""));
      if (s == "Infinity") return Value::Double(HUGE_VAL);
      if (s == "-Infinity") return Value::Double(-HUGE_VAL);
      if (s == "-0") return Value::Double(-0.0);
      return Value::Double(std::stod(s));
    }
    return Value::Double(v.is_double() ? v.as_double()
                                       : static_cast<double>(v.to_number<double>()));
  }
  if (tag == "string") return MakeString(arena, v.as_string());
  if (tag == "bytes") return MakeBytes(arena, Base64Decode(v.as_string()));
  if (tag == "bool") return Value::Bool(v.as_bool());
  if (tag == "null") return Value::Null();
  if (tag == "type") return Value::Type(types::FindType(v.as_string()));
  if (tag == "list") {
    std::vector<Value> elems;
    for (const json::value& e : v.as_array()) elems.push_back(FromTagged(e, arena));
    return MakeList(arena, elems.data(), elems.size());
  }
  if (tag == "map") {
    std::vector<MapEntryValue> entries;
    for (const json::value& e : v.as_array()) {
      entries.push_back({FromTagged(e.as_array()[0], arena), FromTagged(e.as_array()[1], arena)});
    }
    return MakeMap(arena, entries.data(), entries.size());
  }
  if (tag == "quantity") {
    auto* q = arena->New<QuantityValue>();
    q->quantity = *api::Quantity::Parse(v.as_string());
    return Value::Quantity(q);
  }
  return Value::Null();
}

// Strict structural equality for expected results: kinds must agree (1 != 1u), NaN equals NaN,
// maps compare order-insensitively.
bool SameValue(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::kNull:
      return true;
    case ValueKind::kBool:
      return a.bool_value() == b.bool_value();
    case ValueKind::kInt:
      return a.int_value() == b.int_value();
    case ValueKind::kUint:
      return a.uint_value() == b.uint_value();
    case ValueKind::kDouble: {
      double x = a.double_value(), y = b.double_value();
      if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
      return x == y && std::signbit(x) == std::signbit(y);
    }
    case ValueKind::kString:
    case ValueKind::kBytes:
      return a.string_value() == b.string_value();
    case ValueKind::kType:
      return a.type().name == b.type().name;
    case ValueKind::kList: {
      if (a.list().size != b.list().size) return false;
      for (uint32_t i = 0; i < a.list().size; ++i) {
        if (!SameValue(a.list().elems[i], b.list().elems[i])) return false;
      }
      return true;
    }
    case ValueKind::kMap: {
      if (a.map().size() != b.map().size()) return false;
      for (uint32_t i = 0; i < a.map().size(); ++i) {
        const MapEntryValue& e = a.map().entries()[i];
        bool found = false;
        for (uint32_t j = 0; j < b.map().size(); ++j) {
          const MapEntryValue& f = b.map().entries()[j];
          if (SameValue(e.key, f.key)) {
            found = SameValue(e.value, f.value);
            break;
          }
        }
        if (!found) return false;
      }
      return true;
    }
    default:
      return Equal(a, b).IsTrue();
  }
}

std::string Sanitize(std::string s) {
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

// --- the spec suite ---------------------------------------------------------------------------

struct SpecCase {
  std::string file, section, name, id;
  json::object data;
};
// gtest prints the value parameter; the listener reads the file from its prefix.
void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.file << "|" << c.id; }

std::vector<SpecCase> LoadSpecCases() {
  std::vector<SpecCase> out;
  static const char* kFiles[] = {"basic",    "bindings_ext", "comparisons", "conversions", "fields",
                                 "fp_math",  "integer_math", "lists",       "logic",       "macros",
                                 "macros2",  "namespace",    "network_ext", "optionals",   "parse",
                                 "plumbing", "string",       "string_ext",  "timestamps"};
  for (const char* file : kFiles) {
    json::value v = ParseJsonFile(kShared + "/conformance/cel/spec/" + file + ".json");
    for (const json::value& c : v.as_array()) {
      SpecCase sc;
      sc.data = c.as_object();
      sc.file = file;
      sc.section = std::string(sc.data.at("section").as_string());
      sc.name = std::string(sc.data.at("name").as_string());
      sc.id = sc.file + "/" + sc.section + "/" + sc.name;
      out.push_back(std::move(sc));
    }
  }
  return out;
}

class SpecConformance : public testing::TestWithParam<SpecCase> {};

TEST_P(SpecConformance, Case) {
  const SpecCase& c = GetParam();
  const json::object& d = c.data;
  if (!d.at("k8s").as_bool()) {
    std::string note = d.contains("note") ? std::string(d.at("note").as_string())
                                          : "not part of Kubernetes' CEL environment";
    GTEST_SKIP() << "k8s: false: " << note;
  }
  if (auto it = SkipList().find(c.id); it != SkipList().end()) GTEST_SKIP() << it->second;

  Activation activation;
  GenericEnvironmentOptions env_options;
  if (d.contains("bindings")) {
    for (const auto& [name, tv] : d.at("bindings").as_object()) {
      activation.Bind(std::string(name), FromTagged(tv, &activation.arena()));
      env_options.variables.push_back({std::string(name), Type::Dyn()});
    }
  }
  if (d.contains("container")) env_options.container = std::string(d.at("container").as_string());
  // cel-go's conformance environment: no Kubernetes literal validators.
  env_options.literal_validators = false;
  auto env = Environment::NewGeneric(std::move(env_options));
  CompileOptions options;
  options.check = !(d.contains("disableCheck") && d.at("disableCheck").as_bool());
  const std::string expr(d.at("expr").as_string());
  auto program = env->Compile(expr, options);
  const json::object& expect = d.at("expect").as_object();
  if (!program.ok() && expect.contains("error")) {
    // A case may expect the checker's error (e.g. "found no matching overload ...").
    std::string want(expect.at("error").as_string());
    EXPECT_NE(std::string(program.status().message()).find(want), std::string::npos)
        << expr << "\n"
        << program.status().message() << "\nwant an evaluation error: " << want;
    return;
  }
  ASSERT_TRUE(program.ok()) << expr << "\n" << program.status().message();
  EvalResult result = (*program)->Evaluate(activation);
  if (expect.contains("error") || expect.contains("errorAny")) {
    EXPECT_TRUE(result.is_error())
        << expr << "\nwant an error, got " << FormatValue(result.value());
    return;
  }
  Arena arena;
  Value want = FromTagged(expect.at("value"), &arena);
  EXPECT_TRUE(SameValue(result.value(), want))
      << expr << "\n got " << FormatValue(result.value()) << "\nwant " << FormatValue(want);
}

INSTANTIATE_TEST_SUITE_P(Spec, SpecConformance, testing::ValuesIn(LoadSpecCases()),
                         [](const testing::TestParamInfo<SpecCase>& info) {
                           return Sanitize(info.param.id) + "_" + std::to_string(info.index);
                         });

// --- the Kubernetes DRA selector table -------------------------------------------------------

struct K8sCase {
  std::string file, name;
  json::object data;
};
void PrintTo(const K8sCase& c, std::ostream* os) { *os << c.file << "|" << c.name; }

std::vector<K8sCase> LoadCases(const std::string& path, const std::string& file) {
  std::vector<K8sCase> out;
  json::value v = ParseJsonFile(path);
  for (const json::value& c : v.as_array()) {
    K8sCase kc;
    kc.file = file;
    kc.data = c.as_object();
    kc.name = std::string(kc.data.at("name").as_string());
    out.push_back(std::move(kc));
  }
  return out;
}

std::vector<K8sCase> LoadK8sCases(const std::string& file) {
  return LoadCases(kShared + "/conformance/cel/k8s/" + file + ".json", file);
}

std::string CaseName(const testing::TestParamInfo<K8sCase>& info) {
  return Sanitize(info.param.name) + "_" + std::to_string(info.index);
}

std::shared_ptr<const DeviceInput> BuildDevice(const json::object& d) {
  std::string driver(d.at("driver").as_string());
  DeviceInput::Builder b(driver);
  if (d.at("allowMultipleAllocations").is_bool()) {
    b.SetAllowMultipleAllocations(d.at("allowMultipleAllocations").as_bool());
  }
  for (const auto& [name, attr] : d.at("attributes").as_object()) {
    const auto& [kind, v] = *attr.as_object().begin();
    if (kind == "int") {
      b.AddInt(name, v.to_number<int64_t>());
    } else if (kind == "bool") {
      b.AddBool(name, v.as_bool());
    } else if (kind == "string") {
      b.AddString(name, v.as_string());
    } else if (kind == "version") {
      b.AddVersion(name, v.as_string());
    } else if (kind == "ints") {
      std::vector<int64_t> xs;
      for (const json::value& x : v.as_array()) xs.push_back(x.to_number<int64_t>());
      b.AddInts(name, xs);
    } else if (kind == "bools") {
      std::vector<bool> xs;
      for (const json::value& x : v.as_array()) xs.push_back(x.as_bool());
      b.AddBools(name, xs);
    } else if (kind == "strings" || kind == "versions") {
      std::vector<std::string> xs;
      for (const json::value& x : v.as_array()) xs.emplace_back(x.as_string());
      if (kind == "strings") {
        b.AddStrings(name, xs);
      } else {
        b.AddVersions(name, xs);
      }
    }
  }
  for (const auto& [name, cap] : d.at("capacity").as_object()) {
    b.AddCapacity(name, *api::Quantity::Parse(cap.as_object().at("value").as_string()));
  }
  return std::move(b).Build();
}

// One DRA selector case with the list-attribute gate and release given.
void RunDraSelectorCase(const json::object& d, bool list_type_attributes, ListAttributeMode mode) {
  const json::object& features = d.at("features").as_object();
  DraEnvironmentOptions options;
  options.env_type = d.at("envType").as_string() == "NewExpressions" ? EnvType::kNewExpressions
                                                                     : EnvType::kStoredExpressions;
  options.consumable_capacity = features.at("consumableCapacity").as_bool();
  options.list_type_attributes = list_type_attributes;
  options.list_attributes = mode;
  auto env = Environment::NewDra(options);
  const std::string expr(d.at("expression").as_string());
  auto program = env->Compile(expr);
  const json::object& expect = d.at("expect").as_object();
  if (expect.contains("compileError")) {
    ASSERT_FALSE(program.ok()) << expr;
    std::string want(expect.at("compileError").as_string());
    EXPECT_NE(std::string(program.status().message()).find(want), std::string::npos)
        << program.status().message() << "\nwant substring: " << want;
    return;
  }
  ASSERT_TRUE(program.ok()) << expr << "\n" << program.status().message();
  auto device = BuildDevice(d);
  SelectorResult r = (*program)->Match(*device);
  if (expect.contains("matchError")) {
    ASSERT_TRUE(r.is_error()) << expr << ": matched " << r.matches();
    std::string want(expect.at("matchError").as_string());
    EXPECT_NE(r.error().find(want), std::string::npos) << r.error() << "\nwant: " << want;
  } else {
    ASSERT_FALSE(r.is_error()) << expr << "\n" << r.error();
    EXPECT_EQ(r.matches(), expect.at("match").as_bool()) << expr;
  }
  if (d.contains("expectCost")) {
    // cel-go's worst-case estimate with Kubernetes' size bounds.
    ASSERT_TRUE((*program)->estimated_cost().has_value());
    EXPECT_EQ(*(*program)->estimated_cost(), d.at("expectCost").to_number<uint64_t>()) << expr;
  }
}

// The gate values a case runs with: the pinned one, or both (null means "either").
std::vector<bool> GateValues(const json::object& d) {
  const json::value& gate = d.at("features").as_object().at("listTypeAttributes");
  if (gate.is_null()) return {false, true};
  return {gate.as_bool()};
}

class DraSelectors : public testing::TestWithParam<K8sCase> {};

TEST_P(DraSelectors, Case) {
  const json::object& d = GetParam().data;
  for (bool gate : GateValues(d)) {
    SCOPED_TRACE(gate ? "DRAListTypeAttributes on" : "DRAListTypeAttributes off");
    RunDraSelectorCase(d, gate, ListAttributeMode::kLists);
  }
}

INSTANTIATE_TEST_SUITE_P(K8s, DraSelectors, testing::ValuesIn(LoadK8sCases("k8s-dra-selectors")),
                         CaseName);

// draplane's own tables: the release decides how list attributes read.
class OwnDraSelectors : public testing::TestWithParam<K8sCase> {};

ListAttributeMode ModeOfVersion(std::string_view version) {
  if (version == "1.34" || version == "1.35") return ListAttributeMode::kUnsupported;
  if (version == "1.37") return ListAttributeMode::kFirstElement;
  return ListAttributeMode::kLists;
}

TEST_P(OwnDraSelectors, Case) {
  const json::object& d = GetParam().data;
  const ListAttributeMode mode = ModeOfVersion(d.at("kubernetesVersion").as_string());
  for (bool gate : GateValues(d)) {
    SCOPED_TRACE(gate ? "DRAListTypeAttributes on" : "DRAListTypeAttributes off");
    RunDraSelectorCase(d, gate, mode);
  }
}

INSTANTIATE_TEST_SUITE_P(Own, OwnDraSelectors,
                         testing::ValuesIn(LoadCases(
                             kSource + "/tests/cel/data/list-attributes.json", "list-attributes")),
                         CaseName);

// --- the Kubernetes quantity and semver library tables ---------------------------------------

class LibraryTables : public testing::TestWithParam<K8sCase> {};

Value FromK8sTagged(const json::value& tv, Arena* arena) {
  const json::object& o = tv.as_object();
  if (o.contains("semver")) {
    auto* s = arena->New<SemverValue>();
    std::string text(o.at("semver").as_string());
    // "1.2.3"-style literals only in the tables.
    size_t a = text.find('.'), b = text.find('.', a + 1);
    s->major = std::stoull(text.substr(0, a));
    s->minor = std::stoull(text.substr(a + 1, b - a - 1));
    s->patch = std::stoull(text.substr(b + 1));
    return Value::Semver(s);
  }
  if (o.contains("int"))
    return Value::Int(o.at("int").is_string() ? std::stoll(std::string(o.at("int").as_string()))
                                              : o.at("int").to_number<int64_t>());
  return FromTagged(tv, arena);
}

TEST_P(LibraryTables, Case) {
  const json::object& d = GetParam().data;
  auto env = Environment::NewGeneric({});
  const std::string expr(d.at("expr").as_string());
  auto program = env->Compile(expr);
  const json::object& expect = d.at("expect").as_object();
  if (expect.contains("compileError")) {
    ASSERT_FALSE(program.ok()) << expr;
    for (const json::value& re : expect.at("compileError").as_array()) {
      EXPECT_TRUE(
          RE2::PartialMatch(std::string(program.status().message()), std::string(re.as_string())))
          << program.status().message() << "\nwant: " << re.as_string();
    }
    return;
  }
  ASSERT_TRUE(program.ok()) << expr << "\n" << program.status().message();
  Activation activation;
  EvalResult r = (*program)->Evaluate(activation);
  if (expect.contains("runtimeError")) {
    ASSERT_TRUE(r.is_error()) << expr << ": got " << FormatValue(r.value());
    std::string re(expect.at("runtimeError").as_string());
    EXPECT_TRUE(RE2::PartialMatch(std::string(ErrorMessage(r.value())), re))
        << ErrorMessage(r.value()) << "\nwant: " << re;
    return;
  }
  Arena arena;
  Value want = FromK8sTagged(expect.at("value"), &arena);
  ASSERT_FALSE(r.is_error()) << expr << "\n" << ErrorMessage(r.value());
  EXPECT_TRUE(SameValue(r.value(), want))
      << expr << "\n got " << FormatValue(r.value()) << "\nwant " << FormatValue(want);
}

std::vector<K8sCase> LibraryCases() {
  std::vector<K8sCase> out = LoadK8sCases("k8s-quantity-lib");
  for (K8sCase& c : LoadK8sCases("k8s-semver-lib")) out.push_back(std::move(c));
  return out;
}

INSTANTIATE_TEST_SUITE_P(K8s, LibraryTables, testing::ValuesIn(LibraryCases()),
                         [](const testing::TestParamInfo<K8sCase>& info) {
                           return Sanitize(info.param.file + "_" + info.param.name) + "_" +
                                  std::to_string(info.index);
                         });

// Registers the listener that prints the per-file counts.
const bool kListenerRegistered = [] {
  testing::UnitTest::GetInstance()->listeners().Append(new TallyListener());
  return true;
}();

}  // namespace
}  // namespace draplane::cel
