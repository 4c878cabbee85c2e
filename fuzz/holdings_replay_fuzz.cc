// Holdings ledger replay fuzz target (docs/design/holdings.md): the input is read as a sequence
// of operations on a two-node cluster with whole GPUs, MIG slices consuming counters, a
// shareable MIG slice and a shareable NIC, three tenants and Allocation-mode quotas:
//   - allocate the claims of a Pod of a tenant on a node, with the tenant's QuotaConstraint
//     inside the search, then either commit it at once or keep it in flight (reserved);
//   - commit or abandon an in-flight allocation;
//   - deallocate a committed one (the quota gets its usage back by a recompute);
//   - edit a quota (raise or lower a hard limit, add or drop a quota);
//   - restart (the ledger is rebuilt from the store, in-flight reservations are lost).
// The ledger is maintained incrementally, as the scheduler's DeviceLedger does; after every step:
//   1. the ledger's committed holdings equal a recompute from the store (CompareHoldings);
//   2. every quota's used equals the recompute of its limited resources (charge on commit,
//      recompute on release, as the scheduler writes status.used);
//   3. an allocation never takes a quota over its hard limit: the charge the search accepted
//      fits the quota as checked after the fact (ExceedsQuota), so used <= hard for every
//      resource an allocation charged (a lowered hard may leave older usage above it);
//   4. what Holdings::Increment predicted is exactly what the usage grew by;
//   5. no device is held by two exclusive allocations.
// Selectors use the allocator's testing engine (internal/testing_engine.h).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "allocator/allocator.h"
#include "allocator/holdings.h"
#include "allocator/internal/testing_engine.h"
#include "allocator/quota.h"

namespace {

namespace rv1 = draplane::api::resourcev1;
namespace alloc = draplane::allocator;
using draplane::StatusOr;
using draplane::api::Quantity;

constexpr char kDriver[] = "gpu.example.com";
constexpr int kNodes = 2;
const char* const kTenants[] = {"team-a", "team-b", "team-c"};
const char* const kClasses[] = {"h100", "a100", "mig", "nic"};
// Resource names quotas may limit, with the unit their hard values are drawn in.
struct QuotaKey {
  const char* name;
  const char* unit;
};
const QuotaKey kQuotaKeys[] = {
    {"h100.deviceclass.resource.k8s.io/devices", ""},
    {"a100.deviceclass.resource.k8s.io/devices", ""},
    {"mig.deviceclass.resource.k8s.io/devices", ""},
    {"nic.deviceclass.resource.k8s.io/devices", ""},
    {"gpu.example.com.driver.draplane.dev/counter.memory", "Gi"},
    {"mig.deviceclass.draplane.dev/counter.memory", "Gi"},
    {"nic.deviceclass.draplane.dev/capacity.bandwidth", "G"},
};

[[noreturn]] void Violation(const std::string& what) {
  std::fprintf(stderr, "invariant violated: %s\n", what.c_str());
  std::abort();
}

Quantity Q(const std::string& text) { return *Quantity::Parse(text); }

std::string Render(const alloc::ResourceList& list) {
  std::string out;
  for (const auto& [k, q] : list) out += k + "=" + q.ToString() + " ";
  return out;
}

// A node's pool: a slice with the counter set of its MIG-partitioned GPU, and one with devices.
std::vector<rv1::ResourceSlice> Slices(int node) {
  std::string n = std::to_string(node);
  rv1::ResourceSlice counters;
  counters.metadata.name = "counters-" + n;
  counters.spec.driver = kDriver;
  counters.spec.pool.name = "node-" + n;
  counters.spec.pool.generation = 1;
  counters.spec.pool.resource_slice_count = 2;
  counters.spec.node_name = "node-" + n;
  rv1::CounterSet set;
  set.name = "gpu-0";
  set.counters["memory"].value = Q("80Gi");
  counters.spec.shared_counters.push_back(set);
  rv1::ResourceSlice s = counters;
  s.metadata.name = "gpus-" + n;
  s.spec.shared_counters.clear();
  auto device = [&](std::string name, std::string model, std::string memory) -> rv1::Device& {
    rv1::Device d;
    d.name = std::move(name);
    d.attributes["model"].string_value = std::move(model);
    if (!memory.empty()) d.capacity["memory"].value = Q(memory);
    s.spec.devices.push_back(std::move(d));
    return s.spec.devices.back();
  };
  device("h100-0", "h100", "80Gi");
  device("h100-1", "h100", "80Gi");
  for (int i = 0; i < 3; ++i) device("a100-" + std::to_string(i), "a100", "40Gi");
  auto consume = [](rv1::Device& d, const char* amount) {
    rv1::DeviceCounterConsumption c;
    c.counter_set = "gpu-0";
    c.counters["memory"].value = Q(amount);
    d.consumes_counters.push_back(c);
  };
  consume(device("mig-1g-0", "mig", "10Gi"), "10Gi");
  consume(device("mig-1g-1", "mig", "10Gi"), "10Gi");
  consume(device("mig-7g", "mig", "80Gi"), "80Gi");
  rv1::Device& shared_mig = device("mig-shared", "mig", "10Gi");
  consume(shared_mig, "10Gi");
  shared_mig.allow_multiple_allocations = true;
  rv1::Device& nic = device("nic-0", "nic", "");
  nic.allow_multiple_allocations = true;
  nic.capacity["bandwidth"].value = Q("100G");
  return {counters, s};
}

struct Quota {
  alloc::QuotaBudget budget;  // hard + used (used as status.used would say)
};

struct Pending {
  std::string tenant;
  std::vector<rv1::ResourceClaim> claims;  // allocated, not written yet
};

class Replay {
 public:
  explicit Replay(FuzzedDataProvider& in)
      : in_(in), snapshot_(draplane::allocator::internal::NewTestingSelectorEngine()) {
    features_ = alloc::AllFeatures();
    for (const char* c : kClasses) {
      rv1::DeviceClass dc;
      dc.metadata.name = c;
      rv1::DeviceSelector s;
      s.cel.emplace();
      s.cel->expression = std::string("attr:model=") + c;
      dc.spec.selectors.push_back(s);
      snapshot_.SetClass(dc);
    }
    for (int n = 0; n < kNodes; ++n) {
      for (const rv1::ResourceSlice& s : Slices(n)) {
        catalog_.SetSlice(s);
        snapshot_.AddSlice(s);
      }
      nodes_.emplace_back();
      nodes_.back().metadata.name = "node-" + std::to_string(n);
    }
  }

