#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

#include "api/codec/json.h"
#include "api/codec/manifest.h"
#include "client/memory_api.h"
#include "client/resource_scheduling_v1.h"
#include "client/typed.h"
#include "common/status_macros.h"
#include "sim/cluster.h"
#include "sim/compare.h"
#include "sim/record.h"
#include "sim/report.h"
#include "sim/simulation.h"
#include "sim/trace.h"
#include "testing/temp_dir.h"

namespace draplane::sim {
namespace {

namespace json = boost::json;

// Two nodes with two GPUs each (model A100) and one node with one H100; one GPU class.
constexpr char kCluster[] = R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
metadata: {name: tiny}
nodePools:
- name: a100
  count: 2
  devices:
    gpus: [{count: 2, productName: NVIDIA A100-SXM4-40GB, architecture: Ampere, memory: 40Gi,
            cudaComputeCapability: "8.0", driverVersion: 550.90.07}]
- name: h100
  count: 1
  devices:
    gpus: [{count: 1, productName: NVIDIA H100 80GB HBM3, architecture: Hopper, memory: 80Gi,
            cudaComputeCapability: "9.0", driverVersion: 550.90.07}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.nvidia.com" && device.attributes["gpu.nvidia.com"].type == "gpu"'}
)";

// The trace of the issue, as written (with the Pods filled in).
constexpr char kIssueTrace[] = R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: h100-else-a100}
  spec:
    spec:
      devices:
        requests:
        - name: gpus
          firstAvailable:
          - name: h100
            deviceClassName: gpu
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
          - name: a100-pair
            deviceClassName: gpu
            count: 2
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'}
policies: []
arrivals:
- at: 0s
  namespace: team-a
  count: 10
  interval: 30s
  duration: 1h
  pod:
    metadata: {name: job}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
generators:
- namespace: team-b
  ratePerMinute: 2
  for: 24h
  duration: {median: 30m, sigma: 1.0}
  pod:
    metadata: {generateName: gen-}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
)";

// A directory of this test process's own, removed when it exits: ctest runs the test cases as
// separate processes at once, and files of the same name in one shared directory would race (and
// stay behind).
const draplane::testing::TempDir& TestDirectory() {
  static const draplane::testing::TempDir directory;
  return directory;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = TestDirectory().File(name);
  std::ofstream(path) << text;
  return path;
}

Cluster TinyCluster() {
  StatusOr<Cluster> cluster = LoadCluster({WriteTemp("cluster.yaml", kCluster)});
  EXPECT_TRUE(cluster.ok()) << cluster.status().ToString();
  return cluster.ok() ? std::move(*cluster) : Cluster{};
}

Trace ParseOrDie(const std::string& text) {
  StatusOr<Trace> trace = ParseTrace(text, "trace.yaml");
  EXPECT_TRUE(trace.ok()) << trace.status().ToString();
  return trace.ok() ? std::move(*trace) : Trace{};
}

std::string Json(const Report& r) { return api::codec::WriteJson(JsonReport(r, false)); }

TEST(TraceTest, ParsesTheIssueTraceAsWritten) {
  Trace trace = ParseOrDie(kIssueTrace);
  ASSERT_EQ(trace.arrivals.size(), 1u);
  EXPECT_EQ(trace.arrivals[0].count, 10);
  EXPECT_EQ(trace.arrivals[0].interval, std::chrono::seconds(30));
  ASSERT_EQ(trace.generators.size(), 1u);
  EXPECT_EQ(trace.generators[0].rate_per_minute, 2);
  EXPECT_TRUE(trace.generators[0].duration->log_normal);
  EXPECT_EQ(trace.generators[0].duration->median, std::chrono::minutes(30));
  // Pods get the API server's defaults.
  EXPECT_EQ(trace.arrivals[0].pod.at("spec").at("schedulerName"), "default-scheduler");

  StatusOr<std::vector<PodArrival>> pods = ExpandTrace(trace, 7);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  int job = 0;
  int generated = 0;
  for (const PodArrival& p : *pods) (p.namespace_ == "team-a" ? job : generated)++;
  EXPECT_EQ(job, 10);
  // 2/min for a day: 2,880 expected; a Poisson count is within 6 sigma (±322) of it.
  EXPECT_GT(generated, 2880 - 322);
  EXPECT_LT(generated, 2880 + 322);
  EXPECT_EQ((*pods)[0].name, "job-0");
  // Copies share their arrival's or generator's manifest; each builds its own with its name.
  EXPECT_EQ((*pods)[0].manifest, (*pods)[1].manifest);
  boost::json::object first = (*pods)[0].Manifest();
  EXPECT_EQ(first.at("metadata").at("name"), "job-0");
  EXPECT_EQ((*pods)[1].Manifest().at("metadata").at("name"), "job-1");
  EXPECT_EQ(first.at("spec").at("schedulerName"), "default-scheduler");
  EXPECT_EQ((*pods)[0].manifest->at("metadata").at("name"), "job");  // the shared one unchanged
  auto generated_pod = std::find_if(pods->begin(), pods->end(),
                                    [](const PodArrival& p) { return p.namespace_ == "team-b"; });
  ASSERT_NE(generated_pod, pods->end());
  EXPECT_TRUE(generated_pod->name.empty());
  boost::json::object from_generator = generated_pod->Manifest();
  EXPECT_EQ(from_generator.at("metadata").at("generateName"), "gen-");
  EXPECT_EQ(from_generator.at("metadata").as_object().if_contains("name"), nullptr);
}

TEST(TraceTest, ACopyDecodedFromItsDecodedManifestIsItsManifestDecoded) {
  // Names as written, generated names, and a manifest whose generateName is an explicit null
  // beside its name (the unknown fields keep it; the copy's metadata must not).
  std::string text = kIssueTrace;
  text.insert(text.find("arrivals:\n") + 10, R"(- namespace: team-c
  count: 2
  at: 1m
  duration: 1h
  pod:
    metadata: {name: odd, generateName: null, labels: {app: odd}, futureField: 1}
    spec:
      containers: [{name: main, image: x, imagePullPolicy: Never}]
)");
  Trace trace = ParseOrDie(text);
  StatusOr<std::vector<PodArrival>> pods = ExpandTrace(trace, 7);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  std::set<std::string> seen;
  for (const PodArrival& p : *pods) {
    if (!seen.insert(p.name.empty() ? "generated " + p.namespace_ : p.source).second) continue;
    StatusOr<api::corev1::Pod> shared =
        client::DecodeAs<api::corev1::Pod>(json::value(*p.manifest));
    ASSERT_TRUE(shared.ok()) << shared.status().ToString();
    StatusOr<api::corev1::Pod> named = p.Named(*shared);
    ASSERT_TRUE(named.ok()) << named.status().ToString();
    StatusOr<api::corev1::Pod> whole =
        client::DecodeAs<api::corev1::Pod>(json::value(p.Manifest()));
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    EXPECT_EQ(api::codec::WriteJson(client::ToJson(*named)),
              api::codec::WriteJson(client::ToJson(*whole)))
        << p.source << " " << p.name;
    EXPECT_EQ(named->metadata.name, p.name);
  }
  EXPECT_GE(seen.size(), 3u);
}

