// CPU per write request in the API server's handler chain (`make bench`): the requests one
// scheduled Pod costs under scheduler_perf's template workload (issue 7), sent the way the
// embedded components send them: through `ClientCredentials::dispatch` (the in-process path:
// authentication, authorization, admission, strategies, store, metrics; no HTTP) on the
// calling thread, against an in-memory store so that no fsync is measured.
//
//   BM_PodWriteMix     per iteration one Pod's writes, each timed in thread CPU time:
//                        create_pod        POST pods (admin)
//                        create_claim      POST resourceclaims (controller-manager, generateName)
//                        patch_pod_status  PATCH pods/status, merge patch (controller-manager)
//                        update_claim      PUT resourceclaims, finalizer added (scheduler)
//                        claim_status      PUT resourceclaims/status, allocation + reservedFor
//                        bind              POST pods/binding (scheduler)
//                        create_event      POST events (scheduler)
//                      counters are CPU µs per request of that kind; `per_pod` their sum.
//   BM_UnknownFields   the fieldValidation walk of one allocated claim (openapi::UnknownFields)
//   BM_MetricsWithLabels  the request counter + duration lookups of one answer
//
// The bodies are built with the object model's encoders, as client/typed.h builds them.
#include <benchmark/benchmark.h>
#include <time.h>

#include <atomic>
#include <boost/json.hpp>
#include <cstdio>
#include <filesystem>

#include "api/gen/core_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "api/object.h"
#include "common/metrics.h"
#include "server/openapi/openapi.h"
#include "server/server.h"

namespace draplane::server {
namespace {

namespace rv1 = api::resourcev1;
namespace corev1 = api::corev1;

constexpr char kNamespace[] = "bench";

double ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

class CaptureExchange final : public http::Exchange {
 public:
  void Respond(http::Response response) override { response_ = std::move(response); }
  std::shared_ptr<http::ResponseStream> StartStream(int, std::vector<http::Header>) override {
    std::abort();  // no watches here
  }
  http::Response& response() { return response_; }

 private:
  http::Response response_;
};

// One in-process request, with the headers client/rest_client + the in-process transport send.
http::Response Do(const ClientCredentials& who, std::string method, std::string target,
                  std::string content_type, std::string body) {
  http::Request request;
  request.method = std::move(method);
  request.target = std::move(target);
  size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  request.query = q == std::string::npos ? "" : request.target.substr(q + 1);
  request.headers.push_back({"User-Agent", "draplane/bench"});
  request.headers.push_back({"Accept", "application/json"});
  request.headers.push_back({"Authorization", "Bearer " + who.token});
  if (!content_type.empty()) request.headers.push_back({"Content-Type", std::move(content_type)});
  request.body = std::move(body);
  request.remote_address = "in-process";
  auto exchange = std::make_shared<CaptureExchange>();
  who.dispatch(std::move(request), exchange);
  return std::move(exchange->response());
}

template <typename T>
std::string Json(const T& typed) {
  return boost::json::serialize(Encode(typed));
}

template <typename T>
T Parse(const std::string& body) {
  T out;
  api::FieldErrorList errors;
  Decode(boost::json::parse(body), &out, &errors);
  return out;
}

class BenchCluster {
 public:
  static BenchCluster& Get() {
    static BenchCluster* cluster = new BenchCluster();  // lives until exit
    return *cluster;
  }

  ClientCredentials admin, controller_manager, scheduler;

 private:
  BenchCluster() {
    dir_ = std::filesystem::temp_directory_path() /
           ("draplane-handler-bench-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ServerOptions options;
    options.listen = "127.0.0.1:0";
    options.plain_http = true;
    options.data_dir = dir_.string();
    options.store_url = "memory://";
    options.store_options.watch_queue_limit = 1'000'000;
    auto started = Server::Start(options);
    if (!started.ok()) {
      std::fprintf(stderr, "server: %s\n", started.status().ToString().c_str());
      std::abort();
    }
    server_ = std::move(started).value();
    admin = server_->IssueCredentials("bench-admin", {"system:masters"});
    controller_manager = server_->IssueCredentials("system:kube-controller-manager", {});
    scheduler = server_->IssueCredentials("system:kube-scheduler", {});
    Do(admin, "POST", "/api/v1/namespaces", "application/json",
       R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"bench"}})");
  }