  void Run() {
    for (int step = 0; step < 40 && in_.remaining_bytes() > 0; ++step) {
      switch (in_.ConsumeIntegralInRange(0, 9)) {
        case 0:
        case 1:
        case 2:
        case 3:
          Allocate();
          break;
        case 4:
          Settle(/*commit=*/true);
          break;
        case 5:
          Settle(/*commit=*/false);
          break;
        case 6:
          Deallocate();
          break;
        case 7:
        case 8:
          EditQuota();
          break;
        case 9:
          Restart();
          break;
      }
      Check();
    }
  }

 private:
  const char* Pick(const char* const* list, size_t n) {
    return list[in_.ConsumeIntegralInRange<size_t>(0, n - 1)];
  }

  std::vector<alloc::QuotaBudget> Budgets(const std::string& tenant) const {
    std::vector<alloc::QuotaBudget> out;
    for (const auto& [key, q] : quotas_) {
      if (q.budget.namespace_ == tenant) out.push_back(q.budget);
    }
    return out;
  }

  void EditQuota() {
    std::string tenant = Pick(kTenants, 3);
    std::string name = "q" + std::to_string(in_.ConsumeIntegralInRange(0, 1));
    std::string key = tenant + "/" + name;
    if (quotas_.contains(key) && in_.ConsumeIntegralInRange(0, 3) == 0) {
      quotas_.erase(key);
      return;
    }
    Quota& q = quotas_[key];
    q.budget.namespace_ = tenant;
    q.budget.name = name;
    const QuotaKey& k =
        kQuotaKeys[in_.ConsumeIntegralInRange<size_t>(0, std::size(kQuotaKeys) - 1)];
    int64_t hard = in_.ConsumeIntegralInRange<int64_t>(0, k.unit[0] == '\0' ? 4 : 200);
    q.budget.hard[k.name] = Q(std::to_string(hard) + k.unit);
    // A new limit starts from the real usage (the quota controller's first recompute).
    Recount(q.budget);
  }

  // status.used of a quota's limited resources recomputed from the store (the scheduler's
  // give-back recompute).
  void Recount(alloc::QuotaBudget& budget) {
    alloc::ResourceList usage = Recomputed().Usage(budget.namespace_);
    budget.used.clear();
    for (const auto& [key, hard] : budget.hard) {
      auto it = usage.find(key);
      if (it != usage.end()) budget.used.emplace(key, it->second);
    }
  }

  alloc::Holdings Recomputed() const {
    std::vector<const rv1::ResourceClaim*> claims;
    for (const auto& [uid, c] : store_) claims.push_back(&c);
    return alloc::RecomputeHoldings(claims, catalog_);
  }

