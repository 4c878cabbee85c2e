#include "allocator/allocator.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <string>
#include <vector>

#include "allocator/contested.h"
#include "allocator/hold.h"
#include "allocator/holdings.h"
#include "allocator/internal/testing_engine.h"
#include "allocator/quota.h"
#include "api/codec/yaml.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::allocator {
namespace {

namespace rv1 = api::resourcev1;

// Loads classes, slices, claims and the node from YAML; selectors use the testing engine's
// language (internal/testing_engine.h), e.g. `driver=driver-a`.
class Fixture {
 public:
  Fixture() : snapshot(internal::NewTestingSelectorEngine(&evaluations)) {
    node.metadata.name = "node-1";
    node.metadata.labels = {{"region", "east"}};
  }

  void Load(std::string_view yaml) {
    StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(yaml);
    ASSERT_TRUE(docs.ok()) << docs.status().ToString();
    for (const auto& doc : *docs) {
      ASSERT_TRUE(doc.value.is_object());
      std::string kind(doc.value.at("kind").as_string());
      api::FieldErrorList errors;
      if (kind == "DeviceClass") {
        auto c = std::make_unique<rv1::DeviceClass>();
        rv1::Decode(doc.value, c.get(), &errors);
        snapshot.SetClass(*c);
      } else if (kind == "ResourceSlice") {
        auto s = std::make_unique<rv1::ResourceSlice>();
        rv1::Decode(doc.value, s.get(), &errors);
        handles.push_back(snapshot.AddSlice(*s));
      } else if (kind == "ResourceClaim") {
        claims.emplace_back();
        rv1::Decode(doc.value, &claims.back(), &errors);
      } else {
        FAIL() << "unexpected kind " << kind;
      }
      ASSERT_TRUE(errors.empty()) << errors.front().ToString();
    }
  }

  template <typename T>
  std::unique_ptr<T> Decode(std::string_view yaml) {
    StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(yaml);
    auto out = std::make_unique<T>();
    api::FieldErrorList errors;
    rv1::Decode(docs->front().value, out.get(), &errors);
    return out;
  }

  StatusOr<Outcome> Run(Options options = {}) {
    std::vector<const rv1::ResourceClaim*> pointers;
    for (const rv1::ResourceClaim& c : claims) pointers.push_back(&c);
    if (options.random == nullptr) {
      random = NewSeededRandom(7);
      options.random = random.get();
    }
    return Allocate(snapshot, node, pointers, allocated, features, options);
  }

  // "driver/pool/device" of every result of claim `c`, in result order.
  std::vector<std::string> Devices(const Outcome& o, size_t c = 0) {
    std::vector<std::string> out;
    for (const auto& r : o.results->at(c).devices.results) {
      out.push_back(r.request + "=" + r.driver + "/" + r.pool + "/" + r.device);
    }
    return out;
  }

  int evaluations = 0;
  Snapshot snapshot;
  std::vector<Snapshot::SliceHandle> handles;
  std::vector<rv1::ResourceClaim> claims;
  api::corev1::Node node;
  AllocatedState allocated;
  Features features = AllFeatures();
  std::unique_ptr<Random> random;
};

constexpr std::string_view kClassA = R"(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: class-a}
spec:
  selectors: [{cel: {expression: driver=driver-a}}]
)";

constexpr std::string_view kTwoDevices = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: slice-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - {name: device-1, attributes: {model: {string: a100}}}
  - {name: device-2, attributes: {model: {string: h100}}}
)";
// The same slice without its devices.
constexpr std::string_view kSliceHeader = kTwoDevices.substr(0, kTwoDevices.find("  - "));

std::string Claim(std::string_view requests, std::string_view extra = "",
                  std::string_view name = "claim-0") {
  return "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: " +
         std::string(name) + ", namespace: ns}\nspec:\n  devices:\n    requests:\n" +
         std::string(requests) + std::string(extra);
}

TEST(AllocatorTest, AllocatesFirstDeviceAndPinsTheNode) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1"}));
  const auto& selector = (*o->results)[0].node_selector;
  ASSERT_TRUE(selector.has_value());
  ASSERT_EQ(selector->node_selector_terms.size(), 1u);
  ASSERT_EQ(selector->node_selector_terms[0].match_fields.size(), 1u);
  EXPECT_EQ(selector->node_selector_terms[0].match_fields[0].key, "metadata.name");
  EXPECT_EQ(selector->node_selector_terms[0].match_fields[0].values,
            std::vector<std::string>({"node-1"}));
}

TEST(AllocatorTest, RequestSelectorsNarrowTheClass) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        selectors: [{cel: {expression: 'attr:model=h100'}}]\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-2"}));
}

TEST(AllocatorTest, ConfigAssemblyPutsEachClassOnceThenClaimConfigs) {
  Fixture f;
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: class-a}
spec:
  selectors: [{cel: {expression: driver=driver-a}}]
  config:
  - opaque: {driver: driver-a, parameters: {fromClass: a}}
)");
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"
      "    - name: req-1\n      firstAvailable:\n"
      "      - {name: big, deviceClassName: class-a, allocationMode: ExactCount, count: 5}\n"
      "      - {name: small, deviceClassName: class-a, allocationMode: ExactCount, count: 1}\n",
      "    config:\n"
      "    - {requests: [req-1/big], opaque: {driver: driver-a, parameters: {for: big}}}\n"
      "    - {requests: [req-1/small], opaque: {driver: driver-a, parameters: {for: small}}}\n"
      "    - {requests: [req-0], opaque: {driver: driver-a, parameters: {for: req-0}}}\n"
      "    - {opaque: {driver: driver-a, parameters: {for: all}}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  const auto& config = (*o->results)[0].devices.config;
  ASSERT_EQ(config.size(), 4u);
  EXPECT_EQ(config[0].source, "FromClass");
  EXPECT_TRUE(config[0].requests.empty())
      << "the class config covers req-0 and req-1/small: every request, so `requests` is nil";
  EXPECT_EQ(config[1].source, "FromClaim");
  EXPECT_EQ(config[1].requests, std::vector<std::string>({"req-1/small"}));
  EXPECT_EQ(config[2].requests, std::vector<std::string>({"req-0"}));
  EXPECT_TRUE(config[3].requests.empty());
  EXPECT_EQ(boost::json::serialize(config[1].opaque->parameters.value()), R"({"for":"small"})")
      << "the config of the unselected subrequest `big` is dropped";
}

TEST(AllocatorTest, NodeSelectorMergesSliceSelectors) {
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: network-1}
spec:
  driver: driver-a
  pool: {name: pool-net, generation: 1, resourceSliceCount: 1}
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: region, operator: In, values: [east, west]}]
  devices: [{name: nic-1}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: network-2}
