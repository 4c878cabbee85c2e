#include "scheduler/starvation_holds.h"

#include <algorithm>
#include <boost/json.hpp>
#include <set>

#include "api/meta/time.h"
#include "common/saturating.h"

namespace draplane::scheduler {
namespace {

namespace json = boost::json;

std::string Text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

int64_t StarvationHolds::Wanted(const HoldNeed& need, std::string_view node) const {
  if (need.count != HoldNeed::kAllDevices) return need.count;
  int64_t total = ledger_->Devices(need.device_class, node);
  return total == DeviceLedger::kUnknown ? 0 : total;
}

std::optional<std::string> StarvationHolds::PickTarget(const std::vector<std::string>& nodes,
                                                       const std::vector<HoldNeed>& needs) const {
  if (needs.empty()) return std::nullopt;
  std::optional<std::string> best;
  int64_t best_lacking = 0;
  for (const std::string& node : nodes) {
    // Per class: how many the Pod wants here (requests of one class add up).
    std::map<std::string, int64_t, std::less<>> wanted;
    bool fits = true;
    for (const HoldNeed& need : needs) {
      int64_t total = ledger_->Devices(need.device_class, node);
      if (total == DeviceLedger::kUnknown || total == 0) {
        fits = false;
        break;
      }
      int64_t& want = wanted[need.device_class];
      want = SaturatingAdd(want, need.count == HoldNeed::kAllDevices ? total : need.count);
      if (wanted[need.device_class] > total) {
        fits = false;
        break;
      }
    }
    if (!fits) continue;
    int64_t lacking = 0;
    for (const auto& [device_class, want] : wanted) {
      lacking += std::max<int64_t>(0, want - ledger_->FreeDevices(device_class, node));
    }
    if (!best || lacking < best_lacking || (lacking == best_lacking && node < *best)) {
      best = node;
      best_lacking = lacking;
    }
  }
  return best;
}

bool StarvationHolds::CoolingDown(std::string_view uid, Duration now) const {
  auto it = cooldown_.find(uid);
  return it != cooldown_.end() && now < it->second;
}

void StarvationHolds::Start(StarvationHold hold) {
  cooldown_.erase(hold.uid);
  std::string uid = hold.uid;
  holds_.insert_or_assign(std::move(uid), std::move(hold));
  grown_ = false;
}

std::vector<std::string> StarvationHolds::Grow(Duration now) {
  std::vector<std::string> changed;
  if (holds_.empty() || (grown_ && grown_at_ == ledger_->changes())) return changed;
  grown_ = true;
  grown_at_ = ledger_->changes();
  std::set<allocator::HeldDeviceId> taken;  // by any hold
  // The Pods that started waiting first take what frees up first (as the queue serves them).
  std::vector<std::pair<Duration, StarvationHold*>> by_arrival;
  for (auto& [uid, hold] : holds_) {
    taken.insert(hold.devices.begin(), hold.devices.end());
    by_arrival.emplace_back(hold.enqueued, &hold);
  }
  std::sort(by_arrival.begin(), by_arrival.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first, a.second->uid) < std::tie(b.first, b.second->uid);
  });
  for (auto& [enqueued, held] : by_arrival) {
    StarvationHold& hold = *held;
    const std::string& uid = hold.uid;
    std::set<allocator::HeldDeviceId> mine(hold.devices.begin(), hold.devices.end());
    std::set<allocator::HeldDeviceId> kept;
    bool complete = true;
    for (const HoldNeed& need : hold.needs) {
      int64_t want = Wanted(need, hold.node);
      int64_t have = 0;
      std::vector<allocator::HeldDeviceId> free =
          ledger_->FreeDevicesOn(hold.node, need.device_class);
      // Devices this hold already has first (a device it holds that something else took is no
      // longer free, so it drops out here), then new ones nobody holds.
      for (const allocator::HeldDeviceId& d : free) {
        if (have < want && mine.contains(d) && !kept.contains(d)) {
          kept.insert(d);
          ++have;
        }
      }
      for (const allocator::HeldDeviceId& d : free) {
        if (have < want && !taken.contains(d) && !kept.contains(d)) {
          kept.insert(d);
          taken.insert(d);
          ++have;
        }
      }
      if (have < want) complete = false;
    }
    for (const allocator::HeldDeviceId& d : mine) {
      if (!kept.contains(d)) taken.erase(d);
    }
    std::vector<allocator::HeldDeviceId> devices(kept.begin(), kept.end());
    if (devices != hold.devices) {
      hold.devices = std::move(devices);
      changed.push_back(uid);
    }
    if (!complete) {
      hold.complete_since.reset();
    } else if (!hold.complete_since) {
      hold.complete_since = now;
    }
  }
  return changed;
}

std::vector<StarvationHold> StarvationHolds::Expire(Duration now, Duration max_hold) {
  std::vector<StarvationHold> out;
  for (auto it = holds_.begin(); it != holds_.end();) {
    if (it->second.complete_since && now - *it->second.complete_since >= max_hold) {
      cooldown_[it->first] = now + max_hold;
      out.push_back(std::move(it->second));
      it = holds_.erase(it);
      grown_ = false;
    } else {
      ++it;
    }
  }
  std::erase_if(cooldown_, [&](const auto& c) { return c.second <= now; });
  return out;
}