// A run stopped at `until` never submits the Pods arriving later: they are not expanded (a trace
// of a month measured for an hour needs an hour's memory), and the Pods before are unchanged.
TEST(TraceTest, ExpansionStopsWhereTheRunStops) {
  Trace trace = ParseOrDie(kIssueTrace);
  StatusOr<std::vector<PodArrival>> all = ExpandTrace(trace, 1);
  const Duration until = std::chrono::minutes(2);
  StatusOr<std::vector<PodArrival>> head = ExpandTrace(trace, 1, until);
  ASSERT_TRUE(all.ok() && head.ok());
  size_t expected = 0;
  while (expected < all->size() && (*all)[expected].at <= until) ++expected;
  ASSERT_EQ(head->size(), expected);
  // team-a's copies at 0s, 30s, ..., 120s (the last one exactly at the stop) and team-b's draws.
  EXPECT_EQ(std::count_if(head->begin(), head->end(),
                          [](const PodArrival& p) { return p.namespace_ == "team-a"; }),
            5);
  EXPECT_LT(expected, all->size());
  for (size_t i = 0; i < expected; ++i) {
    EXPECT_EQ((*head)[i].at, (*all)[i].at);
    EXPECT_EQ((*head)[i].name, (*all)[i].name);
    EXPECT_EQ((*head)[i].duration, (*all)[i].duration);
  }
  // Only the Pods up to the stop count against the limit.
  StatusOr<Trace> huge = ParseTrace(
      "apiVersion: draplane.dev/v1alpha1\nkind: WorkloadTrace\narrivals:\n- {at: 0s, namespace: "
      "a, count: 10000000000, interval: 1s, pod: {metadata: {name: p}, spec: {containers: [{name: "
      "c, image: x}]}}}\ngenerators:\n- {namespace: b, ratePerMinute: 100, for: 2400h, pod: "
      "{metadata: {generateName: g-}, spec: {containers: [{name: c, image: x}]}}}\n",
      "huge.yaml");
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  EXPECT_FALSE(ExpandTrace(*huge, 1).ok());
  StatusOr<std::vector<PodArrival>> hour = ExpandTrace(*huge, 1, std::chrono::hours(1));
  ASSERT_TRUE(hour.ok()) << hour.status().ToString();
  EXPECT_EQ(std::count_if(hour->begin(), hour->end(),
                          [](const PodArrival& p) { return p.namespace_ == "a"; }),
            3601);
  EXPECT_GT(hour->size(), 3601u + 5'000u);
  EXPECT_LT(hour->size(), 3601u + 7'000u);
}

TEST(TraceTest, ExpansionIsDeterministicPerSeed) {
  Trace trace = ParseOrDie(kIssueTrace);
  StatusOr<std::vector<PodArrival>> a = ExpandTrace(trace, 1);
  StatusOr<std::vector<PodArrival>> b = ExpandTrace(trace, 1);
  StatusOr<std::vector<PodArrival>> c = ExpandTrace(trace, 2);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].at, (*b)[i].at);
    EXPECT_EQ((*a)[i].duration, (*b)[i].duration);
  }
  bool differs = a->size() != c->size();
  for (size_t i = 0; !differs && i < a->size(); ++i) differs = (*a)[i].at != (*c)[i].at;
  EXPECT_TRUE(differs);
}

TEST(TraceTest, BadInputNamesTheField) {
  auto error = [](const std::string& text) {
    StatusOr<Trace> t = ParseTrace(text, "t.yaml");
    return t.ok() ? std::string("ok") : std::string(t.status().message());
  };
  const std::string head = "apiVersion: draplane.dev/v1alpha1\nkind: WorkloadTrace\n";
  EXPECT_EQ(error(head + "arrivals:\n- {at: 1x, namespace: a, pod: {metadata: {name: p}, spec: "
                         "{containers: [{name: c, image: x}]}}}\n"),
            "t.yaml: arrivals[0].at: time: unknown unit \"x\" in duration \"1x\"");
  EXPECT_EQ(error(head + "arrivals:\n- {at: 1s, namespace: a, pod: {spec: {}}}\n"),
            "t.yaml: arrivals[0].pod.metadata.name: Required value: name or generateName is "
            "required");
  EXPECT_EQ(error(head + "generators:\n- {namespace: a, for: 1h, pod: {metadata: {name: p}, spec: "
                         "{containers: [{name: c, image: x}]}}}\n"),
            "t.yaml: generators[0].ratePerMinute: Required value");
  EXPECT_EQ(error(head + "generators:\n- {namespace: a, ratePerMinute: 1, for: 1h, "
                         "duration: {median: 1m, sigma: -1}, pod: {metadata: {name: p}, spec: "
                         "{containers: [{name: c, image: x}]}}}\n"),
            "t.yaml: generators[0].duration.sigma: must be between 0 and 10");
  EXPECT_EQ(error(head + "arrival: []\n"), "t.yaml: arrival: unknown field");
  EXPECT_EQ(error(head + "claimTemplates:\n- {apiVersion: v1, kind: Pod}\n"),
            "t.yaml: claimTemplates[0]: must be a resource.k8s.io/v1 ResourceClaimTemplate");
  EXPECT_EQ(
      error(head + "arrivals:\n- {at: 0s, namespace: a, count: 2, pod: {metadata: {name: "
                   "p}, spec: {containers: [{name: c, image: x}]}}}\n- {at: 1s, namespace: a, "
                   "pod: {metadata: {name: p-1}, spec: {containers: [{name: c, image: x}]}}}\n"),
      "ok");  // parsing succeeds; the duplicate is found when the trace is expanded
  StatusOr<Trace> dup = ParseTrace(head +
                                       "arrivals:\n- {at: 0s, namespace: a, count: 2, pod: "
                                       "{metadata: {name: p}, spec: {containers: [{name: c, "
                                       "image: x}]}}}\n- {at: 1s, namespace: a, pod: {metadata: "
                                       "{name: p-1}, spec: {containers: [{name: c, image: x}]}}}\n",
                                   "t.yaml");
  ASSERT_TRUE(dup.ok());
  StatusOr<std::vector<PodArrival>> expanded = ExpandTrace(*dup, 1);
  ASSERT_FALSE(expanded.ok());
  EXPECT_EQ(expanded.status().message(),
            "t.yaml: arrivals[1]: Pod a/p-1 arrives twice (names must be unique in a namespace)");

  // Pods are held to the API server's Pod validation, names and namespaces to its name rules.
  EXPECT_EQ(error(head + "arrivals:\n- {at: 0s, namespace: a, pod: {metadata: {name: p}, spec: "
                         "{}}}\n"),
            "t.yaml: arrivals[0].pod.spec.containers: Required value");
  EXPECT_EQ(error(head + "arrivals:\n- {at: 0s, namespace: a, pod: {metadata: {name: p}, spec: "
                         "{containers: [{name: c}]}}}\n"),
            "t.yaml: arrivals[0].pod.spec.containers[0].image: Required value");
  EXPECT_EQ(error(head + "arrivals:\n- {at: 0s, namespace: a, pod: {metadata: {name: p}, spec: "
                         "{containers: [{name: c, image: x, resources: {claims: [{name: gpux}]}}], "
                         "resourceClaims: [{name: gpu, resourceClaimTemplateName: t}]}}}\n"),
            "t.yaml: arrivals[0].pod.spec.containers[0].resources.claims[0]: Not found: \"gpux\": "
            "must be one of the names in pod.spec.resourceClaims: gpu");
  EXPECT_EQ(error(head + "arrivals:\n- {at: 0s, namespace: Team_A, pod: {metadata: {name: p}, "
                         "spec: {containers: [{name: c, image: x}]}}}\n"),
            "t.yaml: arrivals[0].namespace: Invalid value: \"Team_A\": a lowercase RFC 1123 label "
            "must consist of lower case alphanumeric characters or '-', and must start and end "
            "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
            "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')");
  EXPECT_EQ(error(head + "arrivals:\n- {at: 0s, namespace: a, pod: {metadata: {name: p}, spec: "
                         "{nodeName: n1, containers: [{name: c, image: x}]}}}\n"),
            "t.yaml: arrivals[0].pod.spec.nodeName: Forbidden: the simulator schedules every "
            "trace Pod; a Pod bound by name would skip the scheduler, and its claims would never "
            "be allocated");
  EXPECT_NE(error(head + "tenants: [{namespace: Team_A, weight: 3}]\n")
                .find("t.yaml: tenants[0].namespace: Invalid value: \"Team_A\": a lowercase RFC "
                      "1123 label"),
            std::string::npos);
  // A trace too large to expand is refused before it is.
  StatusOr<Trace> huge = ParseTrace(head +
                                    "arrivals:\n- {at: 0s, namespace: a, count: 10000000000, pod: "
                                    "{metadata: {name: p}, spec: {containers: [{name: c, image: "
                                    "x}]}}}\n");
  ASSERT_TRUE(huge.ok()) << huge.status().ToString();
  StatusOr<std::vector<PodArrival>> too_many = ExpandTrace(*huge, 1);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(),
            "the trace submits about 10000000000 Pods (arrivals' counts, generators' rate × for), "
            "more than the simulator's limit of 10000000");
  EXPECT_NE(error(head + "arrivals:\n- {at: 0s, namespace: a, pod: {metadata: {name: Bad_Name}, "
                         "spec: {containers: [{name: c, image: x}]}}}\n")
                .find("t.yaml: arrivals[0].pod.metadata.name: Invalid value: \"Bad_Name\": a "
                      "lowercase RFC 1123 subdomain"),
            std::string::npos);
}

TEST(TraceTest, YamlRoundTrip) {
  Trace trace = ParseOrDie(kIssueTrace);
  StatusOr<Trace> again = ParseTrace(TraceToYaml(trace));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(TraceToYaml(*again), TraceToYaml(trace));
}

// Three Pods wanting an H100 else two A100s: the first gets the H100, the next two fall back to
// A100 pairs, a fourth waits until the first completes.
constexpr char kFallbackTrace[] = R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
metadata: {name: fallback}
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: h100-else-a100}
  spec:
    spec:
      devices:
        requests:
        - name: gpus
          firstAvailable:
          - name: h100
            deviceClassName: gpu
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
          - name: a100-pair
            deviceClassName: gpu
            count: 2
            selectors:
            - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'}