spec:
  driver: driver-a
  pool: {name: pool-net2, generation: 1, resourceSliceCount: 1}
  nodeSelector:
    nodeSelectorTerms:
    - matchExpressions: [{key: region, operator: In, values: [west, east]}, {key: zone, operator: Exists}]
  devices: [{name: nic-2}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: everywhere}
spec:
  driver: driver-a
  pool: {name: pool-all, generation: 1, resourceSliceCount: 1}
  allNodes: true
  devices: [{name: any-1}]
)");
  f.node.metadata.labels["zone"] = "a";
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  const auto& selector = (*o->results)[0].node_selector;
  ASSERT_TRUE(selector.has_value());
  ASSERT_EQ(selector->node_selector_terms.size(), 1u);
  const auto& term = selector->node_selector_terms[0];
  ASSERT_EQ(term.match_expressions.size(), 2u) << "region In {east, west} once, plus zone";
  EXPECT_EQ(term.match_expressions[0].key, "region");
  EXPECT_EQ(term.match_expressions[1].key, "zone");
  EXPECT_TRUE(term.match_fields.empty());
}

TEST(AllocatorTest, DevicesOnlyAvailableEverywhereGiveNoNodeSelector) {
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: everywhere}
spec:
  driver: driver-a
  pool: {name: pool-all, generation: 1, resourceSliceCount: 1}
  allNodes: true
  devices: [{name: any-1}, {name: any-2, bindsToNode: true}]
)");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE((*o->results)[0].node_selector.has_value());
  // A device that binds to the node pins the allocation even on an allNodes slice.
  f.allocated.AddDevice("driver-a", "pool-all", "any-1");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE((*o->results)[0].node_selector.has_value());
  EXPECT_EQ((*o->results)[0].node_selector->node_selector_terms[0].match_fields[0].values,
            std::vector<std::string>({"node-1"}));
}

constexpr std::string_view kTainted = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: slice-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: device-1
    taints: [{key: health, value: bad, effect: NoSchedule}]
  - name: device-2
    taints: [{key: maintenance, value: soon, effect: None}]
)";

TEST(AllocatorTest, TaintsBlockUnlessToleratedAndNoneIsIgnored) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTainted);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-2"}))
      << "NoSchedule blocks device-1; None on device-2 is ignored";

  f.claims.clear();
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        tolerations: [{key: health, operator: Exists, effect: NoSchedule}]\n"));
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1"}));
  ASSERT_EQ((*o->results)[0].devices.results[0].tolerations.size(), 1u)
      << "tolerations are copied into the result";

  f.features.device_taints = false;
  f.claims.clear();
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1"}))
      << "without DeviceTaints, taints are ignored";
}

constexpr std::string_view kSharedNic = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: slice-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - name: nic
    allowMultipleAllocations: true
    capacity:
      bandwidth:
        value: 10G
        requestPolicy: {default: 1G, validRange: {min: 1G, step: 2G}}
      queues:
        value: "8"
        requestPolicy: {default: "1", validValues: ["1", "2", "4"]}
)";

TEST(AllocatorTest, ConsumableCapacityRoundsUpAndNeverOversells) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kSharedNic);
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        capacity: {requests: {bandwidth: 2G, queues: '3'}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  const auto& r = (*o->results)[0].devices.results[0];
  ASSERT_TRUE(r.share_id.has_value());
  EXPECT_EQ(r.consumed_capacity.at("bandwidth"), api::Quantity::Parse("3G").value())
      << "2G rounds up to min 1G + one step of 2G";
  EXPECT_EQ(r.consumed_capacity.at("queues"), api::Quantity::FromInt64(4))
      << "3 rounds up to the next valid value";

  // The same seed gives the same share ID.
  StatusOr<Outcome> again = f.Run();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again->results)[0].devices.results[0].share_id, r.share_id);

  // 3G + 3G + 3G fit into 10G, a fourth share does not.
  AllocatedState::Capacity used{{"bandwidth", api::Quantity::Parse("9G").value()},
                                {"queues", api::Quantity::FromInt64(4)}};
  f.allocated.AddConsumedCapacity("driver-a", "pool-1", "nic", used);
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
}

TEST(AllocatorTest, ADefaultConsumptionIsCheckedAgainstWhatIsConsumedOnEveryAttempt) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kSharedNic);
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_EQ((*o->results)[0].devices.results[0].consumed_capacity.at("bandwidth"),
            api::Quantity::Parse("1G").value())
      << "the policy's default when nothing is requested";

  // The plan of a request without capacity requests is kept per slice version; what is consumed
  // of the device still counts on every attempt: 9G + 1G fit into 10G, 9.5G + 1G do not.
  f.allocated.AddConsumedCapacity("driver-a", "pool-1", "nic",
                                  {{"bandwidth", api::Quantity::Parse("9G").value()}});
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kAllocated);
  f.allocated.AddConsumedCapacity("driver-a", "pool-1", "nic",
                                  {{"bandwidth", api::Quantity::Parse("500M").value()}});
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
}

TEST(AllocatorTest, CapacityPolicyViolationsRejectTheDevice) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kSharedNic);
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        capacity: {requests: {queues: '5'}}\n"));
  StatusOr<Outcome> o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable) << "5 is above every valid value";
  ASSERT_TRUE(o->explanation != nullptr);
  const auto& candidate = o->explanation->claims[0].requests[0].candidates[0];
  // Not "lacks capacity": no release would make room for it.
  EXPECT_EQ(candidate.status, CandidateStatus::kCapacityUnservable);
  EXPECT_EQ(CandidateStatusName(candidate.status), "capacity-unservable");
  EXPECT_NE(candidate.detail.find("queues"), std::string::npos) << candidate.detail;
}

constexpr std::string_view kPartitions = R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: counters}
spec:
  driver: driver-a
  pool: {name: gpu-0, generation: 1, resourceSliceCount: 2}
  nodeName: node-1
  sharedCounters:
  - name: gpu-0
    counters: {memory: {value: 40Gi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: partitions}
spec:
  driver: driver-a
  pool: {name: gpu-0, generation: 1, resourceSliceCount: 2}
  nodeName: node-1
  devices:
  - name: whole
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 40Gi}}}]
  - name: half-0
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]
  - name: half-1
    consumesCounters: [{counterSet: gpu-0, counters: {memory: {value: 20Gi}}}]
)";