  std::filesystem::path dir_;
  std::unique_ptr<Server> server_;
};

corev1::Pod MakePod(const std::string& name) {
  corev1::Pod pod;
  pod.metadata.name = name;
  pod.metadata.namespace_ = kNamespace;
  corev1::PodResourceClaim entry;
  entry.name = "resource";
  entry.resource_claim_template_name = "test-claim-template";
  pod.spec.resource_claims.push_back(entry);
  corev1::Container c;
  c.name = "pause";
  c.image = "registry.k8s.io/pause:3.10";
  corev1::ResourceClaim ref;
  ref.name = "resource";
  c.resources.claims.push_back(ref);
  pod.spec.containers.push_back(std::move(c));
  return pod;
}

rv1::ResourceClaim MakeClaim(const corev1::Pod& pod) {
  rv1::ResourceClaim claim;
  claim.metadata.namespace_ = kNamespace;
  claim.metadata.generate_name = pod.metadata.name + "-resource-";
  claim.metadata.annotations["resource.kubernetes.io/pod-claim-name"] = "resource";
  claim.metadata.owner_references.push_back(api::NewControllerRef(pod));
  rv1::DeviceRequest r;
  r.name = "req-0";
  r.exactly.emplace();
  r.exactly->device_class_name = "test-class";
  r.exactly->allocation_mode = "ExactCount";
  r.exactly->count = 1;
  claim.spec.devices.requests.push_back(std::move(r));
  return claim;
}

void Allocate(rv1::ResourceClaim& claim, const corev1::Pod& pod, const std::string& node) {
  rv1::AllocationResult allocation;
  rv1::DeviceRequestAllocationResult result;
  result.request = "req-0";
  result.driver = "test-driver.cdi.k8s.io";
  result.pool = node;
  result.device = "device-3";
  allocation.devices.results.push_back(result);
  corev1::NodeSelector selector;
  corev1::NodeSelectorTerm term;
  corev1::NodeSelectorRequirement requirement;
  requirement.key = "metadata.name";
  requirement.operator_ = "In";
  requirement.values = {node};
  term.match_fields.push_back(requirement);
  selector.node_selector_terms.push_back(term);
  allocation.node_selector = selector;
  claim.status.allocation = allocation;
  rv1::ResourceClaimConsumerReference consumer;
  consumer.resource = "pods";
  consumer.name = pod.metadata.name;
  consumer.uid = pod.metadata.uid;
  claim.status.reserved_for.push_back(consumer);
}

enum Step {
  kCreatePod,
  kCreateClaim,
  kPatchPodStatus,
  kUpdateClaim,
  kClaimStatus,
  kBind,
  kCreateEvent,
  kSteps
};
constexpr const char* kStepNames[kSteps] = {"create_pod",   "create_claim", "patch_pod_status",
                                            "update_claim", "claim_status", "bind",
                                            "create_event"};

std::atomic<int64_t> g_pods{0};

void Check(benchmark::State& state, const http::Response& r, int want, const char* what) {
  if (r.status != want) {
    std::fprintf(stderr, "%s: %d %s\n", what, r.status, r.body.c_str());
    state.SkipWithError(what);
  }
}

void BM_PodWriteMix(benchmark::State& state) {
  BenchCluster& cluster = BenchCluster::Get();
  const std::string pods = std::string("/api/v1/namespaces/") + kNamespace + "/pods";
  const std::string claims =
      std::string("/apis/resource.k8s.io/v1/namespaces/") + kNamespace + "/resourceclaims";
  const std::string events = std::string("/api/v1/namespaces/") + kNamespace + "/events";
  double cpu[kSteps] = {};
  for (auto _ : state) {
    const int64_t n = g_pods.fetch_add(1);
    const std::string name = "pod-" + std::to_string(n);
    const std::string node = "node-" + std::to_string(n % 500);
    std::string body = Json(MakePod(name));
    double t = ThreadCpuMicros();
    http::Response r = Do(cluster.admin, "POST", pods, "application/json", std::move(body));
    double u = ThreadCpuMicros();
    cpu[kCreatePod] += u - t;
    Check(state, r, 201, "create pod");
    corev1::Pod pod = Parse<corev1::Pod>(r.body);

    body = Json(MakeClaim(pod));
    t = ThreadCpuMicros();
    r = Do(cluster.controller_manager, "POST", claims + "?fieldManager=draplane-controller",
           "application/json", std::move(body));
    u = ThreadCpuMicros();
    cpu[kCreateClaim] += u - t;
    Check(state, r, 201, "create claim");
    rv1::ResourceClaim claim = Parse<rv1::ResourceClaim>(r.body);

    corev1::PodResourceClaimStatus pod_claim;
    pod_claim.name = "resource";
    pod_claim.resource_claim_name = claim.metadata.name;
    boost::json::object patch{
        {"status", boost::json::object{
                       {"resourceClaimStatuses", boost::json::array{corev1::Encode(pod_claim)}}}}};
    body = boost::json::serialize(patch);
    t = ThreadCpuMicros();
    r = Do(cluster.controller_manager, "PATCH",
           pods + "/" + name + "/status?fieldManager=draplane-controller",
           "application/merge-patch+json", std::move(body));
    u = ThreadCpuMicros();
    cpu[kPatchPodStatus] += u - t;
    Check(state, r, 200, "patch pod status");

    claim.metadata.finalizers.push_back("resource.kubernetes.io/delete-protection");
    body = Json(claim);
    t = ThreadCpuMicros();
    r = Do(cluster.scheduler, "PUT",
           claims + "/" + claim.metadata.name + "?fieldManager=draplane-scheduler",
           "application/json", std::move(body));
    u = ThreadCpuMicros();
    cpu[kUpdateClaim] += u - t;
    Check(state, r, 200, "update claim");
    claim = Parse<rv1::ResourceClaim>(r.body);

    Allocate(claim, pod, node);
    body = Json(claim);
    t = ThreadCpuMicros();
    r = Do(cluster.scheduler, "PUT",
           claims + "/" + claim.metadata.name + "/status?fieldManager=draplane-scheduler",
           "application/json", std::move(body));
    u = ThreadCpuMicros();
    cpu[kClaimStatus] += u - t;
    Check(state, r, 200, "claim status");

    boost::json::object binding{
        {"apiVersion", "v1"},
        {"kind", "Binding"},
        {"metadata",
         boost::json::object{{"name", name}, {"namespace", kNamespace}, {"uid", pod.metadata.uid}}},
        {"target", boost::json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
    body = boost::json::serialize(binding);
    t = ThreadCpuMicros();
    r = Do(cluster.scheduler, "POST", pods + "/" + name + "/binding", "application/json",
           std::move(body));
    u = ThreadCpuMicros();
    cpu[kBind] += u - t;
    Check(state, r, 201, "bind");

    corev1::Event event;
    event.metadata.namespace_ = kNamespace;
    event.metadata.name = name + ".18a1b2c3d4e5f607";
    event.involved_object.kind = "Pod";
    event.involved_object.namespace_ = kNamespace;
    event.involved_object.name = name;
    event.involved_object.uid = pod.metadata.uid;
    event.involved_object.api_version = "v1";
    event.reason = "Scheduled";
    event.message = "Successfully assigned bench/" + name + " to " + node;
    event.type = "Normal";
    event.source.component = "default-scheduler";
    event.reporting_component = "default-scheduler";
    event.count = 1;
    body = Json(event);
    t = ThreadCpuMicros();
    r = Do(cluster.scheduler, "POST", events, "application/json", std::move(body));
    u = ThreadCpuMicros();
    cpu[kCreateEvent] += u - t;
    Check(state, r, 201, "create event");
  }
  double total = 0;
  for (int i = 0; i < kSteps; ++i) {
    state.counters[kStepNames[i]] = benchmark::Counter(cpu[i], benchmark::Counter::kAvgIterations);
    total += cpu[i];
  }
  state.counters["per_pod"] = benchmark::Counter(total, benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_PodWriteMix)->Unit(benchmark::kMicrosecond);

void BM_UnknownFields(benchmark::State& state) {
  corev1::Pod pod = MakePod("p");
  pod.metadata.uid = "0b9a3c84-3f0e-4a8e-9d7f-1a2b3c4d5e6f";
  rv1::ResourceClaim claim = MakeClaim(pod);
  claim.metadata.name = "p-resource-abcde";
  claim.metadata.finalizers.push_back("resource.kubernetes.io/delete-protection");
  Allocate(claim, pod, "node-1");
  const boost::json::object original = Encode(claim).get_object();
  for (auto _ : state) {
    boost::json::object obj = original;
    std::vector<std::string> unknown =
        openapi::UnknownFields("resource.k8s.io", "v1", "ResourceClaim", obj, true);
    benchmark::DoNotOptimize(unknown);
  }
}
BENCHMARK(BM_UnknownFields);

void BM_MetricsWithLabels(benchmark::State& state) {
  static const metrics::CounterFamily counter = metrics::NewCounterFamily(
      "bench_request_total", "bench", {"verb", "group", "resource", "subresource", "code"});
  static const metrics::HistogramFamily histogram =
      metrics::NewHistogramFamily("bench_request_duration_seconds", "bench",
                                  {"verb", "group", "resource"}, metrics::LatencyBuckets());
  std::string verb = "update", group = "resource.k8s.io", resource = "resourceclaims",
              sub = "status", code = "200";
  for (auto _ : state) {
    counter.WithLabels({verb, group, resource, sub, code}).Increment();
    histogram.WithLabels({verb, group, resource}).Observe(1e-4);
  }
}
BENCHMARK(BM_MetricsWithLabels);

}  // namespace
}  // namespace draplane::server

BENCHMARK_MAIN();