arrivals:
- at: 0s
  namespace: team-a
  count: 4
  interval: 10s
  duration: 1h
  pod:
    metadata: {name: job}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
)";

TEST(SimulationTest, RunsTheRealSchedulerInVirtualTime) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(kFallbackTrace);
  StatusOr<Report> report = RunSimulation(cluster, trace, RunOptions{.placements = true});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  EXPECT_EQ(report->submitted, 4);
  EXPECT_EQ(report->scheduled, 4);
  EXPECT_EQ(report->nodes, 3);
  // Tiers: the H100, two A100 pairs, then the fourth Pod takes the freed H100 after an hour.
  EXPECT_EQ(report->fallback_by_tier.at(0), 2);
  EXPECT_EQ(report->fallback_by_tier.at(1), 2);
  ASSERT_EQ(report->placements.size(), 4u);
  EXPECT_EQ(report->placements[0].node, "h100-0");
  EXPECT_EQ(report->placements[0].tiers, std::vector<std::string>{"gpus -> h100"});
  EXPECT_EQ(report->placements[1].tiers, std::vector<std::string>{"gpus -> a100-pair"});
  EXPECT_EQ(report->placements[1].devices.size(), 2u);
  EXPECT_NE(report->placements[1].node, report->placements[2].node);
  // The fourth Pod (arrived at 30s) waits for job-0 (bound at 0s, runs 1h).
  EXPECT_DOUBLE_EQ(report->placements[3].bound, 3600);
  EXPECT_DOUBLE_EQ(report->wait.max, 3570);
  EXPECT_EQ(report->placements[3].node, "h100-0");
  // 5 device units; devices held: 1 h + 2 h + 2 h + 1 h = 6 device-hours over the window
  // (the arrivals end at 30 s; the window is when the last Pod would end had it run at once).
  EXPECT_DOUBLE_EQ(report->tenants.at("team-a").device_seconds,
                   report->utilization * report->offered_units * report->window_seconds);
  EXPECT_EQ(report->offered_units, 5);
  EXPECT_GE(report->decisions, 4);
}

TEST(SimulationTest, SameSeedSameReportOtherSeedOtherReport) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(std::string(kFallbackTrace) + R"(
generators:
- namespace: team-b
  ratePerMinute: 0.25
  for: 3h
  duration: {median: 8m, sigma: 1}
  pod:
    metadata: {generateName: gen-}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: h100-else-a100}]
)");
  StatusOr<Report> a = RunSimulation(cluster, trace, RunOptions{.seed = 5});
  StatusOr<Report> b = RunSimulation(cluster, trace, RunOptions{.seed = 5});
  StatusOr<Report> c = RunSimulation(cluster, trace, RunOptions{.seed = 6});
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_TRUE(a->conservation.ok()) << Json(*a);
  EXPECT_EQ(Json(*a), Json(*b));
  EXPECT_NE(Json(*a), Json(*c));
  EXPECT_GT(a->submitted, 30);
  EXPECT_GT(a->scheduled, 30);
}

// A completed Pod's generated claim is deleted by the garbage collector, as in a cluster; a claim
// left behind would count as a pending request and make the free H100 look stranded while an
// A100 pair waits.
TEST(SimulationTest, ClaimsOfCompletedPodsAreCollectedAndNotCountedAsPending) {
  StatusOr<Cluster> cluster = LoadCluster({WriteTemp("two-classes.yaml", std::string(kCluster) + R"(
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a100}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'}
)")});
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
horizon: 3h
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one-h100}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: h100}}]}}}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: a100-pair}
  spec: {spec: {devices: {requests: [{name: gpus, exactly: {deviceClassName: a100, count: 2}}]}}}
arrivals:
- at: 0s
  namespace: team-a
  duration: 1m
  pod:
    metadata: {name: short}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-h100}]
- at: 0s
  namespace: team-a
  count: 2
  duration: 2h
  pod:
    metadata: {name: long}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: a100-pair}]
- at: 2m
  namespace: team-a
  duration: 1h
  pod:
    metadata: {name: waiting}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpus, resourceClaimTemplateName: a100-pair}]
)");
  StatusOr<Report> report = RunSimulation(*cluster, trace, RunOptions{});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  EXPECT_EQ(report->scheduled, 4);
  EXPECT_DOUBLE_EQ(report->wait.max, 7200 - 120);
  // While "waiting" waits for an A100 pair, only the H100 is free: no pending request asks for it.
  EXPECT_DOUBLE_EQ(report->fragmentation_devices, 0) << Json(*report);
}

TEST(SimulationTest, UnschedulablePodsSayWhy) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
claims:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: eight, namespace: ns}
  spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu, count: 8}}]}}
arrivals:
- at: 0s
  namespace: ns
  pod:
    metadata: {name: big}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: r, resourceClaimName: eight}]
- at: 0s
  namespace: ns
  deleteAfter: 10m
  pod:
    metadata: {name: impatient}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: r, resourceClaimName: eight}]
)");
  StatusOr<Report> report = RunSimulation(cluster, trace, RunOptions{});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  EXPECT_EQ(report->unscheduled, 2);
  std::map<std::string, std::string> reasons;
  for (const UnscheduledReason& u : report->unscheduled_reasons) reasons[u.reason] = u.message;
  ASSERT_TRUE(reasons.contains("Unschedulable")) << Json(*report);
  EXPECT_EQ(reasons["Unschedulable"].rfind("0/3 nodes are available", 0), 0u)
      << reasons["Unschedulable"];
  EXPECT_TRUE(reasons.contains("DeletedWhilePending"));
  // The same reasons per tenant (where a tenant's quota rejections show).
  EXPECT_EQ(report->tenants.at("ns").unscheduled_by_reason,
            (std::map<std::string, int64_t>{{"DeletedWhilePending", 1}, {"Unschedulable", 1}}));
}

// A trace Pod naming a template or claim the input does not hold (a dump taken without
// `resourceclaimtemplates`, a typo) would never run: an input error, not a report of Pods that
// waited for ever.
TEST(SimulationTest, ATracePodNamingAMissingTemplateOrClaimIsAnInputError) {
  Cluster cluster = TinyCluster();
  const std::string head = R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
arrivals:
- at: 0s
  namespace: ns
  pod:
    metadata: {name: fine}
    spec:
      containers: [{name: c, image: x}]
- at: 1m
  namespace: ns
  pod:
    metadata: {name: templated}
    spec:
      containers: [{name: c, image: x}]
)";
  StatusOr<Report> report = RunSimulation(
      cluster,
      ParseOrDie(head + "      resourceClaims: [{name: r, resourceClaimTemplateName: missing}]\n"),
      RunOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "trace.yaml: arrivals[1].pod.spec.resourceClaims[0].resourceClaimTemplateName: Not "
            "found: "
            "ResourceClaimTemplate ns/missing is in neither the trace's claimTemplates or policies "
            "nor the cluster input");
  // A weight for a namespace without Pods (a misspelled tenant) would weigh nothing.
  report = RunSimulation(cluster, ParseOrDie(head + "tenants: [{namespace: nss, weight: 3}]\n"),
                         RunOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "trace.yaml: tenants[0].namespace: Not found: no Pod of the trace or the cluster input "
            "is in namespace nss");
  report = RunSimulation(
      cluster, ParseOrDie(head + "      resourceClaims: [{name: r, resourceClaimName: missing}]\n"),
      RunOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().message(),
            "trace.yaml: arrivals[1].pod.spec.resourceClaims[0].resourceClaimName: Not found: "
            "ResourceClaim "
            "ns/missing is in neither the trace's claims nor the cluster input");
}

// A running Pod deleted by its deleteAfter before its duration ended is counted as such, with
// when: every scheduled Pod is completed, running at the end, or deleted while running.
TEST(SimulationTest, APodDeletedWhileRunningIsCountedWithItsDeletion) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
horizon: 30m
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one, namespace: ns}
  spec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}}
arrivals:
- at: 0s
  namespace: ns
  duration: 1h
  deleteAfter: 10m
  pod:
    metadata: {name: cut-short}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: r, resourceClaimTemplateName: one}]
)");
  StatusOr<Report> report = RunSimulation(cluster, trace, RunOptions{.placements = true});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  EXPECT_EQ(report->scheduled, 1) << Json(*report);
  EXPECT_EQ(report->completed, 0);
  EXPECT_EQ(report->running_at_end, 0);
  EXPECT_EQ(report->deleted_while_running, 1);
  ASSERT_EQ(report->placements.size(), 1u);
  EXPECT_DOUBLE_EQ(report->placements[0].deleted, 600);
}

