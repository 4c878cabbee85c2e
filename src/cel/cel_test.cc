// Tests of the CEL facade: the DRA environment, DeviceInput, Match(), compile errors, cost
// limits, the compile cache and selector linting.
#include "cel/cel.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "api/gen/resource_v1_codec.h"

namespace draplane::cel {
namespace {

std::shared_ptr<const DeviceInput> GpuDevice() {
  DeviceInput::Builder b("gpu.nvidia.com");
  b.AddString("productName", "NVIDIA H100 80GB HBM3")
      .AddInt("index", 3)
      .AddBool("mig", false)
      .AddVersion("driverVersion", "550.54.15")
      .AddString("example.com/rack", "r1")
      .AddCapacity("memory", *api::Quantity::Parse("80Gi"));
  return std::move(b).Build();
}

SelectorResult MatchExpr(const std::string& expr, const DeviceInput& device,
                         DraEnvironmentOptions options = {}) {
  auto env = Environment::NewDra(options);
  auto p = env->Compile(expr);
  EXPECT_TRUE(p.ok()) << expr << ": " << p.status().message();
  if (!p.ok()) return SelectorResult::Error(std::string(p.status().message()), 0);
  return (*p)->Match(device);
}

TEST(CelDraTest, MatchesCommonSelectorShapes) {
  auto d = GpuDevice();
  EXPECT_TRUE(MatchExpr(R"(device.driver == "gpu.nvidia.com")", *d).matches());
  EXPECT_FALSE(MatchExpr(R"(device.driver == "other")", *d).matches());
  EXPECT_TRUE(MatchExpr(R"(device.attributes["gpu.nvidia.com"].productName.contains("H100"))", *d)
                  .matches());
  EXPECT_TRUE(MatchExpr(R"(device.attributes["gpu.nvidia.com"]["index"] >= 2)", *d).matches());
  EXPECT_TRUE(
      MatchExpr(R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)", *d)
          .matches());
  EXPECT_TRUE(
      MatchExpr(
          R"(device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0")))",
          *d)
          .matches());
  EXPECT_TRUE(MatchExpr(R"(device.attributes["example.com"].rack == "r1")", *d).matches());
  EXPECT_TRUE(MatchExpr(R"(!device.attributes["gpu.nvidia.com"].mig)", *d).matches());
}

TEST(CelDraTest, UnknownDomainIsEmptyMapAndUnknownIdIsError) {
  auto d = GpuDevice();
  EXPECT_TRUE(MatchExpr(R"(device.attributes["nope.example.com"] == {})", *d).matches());
  EXPECT_FALSE(MatchExpr(R"("nope.example.com" in device.attributes)", *d).matches());
  EXPECT_TRUE(MatchExpr(R"(size(device.attributes) == 2)", *d).matches());
  SelectorResult r = MatchExpr(R"(device.attributes["gpu.nvidia.com"].model == "x")", *d);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(),
            "no such key: model. consider using CEL optional chaining (.? followed by "
            "orValue()) or guarding the check with has() for optional fields");
  // Unknown domain, unknown id: the same error.
  r = MatchExpr(R"(device.attributes["nope"].model == "x")", *d);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error().rfind("no such key: model.", 0), 0u);
  // The robust forms.
  EXPECT_FALSE(MatchExpr(R"(has(device.attributes["gpu.nvidia.com"].model))", *d).matches());
  EXPECT_TRUE(
      MatchExpr(R"(device.attributes["gpu.nvidia.com"].?model.orValue("x") == "x")", *d).matches());
  // An error absorbed by && / || as CEL defines.
  EXPECT_FALSE(MatchExpr(R"(device.attributes["d"].x == 1 && false)", *d).matches());
  EXPECT_TRUE(MatchExpr(R"(device.attributes["d"].x == 1 || true)", *d).matches());
}