TEST(AllocatorTest, CountersAreNetOfAllocatedPartitions) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kPartitions);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/gpu-0/whole"}));

  // With one half in use, the whole GPU no longer fits but the other half does.
  f.allocated.AddDevice("driver-a", "gpu-0", "half-0");
  o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/gpu-0/half-1"}));
  const auto& whole = o->explanation->claims[0].requests[0].candidates[0];
  EXPECT_EQ(whole.status, CandidateStatus::kCounters);
  EXPECT_NE(whole.detail.find("needs 40Gi, 20Gi left of 20Gi available"), std::string::npos)
      << whole.detail;

  // The whole GPU in use: the search tries one half and skips its interchangeable twin, which
  // the explanation reports as failing the same way (not as available: "1 device available,
  // enough for this request alone" on a full GPU).
  f.allocated = {};
  f.allocated.AddDevice("driver-a", "gpu-0", "whole");
  o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  const auto& halves = o->explanation->claims[0].requests[0].candidates;
  ASSERT_EQ(halves.size(), 3u);
  EXPECT_EQ(halves[1].status, CandidateStatus::kCounters);
  EXPECT_EQ(halves[2].status, CandidateStatus::kCounters);
  EXPECT_NE(halves[2].detail.find("skipped as interchangeable with half-0"), std::string::npos)
      << halves[2].detail;
}

TEST(AllocatorTest, ExplanationNamesDevicesTheSearchTriedAndGaveUp) {
  // Two partitions: the whole GPU is tried first and leaves no memory for a second device, so the
  // search gives it up for the two halves. It was reached, and says so.
  Fixture f;
  f.Load(kClassA);
  f.Load(kPartitions);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "2}}\n"));
  StatusOr<Outcome> o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>(
                               {"req-0=driver-a/gpu-0/half-0", "req-0=driver-a/gpu-0/half-1"}));
  const auto& whole = o->explanation->claims[0].requests[0].candidates[0];
  EXPECT_EQ(whole.device, "whole");
  EXPECT_EQ(whole.status, CandidateStatus::kBacktracked);
  EXPECT_EQ(CandidateStatusName(whole.status), "backtracked");
}

TEST(AllocatorTest, ListAttributeMatchRestoresTheIntersectionOnBacktrack) {
  // kubernetes#140300: numa [1,2], [1], [2], [2]; three devices with a common value exist only as
  // {device-1, device-3, device-4}.
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: slice-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - {name: device-1, attributes: {numa: {ints: [1, 2]}}}
  - {name: device-2, attributes: {numa: {ints: [1]}}}
  - {name: device-3, attributes: {numa: {ints: [2]}}}
  - {name: device-4, attributes: {numa: {int: 2}}}
)");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n",
      "    constraints: [{matchAttribute: driver-a/numa}]\n"));
  f.features.list_type_attributes = true;
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1",
                                                     "req-0=driver-a/pool-1/device-3",
                                                     "req-0=driver-a/pool-1/device-4"}));
  f.features.list_type_attributes = false;
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable)
      << "without list attributes only the scalar on device-4 is visible";
}

TEST(AllocatorTest, DistinctAttributeHoldsForThreeDevicesOfOneRequest) {
  // kubernetes#140438: the third device must differ from both earlier ones.
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: slice-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - {name: device-1, attributes: {numa: {int: 0}}}
  - {name: device-2, attributes: {numa: {int: 1}}}
  - {name: device-3, attributes: {numa: {int: 0}}}
  - {name: device-4, attributes: {numa: {int: 2}}}
)");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n",
      "    constraints: [{distinctAttribute: driver-a/numa}]\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1",
                                                     "req-0=driver-a/pool-1/device-2",
                                                     "req-0=driver-a/pool-1/device-4"}));
}

// Issue 17: selector evaluations are charged to the attempt's budget (the testing engine charges
// one unit each); a spent budget stops the attempt, and the next attempt continues from the
// verdicts already cached, which cost nothing.
TEST(AllocatorTest, EvaluationBudgetStopsAnAttemptThatTheNextContinues) {
  Fixture f;
  f.Load(kClassA);
  std::string slice(kSliceHeader);
  for (int d = 0; d < 16; ++d) slice += "  - {name: device-" + std::to_string(d) + "}\n";
  f.Load(slice);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "2}}\n"));
  int attempts = 0;
  StatusOr<Outcome> outcome = InternalError("not run");
  while (attempts < 10) {
    ++attempts;
    EvaluationBudget budget{.limit = 5};
    outcome = f.Run({.use_node_cache = false, .evaluation_budget = &budget});
    EXPECT_LE(budget.spent, 5u);
    if (outcome.ok()) break;
    EXPECT_TRUE(IsEvaluationBudgetExceeded(outcome.status())) << outcome.status().ToString();
    EXPECT_FALSE(IsStepLimitExceeded(outcome.status()));
    EXPECT_NE(outcome.status().message().find("(5 cost units) is spent"), std::string::npos);
  }
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->kind, Outcome::Kind::kAllocated);
  EXPECT_EQ(attempts, 4);  // 16 evaluations, 5 per attempt
  EXPECT_EQ(f.evaluations, 16);
  // Without a budget nothing is charged or refused.
  EXPECT_TRUE(f.Run({.use_node_cache = false}).ok());
}

TEST(AllocatorTest, AnUnsatisfiableNodesExplanationIsRememberedUnderTheAskingClaimsNames) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  const std::string three =
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n";
  f.Load(Claim(three));
  StatusOr<Outcome> fresh = f.Run({.explain = true});
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_EQ(fresh->kind, Outcome::Kind::kUnsatisfiable);
  ASSERT_TRUE(fresh->explanation != nullptr);
  EXPECT_FALSE(fresh->stats.node_cache_hit);
  // Nothing changed: the same explanation, from the node cache.
  StatusOr<Outcome> again = f.Run({.explain = true});
  ASSERT_TRUE(again.ok() && again->explanation != nullptr);
  EXPECT_TRUE(again->stats.node_cache_hit);
  EXPECT_EQ(again->explanation->ToJson(), fresh->explanation->ToJson());
  // Another claim of the same spec reads it under its own name, summary included.
  f.claims.clear();
  f.Load(Claim(three, "", "claim-1"));
  StatusOr<Outcome> renamed = f.Run({.explain = true});
  ASSERT_TRUE(renamed.ok() && renamed->explanation != nullptr);
  EXPECT_TRUE(renamed->stats.node_cache_hit);
  StatusOr<Outcome> rebuilt = f.Run({.explain = true, .use_node_cache = false});
  ASSERT_TRUE(rebuilt.ok() && rebuilt->explanation != nullptr);
  EXPECT_EQ(renamed->explanation->claims.at(0).claim, "ns/claim-1");
  EXPECT_EQ(renamed->explanation->ToJson(), rebuilt->explanation->ToJson());
  // A caller that does not need the names gets the remembered explanation itself, no copy.
  StatusOr<Outcome> shared = f.Run({.explain = true, .explain_claim_names = false});
  ASSERT_TRUE(shared.ok() && shared->explanation != nullptr);
  EXPECT_TRUE(shared->stats.node_cache_hit);
  EXPECT_EQ(shared->explanation, again->explanation);
  EXPECT_EQ(shared->explanation->claims.at(0).claim, fresh->explanation->claims.at(0).claim);
  // A change to the node's allocated devices is a new verdict, explained afresh.
  f.allocated.AddDevice("driver-a", "pool-1", "device-1");
  StatusOr<Outcome> changed = f.Run({.explain = true});
  ASSERT_TRUE(changed.ok() && changed->explanation != nullptr);
  EXPECT_FALSE(changed->stats.node_cache_hit);
  EXPECT_NE(changed->explanation->ToJson(), fresh->explanation->ToJson());
}