// A ResourceQuota in the default mode is the API server's admission: a claim the quota has no
// room for is refused when the resourceclaim controller creates it, the controller retries, and
// the devices of finished Pods' claims come back to the quota.
TEST(SimulationTest, ADefaultModeQuotaRefusesClaimsUntilFinishedPodsGiveTheirDevicesBack) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one-gpu}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
arrivals:
- at: 0s
  namespace: team-a
  count: 4
  duration: 20m
  pod:
    metadata: {name: job}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
)");
  StatusOr<Configuration> quota = LoadConfiguration({WriteTemp("quota-admission.yaml", R"(
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard: {gpu.deviceclass.resource.k8s.io/devices: "2"}
)")});
  ASSERT_TRUE(quota.ok()) << quota.status().ToString();

  // Without the quota the cluster's five GPUs take all four at once.
  StatusOr<Report> free = RunSimulation(cluster, trace, RunOptions{.until = std::chrono::hours(1)});
  ASSERT_TRUE(free.ok()) << free.status().ToString();
  EXPECT_EQ(free->scheduled, 4);
  EXPECT_EQ(free->wait.max, 0);

  // With it, two wait: refused while the first two run, then made and scheduled.
  StatusOr<Report> early = RunSimulation(
      cluster, trace, RunOptions{.policies = quota->policies, .until = std::chrono::minutes(10)});
  ASSERT_TRUE(early.ok()) << early.status().ToString();
  EXPECT_EQ(early->scheduled, 2) << Json(*early);
  ASSERT_EQ(early->unscheduled_reasons.size(), 1u) << Json(*early);
  EXPECT_EQ(early->unscheduled_reasons[0].reason, "ClaimNotCreated");
  EXPECT_EQ(early->unscheduled_reasons[0].count, 2);
  const std::string& message = early->unscheduled_reasons[0].message;
  EXPECT_TRUE(
      message.starts_with("PodResourceClaim gpu: create ResourceClaim gpu: "
                          "resourceclaims.resource.k8s.io \"job-"))
      << message;
  EXPECT_TRUE(
      message.ends_with("\" is forbidden: exceeded quota: gpus, requested: "
                        "gpu.deviceclass.resource.k8s.io/devices=1, used: "
                        "gpu.deviceclass.resource.k8s.io/devices=2, limited: "
                        "gpu.deviceclass.resource.k8s.io/devices=2"))
      << message;

  // A quota of Pods refuses the trace's Pods themselves: RejectedByApi, with the API's message.
  StatusOr<Configuration> pods = LoadConfiguration({WriteTemp("quota-pods.yaml", R"(
apiVersion: v1
kind: ResourceQuota
metadata: {name: pods, namespace: team-a}
spec:
  hard: {count/pods: "3"}
)")});
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  StatusOr<Report> capped = RunSimulation(
      cluster, trace, RunOptions{.policies = pods->policies, .until = std::chrono::hours(1)});
  ASSERT_TRUE(capped.ok()) << capped.status().ToString();
  EXPECT_EQ(capped->scheduled, 3);
  ASSERT_EQ(capped->unscheduled_reasons.size(), 1u) << Json(*capped);
  EXPECT_EQ(capped->unscheduled_reasons[0].reason, "RejectedByApi");
  EXPECT_EQ(capped->unscheduled_reasons[0].message,
            "pods \"job-3\" is forbidden: exceeded quota: pods, requested: count/pods=1, used: "
            "count/pods=3, limited: count/pods=3");

  // A dump's quota counts the dump's claims (created first, never refused, even over the limit)
  // and limits what the trace adds.
  StatusOr<Cluster> dumped =
      LoadCluster({WriteTemp("cluster.yaml", kCluster), WriteTemp("dump.yaml", R"(
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ResourceQuota
  metadata: {name: gpus, namespace: team-a}
  spec: {hard: {gpu.deviceclass.resource.k8s.io/devices: "1"}}
  status:
    hard: {gpu.deviceclass.resource.k8s.io/devices: "1"}
    used: {gpu.deviceclass.resource.k8s.io/devices: "0"}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: held, namespace: team-a}
  spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, count: 2}}]}}
)")});
  ASSERT_TRUE(dumped.ok()) << dumped.status().ToString();
  StatusOr<Report> over =
      RunSimulation(*dumped, trace, RunOptions{.until = std::chrono::minutes(10)});
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->scheduled, 0) << Json(*over);
  ASSERT_EQ(over->unscheduled_reasons.size(), 1u) << Json(*over);
  EXPECT_EQ(over->unscheduled_reasons[0].reason, "ClaimNotCreated");
  EXPECT_TRUE(over->unscheduled_reasons[0].message.ends_with(
      "exceeded quota: gpus, requested: gpu.deviceclass.resource.k8s.io/devices=1, used: "
      "gpu.deviceclass.resource.k8s.io/devices=2, limited: "
      "gpu.deviceclass.resource.k8s.io/devices=1"))
      << over->unscheduled_reasons[0].message;

  StatusOr<Report> later = RunSimulation(
      cluster, trace, RunOptions{.policies = quota->policies, .until = std::chrono::hours(1)});
  ASSERT_TRUE(later.ok()) << later.status().ToString();
  EXPECT_TRUE(later->conservation.ok()) << Json(*later);
  EXPECT_EQ(later->scheduled, 4) << Json(*later);
  // The first two ran 20 minutes; the retries' backoff adds at most 1000 s.
  EXPECT_GE(later->wait.max, 20 * 60);
  EXPECT_LE(later->wait.max, 20 * 60 + 1000);
}

// Every policy kind the API serves is accepted and created before the trace starts — a
// ResourceQuota without a namespace in every namespace of the trace — and validated as the API
// server would: a bad one fails the run naming the object, the field and the reason.
TEST(SimulationTest, QuotaPoliciesAreValidatedAndApplied) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(std::string(kIssueTrace) + R"(
horizon: 2h
)");
  StatusOr<Configuration> quota = LoadConfiguration({WriteTemp("quota.yaml", R"(
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus}
spec:
  hard: {count/resourceclaims.resource.k8s.io: "100", gpu.deviceclass.resource.k8s.io/devices: "4"}
)")});
  ASSERT_TRUE(quota.ok()) << quota.status().ToString();
  StatusOr<Report> report = RunSimulation(cluster, trace, RunOptions{.policies = quota->policies});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  EXPECT_EQ(report->policy_kinds.at("ResourceQuota"), 1);
  EXPECT_EQ(report->configuration.back(), "ResourceQuota gpus");

  quota->policies[0].object["spec"].as_object()["hard"].as_object()["requests.nvidia.com/gpu"] =
      "-1";
  report = RunSimulation(cluster, trace, RunOptions{.policies = quota->policies});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("quota.yaml:1: ResourceQuota//gpus: "
                                           "spec.hard[requests.nvidia.com/gpu]"),
            std::string::npos)
      << report.status().ToString();
  EXPECT_NE(report.status().message().find("must be greater than or equal to 0"), std::string::npos)
      << report.status().ToString();
}

TEST(SimulationTest, SnapshotPodsKeepTheirDevicesAndDoubleAllocationIsCaught) {
  // A kubectl dump: one node with one GPU, a running Pod holding it through its claim, and a
  // second claim allocated the same device (a corrupt snapshot: the check must see it). The slice
  // is owned by its Node, as a kubelet plugin publishes it, and listed before it: the Node's uid
  // changes in the simulated API, and the slice must still find its owner (the garbage collector
  // deleted it, and the GPU with it).
  std::string node = R"(
apiVersion: v1
kind: List
items:
- apiVersion: resource.k8s.io/v1
  kind: ResourceSlice
  metadata:
    name: n1-gpu
    ownerReferences: [{apiVersion: v1, kind: Node, name: n1, uid: node-old-uid, controller: true}]
  spec:
    driver: gpu.example.com
    nodeName: n1
    pool: {name: n1, generation: 1, resourceSliceCount: 1}
    devices: [{name: g0}]
- apiVersion: v1
  kind: Node
  metadata: {name: n1, uid: node-old-uid}
  status: {allocatable: {pods: "110"}, capacity: {pods: "110"}}
- apiVersion: resource.k8s.io/v1
  kind: DeviceClass
  metadata: {name: gpu}
  spec: {selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]}
