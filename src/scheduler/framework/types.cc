#include "scheduler/framework/types.h"

#include <algorithm>

#include "common/saturating.h"

namespace draplane::scheduler {

std::string_view CodeName(Code code) {
  switch (code) {
    case Code::kSuccess:
      return "Success";
    case Code::kError:
      return "Error";
    case Code::kUnschedulable:
      return "Unschedulable";
    case Code::kUnschedulableAndUnresolvable:
      return "UnschedulableAndUnresolvable";
    case Code::kWait:
      return "Wait";
    case Code::kSkip:
      return "Skip";
    case Code::kPending:
      return "Pending";
  }
  return "Unknown";
}

PluginStatus PluginStatus::Error(Status error) {
  PluginStatus s(Code::kError, {std::string(error.message())});
  s.MutableDetails().error = std::move(error);
  return s;
}

const PluginStatus::Details& PluginStatus::EmptyDetails() {
  static const Details* const empty = new Details();
  return *empty;
}

std::string PluginStatus::Message() const {
  std::string out;
  for (const std::string& r : reasons()) {
    if (!out.empty()) out += ", ";
    out += r;
  }
  return out;
}

namespace {

// Adds `other` into `into` amount by amount with `add` (wrapping or saturating).
template <typename AddFn>
void AddEach(Resources& into, const Resources& other, AddFn add) {
  into.milli_cpu = add(into.milli_cpu, other.milli_cpu);
  into.memory = add(into.memory, other.memory);
  into.ephemeral_storage = add(into.ephemeral_storage, other.ephemeral_storage);
  into.pods = add(into.pods, other.pods);
  for (const auto& [name, value] : other.scalar) {
    int64_t& sum = into.scalar[name];
    sum = add(sum, value);
  }
}

}  // namespace

void Resources::Add(const Resources& other) { AddEach(*this, other, WrappingAdd); }

void Resources::Subtract(const Resources& other) {
  milli_cpu = WrappingAdd(milli_cpu, WrappingNeg(other.milli_cpu));
  memory = WrappingAdd(memory, WrappingNeg(other.memory));
  ephemeral_storage = WrappingAdd(ephemeral_storage, WrappingNeg(other.ephemeral_storage));
  pods = WrappingAdd(pods, WrappingNeg(other.pods));
  for (const auto& [name, value] : other.scalar) {
    auto it = scalar.find(name);
    if (it == scalar.end()) continue;
    it->second = WrappingAdd(it->second, WrappingNeg(value));
    if (it->second == 0) scalar.erase(it);
  }
}

void Resources::AddSaturating(const Resources& other) { AddEach(*this, other, SaturatingAdd); }

Resources Resources::FromList(const std::map<std::string, api::Quantity, std::less<>>& list) {
  Resources r;
  for (const auto& [name, quantity] : list) {
    if (name == "cpu") {
      r.milli_cpu = quantity.MilliValue();
    } else if (name == "memory") {
      r.memory = quantity.Value();
    } else if (name == "ephemeral-storage") {
      r.ephemeral_storage = quantity.Value();
    } else if (name == "pods") {
      r.pods = quantity.Value();
    } else {
      int64_t v = quantity.Value();
      if (v != 0) r.scalar[name] = v;
    }
  }
  return r;
}

namespace {

// A container's effective requests: requests, with limits standing in for requests that are
// missing (the API server's defaulting does the same).
Resources ContainerRequests(const api::corev1::Container& c) {
  std::map<std::string, api::Quantity, std::less<>> effective = c.resources.requests;
  for (const auto& [name, limit] : c.resources.limits) effective.emplace(name, limit);
  return Resources::FromList(effective);
}

void MaxInto(Resources& into, const Resources& other) {
  into.milli_cpu = std::max(into.milli_cpu, other.milli_cpu);
  into.memory = std::max(into.memory, other.memory);
  into.ephemeral_storage = std::max(into.ephemeral_storage, other.ephemeral_storage);
  for (const auto& [name, value] : other.scalar) {
    int64_t& v = into.scalar[name];
    v = std::max(v, value);
  }
}

}  // namespace

Resources ComputePodRequests(const api::corev1::Pod& pod) {
  Resources containers;
  for (const api::corev1::Container& c : pod.spec.containers) {
    containers.AddSaturating(ContainerRequests(c));
  }
  Resources sidecars;
  Resources init_max;
  for (const api::corev1::Container& c : pod.spec.init_containers) {
    Resources r = ContainerRequests(c);
    if (c.restart_policy.value_or("") == "Always") {
      containers.AddSaturating(r);
      sidecars.AddSaturating(r);
      // A sidecar runs alongside the init containers that follow it.
      MaxInto(init_max, sidecars);
    } else {
      Resources with_sidecars = r;
      with_sidecars.AddSaturating(sidecars);
      MaxInto(init_max, with_sidecars);
    }
  }
  Resources out = containers;
  MaxInto(out, init_max);
  if (pod.spec.resources.has_value()) {
    Resources pod_level = Resources::FromList(pod.spec.resources->requests);
    const auto& requests = pod.spec.resources->requests;
    if (requests.contains("cpu")) out.milli_cpu = pod_level.milli_cpu;
    if (requests.contains("memory")) out.memory = pod_level.memory;
  }
  out.AddSaturating(Resources::FromList(pod.spec.overhead));
  out.pods = 1;
  for (auto it = out.scalar.begin(); it != out.scalar.end();) {
    it = it->second == 0 ? out.scalar.erase(it) : std::next(it);
  }
  return out;
}

bool IsExtendedResourceName(std::string_view name) {
  if (name.find('/') == std::string_view::npos) return false;               // native
  if (name.find("kubernetes.io/") != std::string_view::npos) return false;  // prefixed native
  if (name.starts_with("requests.")) return false;
  return true;
}

NodeInfo::NodeInfo(std::shared_ptr<const api::corev1::Node> node) { SetNode(std::move(node)); }

void NodeInfo::SetNode(std::shared_ptr<const api::corev1::Node> node) {
  node_ = std::move(node);
  hashed_name_ = HashedString(node_->metadata.name);
  allocatable_ = Resources::FromList(node_->status.allocatable);
  ++generation_;
}

void NodeInfo::AddPod(const std::string& uid, const Resources& requests) {
  auto it = pods_.find(uid);
  if (it != pods_.end()) {
    requested_.Subtract(it->second);
    it->second = requests;
  } else {
    pods_.emplace(uid, requests);
  }
  requested_.Add(requests);
  ++generation_;
}

bool NodeInfo::RemovePod(const std::string& uid) {
  auto it = pods_.find(uid);
  if (it == pods_.end()) return false;
  requested_.Subtract(it->second);
  pods_.erase(it);
  ++generation_;
  return true;
}

}  // namespace draplane::scheduler