TEST(AllocatorTest, ClaimsOfEqualSpecsShareTheNodeCacheHoweverTheyAreWritten) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n"));
  StatusOr<Outcome> fresh = f.Run();
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  ASSERT_EQ(fresh->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_FALSE(fresh->stats.node_cache_hit);
  // The same request with an explicit empty list: other JSON, the same claim set.
  f.claims.clear();
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3, selectors: [], tolerations: []}}\n",
      "", "claim-1"));
  StatusOr<Outcome> same = f.Run();
  ASSERT_TRUE(same.ok()) << same.status().ToString();
  EXPECT_EQ(same->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_TRUE(same->stats.node_cache_hit);
  // Another count, or another request name, is another claim set: searched.
  for (std::string_view request :
       {"    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, "
        "count: 4}}\n",
        "    - {name: req-1, exactly: {deviceClassName: class-a, allocationMode: ExactCount, "
        "count: 3}}\n"}) {
    f.claims.clear();
    f.Load(Claim(request, "", "claim-2"));
    StatusOr<Outcome> other = f.Run();
    ASSERT_TRUE(other.ok()) << other.status().ToString();
    EXPECT_EQ(other->kind, Outcome::Kind::kUnsatisfiable);
    EXPECT_FALSE(other->stats.node_cache_hit) << request;
  }
}

TEST(AllocatorTest, StepLimitStopsASearchWithAnErrorThatIsNotRemembered) {
  // Five devices with distinct numa values, among sixteen that have four: every search ends by
  // running out of values, which the count bound does not see.
  Fixture f;
  f.Load(kClassA);
  std::string slice(kSliceHeader);
  for (int d = 0; d < 16; ++d) {
    slice += "  - {name: device-" + std::to_string(d) +
             ", attributes: {numa: {int: " + std::to_string(d % 4) + "}}}\n";
  }
  f.Load(slice);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "5}}\n",
      "    constraints: [{distinctAttribute: driver-a/numa}]\n"));
  // A stopped search is an error and leaves nothing in the node cache.
  StatusOr<Outcome> stopped = f.Run({.max_search_steps = 1});
  ASSERT_FALSE(stopped.ok());
  EXPECT_TRUE(IsStepLimitExceeded(stopped.status()));
  EXPECT_EQ(stopped.status().message(),
            "allocation search stopped after 1 steps (the allocation step limit) without "
            "deciding whether the claims fit on this node");
  StatusOr<Outcome> unlimited = f.Run();
  ASSERT_TRUE(unlimited.ok()) << unlimited.status().ToString();
  EXPECT_FALSE(unlimited->stats.node_cache_hit);
  EXPECT_EQ(unlimited->kind, Outcome::Kind::kUnsatisfiable);
  const int64_t steps = unlimited->stats.allocate_one_calls;
  ASSERT_GT(steps, 10);
  // Exactly enough steps decide; one fewer does not.
  StatusOr<Outcome> exact = f.Run({.use_node_cache = false, .max_search_steps = steps});
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  EXPECT_EQ(exact->kind, Outcome::Kind::kUnsatisfiable);
  stopped = f.Run({.use_node_cache = false, .max_search_steps = steps - 1});
  ASSERT_FALSE(stopped.ok());
  EXPECT_TRUE(IsStepLimitExceeded(stopped.status()));
  // Upstream's plain walk takes many more steps to the same answer.
  StatusOr<Outcome> plain = f.Run({.use_node_cache = false, .prune = false});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_GT(plain->stats.allocate_one_calls, 5 * steps)
      << plain->stats.allocate_one_calls << " vs " << steps;
}

TEST(AllocatorTest, InvalidPoolIsANodeErrorOnlyWithoutSolution) {
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: broken}
spec:
  driver: driver-a
  pool: {name: pool-0, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices: [{name: same}, {name: same}]
)");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kNodeError);
  EXPECT_EQ(o->message, "invalid resource pools were encountered");
  f.Load(kTwoDevices);
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kAllocated);
}

TEST(AllocatorTest, AllModeOnAnIncompletePoolIsFatal) {
  Fixture f;
  f.Load(kClassA);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: part-1}
spec:
  driver: driver-a
  pool: {name: pool-1, generation: 1, resourceSliceCount: 2}
  nodeName: node-1
  devices: [{name: device-1}]
)");
  f.Load(Claim("    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: All}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "claim ns/claim-0, request req-0: asks for all devices, but resource pool "
            "driver-a/pool-1 is currently being updated");
}

TEST(AllocatorTest, FatalErrorsUseUpstreamsWording) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: missing, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kNotFound);
  EXPECT_NE(o.status().message().find("could not retrieve device class missing"),
            std::string::npos);

  f.claims.clear();
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        selectors: [{cel: {expression: 'error:no such key: x'}}]\n"));
  o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "claim ns/claim-0: selector #0 on device driver-a/pool-1/device-1: CEL runtime "
            "error: no such key: x");

  f.claims.clear();
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        selectors: [{cel: {expression: 'bogus'}}]\n"));
  o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "claim ns/claim-0: selector #0: CEL compile error: unknown test selector: bogus");

  f.features.prioritized_list = false;
  f.claims.clear();
  f.Load(Claim(
      "    - name: req-0\n      firstAvailable:\n"
      "      - {name: one, deviceClassName: class-a, allocationMode: ExactCount, count: 1}\n"));
  o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "claim ns/claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature "
            "is disabled");
}