- apiVersion: v1
  kind: Pod
  metadata: {name: runner, namespace: ns, uid: old-uid}
  spec:
    nodeName: n1
    containers: [{name: c, image: x}]
    resourceClaims: [{name: r, resourceClaimName: held}]
  status: {phase: Running}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: held, namespace: ns, finalizers: [resource.kubernetes.io/delete-protection]}
  spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}
  status:
    allocation:
      devices: {results: [{request: r, driver: gpu.example.com, pool: n1, device: g0}]}
      nodeSelector:
        nodeSelectorTerms: [{matchFields: [{key: metadata.name, operator: In, values: [n1]}]}]
    reservedFor: [{resource: pods, name: runner, uid: old-uid}]
)";
  std::string second = R"(
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: stolen, namespace: ns}
  spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}
  status:
    allocation:
      devices: {results: [{request: r, driver: gpu.example.com, pool: n1, device: g0}]}
)";
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
running: [{namespace: ns, name: runner, remaining: 20m}]
arrivals:
- at: 0s
  namespace: ns
  duration: 10m
  pod:
    metadata: {name: next}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: r, resourceClaimTemplateName: one}]
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one}
  spec: {spec: {devices: {requests: [{name: r, exactly: {deviceClassName: gpu}}]}}}
)");
  StatusOr<Cluster> healthy = LoadCluster({WriteTemp("dump.yaml", node)});
  ASSERT_TRUE(healthy.ok()) << healthy.status().ToString();
  StatusOr<Report> report = RunSimulation(*healthy, trace, RunOptions{.placements = true});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  ASSERT_EQ(report->placements.size(), 1u);
  // The snapshot's Pod keeps the GPU for its remaining 20 minutes.
  EXPECT_DOUBLE_EQ(report->placements[0].bound, 1200);
  EXPECT_EQ(report->placements[0].devices, std::vector<std::string>{"gpu.example.com/n1/g0"})
      << Json(*report);

  // A dump that shows no consistent cluster is an input error naming what is wrong, not a run
  // whose conservation check fails: a device allocated to two claims, a device no slice has, a
  // running Pod whose claim the dump lacks (its device would count as free).
  StatusOr<Cluster> corrupt = LoadCluster({WriteTemp("dump2.yaml", node + second)});
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().message(),
            "ResourceClaim ns/stolen: status.allocation.devices.results[0]: device "
            "gpu.example.com/n1/g0 is allocated to ResourceClaim ns/held too");
  std::string ghost = node;
  ghost.replace(ghost.find("device: g0}"), 11, "device: g9}");
  StatusOr<Cluster> ghosted = LoadCluster({WriteTemp("dump3.yaml", ghost)});
  ASSERT_FALSE(ghosted.ok());
  EXPECT_EQ(ghosted.status().message(),
            "ResourceClaim ns/held: status.allocation.devices.results[0]: device "
            "gpu.example.com/n1/g9 is in no ResourceSlice of the cluster input");
  std::string claimless =
      node.substr(0, node.find("- apiVersion: resource.k8s.io/v1\n  kind: ResourceClaim\n"));
  StatusOr<Cluster> orphan = LoadCluster({WriteTemp("dump4.yaml", claimless)});
  ASSERT_FALSE(orphan.ok());
  EXPECT_NE(orphan.status().message().find(
                "Pod ns/runner: spec.resourceClaims[0]: the running Pod uses ResourceClaim "
                "ns/held, which the cluster input does not hold"),
            std::string::npos)
      << orphan.status().ToString();

  // Nor is an object no API server would hold (the server's validation on create): a slice
  // listing a device twice would otherwise simulate one device, the second silently dropped.
  std::string twice = node;
  twice.replace(twice.find("devices: [{name: g0}]"), 21, "devices: [{name: g0}, {name: g0}]");
  StatusOr<Cluster> invalid = LoadCluster({WriteTemp("dump5.yaml", twice)});
  ASSERT_FALSE(invalid.ok());
  EXPECT_NE(invalid.status().message().find(
                "ResourceSlice//n1-gpu: spec.devices[1]: Duplicate value: \"g0\""),
            std::string::npos)
      << invalid.status().ToString();

  // A `running` entry that names no running Pod of the dump is a mistake, not a default.
  Trace misspelled = trace;
  misspelled.running[0].name = "runer";
  StatusOr<Report> unmatched = RunSimulation(*healthy, misspelled, RunOptions{});
  ASSERT_FALSE(unmatched.ok());
  EXPECT_EQ(unmatched.status().message(),
            "trace.yaml: running[0]: Not found: no running Pod ns/runer in the cluster");
  // Nor is a cluster without nodes something to simulate.
  StatusOr<Report> empty = RunSimulation(Cluster{}, ParseOrDie(kIssueTrace), RunOptions{});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("the cluster has no nodes"), std::string::npos);
}

// Issue 22: a trace's DeviceSharingPolicy (the issue's example) is validated as the API server
// would and created before the trace starts; a bad one fails the run with its field path.
TEST(SimulationTest, SharingPoliciesAreValidatedAndApplied) {
  Cluster cluster = TinyCluster();
  const std::string policy = R"(policies:
- apiVersion: draplane.dev/v1alpha1
  kind: DeviceSharingPolicy
  metadata: {name: default}
  spec:
    domains:
    - name: accelerators
      deviceClasses: [h100, a100]
      cost: {h100: {perDevice: 4}, a100: {perDevice: 2}}
    tenants:
    - {namespaces: [team-a], weight: 3}
    - {namespaceSelector: {matchLabels: {tier: batch}}, weight: 1}
    defaultWeight: 1
    usage: {halfLife: 24h, historyFraction: 0.5}
    aging: {fullCreditAfter: 30m, starvationThreshold: 2h, maxHold: 15m}
)";
  auto with_policy = [](const std::string& policies) {
    std::string text = std::string(kIssueTrace) + "horizon: 2h\n";
    text.replace(text.find("policies: []\n"), 13, policies);
    return ParseOrDie(text);
  };
  StatusOr<Report> report = RunSimulation(cluster, with_policy(policy), RunOptions{});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->policy_kinds.at("DeviceSharingPolicy"), 1);
  EXPECT_EQ(report->configuration.back(), "DeviceSharingPolicy default");

  std::string bad = policy;
  bad.replace(bad.find("weight: 3"), 9, "weight: 0");
  report = RunSimulation(cluster, with_policy(bad), RunOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find("policies[0]: DeviceSharingPolicy//default: "
                                           "spec.tenants[0].weight: Invalid value: 0: must be "
                                           "greater than 0"),
            std::string::npos)
      << report.status().ToString();
}

// Issue 22: a trace's Pods resolve their priorityClassName through the trace's PriorityClasses
// (and the system ones) as the API server's Priority admission does, and the real scheduler's
// queue serves the higher band first: on a cluster saturated with a low band, the 1000 Pod that
// arrives last takes the first device that frees up, before every Pod of the lower band.
TEST(SimulationTest, APriorityClass1000PodIsScheduledBeforeAnyLowerBand) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: one-gpu}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu}}]}}}
policies:
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: urgent}, value: 1000}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: batch}, value: 10,
   globalDefault: true}
arrivals:
- at: 0s
  namespace: team-a
  count: 5
  interval: 1s
  duration: 1h
  pod:
    metadata: {name: first}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
- at: 10s
  namespace: team-a
  count: 5
  interval: 1s
  duration: 1h
  pod:
    metadata: {name: low}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
- at: 20s
  namespace: team-b
  duration: 1h
  pod:
    metadata: {name: urgent}
    spec:
      priorityClassName: urgent
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
- at: 20s
  namespace: team-b
  pod:
    metadata: {name: unknown-class}
    spec:
      priorityClassName: gold
      containers: [{name: c, image: x}]
)");
  StatusOr<Report> report = RunSimulation(cluster, trace, RunOptions{.placements = true});
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->conservation.ok()) << Json(*report);
  std::map<std::string, Placement> by_pod;
  for (const Placement& p : report->placements) by_pod[p.pod] = p;
  ASSERT_TRUE(by_pod.contains("team-b/urgent")) << Json(*report);
  // first-0 frees the first device at 3600 s; the urgent Pod takes it.
  EXPECT_DOUBLE_EQ(by_pod["team-b/urgent"].bound, 3600) << Json(*report);
  for (int i = 0; i < 5; ++i) {
    const Placement& low = by_pod["team-a/low-" + std::to_string(i)];
    EXPECT_GT(low.bound, by_pod["team-b/urgent"].bound) << low.pod;
  }
  // An unknown class is refused at creation, with the API server's message.
  std::map<std::string, std::string> reasons;
  for (const UnscheduledReason& u : report->unscheduled_reasons) reasons[u.reason] = u.message;
  ASSERT_TRUE(reasons.contains("RejectedByApi")) << Json(*report);
  EXPECT_NE(reasons["RejectedByApi"].find("no PriorityClass with name gold was found"),
            std::string::npos)
      << reasons["RejectedByApi"];
}

// `jobs` jobs per tenant at t=0 in each tenant's order, alternately 8 and 12 minutes (mean 10),
// each Pod using `template_of(tenant)`; a 100-minute window (10 mean durations).
std::string SaturatingArrivals(const std::vector<std::string>& tenants, int jobs,
                               const std::function<std::string(const std::string&)>& template_of) {
  std::string arrivals;
  for (int i = 0; i < jobs; ++i) {
    for (const std::string& ns : tenants) {
      char name[16];
      std::snprintf(name, sizeof(name), "job-%02d", i);
      arrivals += "- {at: 0s, namespace: " + ns + ", duration: " + (i % 2 == 0 ? "8m" : "12m") +
                  ", pod: {metadata: {name: " + name +
                  "}, spec: {containers: [{name: c, image: x}], resourceClaims: [{name: gpu, "
                  "resourceClaimTemplateName: " +
                  template_of(ns) + "}]}}}\n";
    }
  }
  return arrivals;
}