TEST(CelDraTest, NonBoolResultIsAnEvaluationError) {
  DeviceInput::Builder b("d");
  b.AddStrings("names", {"a", "b"});
  auto d = std::move(b).Build();
  SelectorResult r = MatchExpr(R"(device.attributes["d"].names)", *d);
  ASSERT_TRUE(r.is_error());
  EXPECT_NE(r.error().find("CEL result of type list could not be converted to bool"),
            std::string::npos);
}

TEST(CelDraTest, CompileErrorsUseUpstreamWording) {
  auto env = Environment::NewDra();
  auto p = env->Compile("noSuchVar");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'noSuchVar' (in "
            "container '')\n | noSuchVar\n | ^");
  p = env->Compile("1 + 1");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(), "must evaluate to bool or the unknown type, not int");
  p = env->Compile("device.nosuch");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("undefined field 'nosuch'"), std::string::npos);
  p = env->Compile(R"(isSemver([1, 2]))");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(
                "found no matching overload for 'isSemver' applied to '(list(int))'"),
            std::string::npos);
  p = env->Compile(R"([1, "a"].size() == 2)");
  ASSERT_FALSE(p.ok()) << "homogeneous aggregate literals";
  p = env->Compile(R"("abc".matches("["))");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("invalid matches argument"), std::string::npos);
}

TEST(CelDraTest, FeatureGatesChangeNewExpressionsOnly) {
  auto d = GpuDevice();
  DraEnvironmentOptions new_no_gates{.env_type = EnvType::kNewExpressions};
  auto env = Environment::NewDra(new_no_gates);
  EXPECT_FALSE(env->Compile("device.allowMultipleAllocations").ok());
  auto p = env->Compile(R"(device.attributes["d"].x.includes(1))");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("undeclared reference to 'includes'"), std::string::npos);
  p = env->Compile(R"(device.attributes["d"].x.exists(e, e == 1))");
  ASSERT_FALSE(p.ok()) << "attributes are google.protobuf.Any without list types";
  EXPECT_NE(p.status().message().find("cannot be range of a comprehension"), std::string::npos);
  auto stored = Environment::NewDra();
  EXPECT_TRUE(stored->Compile("device.allowMultipleAllocations").ok());
  EXPECT_TRUE(stored->Compile(R"(device.attributes["d"].x.includes(1))").ok());
  EXPECT_TRUE(MatchExpr("device.allowMultipleAllocations == false", *d).matches());
}

TEST(CelDraTest, DeviceConversionErrorsFailEveryEvaluation) {
  DeviceInput::Builder b("d");
  b.AddVersion("v", "01.0.0");
  auto d = std::move(b).Build();
  SelectorResult r = MatchExpr("true", *d);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(),
            "attribute v: parse semantic version: Major number must not contain leading zeroes "
            "\"01\"");
  // Releases before list attributes (1.34, 1.35) know no value for an attribute holding a list.
  DeviceInput::Builder lists("d");
  lists.AddInts("n", {1});
  auto with_list = std::move(lists).Build();
  r = MatchExpr("true", *with_list, {.list_attributes = ListAttributeMode::kUnsupported});
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(), "attribute n: unsupported attribute value");
  EXPECT_TRUE(MatchExpr("true", *with_list).matches());
  EXPECT_TRUE(MatchExpr("true", *with_list, {.list_attributes = ListAttributeMode::kFirstElement})
                  .matches());
}