TEST(AllocatorTest, ExplanationSaysWhyEachDeviceWasSkipped) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTainted);
  f.Load(R"(
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: other-driver}
spec:
  driver: driver-b
  pool: {name: pool-b, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices: [{name: device-b}]
)");
  f.allocated.AddDevice("driver-a", "pool-1", "device-2");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  ASSERT_TRUE(o->explanation != nullptr);
  const Explanation& e = *o->explanation;
  EXPECT_EQ(e.outcome, "unsatisfiable");
  ASSERT_EQ(e.pools.size(), 2u);
  const auto& candidates = e.claims[0].requests[0].candidates;
  ASSERT_EQ(candidates.size(), 3u);
  EXPECT_EQ(candidates[0].device, "device-1");
  EXPECT_EQ(candidates[0].status, CandidateStatus::kTaintNotTolerated);
  EXPECT_EQ(candidates[0].detail, "health=bad:NoSchedule");
  EXPECT_EQ(candidates[1].status, CandidateStatus::kAllocated);
  EXPECT_EQ(candidates[2].device, "device-b");
  EXPECT_EQ(candidates[2].status, CandidateStatus::kClassSelectorFalse);
  EXPECT_NE(e.summary.find("needs 1 device(s) of class class-a"), std::string::npos) << e.summary;
  EXPECT_NE(e.summary.find("1 are already allocated"), std::string::npos) << e.summary;
  std::string text = e.ToText();
  EXPECT_NE(text.find("driver-a/pool-1/device-1: taint-not-tolerated (health=bad:NoSchedule)"),
            std::string::npos)
      << text;
  boost::json::value json = boost::json::parse(e.ToJson());
  EXPECT_EQ(json.at("claims").at(0).at("requests").at(0).at("candidates").at(1).at("status"),
            "already-allocated");
}

TEST(AllocatorTest, ExplanationRecordsTheChosenSubrequest) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - name: req-0\n      firstAvailable:\n"
      "      - {name: three, deviceClassName: class-a, allocationMode: ExactCount, count: 3}\n"
      "      - {name: one, deviceClassName: class-a, allocationMode: ExactCount, count: 1}\n"
      "      - {name: two, deviceClassName: class-a, allocationMode: ExactCount, count: 2}\n"));
  StatusOr<Outcome> o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  const RequestExplanation& r = o->explanation->claims[0].requests[0];
  EXPECT_EQ(r.chosen_subrequest, 1);
  ASSERT_EQ(r.subrequests.size(), 3u);
  EXPECT_EQ(r.subrequests[0].outcome, "unsatisfiable");
  EXPECT_EQ(r.subrequests[0].candidates[0].status, CandidateStatus::kNotEnoughCandidates);
  EXPECT_EQ(r.subrequests[1].outcome, "allocated");
  EXPECT_EQ(r.subrequests[2].outcome, "not tried");
  EXPECT_NE(o->explanation->summary.find("fallback #1"), std::string::npos)
      << o->explanation->summary;
}

TEST(AllocatorTest, PolicyRejectionsShowInTheExplanation) {
  class NoH100 : public PolicyConstraint {
   public:
    std::string_view name() const override { return "quota team-a"; }
    std::optional<PolicyRejection> Add(const PolicyCandidate& c) override {
      if (c.device == "device-1") return PolicyRejection{"quota", "a100 quota used up"};
      return std::nullopt;
    }
    void Remove(const PolicyCandidate&) override {}
  };
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  NoH100 policy;
  StatusOr<Outcome> o = f.Run({.explain = true, .policies = {&policy}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-2"}));
  const auto& first = o->explanation->claims[0].requests[0].candidates[0];
  EXPECT_EQ(first.status, CandidateStatus::kPolicy);
  EXPECT_EQ(first.policy_code, "quota");
  EXPECT_EQ(first.detail, "a100 quota used up");
}

constexpr std::string_view kGpuClassesAndSlice = R"(
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: h100}
spec:
  selectors: [{cel: {expression: "attr:model=h100"}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: a100}
spec:
  selectors: [{cel: {expression: "attr:model=a100"}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpus}
spec:
  driver: gpu.example.com
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  nodeName: node-1
  devices:
  - {name: h100-0, attributes: {model: {string: h100}}, capacity: {memory: {value: 80Gi}}}
  - {name: a100-0, attributes: {model: {string: a100}}, capacity: {memory: {value: 40Gi}}}
  - {name: a100-1, attributes: {model: {string: a100}}, capacity: {memory: {value: 40Gi}}}
)";

constexpr std::string_view kH100ElseA100Pair =
    "    - name: gpu\n      firstAvailable:\n"
    "      - {name: h100, deviceClassName: h100, allocationMode: ExactCount, count: 1}\n"
    "      - {name: a100-pair, deviceClassName: a100, allocationMode: ExactCount, count: 2}\n";

QuotaBudget Budget(std::string resource, int64_t hard, int64_t used) {
  QuotaBudget q;
  q.namespace_ = "ns";
  q.name = "devices";
  q.hard.emplace(resource, api::Quantity::FromInt64(hard));
  if (used > 0) q.used.emplace(resource, api::Quantity::FromInt64(used));
  return q;
}

// Loads kGpuClassesAndSlice and kH100ElseA100Pair into `f`.
void LoadH100ElseA100Pair(Fixture& f) {
  f.Load(kGpuClassesAndSlice);
  f.Load(Claim(kH100ElseA100Pair));
}

// Runs LoadH100ElseA100Pair's claim twice under `policy` (a policy's state is the same after a
// call): the search takes the A100 pair, and the H100 subrequest's explanation gives the policy's
// refusal.
void ExpectThePairWithTheH100Refused(Fixture& f, PolicyConstraint& policy, std::string_view code,
                                     std::string_view detail) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    StatusOr<Outcome> o = f.Run({.explain = true, .policies = {&policy}});
    ASSERT_TRUE(o.ok()) << o.status().ToString();
    ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
    EXPECT_EQ(f.Devices(*o),
              std::vector<std::string>({"gpu/a100-pair=gpu.example.com/node-1/a100-0",
                                        "gpu/a100-pair=gpu.example.com/node-1/a100-1"}));
    const RequestExplanation& h100 = o->explanation->claims[0].requests[0].subrequests[0];
    EXPECT_EQ(h100.outcome, "unsatisfiable");
    ASSERT_FALSE(h100.candidates.empty());
    EXPECT_EQ(h100.candidates[0].status, CandidateStatus::kPolicy);
    EXPECT_EQ(h100.candidates[0].policy_code, code);
    EXPECT_EQ(h100.candidates[0].detail, detail);
  }
}

TEST(AllocatorTest, ExhaustedQuotaTakesTheNextSubrequestOnTheSameNode) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  Holdings holdings;
  QuotaConstraint quota("ns", {Budget("h100.deviceclass.resource.k8s.io/devices", 1, 1)}, holdings);
  ExpectThePairWithTheH100Refused(f, quota, "quota",
                                  "quota ns/devices h100.deviceclass.resource.k8s.io/devices 1/1");
  // With room left the first choice wins, and the node cache of a policy-free run still applies.
  QuotaConstraint room("ns", {Budget("h100.deviceclass.resource.k8s.io/devices", 2, 1)}, holdings);
  StatusOr<Outcome> o = f.Run({.policies = {&room}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"gpu/h100=gpu.example.com/node-1/h100-0"}));
}