  rv1::ResourceClaim MakeClaim(const std::string& tenant) {
    rv1::ResourceClaim c;
    int id = next_claim_++;
    c.metadata.name = "claim-" + std::to_string(id);
    c.metadata.namespace_ = tenant;
    c.metadata.uid = "uid-" + std::to_string(id);
    int requests = in_.ConsumeIntegralInRange(1, 2);
    for (int r = 0; r < requests; ++r) {
      rv1::DeviceRequest req;
      req.name = "r" + std::to_string(r);
      auto fill = [&](auto& e) {
        e.device_class_name = Pick(kClasses, 4);
        bool all = in_.ConsumeIntegralInRange(0, 7) == 0;
        e.allocation_mode =
            std::string(all ? rv1::kDeviceAllocationModeAll : rv1::kDeviceAllocationModeExactCount);
        if (!all) e.count = in_.ConsumeIntegralInRange(1, 3);
        if (e.device_class_name == "nic" && in_.ConsumeBool()) {
          e.capacity.emplace();
          e.capacity->requests["bandwidth"] = Q(in_.ConsumeBool() ? "10G" : "40G");
        }
      };
      if (in_.ConsumeBool()) {
        rv1::ExactDeviceRequest e;
        fill(e);
        if (in_.ConsumeIntegralInRange(0, 7) == 0) e.admin_access = true;
        req.exactly = std::move(e);
      } else {
        for (int s = 0; s < 2; ++s) {
          rv1::DeviceSubRequest sub;
          sub.name = "s" + std::to_string(s);
          fill(sub);
          req.first_available.push_back(std::move(sub));
        }
      }
      c.spec.devices.requests.push_back(std::move(req));
    }
    return c;
  }

  void Allocate() {
    std::string tenant = Pick(kTenants, 3);
    const draplane::api::corev1::Node& node =
        nodes_[in_.ConsumeIntegralInRange<size_t>(0, kNodes - 1)];
    std::vector<rv1::ResourceClaim> claims;
    int count = in_.ConsumeIntegralInRange(1, 2);
    for (int i = 0; i < count; ++i) claims.push_back(MakeClaim(tenant));
    std::vector<const rv1::ResourceClaim*> pointers;
    for (const rv1::ResourceClaim& c : claims) pointers.push_back(&c);
    std::vector<alloc::QuotaBudget> budgets = Budgets(tenant);
    alloc::QuotaConstraint quota(tenant, budgets, ledger_);
    std::unique_ptr<draplane::Random> random = draplane::NewSeededRandom(next_claim_);
    alloc::Options options;
    options.random = random.get();
    options.max_search_steps = 20'000;
    if (!budgets.empty()) options.policies = {&quota};
    StatusOr<alloc::Outcome> o =
        alloc::Allocate(snapshot_, node, pointers, allocated_, features_, options);
    if (!o.ok() || o->kind != alloc::Outcome::Kind::kAllocated) return;
    std::vector<alloc::Holdings::Holding> holdings;
    std::vector<const alloc::ClaimCharge*> charges;
    for (size_t i = 0; i < claims.size(); ++i) {
      claims[i].status.allocation = (*o->results)[i];
      holdings.push_back(alloc::Holdings::Make(claims[i].metadata.uid, claims[i], (*o->results)[i],
                                               catalog_, /*in_flight=*/true));
    }
    for (const auto& h : holdings) charges.push_back(&h.charge);
    alloc::ResourceList increment = ledger_.Increment(tenant, charges);
    alloc::ResourceList before = ledger_.Usage(tenant);
    for (const rv1::ResourceClaim& c : claims) allocated_.AddAllocation(*c.status.allocation);
    for (auto& h : holdings) ledger_.Put(std::move(h));
    alloc::ResourceList grown = ledger_.Usage(tenant);
    alloc::AddResources(grown, before, -1);
    if (grown != increment) {
      Violation("Increment predicted " + Render(increment) + "but usage grew by " + Render(grown));
    }
    // What the search accepted must fit every quota as the scheduler checks it after the fact
    // (the ledger's in-flight holdings are not in status.used, so they count as increment).
    // Resources this allocation did not charge may be over a limit lowered earlier.
    alloc::ResourceList in_flight = ledger_.Usage(tenant, alloc::Holdings::Scope::kInFlight);
    alloc::ResourceList extra;
    for (const auto& [key, amount] : increment) {
      if (amount.Sign() > 0 && in_flight.contains(key)) extra.emplace(key, in_flight.at(key));
    }
    for (const alloc::QuotaBudget& b : budgets) {
      if (std::optional<std::string> over = alloc::ExceedsQuota(b, b.used, extra)) {
        Violation("the search accepted an allocation over its quota: " + *over);
      }
    }
    Pending p{tenant, std::move(claims)};
    if (in_.ConsumeBool()) {
      pending_.push_back(std::move(p));
    } else {
      Commit(std::move(p));
    }
  }