// KEP-5491: 1.36 reads a list attribute as a list, 1.37 as its first element with asList().
TEST(CelDraTest, ListAttributesReadAsTheReleaseSays) {
  DeviceInput::Builder b("d");
  b.AddInts("numa", {2, 5}).AddInt("n", 7).AddStrings("empty", {});
  auto list_device = std::move(b).Build();
  DeviceInput::Builder b2("d");
  b2.AddInts("numa", {2, 5}).AddInt("n", 7).AddStrings("models", {"a", "b"});
  auto d = std::move(b2).Build();
  const DraEnvironmentOptions v136{};
  const DraEnvironmentOptions v137{.list_attributes = ListAttributeMode::kFirstElement};
  auto match = [&](const char* expr, const DraEnvironmentOptions& o) {
    return MatchExpr(expr, *d, o);
  };
  // 1.36: lists.
  EXPECT_TRUE(match(R"(device.attributes["d"].numa == [2, 5])", v136).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.includes(5))", v136).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.exists(x, x == 5))", v136).matches());
  EXPECT_FALSE(
      Environment::NewDra(v136)->Compile(R"(device.attributes["d"].numa.asList() == [])").ok())
      << "asList is 1.37's";
  // 1.37: the first element, asList() the list, a scalar a one-element list.
  EXPECT_TRUE(match(R"(device.attributes["d"].numa == 2)", v137).matches());
  EXPECT_FALSE(match(R"(device.attributes["d"].numa.includes(5))", v137).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.includes(2))", v137).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.asList().includes(5))", v137).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.asList() == [2, 5])", v137).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"]["models"].asList() == ["a", "b"])", v137).matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].n.asList() == [7])", v137).matches());
  EXPECT_TRUE(
      match(R"(cel.bind(x, device.attributes["d"].models, x == "a" && x.asList().size() == 2))",
            v137)
          .matches());
  EXPECT_TRUE(match(R"(device.attributes["d"].numa.asList().exists(x, x == 5))", v137).matches());
  SelectorResult r = match(R"(device.attributes["d"].numa.exists(x, x == 5))", v137);
  ASSERT_TRUE(r.is_error());
  EXPECT_NE(r.error().find("expected iterable type"), std::string::npos) << r.error();
  // A computed value is no longer the attribute: asList() wraps it.
  EXPECT_TRUE(match(R"((device.attributes["d"].numa + 0).asList() == [2])", v137).matches());
  // An empty list has no first element.
  r = MatchExpr("true", *list_device, v137);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(), "attribute empty: unsupported attribute value");
  EXPECT_TRUE(MatchExpr("true", *list_device, v136).matches());
}

TEST(CelDraTest, RuntimeCostLimitIsEnforced) {
  auto d = GpuDevice();
  const std::string expensive =
      "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all("
      "c, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, [1,2,3,4,5,6,7,8,9,10]."
      "all(g, int('1'.find('[0-9]*')) < 100))))))";
  SelectorResult r = MatchExpr(expensive, *d);
  ASSERT_TRUE(r.is_error());
  EXPECT_EQ(r.error(), "operation cancelled: actual cost limit exceeded");
  EXPECT_GT(r.cost(), kSelectorMaxCost);
  // Cancellation is not absorbed by || (cel-go aborts the evaluation).
  r = MatchExpr(expensive + " || true", *d);
  ASSERT_TRUE(r.is_error());
}

TEST(CelDraTest, EstimatesCostLikeCelGo) {
  auto env = Environment::NewDra();
  auto p = env->Compile(R"(device.driver == "dra.example.com")");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->estimated_cost(), 4u);
  p = env->Compile(R"(device.attributes["dra.example.com"].name.exists(x, x > 0))");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->estimated_cost(), 5u + 6u * 64u);
}

TEST(CelDraTest, MatchIsThreadSafe) {
  auto d = GpuDevice();
  auto env = Environment::NewDra();
  auto p = *env->Compile(
      R"(device.attributes["gpu.nvidia.com"].productName.split(" ").exists(w, w == "H100"))");
  std::vector<std::thread> threads;
  std::vector<int> matches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) matches[t] += p->Match(*d).matches() ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  for (int m : matches) EXPECT_EQ(m, 200);
}

TEST(CelCompileCacheTest, CachesProgramsButNotErrors) {
  CompileCache cache(Environment::NewDra(), 2);
  auto a = cache.GetOrCompile("true");
  auto b = cache.GetOrCompile("true");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_FALSE(cache.GetOrCompile("1").ok());
  EXPECT_EQ(cache.size(), 1u);
  ASSERT_TRUE(cache.GetOrCompile("false").ok());
  ASSERT_TRUE(cache.GetOrCompile("!false").ok());
  EXPECT_EQ(cache.size(), 2u);
  // "true" was evicted (least recently used): a new program.
  auto c = cache.GetOrCompile("true");
  EXPECT_NE(a->get(), c->get());
}