// Starvation holds (hold.h, docs/design/fair-share.md §4): the H100 held for team-b/train.
DeviceHold H100HeldForTrain(int32_t priority) {
  DeviceHold hold;
  hold.pod = "team-b/train";
  hold.pod_uid = "uid-train";
  hold.priority = priority;
  hold.node = "node-1";
  hold.since = "2026-12-02T12:03:00Z";
  hold.starving = std::chrono::hours(2) + std::chrono::minutes(14);
  hold.devices = {{"gpu.example.com", "node-1", "h100-0"}};
  return hold;
}

TEST(AllocatorTest, AHeldDeviceIsRefusedToTheSameBandWithTheReason) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  HoldConstraint hold({H100HeldForTrain(100)}, "uid-other", 100);
  ASSERT_FALSE(hold.empty());
  ExpectThePairWithTheH100Refused(
      f, hold, "held", "held for team-b/train since 2026-12-02T12:03:00Z (starving 2h14m)");
}

TEST(AllocatorTest, AHeldDeviceIsRefusedToALowerBand) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  HoldConstraint hold({H100HeldForTrain(100)}, "uid-other", -5);
  StatusOr<Outcome> o = f.Run({.policies = {&hold}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o),
            std::vector<std::string>({"gpu/a100-pair=gpu.example.com/node-1/a100-0",
                                      "gpu/a100-pair=gpu.example.com/node-1/a100-1"}));
}

TEST(AllocatorTest, AHigherBandAndTheStarvingPodItselfTakeAHeldDevice) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  for (auto [uid, priority] : {std::pair<std::string, int32_t>{"uid-urgent", 1000},
                               std::pair<std::string, int32_t>{"uid-train", 100}}) {
    HoldConstraint hold({H100HeldForTrain(100)}, uid, priority);
    EXPECT_TRUE(hold.empty()) << "no hold applies: the search keeps its policy-free shortcuts";
    StatusOr<Outcome> o = f.Run({.policies = {&hold}});
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"gpu/h100=gpu.example.com/node-1/h100-0"}))
        << uid;
  }
}

TEST(AllocatorTest, EveryDeviceHeldLeavesTheClaimUnsatisfiableWithTheReason) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  DeviceHold all = H100HeldForTrain(0);
  all.devices.push_back({"gpu.example.com", "node-1", "a100-1"});
  HoldConstraint hold({all}, "uid-other", 0);
  StatusOr<Outcome> o = f.Run({.explain = true, .policies = {&hold}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  const RequestExplanation& pair = o->explanation->claims[0].requests[0].subrequests[1];
  bool held = false;
  for (const auto& c : pair.candidates) {
    held = held || (c.status == CandidateStatus::kPolicy && c.policy_code == "held");
  }
  EXPECT_TRUE(held) << "the A100 pair's explanation names the hold";
}

// The fair-share placement preference (contested.h): team-b, under its fair share, waits for
// H100s; this Pod can fall back to the A100 pair, so it leaves the H100 alone.
TEST(AllocatorTest, AContestedClassIsLeftForTheFallbackWithTheReason) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  ContestedClassesConstraint contested(ContestedClasses{{"h100", {"team-b"}}});
  ExpectThePairWithTheH100Refused(
      f, contested, "fair-share",
      "left to team-b: under its fair share and waiting for class h100");
  EXPECT_GT(contested.refusals(), 0);
}

TEST(AllocatorTest, AContestedClassStaysOpenToAnExactRequest) {
  Fixture f;
  f.Load(kGpuClassesAndSlice);
  f.Load(
      Claim("    - {name: gpu, exactly: {deviceClassName: h100, allocationMode: ExactCount, count: "
            "1}}\n"));
  ContestedClassesConstraint contested(ContestedClasses{{"h100", {"team-b", "team-c"}}});
  StatusOr<Outcome> o = f.Run({.policies = {&contested}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"gpu=gpu.example.com/node-1/h100-0"}));
  EXPECT_EQ(contested.refusals(), 0) << "an exact request has no fallback to take";
}

