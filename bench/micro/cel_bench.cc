// CEL device selector micro-benchmarks (make bench): ns per evaluation against one converted
// device, compile time, and device conversion time, for the selector shapes DRA users write.
// bench/scripts/cel_js.sh runs the same expressions through @marcbachmann/cel-js and prints the
// ratio.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cel/cel.h"

namespace draplane::cel {
namespace {

struct Case {
  const char* name;
  const char* expression;
};

// Keep in sync with bench/js/cel_js_bench.mjs.
const Case kCases[] = {
    {"driver_eq", R"(device.driver == "gpu.nvidia.com")"},
    {"attr_contains", R"(device.attributes["gpu.nvidia.com"].productName.contains("H100"))"},
    {"three_clause",
     R"(device.driver == "gpu.nvidia.com" && )"
     R"(device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3" && )"
     R"(device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0)"},
    {"semver_cmp",
     R"(device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("535.0.0")))"},
    {"regex_match",
     R"(device.attributes["gpu.nvidia.com"].productName.matches("^NVIDIA H1[0-9]{2}"))"},
    {"typical", R"(device.driver == "gpu.nvidia.com" && )"
                R"(device.attributes["gpu.nvidia.com"].productName.contains("H100") && )"
                R"(device.attributes["gpu.nvidia.com"].index >= 2)"},
    {"macro_exists", R"(device.attributes["gpu.nvidia.com"].exists(k, k.startsWith("cuda")))"},
};

std::shared_ptr<const DeviceInput> MakeDevice() {
  DeviceInput::Builder b("gpu.nvidia.com");
  b.AddString("productName", "NVIDIA H100 80GB HBM3")
      .AddString("uuid", "GPU-4d3c1f0e-8a1b-4c2d-9e3f-5a6b7c8d9e0f")
      .AddInt("index", 3)
      .AddString("architecture", "Hopper")
      .AddString("brand", "Nvidia")
      .AddString("type", "gpu")
      .AddVersion("driverVersion", "550.54.15")
      .AddVersion("cudaComputeCapability", "9.0.0")
      .AddCapacity("memory", *api::Quantity::Parse("80Gi"));
  return std::move(b).Build();
}

std::shared_ptr<const Program> CompileOrDie(const Environment& env, const char* expr) {
  auto p = env.Compile(expr);
  if (!p.ok()) {
    std::fprintf(stderr, "compile %s: %s\n", expr, std::string(p.status().message()).c_str());
    std::abort();
  }
  return *p;
}

void BM_CelEval(benchmark::State& state, const char* expression) {
  auto env = Environment::NewDra();
  auto program = CompileOrDie(*env, expression);
  auto device = MakeDevice();
  SelectorResult first = program->Match(*device);
  if (first.is_error() || !first.matches()) {
    state.SkipWithError("selector does not match the benchmark device");
    return;
  }
  for (auto _ : state) {
    SelectorResult r = program->Match(*device);
    benchmark::DoNotOptimize(r);
  }
}

void BM_CelCompile(benchmark::State& state, const char* expression) {
  auto env = Environment::NewDra();
  for (auto _ : state) {
    auto p = env->Compile(expression);
    benchmark::DoNotOptimize(p);
  }
}

void BM_CelDeviceConversion(benchmark::State& state) {
  for (auto _ : state) {
    auto d = MakeDevice();
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_CelDeviceConversion);

const bool kRegistered = [] {
  for (const Case& c : kCases) {
    benchmark::RegisterBenchmark((std::string("BM_CelEval/") + c.name).c_str(), BM_CelEval,
                                 c.expression);
    benchmark::RegisterBenchmark((std::string("BM_CelCompile/") + c.name).c_str(), BM_CelCompile,
                                 c.expression);
  }
  return true;
}();

}  // namespace
}  // namespace draplane::cel

BENCHMARK_MAIN();