TEST(CelGenericTest, EvaluatesWithVariables) {
  GenericEnvironmentOptions options;
  options.variables = {{"x", Type::Int()}, {"names", Type::List(Type::String())}};
  auto env = Environment::NewGeneric(std::move(options));
  auto p = env->Compile(R"(names.filter(n, n.startsWith("a")).map(n, n + string(x)))");
  ASSERT_TRUE(p.ok()) << p.status().message();
  Activation act;
  act.Bind("x", Value::Int(7));
  Value names[] = {Value::String("ab"), Value::String("b"), Value::String("ac")};
  act.Bind("names", MakeList(&act.arena(), names, 3));
  EvalResult r = (*p)->Evaluate(act);
  EXPECT_EQ(FormatValue(r.value()), R"(["ab7", "ac7"])");
  EXPECT_FALSE(env->Compile("y").ok());
}

TEST(CelDeviceInputTest, ConvertsApiDevices) {
  auto device = api::resourcev1::Device();
  device.name = "gpu-0";
  device.attributes["model"].string_value = "H100";
  device.attributes["example.com/ids"].ints = {1, 2};
  device.attributes["example.com/ids"].present = 1;
  device.attributes["empty"].present = 0;
  device.capacity["memory"].value = *api::Quantity::Parse("80Gi");
  device.allow_multiple_allocations = true;
  auto input = DeviceInputFromApi(device, "gpu.example.com");
  ASSERT_TRUE(input->error(ListAttributeMode::kLists).has_value());
  EXPECT_EQ(*input->error(ListAttributeMode::kLists),
            "attribute empty: unsupported attribute value");
  device.attributes.erase("empty");
  input = DeviceInputFromApi(device, "gpu.example.com");
  ASSERT_FALSE(input->error(ListAttributeMode::kLists).has_value());
  EXPECT_TRUE(MatchExpr(R"(device.attributes["gpu.example.com"].model == "H100" && )"
                        R"(device.attributes["example.com"].ids.includes(2) && )"
                        R"(device.capacity["gpu.example.com"].memory == quantity("80Gi") && )"
                        R"(device.allowMultipleAllocations)",
                        *input)
                  .matches());
}

TEST(CelSelectorLintTest, ReportsCompileAndCostErrorsAtTheFieldPath) {
  api::resourcev1::DeviceClass cls;
  cls.spec.selectors.resize(3);
  cls.spec.selectors[0].cel.emplace().expression = R"(device.driver == "a")";
  cls.spec.selectors[1].cel.emplace().expression = "device.driver";
  cls.spec.selectors[2].cel.emplace().expression =
      R"(device.attributes["d"].exists(a, device.attributes["d"].exists(b, device.attributes["d"].exists(c, device.attributes["d"].exists(e, a == e)))))";
  api::FieldErrorList errors = LintCelSelectors(cls);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].ToString(),
            "spec.selectors[1].cel.expression: Invalid value: \"device.driver\": must evaluate "
            "to bool or the unknown type, not string");
  EXPECT_EQ(errors[1].ToString(),
            "spec.selectors[2].cel.expression: Forbidden: too complex, exceeds cost limit");

  api::resourcev1::ResourceClaim claim;
  claim.spec.devices.requests.resize(1);
  claim.spec.devices.requests[0].first_available.resize(2);
  claim.spec.devices.requests[0].first_available[1].selectors.resize(1);
  claim.spec.devices.requests[0].first_available[1].selectors[0].cel.emplace().expression = "?";
  errors = LintCelSelectors(api::Object(claim));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].field,
            "spec.devices.requests[0].firstAvailable[1].selectors[0].cel.expression");
  EXPECT_NE(errors[0].detail.find("Syntax error"), std::string::npos);
}

}  // namespace
}  // namespace draplane::cel