TEST(AllocatorTest, QuotaRefusesASubrequestWhoseCountCannotFit) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  f.allocated.AddDevice("gpu.example.com", "node-1", "h100-0");
  Holdings holdings;
  QuotaConstraint quota("ns", {Budget("a100.deviceclass.resource.k8s.io/devices", 3, 2)}, holdings);
  StatusOr<Outcome> o = f.Run({.explain = true, .policies = {&quota}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  const RequestExplanation& pair = o->explanation->claims[0].requests[0].subrequests[1];
  ASSERT_EQ(pair.candidates.size(), 3u);
  EXPECT_EQ(pair.candidates[1].status, CandidateStatus::kPolicy);
  EXPECT_EQ(pair.candidates[1].detail,
            "quota ns/devices a100.deviceclass.resource.k8s.io/devices 2/3, needs 2");

  // With one A100 left the pair cannot be had whatever the quota says: the quota is not asked,
  // and nothing is blamed on it (raising it would not give an allocated device).
  f.allocated.AddDevice("gpu.example.com", "node-1", "a100-0");
  o = f.Run({.explain = true, .policies = {&quota}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->stats.policy_rejections, 0);
  const RequestExplanation& now = o->explanation->claims[0].requests[0].subrequests[1];
  ASSERT_EQ(now.candidates.size(), 3u);
  EXPECT_EQ(now.candidates[1].device, "a100-0");
  EXPECT_EQ(now.candidates[1].status, CandidateStatus::kAllocated);
  EXPECT_EQ(now.candidates[2].device, "a100-1");
  EXPECT_EQ(now.candidates[2].status, CandidateStatus::kNotEnoughCandidates);

  // Three A100s, one allocated: the pair could be had but for the quota. Its refusal is the
  // free devices' reason; the allocated one keeps its own, which no quota would change.
  Fixture three;
  three.Load(std::string(kGpuClassesAndSlice) +
             "  - {name: a100-2, attributes: {model: {string: a100}}, capacity: {memory: {value: "
             "40Gi}}}\n");
  three.Load(Claim(kH100ElseA100Pair));
  three.allocated.AddDevice("gpu.example.com", "node-1", "h100-0");
  three.allocated.AddDevice("gpu.example.com", "node-1", "a100-0");
  o = three.Run({.explain = true, .policies = {&quota}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  const RequestExplanation& refused = o->explanation->claims[0].requests[0].subrequests[1];
  ASSERT_EQ(refused.candidates.size(), 4u);
  EXPECT_EQ(refused.candidates[1].status, CandidateStatus::kAllocated);
  EXPECT_EQ(refused.candidates[2].status, CandidateStatus::kPolicy);
  EXPECT_EQ(refused.candidates[3].status, CandidateStatus::kPolicy);
}

TEST(AllocatorTest, QuotaCountsDevicesTheNamespaceHoldsAndCounters) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  // status.used lags: the ledger knows of an H100 the namespace holds (committed).
  rv1::ResourceClaim held = *f.Decode<rv1::ResourceClaim>(
      "metadata: {name: held, namespace: ns, uid: u1}\n"
      "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: a100}}]}}\n");
  rv1::AllocationResult allocation;
  allocation.devices.results.emplace_back();
  allocation.devices.results.back().request = "r";
  allocation.devices.results.back().driver = "gpu.example.com";
  allocation.devices.results.back().pool = "node-1";
  allocation.devices.results.back().device = "a100-9";
  DeviceCatalog catalog;
  Holdings holdings;
  holdings.Put(Holdings::Make("u1", held, allocation, catalog, /*in_flight=*/false));
  QuotaBudget memory;
  memory.namespace_ = "ns";
  memory.name = "memory";
  memory.hard.emplace("gpu.example.com.driver.draplane.dev/counter.memory",
                      *api::Quantity::Parse("100Gi"));
  QuotaConstraint quota("ns", {Budget("a100.deviceclass.resource.k8s.io/devices", 3, 0), memory},
                        holdings);
  // H100 (80Gi) fits the memory quota; two A100s (80Gi) would too, but only 2 of 3 A100 remain.
  StatusOr<Outcome> o = f.Run({.policies = {&quota}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"gpu/h100=gpu.example.com/node-1/h100-0"}));
  f.allocated.AddDevice("gpu.example.com", "node-1", "h100-0");
  o = f.Run({.explain = true, .policies = {&quota}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kAllocated);
  // The A100 the namespace holds counts although status.used does not show it yet.
  QuotaConstraint two("ns", {Budget("a100.deviceclass.resource.k8s.io/devices", 2, 0)}, holdings);
  o = f.Run({.explain = true, .policies = {&two}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_EQ(o->explanation->claims[0].requests[0].subrequests[1].candidates[1].detail,
            "quota ns/devices a100.deviceclass.resource.k8s.io/devices 1/2, needs 2");
  memory.hard.begin()->second = *api::Quantity::Parse("60Gi");
  QuotaConstraint tight("ns", {Budget("a100.deviceclass.resource.k8s.io/devices", 3, 0), memory},
                        holdings);
  o = f.Run({.explain = true, .policies = {&tight}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  const RequestExplanation& pair = o->explanation->claims[0].requests[0].subrequests[1];
  EXPECT_EQ(pair.candidates[2].status, CandidateStatus::kPolicy);
  EXPECT_EQ(pair.candidates[2].detail,
            "quota ns/memory gpu.example.com.driver.draplane.dev/counter.memory 40Gi/60Gi, "
            "needs 40Gi");
}

TEST(AllocatorTest, OnlyAPolicyFreeVerdictIsRememberedPerNode) {
  Fixture f;
  LoadH100ElseA100Pair(f);
  f.allocated.AddDevice("gpu.example.com", "node-1", "a100-0");
  Holdings holdings;
  // The H100 is refused by the quota, the pair finds one A100: unsatisfiable because of the quota.
  QuotaConstraint refusing("ns", {Budget("h100.deviceclass.resource.k8s.io/devices", 0, 0)},
                           holdings);
  StatusOr<Outcome> o = f.Run({.policies = {&refusing}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_EQ(o->stats.policy_rejections, 1);
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kAllocated) << "the quota's verdict was not the node's";
  // Unsatisfiable with a quota that refused nothing is the node's verdict: remembered.
  f.allocated.AddDevice("gpu.example.com", "node-1", "h100-0");
  QuotaConstraint idle("ns", {Budget("h100.deviceclass.resource.k8s.io/devices", 9, 0)}, holdings);
  o = f.Run({.policies = {&idle}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_EQ(o->stats.policy_rejections, 0);
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->stats.node_cache_hit);
  o = f.Run({.policies = {&refusing}});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->stats.node_cache_hit) << "policies read the cache";
}

// A node without H100s falls back to the pair whatever the quota says: the quota is not asked
// about the H100, so it refused nothing there (the scheduler counts and explains its refusals
// per node) and the verdict of an A100 pair the node lacks too is the node's, remembered.
TEST(AllocatorTest, APolicyIsNotAskedAboutARequestTheNodeHasTooFewDevicesFor) {
  Fixture f;
  std::string a100_only(kGpuClassesAndSlice);
  const std::string h100_line =
      "  - {name: h100-0, attributes: {model: {string: h100}}, capacity: {memory: {value: "
      "80Gi}}}\n";
  ASSERT_NE(a100_only.find(h100_line), std::string::npos);
  a100_only.erase(a100_only.find(h100_line), h100_line.size());
  f.Load(a100_only);
  f.Load(Claim(kH100ElseA100Pair));
  Holdings holdings;
  QuotaConstraint exhausted("ns", {Budget("h100.deviceclass.resource.k8s.io/devices", 1, 1)},
                            holdings);
  StatusOr<Outcome> o = f.Run({.explain = true, .policies = {&exhausted}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_EQ(f.Devices(*o),
            std::vector<std::string>({"gpu/a100-pair=gpu.example.com/node-1/a100-0",
                                      "gpu/a100-pair=gpu.example.com/node-1/a100-1"}));
  EXPECT_EQ(o->stats.policy_rejections, 0);
  for (const CandidateExplanation& c :
       o->explanation->claims[0].requests[0].subrequests[0].candidates) {
    EXPECT_EQ(c.status, CandidateStatus::kClassSelectorFalse) << c.device;
  }

  // One A100 left: the pair cannot be had either, and the quota of A100s is not asked.
  f.allocated.AddDevice("gpu.example.com", "node-1", "a100-0");
  QuotaConstraint no_a100("ns",
                          {Budget("h100.deviceclass.resource.k8s.io/devices", 1, 1),
                           Budget("a100.deviceclass.resource.k8s.io/devices", 0, 0)},
                          holdings);
  o = f.Run({.policies = {&no_a100}});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_EQ(o->stats.policy_rejections, 0);
  o = f.Run({.policies = {&no_a100}});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->stats.node_cache_hit) << "a verdict no policy made is remembered";

  // All of the node's A100s while the second one is allocated: the request cannot be had, and
  // the quota is asked neither about the request nor about the first, free A100.
  Fixture all;
  all.Load(kGpuClassesAndSlice);
  all.Load(
      Claim("    - name: gpus\n      exactly: {deviceClassName: a100, allocationMode: All}\n"));
  all.allocated.AddDevice("gpu.example.com", "node-1", "a100-1");
  o = all.Run({.explain = true, .policies = {&no_a100}});
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_EQ(o->stats.policy_rejections, 0);
  for (const CandidateExplanation& c : o->explanation->claims[0].requests[0].candidates) {
    EXPECT_NE(c.status, CandidateStatus::kPolicy) << c.device;
    if (c.device == "a100-1") {
      EXPECT_EQ(c.status, CandidateStatus::kAllocated);
    }
  }
}

TEST(AllocatorTest, SelectorVerdictsAreCachedPerSliceVersion) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "2}}\n"));
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(f.evaluations, 2);
  ASSERT_TRUE(f.Run({.use_node_cache = false}).ok());
  EXPECT_EQ(f.evaluations, 2) << "no CEL on the second allocation";

  std::unique_ptr<rv1::ResourceSlice> updated = f.Decode<rv1::ResourceSlice>(kTwoDevices);
  updated->metadata.generation = 2;
  f.snapshot.UpdateSlice(f.handles[0], *updated);
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(f.evaluations, 4) << "a new slice version is evaluated again";

  // An informer resync of the same version keeps the verdicts.
  updated->metadata.uid = "uid-1";
  updated->metadata.resource_version = "7";
  f.snapshot.UpdateSlice(f.handles[0], *updated);
  ASSERT_TRUE(f.Run().ok());
  f.snapshot.UpdateSlice(f.handles[0], *updated);
  ASSERT_TRUE(f.Run().ok());
  EXPECT_EQ(f.evaluations, 6) << "the resync of version 7 reused its verdicts";
}

TEST(AllocatorTest, NodeCacheRemembersUnsatisfiableClaimsUntilTheStateChanges) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  f.allocated.AddDevice("driver-a", "pool-1", "device-1");
  f.allocated.AddDevice("driver-a", "pool-1", "device-2");
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_FALSE(o->stats.node_cache_hit);
  // Another claim with the same spec (another Pod) hits the cache.
  f.claims[0].metadata.name = "claim-1";
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->stats.node_cache_hit);
  f.allocated.RemoveDevice("driver-a", "pool-1", "device-2");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->stats.node_cache_hit);
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-2"}));
}

TEST(AllocatorTest, NodeCacheKeepsAClaimSetTheNodeCanNeverTakeAcrossStateChanges) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "3}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_FALSE(o->stats.node_cache_hit);
  // Three devices out of two: no allocation or release on the node changes that.
  f.allocated.AddDevice("driver-a", "pool-1", "device-1");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_TRUE(o->stats.node_cache_hit);
  f.allocated.RemoveDevice("driver-a", "pool-1", "device-1");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->stats.node_cache_hit);
  // An explanation is searched for, and says why.
  o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_FALSE(o->stats.node_cache_hit);
  ASSERT_NE(o->explanation, nullptr);

  // Two devices the node has, both taken: unsatisfiable only while they are.
  f.claims[0].spec.devices.requests[0].exactly->count = 2;
  f.claims[0].metadata.name = "claim-1";
  f.claims[0].metadata.uid = "uid-claim-1";
  f.allocated.AddDevice("driver-a", "pool-1", "device-2");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kUnsatisfiable);
  EXPECT_FALSE(o->stats.node_cache_hit);
  f.allocated.RemoveDevice("driver-a", "pool-1", "device-2");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_FALSE(o->stats.node_cache_hit);
}