// Runs `trace` with the DeviceSharingPolicy `spec` (YAML under `spec:`) given as `--policy`.
StatusOr<Report> RunWithSharingPolicy(const Cluster& cluster, const Trace& trace,
                                      const std::string& spec) {
  StatusOr<Configuration> policy = LoadConfiguration({WriteTemp("sharing.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: DeviceSharingPolicy
metadata: {name: default}
spec:
)" + spec)});
  if (!policy.ok()) return policy.status();
  return RunSimulation(cluster, trace, RunOptions{.policies = policy->policies});
}

// Every one of `tenants` tenants stayed saturated and got within 5 % of its fair share; Jain's
// index at least 0.9; conservation held.
void ExpectFairShares(const Report& report, size_t tenants) {
  EXPECT_TRUE(report.conservation.ok()) << Json(report);
  ASSERT_EQ(report.tenants.size(), tenants) << Json(report);
  for (const auto& [ns, tenant] : report.tenants) {
    EXPECT_GT(tenant.unscheduled, 0) << ns << ": the cluster must stay saturated";
    EXPECT_NEAR(tenant.share / tenant.fair_share, 1.0, 0.05)
        << ns << " share " << tenant.share << " fair " << tenant.fair_share;
  }
  EXPECT_GE(report.jain_index, 0.9);
}

// An example of examples/sim/ by file name.
std::string Example(const std::string& name) {
  return std::string(DRAPLANE_SOURCE_DIR) + "/examples/sim/" + name;
}

// Runs the examples `trace` and `policy` on examples/sim/fair-share-weights-cluster.yaml, as
// `draplane sim run --policy` does; `policy` empty: upstream's order.
StatusOr<Report> RunWeightsExample(const std::string& trace, const std::string& policy) {
  DRAPLANE_ASSIGN_OR_RETURN(Cluster cluster,
                            LoadCluster({Example("fair-share-weights-cluster.yaml")}));
  DRAPLANE_ASSIGN_OR_RETURN(Trace workload, LoadTrace(Example(trace)));
  RunOptions options;
  if (!policy.empty()) {
    DRAPLANE_ASSIGN_OR_RETURN(Configuration config, LoadConfiguration({Example(policy)}));
    options.policies = config.policies;
  }
  return RunSimulation(cluster, workload, options);
}

// Issue 22 (c), examples/sim/fair-share-weights-*.yaml: two tenants with weights 3:1 flood a
// saturated cluster of 8 GPUs with jobs of 8 and 12 minutes (mean 10). With the fair-share order
// each tenant's time-averaged share of the device-seconds over 10 mean durations is within 5 % of
// its weighted fair share and Jain's index is at least 0.9; with upstream's order (arrival) the
// shares are nowhere near the weights.
TEST(SimulationTest, FairShareGivesTenantsWeighted3To1SharesOnASaturatedCluster) {
  StatusOr<Report> fair =
      RunWeightsExample("fair-share-weights-trace.yaml", "fair-share-weights-policy.yaml");
  ASSERT_TRUE(fair.ok()) << fair.status().ToString();
  ExpectFairShares(*fair, 2);
  EXPECT_NEAR(fair->tenants["team-a"].fair_share, 0.75, 1e-9);
  EXPECT_GT(fair->utilization, 0.95);

  // The same trace in arrival order: the weights are not met (the test can fail).
  StatusOr<Report> fifo = RunWeightsExample("fair-share-weights-trace.yaml", "");
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  const TenantReport& b = fifo->tenants["team-b"];
  EXPECT_GT(std::abs(b.share / b.fair_share - 1), 0.2)
      << "share " << b.share << " fair " << b.fair_share;
  EXPECT_LT(fifo->jain_index, fair->jain_index);
}

// Issue 22 (c), equal weights (examples/sim/fair-share-equal-*.yaml): three tenants 1:1:1
// flooding the same 8 GPUs share them equally.
TEST(SimulationTest, FairShareGivesThreeEqualTenantsAThirdEach) {
  StatusOr<Report> fair =
      RunWeightsExample("fair-share-equal-trace.yaml", "fair-share-equal-policy.yaml");
  ASSERT_TRUE(fair.ok()) << fair.status().ToString();
  ExpectFairShares(*fair, 3);
}

// Issue 22 (b): team-a prefers an H100 and takes an A100 otherwise, team-b can use H100s only;
// both flood a cluster of 8 H100s and 4 A100s in one domain where an H100 costs two A100s (40
// units). Equal weights give each 20 units: team-b's fair share of the H100s is 5 of 8 (team-a's
// 20 are its 4 A100s and 3 H100s). Over 10 mean job durations team-b holds within 5 % of that;
// in arrival order (the tenants' jobs alternating) the split is another one (6 of 8 measured).
TEST(SimulationTest, FairShareGivesTheTenantThatCanOnlyUseH100sItsFairShareOfThem) {
  StatusOr<Cluster> cluster = LoadCluster({WriteTemp("h100-a100.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
metadata: {name: h100-a100}
nodePools:
- name: h100
  count: 2
  devices:
    gpus: [{count: 4, productName: NVIDIA H100 80GB HBM3, architecture: Hopper, memory: 80Gi,
            cudaComputeCapability: "9.0", driverVersion: 550.90.07}]
- name: a100
  count: 1
  devices:
    gpus: [{count: 4, productName: NVIDIA A100-SXM4-40GB, architecture: Ampere, memory: 40Gi,
            cudaComputeCapability: "8.0", driverVersion: 550.90.07}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA H100")'}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a100}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.nvidia.com"].productName.startsWith("NVIDIA A100")'}
)")});
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  Trace trace = ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
horizon: 100m
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: h100-else-a100}
  spec:
    spec:
      devices:
        requests:
        - name: gpu
          firstAvailable: [{name: h100, deviceClassName: h100}, {name: a100, deviceClassName: a100}]
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: h100-only}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: h100}}]}}}
arrivals:
)" + SaturatingArrivals({"team-a", "team-b"}, 70, [](const std::string& ns) {
                             return ns == "team-a" ? "h100-else-a100" : "h100-only";
                           }));
  // team-b's H100s held on average over the window.
  auto h100s = [](const Report& r) {
    auto t = r.tenants.find("team-b");
    if (t == r.tenants.end()) return 0.0;
    auto s = t->second.device_seconds_by_class.find("h100");
    return s == t->second.device_seconds_by_class.end() ? 0.0 : s->second / (100 * 60);
  };
  StatusOr<Report> fair = RunWithSharingPolicy(*cluster, trace, R"(
  domains:
  - name: accelerators
    deviceClasses: [h100, a100]
    cost: {h100: {perDevice: 4}, a100: {perDevice: 2}}
)");
  ASSERT_TRUE(fair.ok()) << fair.status().ToString();
  EXPECT_TRUE(fair->conservation.ok()) << Json(*fair);
  EXPECT_NEAR(h100s(*fair), 5, 0.25) << Json(*fair);
  EXPECT_GT(fair->utilization, 0.95);

  StatusOr<Report> fifo = RunSimulation(*cluster, trace, RunOptions{});
  ASSERT_TRUE(fifo.ok()) << fifo.status().ToString();
  EXPECT_GT(std::abs(h100s(*fifo) - 5), 0.5) << Json(*fifo);
}