std::optional<StarvationHold> StarvationHolds::Release(std::string_view uid) {
  cooldown_.erase(std::string(uid));
  auto it = holds_.find(uid);
  if (it == holds_.end()) return std::nullopt;
  StarvationHold out = std::move(it->second);
  holds_.erase(it);
  grown_ = false;
  return out;
}

std::vector<allocator::DeviceHold> StarvationHolds::InForce(Duration now) const {
  std::vector<allocator::DeviceHold> out;
  for (const auto& [uid, hold] : holds_) {
    if (hold.devices.empty()) continue;
    out.push_back({.pod = hold.pod,
                   .pod_uid = hold.uid,
                   .priority = hold.priority,
                   .node = hold.node,
                   .since = api::Time::FromTimestamp(hold.since).text(),
                   .starving = now - hold.enqueued,
                   .devices = hold.devices});
  }
  return out;
}

std::optional<Duration> StarvationHolds::NextExpiry(Duration max_hold) const {
  std::optional<Duration> next;
  for (const auto& [uid, hold] : holds_) {
    if (!hold.complete_since) continue;
    Duration at = *hold.complete_since + max_hold;
    if (!next || at < *next) next = at;
  }
  return next;
}

std::map<std::string, double> StarvationHolds::TakeHeldDeviceSeconds(Duration now) {
  std::map<std::string, double> out;
  if (accounting_) {
    double seconds = std::chrono::duration<double>(now - accounted_).count();
    for (const auto& [uid, hold] : holds_) {
      if (hold.devices.empty() || hold.needs.empty()) continue;
      out[hold.needs.front().device_class] += seconds * static_cast<double>(hold.devices.size());
    }
  }
  accounting_ = true;
  accounted_ = now;
  return out;
}

std::vector<const StarvationHold*> StarvationHolds::Overtaken(
    std::string_view pod_uid, int32_t priority, Duration enqueued, std::string_view node,
    const std::vector<Given>& devices) const {
  std::vector<const StarvationHold*> out;
  for (const auto& entry : holds_) {
    const StarvationHold& hold = entry.second;  // named: lambdas below use it
    if (entry.first == pod_uid || priority > hold.priority || enqueued <= hold.enqueued ||
        node != hold.node || hold.complete_since) {
      continue;
    }
    bool needed = std::any_of(devices.begin(), devices.end(), [&](const Given& g) {
      return std::any_of(hold.needs.begin(), hold.needs.end(),
                         [&](const HoldNeed& n) { return n.device_class == g.device_class; });
    });
    if (needed) out.push_back(&hold);
  }
  return out;
}

std::string StarvationHolds::AnnotationOf(const StarvationHold& hold) {
  json::array needs;
  for (const HoldNeed& n : hold.needs) {
    needs.push_back(json::object{{"deviceClass", n.device_class}, {"count", n.count}});
  }
  json::array devices;
  for (const allocator::HeldDeviceId& d : hold.devices) {
    devices.push_back(json::object{{"driver", d.driver}, {"pool", d.pool}, {"device", d.device}});
  }
  return json::serialize(json::object{{"node", hold.node},
                                      {"since", api::Time::FromTimestamp(hold.since).text()},
                                      {"needs", std::move(needs)},
                                      {"devices", std::move(devices)}});
}

StatusOr<StarvationHold> StarvationHolds::ParseAnnotation(std::string_view text) {
  json::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) {
    return InvalidArgumentError(std::string(kHeldDevicesAnnotation) + ": not a JSON object");
  }
  const json::object& o = v.as_object();
  StarvationHold hold;
  hold.node = Text(o, "node");
  if (hold.node.empty()) {
    return InvalidArgumentError(std::string(kHeldDevicesAnnotation) + ": node: Required value");
  }
  StatusOr<api::Time> since = api::Time::Parse(Text(o, "since"));
  if (!since.ok()) {
    return InvalidArgumentError(std::string(kHeldDevicesAnnotation) +
                                ": since: " + std::string(since.status().message()));
  }
  hold.since = since->ToTimestamp();
  if (const json::value* needs = o.if_contains("needs"); needs != nullptr && needs->is_array()) {
    for (const json::value& n : needs->as_array()) {
      if (!n.is_object()) continue;
      HoldNeed need;
      need.device_class = Text(n.as_object(), "deviceClass");
      if (const json::value* c = n.as_object().if_contains("count");
          c != nullptr && c->is_int64()) {
        need.count = c->as_int64();
      }
      if (!need.device_class.empty()) hold.needs.push_back(std::move(need));
    }
  }
  if (const json::value* devices = o.if_contains("devices");
      devices != nullptr && devices->is_array()) {
    for (const json::value& d : devices->as_array()) {
      if (!d.is_object()) continue;
      allocator::HeldDeviceId id{.driver = Text(d.as_object(), "driver"),
                                 .pool = Text(d.as_object(), "pool"),
                                 .device = Text(d.as_object(), "device")};
      if (!id.driver.empty() && !id.device.empty()) hold.devices.push_back(std::move(id));
    }
  }
  std::sort(hold.devices.begin(), hold.devices.end());
  return hold;
}

}  // namespace draplane::scheduler
