// What the informers' caches pay per object (`make bench`): decoding a Pod and a ResourceClaim
// as a server with server-side apply returns them (bench/micro/data: a running Pod and its
// allocated claim, read from `draplane serve` with --show-managed-fields), with their
// metadata.managedFields decoded or dropped (api::DecodeOptions::drop_managed_fields, what the
// informers use), and copying the decoded object (what a controller does before changing one).
//
//   BM_DecodePod/0, BM_DecodeClaim/0   managed fields decoded (the typed clients' Get)
//   BM_DecodePod/1, BM_DecodeClaim/1   managed fields dropped (the informers)
//   BM_CopyPod/0, BM_CopyPod/1         a copy of the decoded Pod, with / without them
#include <benchmark/benchmark.h>

#include <boost/json.hpp>
#include <fstream>
#include <sstream>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::api {
namespace {

boost::json::value ReadJson(const std::string& name) {
  std::ifstream in(std::string(DRAPLANE_SOURCE_DIR) + "/bench/micro/data/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str());
}

template <typename T>
void Decode(benchmark::State& state, const std::string& file) {
  const boost::json::value json = ReadJson(file);
  const DecodeOptions options{.drop_managed_fields = state.range(0) == 1};
  for (auto _ : state) {
    T object;
    FieldErrorList errors;
    Decode(json, &object, &errors, options);
    benchmark::DoNotOptimize(object);
  }
}

void BM_DecodePod(benchmark::State& state) { Decode<corev1::Pod>(state, "running-pod.json"); }
void BM_DecodeClaim(benchmark::State& state) {
  Decode<resourcev1::ResourceClaim>(state, "allocated-claim.json");
}

void BM_CopyPod(benchmark::State& state) {
  corev1::Pod pod;
  FieldErrorList errors;
  Decode(ReadJson("running-pod.json"), &pod, &errors,
         DecodeOptions{.drop_managed_fields = state.range(0) == 1});
  for (auto _ : state) {
    corev1::Pod copy = pod;
    benchmark::DoNotOptimize(copy);
  }
}

BENCHMARK(BM_DecodePod)->Arg(0)->Arg(1);
BENCHMARK(BM_DecodeClaim)->Arg(0)->Arg(1);
BENCHMARK(BM_CopyPod)->Arg(0)->Arg(1);

}  // namespace
}  // namespace draplane::api

BENCHMARK_MAIN();