TEST(AllocatorTest, NodeCacheRemembersAnAllocationForPolicyFreeCallersUntilTheStateChanges) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_FALSE(o->stats.node_cache_hit);
  const std::string first = boost::json::serialize(rv1::Encode((*o->results)[0]));
  const auto searched = o->results;
  // Another claim with the same spec (another Pod) gets the remembered first solution, shared
  // rather than copied (no device in it is shared, so there is no share ID to draw again).
  f.claims[0].metadata.name = "claim-1";
  o = f.Run();
  ASSERT_TRUE(o.ok());
  ASSERT_EQ(o->kind, Outcome::Kind::kAllocated);
  EXPECT_TRUE(o->stats.node_cache_hit);
  EXPECT_EQ(boost::json::serialize(rv1::Encode((*o->results)[0])), first);
  EXPECT_EQ(o->results, searched);
  // A policy may refuse what the node allows, and an explanation needs the search: both search.
  Holdings holdings;
  QuotaConstraint idle("ns", {Budget("class-a.deviceclass.resource.k8s.io/devices", 9, 0)},
                       holdings);
  o = f.Run({.policies = {&idle}});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->stats.node_cache_hit);
  o = f.Run({.explain = true});
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->stats.node_cache_hit);
  ASSERT_NE(o->explanation, nullptr);
  // Once the device is allocated the node is searched again.
  f.allocated.AddDevice("driver-a", "pool-1", "device-1");
  o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_FALSE(o->stats.node_cache_hit);
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-2"}));
}

TEST(AllocatorTest, ARememberedAllocationDrawsItsShareIdsAgain) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kSharedNic);
  f.Load(
      Claim("    - name: req-0\n      exactly:\n        deviceClassName: class-a\n"
            "        allocationMode: ExactCount\n        count: 1\n"
            "        capacity: {requests: {bandwidth: 2G}}\n"));
  std::unique_ptr<Random> seven = NewSeededRandom(7);
  StatusOr<Outcome> searched = f.Run({.random = seven.get()});
  ASSERT_TRUE(searched.ok());
  ASSERT_EQ(searched->kind, Outcome::Kind::kAllocated);
  ASSERT_FALSE(searched->stats.node_cache_hit);
  const std::optional<std::string> searched_id =
      (*searched->results)[0].devices.results[0].share_id;
  std::unique_ptr<Random> eight = NewSeededRandom(8);
  StatusOr<Outcome> remembered = f.Run({.random = eight.get()});
  ASSERT_TRUE(remembered.ok());
  ASSERT_TRUE(remembered->stats.node_cache_hit);
  std::unique_ptr<Random> expected = NewSeededRandom(8);
  EXPECT_EQ((*remembered->results)[0].devices.results[0].share_id, expected->NewUuid())
      << "drawn from the caller's generator as a search would";
  EXPECT_NE((*remembered->results)[0].devices.results[0].share_id,
            (*searched->results)[0].devices.results[0].share_id);
  EXPECT_EQ((*searched->results)[0].devices.results[0].share_id, searched_id)
      << "the results handed out before are not changed by the hit";
}

TEST(AllocatorTest, AdminAccessNeedsTheFeatureAndIgnoresAllocations) {
  Fixture f;
  f.Load(kClassA);
  f.Load(kTwoDevices);
  f.allocated.AddDevice("driver-a", "pool-1", "device-1");
  f.Load(Claim(
      "    - {name: req-0, exactly: {deviceClassName: class-a, allocationMode: ExactCount, count: "
      "1, adminAccess: true}}\n"));
  StatusOr<Outcome> o = f.Run();
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(f.Devices(*o), std::vector<std::string>({"req-0=driver-a/pool-1/device-1"}));
  EXPECT_EQ((*o->results)[0].devices.results[0].admin_access, true);
  f.features.admin_access = false;
  o = f.Run();
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("admin access is requested, but the feature is disabled"),
            std::string::npos);
}

}  // namespace
}  // namespace draplane::allocator