  void Commit(Pending p) {
    std::vector<const alloc::ClaimCharge*> charges;
    std::vector<alloc::Holdings::Holding> committed;
    for (const rv1::ResourceClaim& c : p.claims) {
      ledger_.Erase(c.metadata.uid);
      committed.push_back(alloc::Holdings::Make(c.metadata.uid, c, *c.status.allocation, catalog_,
                                                /*in_flight=*/false));
    }
    for (const auto& h : committed) charges.push_back(&h.charge);
    alloc::ResourceList increment =
        ledger_.Increment(p.tenant, charges, alloc::Holdings::Scope::kCommitted);
    for (auto& h : committed) ledger_.Put(std::move(h));
    for (rv1::ResourceClaim& c : p.claims) store_[c.metadata.uid] = std::move(c);
    // PreBind: status.used += the increment, on every quota of the tenant it fits.
    for (auto& [key, q] : quotas_) {
      if (q.budget.namespace_ != p.tenant) continue;
      if (std::optional<std::string> over =
              alloc::ExceedsQuota(q.budget, q.budget.used, increment)) {
        // StillFits screened edits made while the allocation was in flight.
        Violation("a commit over quota slipped through the search: " + *over);
      }
      q.budget.used = alloc::ChargedUsage(q.budget, q.budget.used, increment);
    }
  }

  void Settle(bool commit) {
    if (pending_.empty()) return;
    size_t i = in_.ConsumeIntegralInRange<size_t>(0, pending_.size() - 1);
    Pending p = std::move(pending_[i]);
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    if (commit && StillFits(p)) {
      Commit(std::move(p));
      return;
    }
    // Unreserve.
    for (const rv1::ResourceClaim& c : p.claims) {
      ledger_.Erase(c.metadata.uid);
      allocated_.RemoveAllocation(*c.status.allocation);
    }
  }

  // A quota edited while the allocation was in flight may refuse it now: the scheduler's charge
  // in PreBind fails and it unreserves.
  bool StillFits(const Pending& p) const {
    std::vector<const alloc::ClaimCharge*> charges;
    for (const rv1::ResourceClaim& c : p.claims) {
      charges.push_back(&ledger_.Find(c.metadata.uid)->charge);
    }
    alloc::ResourceList increment =
        ledger_.Increment(p.tenant, charges, alloc::Holdings::Scope::kCommitted);
    for (const auto& [key, q] : quotas_) {
      if (q.budget.namespace_ != p.tenant) continue;
      if (alloc::ExceedsQuota(q.budget, q.budget.used, increment).has_value()) return false;
    }
    return true;
  }

  void Deallocate() {
    if (store_.empty()) return;
    auto it = store_.begin();
    std::advance(it, in_.ConsumeIntegralInRange<size_t>(0, store_.size() - 1));
    std::string tenant = it->second.metadata.namespace_;
    allocated_.RemoveAllocation(*it->second.status.allocation);
    ledger_.Erase(it->first);
    store_.erase(it);
    for (auto& [key, q] : quotas_) {
      if (q.budget.namespace_ == tenant) Recount(q.budget);
    }
  }

  void Restart() {
    for (const Pending& p : pending_) {
      for (const rv1::ResourceClaim& c : p.claims) {
        allocated_.RemoveAllocation(*c.status.allocation);
      }
    }
    pending_.clear();
    ledger_ = Recomputed();
  }

  void Check() {
    alloc::Holdings recomputed = Recomputed();
    std::vector<alloc::HoldingsDifference> diff = alloc::CompareHoldings(ledger_, recomputed);
    if (!diff.empty()) Violation("ledger differs from the recompute: " + diff.front().text);
    for (const auto& [key, q] : quotas_) {
      alloc::QuotaBudget expected = q.budget;
      Recount(expected);
      if (expected.used != q.budget.used) {
        Violation("quota " + key + " used " + Render(q.budget.used) + "!= recomputed " +
                  Render(expected.used));
      }
    }
    std::set<std::string> exclusive;
    auto hold = [&](const rv1::ResourceClaim& c) {
      for (const auto& r : c.status.allocation->devices.results) {
        if (r.admin_access.value_or(false) || r.share_id.has_value()) continue;
        if (!exclusive.insert(r.pool + "/" + r.device).second) {
          Violation("device " + r.pool + "/" + r.device + " held twice");
        }
      }
    };
    for (const auto& [uid, c] : store_) hold(c);
    for (const Pending& p : pending_) {
      for (const rv1::ResourceClaim& c : p.claims) hold(c);
    }
  }

  FuzzedDataProvider& in_;
  alloc::Snapshot snapshot_;
  alloc::Features features_;
  std::vector<draplane::api::corev1::Node> nodes_;
  alloc::DeviceCatalog catalog_;
  alloc::AllocatedState allocated_;
  alloc::Holdings ledger_;
  std::map<std::string, rv1::ResourceClaim> store_;  // committed claims by uid
  std::vector<Pending> pending_;
  std::map<std::string, Quota> quotas_;  // "namespace/name"
  int next_claim_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Replay replay(in);
  replay.Run();
  return 0;
}
