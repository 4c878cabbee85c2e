// The fair-share model over the device ledger (fair_share.h): capacity units, current usage from
// the ledger's holdings, decay on the injected clock, weights, active tenants, DRF over domains.
#include "scheduler/fair_share.h"

#include <gtest/gtest.h>

#include <cmath>

#include "api/codec/json.h"
#include "api/gen/draplane_v1alpha1_codec.h"
#include "scheduler/fair_share_testing.h"

namespace draplane::scheduler {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

FairShareConfig Accelerators() {
  FairShareConfig config;
  config.domains.push_back({.name = "accelerators",
                            .device_classes = {"h100", "a100"},
                            .cost = {{"h100", {.per_device = 4}}, {"a100", {.per_device = 2}}}});
  return config;
}

TEST(FairShareModelTest, CapacityAndCurrentShareFollowTheLedgersHoldings) {
  FairShareWorld world{{"node-a", {"H100", "H100"}}, {"node-b", {"A100", "A100"}}};
  FairShareModel model(Accelerators(), world.ledger, world.clock);
  EXPECT_DOUBLE_EQ(model.CapacityUnits(0), 4 * 2 + 2 * 2);
  EXPECT_EQ(model.DomainOf("h100"), 0);
  EXPECT_EQ(model.DomainOf("cpu"), -1);
  EXPECT_EQ(model.DomainsOf({"a100", "cpu", "h100"}), std::vector<int>{0});

  world.Hold("team-a", "c1", "h100", "node-a", "gpu-0");
  EXPECT_DOUBLE_EQ(model.Current("team-a", 0), 4.0 / 12);
  // In flight counts as held (the ledger's holdings, committed and in flight).
  world.HoldInFlight("team-b", "c2", "a100", "node-b", "gpu-0");
  EXPECT_DOUBLE_EQ(model.Current("team-b", 0), 2.0 / 12);
  world.ledger.RemoveInFlight("team-b/c2");
  EXPECT_DOUBLE_EQ(model.Current("team-b", 0), 0);
  world.ledger.Uncommit("team-a/c1");
  EXPECT_DOUBLE_EQ(model.Current("team-a", 0), 0);

  // A model built later takes the holdings the ledger has.
  world.Hold("team-a", "c3", "h100", "node-a", "gpu-1");
  FairShareWorld other{{"node-a", {"H100", "H100"}}};
  other.Hold("team-a", "c3", "h100", "node-a", "gpu-1");
  FairShareModel late(Accelerators(), other.ledger, other.clock);
  EXPECT_DOUBLE_EQ(late.Current("team-a", 0), 4.0 / 8);

  // New devices change the capacity (and so the share) at once.
  other.AddNode("node-c", {"A100"});
  EXPECT_DOUBLE_EQ(late.CapacityUnits(0), 10);
  EXPECT_DOUBLE_EQ(late.Current("team-a", 0), 4.0 / 10);
}

TEST(FairShareModelTest, PerCounterAndPerCapacityCostsReadTheDevices) {
  FairShareWorld world{{"node-a", {"H100", "A100"}}};
  world.SetMemory("node-a", {80, 40});
  FairShareConfig config;
  config.domains.push_back(
      {.name = "memory",
       .device_classes = {"h100", "a100"},
       .cost = {
           {"h100",
            {.kind = FairShareCost::Kind::kPerCapacity, .name = "memory", .unit = 10, .weight = 1}},
           {"a100",
            {.kind = FairShareCost::Kind::kPerCapacity,
             .name = "memory",
             .unit = 10,
             .weight = 2}}}});
  FairShareModel model(config, world.ledger, world.clock);
  EXPECT_DOUBLE_EQ(model.CapacityUnits(0), 8 + 8);
  world.Hold("team-a", "c1", "a100", "node-a", "gpu-1");
  EXPECT_DOUBLE_EQ(model.Current("team-a", 0), 0.5);
}

// hist(T) = Σ cur_i · (2^(−(T−t_{i+1})/h) − 2^(−(T−t_i)/h)) over the intervals of constant cur.
TEST(FairShareModelTest, DecayIsPiecewiseExactOnTheInjectedClock) {
  FairShareConfig config = Accelerators();
  config.half_life = hours(1);
  FairShareWorld world{{"node-a", {"H100", "H100", "H100", "H100"}}};
  FairShareWorld polled{{"node-a", {"H100", "H100", "H100", "H100"}}};
  FairShareModel model(config, world.ledger, world.clock);
  FairShareModel often(config, polled.ledger, polled.clock);
  auto both = [&](auto&& fn) {
    fn(world);
    fn(polled);
  };
  both([](FairShareWorld& w) { w.Hold("team-a", "c1", "h100", "node-a", "gpu-0"); });
  // One hour at 1/4, read once an hour by `model` and every minute by `often`.
  for (int i = 0; i < 60; ++i) {
    both([](FairShareWorld& w) { w.clock.Advance(minutes(1)); });
    often.Decayed("team-a", 0);
  }
  EXPECT_NEAR(model.Decayed("team-a", 0), 0.25 * 0.5, 1e-12);
  EXPECT_NEAR(often.Decayed("team-a", 0), 0.25 * 0.5, 1e-12);
  // Then half an hour at 2/4, then an hour at nothing.
  both([](FairShareWorld& w) { w.Hold("team-a", "c2", "h100", "node-a", "gpu-1"); });
  both([](FairShareWorld& w) { w.clock.Advance(minutes(30)); });
  both([](FairShareWorld& w) {
    w.ledger.Uncommit("team-a/c1");
    w.ledger.Uncommit("team-a/c2");
  });
  for (int i = 0; i < 4; ++i) {
    both([](FairShareWorld& w) { w.clock.Advance(minutes(15)); });
    often.Decayed("team-a", 0);
  }
  double t1 = 2.5;  // hours, now; intervals [0,1) at 0.25, [1,1.5) at 0.5, [1.5,2.5) at 0
  auto at = [&](double t) { return std::exp2(-(t1 - t)); };
  double expected = 0.25 * (at(1) - at(0)) + 0.5 * (at(1.5) - at(1));
  EXPECT_NEAR(model.Decayed("team-a", 0), expected, 1e-12);
  EXPECT_NEAR(often.Decayed("team-a", 0), expected, 1e-12);
  EXPECT_DOUBLE_EQ(model.Current("team-a", 0), 0);
}

TEST(FairShareModelTest, WeightsByNamespaceBeforeSelectorThenDefault) {
  FairShareConfig config = Accelerators();
  StatusOr<api::labels::Selector> batch = api::labels::Parse("tier=batch");
  ASSERT_TRUE(batch.ok());
  config.tenants = {{.namespace_selector = *batch, .weight = 2},
                    {.namespaces = {"team-a"}, .weight = 3},
                    {.namespace_selector = *api::labels::Parse("tier"), .weight = 7}};
  config.default_weight = 5;
  FairShareWorld world{{"node-a", {"H100"}}};
  FairShareModel model(config, world.ledger, world.clock);
  model.SetNamespaceLabels("team-a", {{"tier", "batch"}});
  model.SetNamespaceLabels("team-c", {{"tier", "batch"}});
  model.SetNamespaceLabels("team-e", {{"tier", "gold"}});
  EXPECT_EQ(model.Weight("team-a"), 3);  // named, although a selector entry comes first
  EXPECT_EQ(model.Weight("team-c"), 2);  // the first matching selector in list order
  EXPECT_EQ(model.Weight("team-e"), 7);
  EXPECT_EQ(model.Weight("team-d"), 5);  // no entry
  // Labels change: the weight follows, also for a tenant the model already tracks.
  model.AddPending("team-c", {0});
  model.SetNamespaceLabels("team-c", {});
  EXPECT_EQ(model.Weight("team-c"), 5);
  model.SetNamespaceLabels("team-c", {{"tier", "batch"}});
  model.RemoveNamespace("team-c");
  EXPECT_EQ(model.Weight("team-c"), 5);
}

TEST(FairShareModelTest, FairShareIsOverTheActiveTenantsOnly) {
  FairShareConfig config = Accelerators();
  config.tenants = {{.namespaces = {"team-a"}, .weight = 3}};
  FairShareWorld world{{"node-a", {"H100", "H100"}}};
  FairShareModel model(config, world.ledger, world.clock);
  world.Hold("team-a", "c1", "h100", "node-a", "gpu-0");  // active: holds
  model.AddPending("team-b", {0});                        // active: a pod in the active queue
  EXPECT_DOUBLE_EQ(model.FairShare("team-a", 0), 0.75);
  EXPECT_DOUBLE_EQ(model.FairShare("team-b", 0), 0.25);
  EXPECT_DOUBLE_EQ(model.FairShare("team-c", 0), 1.0 / 5);  // as if it joined
  model.RemovePending("team-b", {0});
  EXPECT_DOUBLE_EQ(model.FairShare("team-a", 0), 1);
  world.ledger.Uncommit("team-a/c1");
  model.AddPending("team-b", {0});
  EXPECT_DOUBLE_EQ(model.FairShare("team-b", 0), 1);
}

// What the status and the metrics report: a tenant whose Pod waits outside the active queue (in
// backoff or the unschedulable pool, so not in the model the order uses) still counts in the
// fair shares, as `draplane queue` counts it; the shares of active tenants sum to 1.
TEST(ComputeSharesTest, TenantsWaitingOutsideTheActiveQueueCountInTheReportedShares) {
  FairShareConfig config = Accelerators();
  config.tenants = {{.namespaces = {"team-a"}, .weight = 3}};
  FairShareWorld world{{"node-a", {"H100", "H100"}}};
  FairShareModel model(config, world.ledger, world.clock);
  world.Hold("team-a", "c1", "h100", "node-a", "gpu-0");
  EXPECT_DOUBLE_EQ(model.FairShare("team-a", 0), 1);  // the order's view: team-b not active
  std::vector<DomainShares> shares =
      ComputeShares(model, {PendingShare{.namespace_ = "team-b", .domains = {0}}});
  ASSERT_EQ(shares[0].tenants.size(), 2u);
  EXPECT_EQ(shares[0].tenants[0].namespace_, "team-a");
  EXPECT_DOUBLE_EQ(shares[0].tenants[0].fair, 0.75);
  EXPECT_DOUBLE_EQ(shares[0].tenants[0].effective, model.Used("team-a", 0) / 0.75);
  EXPECT_GT(shares[0].tenants[0].effective, 0);
  EXPECT_DOUBLE_EQ(shares[0].tenants[1].fair, 0.25);
  EXPECT_EQ(shares[0].tenants[1].pending, 1);
}

TEST(FairShareModelTest, EffectiveShareMixesHistoryAndPodShareIsTheMaxOverItsDomains) {
  FairShareConfig config;
  config.domains = {{.name = "big", .device_classes = {"h100"}},
                    {.name = "small", .device_classes = {"a100"}}};
  config.half_life = hours(1);
  config.history_fraction = 0.5;
  FairShareWorld world{{"node-a", {"H100", "H100"}}, {"node-b", {"A100", "A100", "A100", "A100"}}};
  FairShareModel model(config, world.ledger, world.clock);
  model.AddPending("team-b", {0, 1});
  world.Hold("team-a", "c1", "h100", "node-a", "gpu-0");
  world.Hold("team-a", "c2", "a100", "node-b", "gpu-0");
  world.clock.Advance(hours(1));
  // big: cur 1/2, hist 1/4, fair 1/2 → (0.25 + 0.125) / 0.5; small: cur 1/4, hist 1/8.
  EXPECT_NEAR(model.EffectiveShare("team-a", 0), 0.75, 1e-12);
  EXPECT_NEAR(model.EffectiveShare("team-a", 1), 0.375, 1e-12);
  EXPECT_NEAR(model.PodShare("team-a", {0, 1}), 0.75, 1e-12);
  EXPECT_NEAR(model.PodShare("team-a", {1}), 0.375, 1e-12);
  EXPECT_EQ(model.PodShare("team-a", {}), 0);
  EXPECT_EQ(model.EffectiveShare("team-b", 0), 0);
}

// The issue's policy as written compiles to the model's config: costs of every kind, tenants by
// namespace and by selector, the durations, the defaults where the policy is silent.
TEST(CompileSharingPolicyTest, ThePolicyAsWrittenIsTheConfig) {
  StatusOr<boost::json::value> json = api::codec::ParseJson(R"({
    "apiVersion": "draplane.dev/v1alpha1", "kind": "DeviceSharingPolicy",
    "metadata": {"name": "default"},
    "spec": {
      "domains": [
        {"name": "accelerators", "deviceClasses": ["h100", "a100"],
         "cost": {"h100": {"perDevice": "4"}, "a100": {"perDevice": "2"}}},
        {"name": "partitions", "deviceClasses": ["mig"],
         "cost": {"mig": {"perCounter": {"name": "memory", "unit": "10Gi", "weight": "1500m"}}}}],
      "tenants": [{"namespaces": ["team-a"], "weight": 3},
                  {"namespaceSelector": {"matchLabels": {"tier": "batch"}}, "weight": 1}],
      "defaultWeight": 2,
      "aging": {"starvationThreshold": "90m", "holds": false}}})");
  ASSERT_TRUE(json.ok()) << json.status().ToString();
  api::draplanev1alpha1::DeviceSharingPolicy policy;
  api::FieldErrorList errors;
  api::draplanev1alpha1::Decode(*json, &policy, &errors);
  ASSERT_TRUE(errors.empty());
  StatusOr<FairShareConfig> config = CompileSharingPolicy(policy);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->domains.size(), 2u);
  EXPECT_EQ(config->domains[0].device_classes, (std::vector<std::string>{"h100", "a100"}));
  EXPECT_DOUBLE_EQ(config->domains[0].cost.at("h100").per_device, 4);
  const FairShareCost& mig = config->domains[1].cost.at("mig");
  EXPECT_EQ(mig.kind, FairShareCost::Kind::kPerCounter);
  EXPECT_EQ(mig.name, "memory");
  EXPECT_DOUBLE_EQ(mig.unit, 10.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(mig.weight, 1.5);
  ASSERT_EQ(config->tenants.size(), 2u);
  EXPECT_EQ(config->tenants[0].namespaces, std::vector<std::string>{"team-a"});
  EXPECT_DOUBLE_EQ(config->tenants[0].weight, 3);
  ASSERT_TRUE(config->tenants[1].namespace_selector.has_value());
  EXPECT_TRUE(
      config->tenants[1].namespace_selector->Matches(api::labels::LabelMap{{"tier", "batch"}}));
  EXPECT_FALSE(
      config->tenants[1].namespace_selector->Matches(api::labels::LabelMap{{"tier", "gold"}}));
  EXPECT_DOUBLE_EQ(config->default_weight, 2);
  EXPECT_EQ(config->half_life, hours(24));
  EXPECT_DOUBLE_EQ(config->history_fraction, 0.5);
  EXPECT_EQ(config->full_credit_after, minutes(30));
  EXPECT_EQ(config->starvation_threshold, minutes(90));
  EXPECT_EQ(config->max_hold, minutes(15));
  EXPECT_FALSE(config->holds);

  // One the server would refuse is refused with the server's words.
  policy.spec.tenants[0].weight = 0;
  config = CompileSharingPolicy(policy);
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find(
                "spec.tenants[0].weight: Invalid value: 0: must be greater than 0"),
            std::string::npos)
      << config.status().message();
}

