// Test support for fair_share_test.cc and queue_order_test.cc: a device ledger with two classes
// (h100, a100: devices whose `model` attribute says so), node-local slices, and claims held by
// tenants. Not part of the library.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "scheduler/device_ledger.h"

namespace draplane::scheduler {

struct FairShareWorld {
  using Node = std::pair<std::string, std::vector<std::string>>;  // name, device models
  using Nodes = std::vector<Node>;

  FairShareWorld(std::initializer_list<Node> nodes) : FairShareWorld(Nodes(nodes)) {}
  explicit FairShareWorld(const Nodes& nodes) {
    for (const char* model : {"H100", "A100"}) {
      auto c = std::make_shared<api::resourcev1::DeviceClass>();
      c->metadata.name = model == std::string("H100") ? "h100" : "a100";
      c->spec.selectors.emplace_back().cel.emplace().expression =
          std::string(R"(device.attributes["gpu.example.com"].model == ")") + model + "\"";
      ledger.SetClass(c);
    }
    for (const auto& [node, models] : nodes) AddNode(node, models);
  }

  void AddNode(const std::string& node, const std::vector<std::string>& models) {
    auto s = std::make_shared<api::resourcev1::ResourceSlice>();
    s->metadata.name = node + "-slice";
    s->spec.driver = "gpu.example.com";
    s->spec.node_name = node;
    s->spec.pool.name = node;
    for (size_t i = 0; i < models.size(); ++i) {
      api::resourcev1::Device d;
      d.name = "gpu-" + std::to_string(i);
      d.attributes["model"].string_value = models[i];
      s->spec.devices.push_back(std::move(d));
    }
    slices[node] = s;
    ledger.SetSlice(s);
  }

  // Republishes a node's slice with a `memory` capacity per device.
  void SetMemory(const std::string& node, const std::vector<int64_t>& memory) {
    auto s = std::make_shared<api::resourcev1::ResourceSlice>(*slices.at(node));
    for (size_t i = 0; i < memory.size(); ++i) {
      s->spec.devices[i].capacity["memory"].value = api::Quantity::FromInt64(memory[i]);
    }
    slices[node] = s;
    ledger.SetSlice(s);
  }

  // A claim `ns/name` (also its uid) with one request of `device_class`, allocated `device`.
  static std::shared_ptr<api::resourcev1::ResourceClaim> Claim(const std::string& ns,
                                                               const std::string& name,
                                                               const std::string& device_class,
                                                               const std::string& node,
                                                               const std::string& device) {
    auto c = std::make_shared<api::resourcev1::ResourceClaim>();
    c->metadata.namespace_ = ns;
    c->metadata.name = name;
    c->metadata.uid = ns + "/" + name;
    api::resourcev1::DeviceRequest& request = c->spec.devices.requests.emplace_back();
    request.name = "req";
    request.exactly.emplace().device_class_name = device_class;
    api::resourcev1::DeviceRequestAllocationResult& r =
        c->status.allocation.emplace().devices.results.emplace_back();
    r.request = "req";
    r.driver = "gpu.example.com";
    r.pool = node;
    r.device = device;
    return c;
  }

  void Hold(const std::string& ns, const std::string& name, const std::string& device_class,
            const std::string& node, const std::string& device) {
    ledger.Commit(Claim(ns, name, device_class, node, device));
  }
  void HoldInFlight(const std::string& ns, const std::string& name, const std::string& device_class,
                    const std::string& node, const std::string& device) {
    auto claim = Claim(ns, name, device_class, node, device);
    auto allocation =
        std::make_shared<api::resourcev1::AllocationResult>(*claim->status.allocation);
    claim->status.allocation.reset();
    ledger.AddInFlight(claim->metadata.uid, claim, allocation);
  }

  ManualClock clock;
  DeviceLedger ledger;
  std::map<std::string, std::shared_ptr<const api::resourcev1::ResourceSlice>> slices;
};

}  // namespace draplane::scheduler