TEST(ClusterChangeTest, ConvertsNodesAndComparesConfigurations) {
  Cluster cluster = TinyCluster();
  std::string change = WriteTemp("change.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterChange
metadata: {name: mig}
changes:
- convertNodes:
    nodes: {names: [a100-1]}
    to:
      devices:
        gpus:
        - count: 2
          productName: NVIDIA A100-SXM4-40GB
          architecture: Ampere
          cudaComputeCapability: "8.0"
          driverVersion: 550.90.07
          memory: 40Gi
          mig:
            memorySlices: 8
            profiles: [{name: 3g.20gb, memory: 20Gi, memorySlices: 4}]
- setLabels: {nodes: {selector: "kubernetes.io/hostname=h100-0"}, labels: {team: a}}
)");
  StatusOr<Configuration> config = LoadConfiguration({change});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  Cluster changed = cluster;
  ASSERT_TRUE(ApplyClusterChange(config->changes[0], &changed).ok());
  int a100_1_slices = 0;
  bool labelled = false;
  for (const json::object& o : changed.objects) {
    if (o.at("kind") == "ResourceSlice" && o.at("spec").at("nodeName") == "a100-1") {
      ++a100_1_slices;
    }
    if (o.at("kind") == "Node" && o.at("metadata").at("name") == "h100-0") {
      labelled = o.at("metadata").at("labels").as_object().if_contains("team") != nullptr;
    }
  }
  EXPECT_EQ(a100_1_slices, 2);  // devices and their counter sets
  EXPECT_TRUE(labelled);

  StatusOr<Configuration> missing = LoadConfiguration({WriteTemp("bad-change.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterChange
changes:
- removeNodes: {nodes: {names: [nope]}}
)")});
  ASSERT_TRUE(missing.ok());
  Status s = ApplyClusterChange(missing->changes[0], &changed);
  EXPECT_NE(s.message().find("changes[0].removeNodes.nodes.names: Not found: \"nope\""),
            std::string::npos)
      << s.ToString();
  // A selector that matches no node is a mistyped change, not one without effect.
  StatusOr<Configuration> typo = LoadConfiguration({WriteTemp("typo-change.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterChange
changes:
- removeNodes: {nodes: {selector: "accelerator=a1000"}}
)")});
  ASSERT_TRUE(typo.ok());
  s = ApplyClusterChange(typo->changes[0], &changed);
  EXPECT_NE(s.message().find("changes[0].removeNodes.nodes.selector: Invalid value: "
                             "\"accelerator=a1000\": matches no node of the cluster"),
            std::string::npos)
      << s.ToString();
  // Labels and taints are held to the API server's Node rules.
  StatusOr<Configuration> bad_node = LoadConfiguration({WriteTemp("bad-node.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterChange
changes:
- setLabels: {nodes: {names: [h100-0]}, labels: {"bad label!": x}}
- setTaints: {nodes: {names: [h100-0]}, taints: [{key: k, effect: Sometimes}]}
)")});
  ASSERT_TRUE(bad_node.ok());
  Cluster copy = cluster;
  s = ApplyClusterChange(bad_node->changes[0], &copy);
  EXPECT_NE(s.message().find("changes[0].setLabels.labels: Invalid value: \"bad label!\""),
            std::string::npos)
      << s.ToString();
  bad_node->changes[0].changes.erase(bad_node->changes[0].changes.begin());
  s = ApplyClusterChange(bad_node->changes[0], &copy);
  EXPECT_NE(s.message().find("changes[0].setTaints.taints[0].effect: Unsupported value: "
                             "\"Sometimes\": supported values: \"NoSchedule\", "
                             "\"PreferNoSchedule\", \"NoExecute\""),
            std::string::npos)
      << s.ToString();

  Trace trace = ParseOrDie(kFallbackTrace);
  CompareOptions options;
  options.seeds = 2;
  options.b.changes = config->changes;
  StatusOr<Comparison> comparison = CompareConfigurations(cluster, trace, options);
  ASSERT_TRUE(comparison.ok()) << comparison.status().ToString();
  EXPECT_TRUE(comparison->failures.empty());
  bool saw_utilization = false;
  for (const MetricComparison& m : comparison->metrics) {
    if (m.metric == "utilization.overall") {
      saw_utilization = true;
      EXPECT_TRUE(m.has_interval);
    }
  }
  EXPECT_TRUE(saw_utilization);
  EXPECT_NE(ComparisonText(*comparison).find("utilization.overall"), std::string::npos);
}

// A partition weighs the mean share of its GPU's counters it takes (the profile driver's MIG set:
// memory, multiprocessors and one counter per memory slice): two 3g.20gb partitions fill a GPU
// to (1/2 + 42/108 + 4) / 10 each, never more than the one unit the GPU is, and one of them leaves
// the rest of the set stranded while a whole-GPU Pod waits.
TEST(SimulationTest, MigPartitionsWeighTheirShareOfTheGpu) {
  StatusOr<Cluster> cluster = LoadCluster({WriteTemp("mig-cluster.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterProfile
metadata: {name: mig}
nodePools:
- name: a100
  count: 1
  devices:
    gpus:
    - count: 1
      productName: NVIDIA A100-SXM4-40GB
      architecture: Ampere
      cudaComputeCapability: "8.0"
      driverVersion: 550.90.07
      memory: 40Gi
      multiprocessors: 108
      mig:
        memorySlices: 8
        profiles: [{name: 3g.20gb, memory: 20Gi, memorySlices: 4, multiprocessors: 42}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: mig}
spec:
  selectors:
  - cel: {expression: 'device.attributes["gpu.nvidia.com"].type == "mig"'}
)")});
  ASSERT_TRUE(cluster.ok()) << cluster.status().ToString();
  auto trace_of = [](int pods) {
    return ParseOrDie(R"(
apiVersion: draplane.dev/v1alpha1
kind: WorkloadTrace
horizon: 1h
claimTemplates:
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaimTemplate
  metadata: {name: slice}
  spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: mig}}]}}}
arrivals:
- at: 0s
  namespace: team-a
  count: )" + std::to_string(pods) +
                      R"(
  duration: 2h
  pod:
    metadata: {name: slice}
    spec:
      containers: [{name: c, image: x}]
      resourceClaims: [{name: gpu, resourceClaimTemplateName: slice}]
)");
  };
  const double partition = (0.5 + 42.0 / 108 + 4) / 10;
  StatusOr<Report> two = RunSimulation(*cluster, trace_of(2), RunOptions{});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_TRUE(two->conservation.ok()) << Json(*two);
  EXPECT_EQ(two->scheduled, 2);
  EXPECT_NEAR(two->utilization, 2 * partition, 1e-5) << Json(*two);
  EXPECT_LE(two->utilization_by_class.at("mig"), 1.0);

  StatusOr<Report> one = RunSimulation(*cluster, trace_of(1), RunOptions{});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_NEAR(one->utilization, partition, 1e-5) << Json(*one);
  EXPECT_NEAR(one->fragmentation_counters, 1 - partition, 1e-5) << Json(*one);
}

// A selector the API server would not compile is refused before the run, naming the object and
// the field, as `draplane lint` and the server refuse it; not left to fail every attempt.
TEST(SimulationTest, SelectorsThatDoNotCompileAreRefused) {
  Trace trace = ParseOrDie(kIssueTrace);
  trace.claim_templates[0]["spec"]
      .as_object()["spec"]
      .as_object()["devices"]
      .as_object()["requests"]
      .as_array()[0]
      .as_object()["firstAvailable"]
      .as_array()[0]
      .as_object()["selectors"]
      .as_array()[0]
      .as_object()["cel"]
      .as_object()["expression"] = "device.attributes[\"gpu.nvidia.com\"].productName.startsWith(";
  StatusOr<Report> report = RunSimulation(TinyCluster(), trace, RunOptions{});
  ASSERT_FALSE(report.ok());
  EXPECT_EQ(report.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(report.status().message().find(
                "claimTemplates[0]: ResourceClaimTemplate/team-a/h100-else-a100: "
                "spec.spec.devices.requests[0].firstAvailable[0].selectors[0].cel.expression"),
            std::string::npos)
      << report.status().ToString();
  EXPECT_NE(report.status().message().find("compilation failed"), std::string::npos);

  StatusOr<Configuration> bad_class = LoadConfiguration({WriteTemp("bad-class.yaml", R"(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: broken}
spec:
  selectors:
  - cel: {expression: 'device.driver =='}
)")});
  ASSERT_TRUE(bad_class.ok()) << bad_class.status().ToString();
  report = RunSimulation(TinyCluster(), ParseOrDie(kIssueTrace),
                         RunOptions{.policies = bad_class->policies});
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("bad-class.yaml:1: DeviceClass//broken: "
                                           "spec.selectors[0].cel.expression"),
            std::string::npos)
      << report.status().ToString();
}

TEST(CompareTest, TheComparisonDoesNotDependOnHowManyRunsRunAtOnce) {
  Cluster cluster = TinyCluster();
  Trace trace = ParseOrDie(kFallbackTrace);
  CompareOptions options;
  options.seeds = 3;
  StatusOr<Configuration> no_h100 = LoadConfiguration({WriteTemp("no-h100.yaml", R"(
apiVersion: draplane.dev/v1alpha1
kind: ClusterChange
changes:
- removeNodes: {nodes: {names: [h100-0]}}
)")});
  ASSERT_TRUE(no_h100.ok()) << no_h100.status().ToString();
  options.b.changes = no_h100->changes;
  auto without_wall = [](const Comparison& c) {
    json::value j = ComparisonJson(c);
    j.as_object().erase("wallSeconds");
    return json::serialize(j);
  };
  StatusOr<Comparison> one = CompareConfigurations(cluster, trace, options);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  for (int jobs : {2, 6, 64}) {
    options.jobs = jobs;
    StatusOr<Comparison> many = CompareConfigurations(cluster, trace, options);
    ASSERT_TRUE(many.ok()) << many.status().ToString();
    EXPECT_EQ(without_wall(*many), without_wall(*one)) << "jobs " << jobs;
  }
  bool differs = false;
  for (const MetricComparison& m : one->metrics) differs = differs || m.delta != 0;
  EXPECT_TRUE(differs) << "A and B are different configurations";

  // A run that fails is reported as the first failing run in seed order, however many ran.
  options.b.policies = {PolicyObject{json::parse(R"({"apiVersion": "example.com/v1",
                                                     "kind": "Nope", "metadata": {"name": "x"}})")
                                         .as_object(),
                                     "b.yaml:1"}};
  for (int jobs : {1, 4}) {
    options.jobs = jobs;
    StatusOr<Comparison> failed = CompareConfigurations(cluster, trace, options);
    ASSERT_FALSE(failed.ok());
    EXPECT_TRUE(failed.status().message().starts_with("B seed 1: ")) << failed.status().ToString();
    EXPECT_NE(failed.status().message().find("Nope"), std::string::npos);
  }
}

TEST(CompareTest, StudentQuantiles) {
  EXPECT_DOUBLE_EQ(StudentT975(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT975(4), 2.776);
  EXPECT_DOUBLE_EQ(StudentT975(1000), 1.96);
}

// Creates the manifest `yaml` in namespace "ns" of `api`.
void CreateInNamespace(client::ApiClient& api, const client::ResourceType& type,
                       const std::string& yaml) {
  StatusOr<std::vector<api::codec::ManifestObject>> docs =
      api::codec::ParseManifest("---\n" + yaml);
  ASSERT_TRUE(docs.ok());
  client::ApiRequest request;
  request.verb = client::Verb::kCreate;
  request.resource = &type;
  request.namespace_ = "ns";
  request.body = docs->front().value;
  StatusOr<json::value> created = api.Do(request);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
}

// creationTimestamp has whole seconds: Pods created within one are recorded in the order the
// scheduler first tried them (microsecond Events), not by name.
TEST(RecordTest, PodsCreatedWithinOneSecondKeepTheSchedulersOrder) {
  ManualClock clock(StartTime());
  std::unique_ptr<Random> random = NewSeededRandom(3);
  client::MemoryApi api(clock, *random);
  auto create = [&](const client::ResourceType& type, const std::string& yaml) {
    CreateInNamespace(api, type, yaml);
  };
  // "a-wait" sorts first by name but was tried last: the cluster placed "b-run", kept "a-wait".
  for (const char* name : {"a-wait", "b-run"}) {
    create(client::ResourceOf<api::corev1::Pod>(),
           std::string("{apiVersion: v1, kind: Pod, metadata: {name: ") + name +
               ", namespace: ns}, spec: {containers: [{name: c, image: x}]}}");
  }
  StatusOr<api::corev1::Pod> run = client::Get<api::corev1::Pod>(api, "ns", "b-run");
  StatusOr<api::corev1::Pod> wait = client::Get<api::corev1::Pod>(api, "ns", "a-wait");
  ASSERT_TRUE(run.ok() && wait.ok());
  auto event = [&](const char* name, const char* reason, const char* time,
                   const api::corev1::Pod& pod) {
    create(client::ResourceOf<api::corev1::Event>(),
           std::string("{apiVersion: v1, kind: Event, metadata: {name: ") + name +
               ", namespace: ns}, reason: " + reason + ", eventTime: \"" + time +
               "\", involvedObject: {kind: Pod, name: " + pod.metadata.name +
               ", namespace: ns, uid: " + pod.metadata.uid + "}}");
  };
  event("e1", "Scheduled", "2026-01-01T00:00:00.100000Z", *run);
  event("e2", "FailedScheduling", "2026-01-01T00:00:00.300000Z", *wait);
  clock.Advance(std::chrono::minutes(1));
  StatusOr<Trace> trace = RecordTrace(api, clock, {});
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->arrivals.size(), 2u);
  EXPECT_EQ(trace->arrivals[0].pod.at("metadata").at("name"), "b-run");
  EXPECT_EQ(trace->arrivals[1].pod.at("metadata").at("name"), "a-wait");
}

TEST(RecordTest, TurnsPodsClaimsAndEventsIntoATrace) {
  ManualClock clock(StartTime());
  std::unique_ptr<Random> random = NewSeededRandom(3);
  client::MemoryApi api(clock, *random);
  auto create = [&](const client::ResourceType& type, const std::string& yaml) {
    CreateInNamespace(api, type, yaml);
  };
  create(client::ResourceOf<api::resourcev1::ResourceClaimTemplate>(),
         "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: t, "
         "namespace: ns}, spec: {spec: {devices: {requests: [{name: r, exactly: "
         "{deviceClassName: gpu}}]}}}}");
  // Created at 0: finished after running 10 minutes (started at 1m, finished at 11m).
  create(client::ResourceOf<api::corev1::Pod>(), R"({apiVersion: v1, kind: Pod,
    metadata: {name: done, namespace: ns},
    spec: {nodeName: n1, containers: [{name: c, image: x}],
           resourceClaims: [{name: r, resourceClaimTemplateName: t}]},
    status: {phase: Succeeded, startTime: "2026-01-01T00:01:00Z",
             containerStatuses: [{name: c, state: {terminated: {finishedAt: "2026-01-01T00:11:00Z"}}}]}})");
  clock.Advance(std::chrono::minutes(5));
  // Created at 5m, running since its Scheduled Event at 6m.
  create(client::ResourceOf<api::corev1::Pod>(), R"({apiVersion: v1, kind: Pod,
    metadata: {name: running, namespace: ns},
    spec: {nodeName: n1, containers: [{name: c, image: x}]}, status: {phase: Running}})");
  StatusOr<api::corev1::Pod> running = client::Get<api::corev1::Pod>(api, "ns", "running");
  ASSERT_TRUE(running.ok());
  create(client::ResourceOf<api::corev1::Event>(),
         R"({apiVersion: v1, kind: Event, metadata: {name: e, namespace: ns}, reason: Scheduled,
             firstTimestamp: "2026-01-01T00:06:00Z",
             involvedObject: {kind: Pod, name: running, namespace: ns, uid: )" +
             running->metadata.uid + "}}");
  clock.Advance(std::chrono::minutes(1));
  // The waiting Pod names a PriorityClass: recorded with it, as is the cluster's default class;
  // an unused one and the system classes (every API server has them) are not.
  create(client::ResourceOf<api::corev1::Pod>(), R"({apiVersion: v1, kind: Pod,
    metadata: {name: waiting, namespace: ns},
    spec: {priorityClassName: band-200, containers: [{name: c, image: x}]}})");
  for (const char* pc :
       {"{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: band-200}, "
        "value: 200, description: training}",
        "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: everyone}, "
        "value: 10, globalDefault: true}",
        "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: unused}, "
        "value: 5}",
        "{apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: "
        "system-node-critical}, value: 2000001000}"}) {
    create(client::ResourceOf<api::schedulingv1::PriorityClass>(), pc);
  }
  clock.Advance(std::chrono::minutes(24));  // now: 30m

  StatusOr<Trace> trace = RecordTrace(api, clock, {});
  ASSERT_TRUE(trace.ok()) << trace.status().ToString();
  ASSERT_EQ(trace->arrivals.size(), 3u);
  EXPECT_EQ(trace->arrivals[0].at, Duration::zero());
  EXPECT_EQ(trace->arrivals[0].duration, std::chrono::minutes(10));
  EXPECT_EQ(trace->arrivals[1].at, std::chrono::minutes(5));
  EXPECT_EQ(trace->arrivals[1].duration, std::chrono::minutes(24));  // running since 6m
  EXPECT_EQ(trace->arrivals[2].duration, std::nullopt);
  EXPECT_EQ(trace->horizon, std::chrono::minutes(30));
  EXPECT_EQ(trace->arrivals[0].pod.at("spec").as_object().if_contains("nodeName"), nullptr);
  ASSERT_EQ(trace->claim_templates.size(), 1u);
  ASSERT_EQ(trace->policies.size(), 2u);
  EXPECT_EQ(trace->policies[0].at("metadata").at("name"), "band-200");
  EXPECT_EQ(trace->policies[0].at("value"), 200);
  EXPECT_EQ(trace->policies[0].at("description"), "training");
  EXPECT_EQ(trace->policies[1].at("metadata").at("name"), "everyone");
  EXPECT_EQ(trace->policies[1].at("globalDefault"), true);
  // What `sim record` writes, `sim run` reads.
  StatusOr<Trace> again = ParseTrace(TraceToYaml(*trace));
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << TraceToYaml(*trace);
  EXPECT_EQ(again->arrivals.size(), 3u);
  EXPECT_EQ(again->policies.size(), 2u);
}

}  // namespace
}  // namespace draplane::sim