// A policy edit builds a new model; it continues the old one's decayed history for the domains
// it keeps (by name), at the new model's capacity from then on.
TEST(FairShareModelTest, ANewModelTakesTheDecayedHistoryOfTheDomainsItKeeps) {
  FairShareWorld world{{"node-a", {"H100", "H100"}}, {"node-b", {"A100", "A100"}}};
  FairShareConfig config = Accelerators();
  config.half_life = hours(1);
  auto old = std::make_unique<FairShareModel>(config, world.ledger, world.clock);
  world.Hold("team-a", "c1", "h100", "node-a", "gpu-0");
  world.clock.Advance(hours(1));
  double decayed = old->Decayed("team-a", 0);
  EXPECT_NEAR(decayed, 4.0 / 12 * 0.5, 1e-12);

  FairShareConfig edited = config;
  edited.domains[0].cost["h100"].per_device = 2;
  edited.domains.push_back({.name = "other", .device_classes = {"none"}});
  FairShareModel model(edited, world.ledger, world.clock);
  model.TakeHistory(*old);
  old.reset();  // the new model keeps observing the ledger
  EXPECT_DOUBLE_EQ(model.Decayed("team-a", 0), decayed);
  EXPECT_DOUBLE_EQ(model.Decayed("team-a", 1), 0);
  EXPECT_DOUBLE_EQ(model.Current("team-a", 0), 2.0 / 8);
  world.clock.Advance(hours(1));
  EXPECT_NEAR(model.Decayed("team-a", 0), decayed * 0.5 + 2.0 / 8 * 0.5, 1e-12);
  world.Hold("team-b", "c2", "a100", "node-b", "gpu-0");
  EXPECT_DOUBLE_EQ(model.Current("team-b", 0), 2.0 / 8);
  EXPECT_EQ(model.Tenants(), (std::vector<std::string>{"team-a", "team-b"}));
  EXPECT_TRUE(model.Active("team-b", 0));
  EXPECT_FALSE(model.Active("team-b", 1));
}

}  // namespace
}  // namespace draplane::scheduler
