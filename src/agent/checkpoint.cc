#include "agent/checkpoint.h"

#include <boost/json.hpp>

#include "agent/internal/files.h"
#include "api/codec/field_reader.h"
#include "api/codec/json.h"
#include "api/gen/resource_v1_codec.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace {

constexpr int64_t kVersion = 1;

std::string_view StateName(PrepareState state) {
  return state == PrepareState::kCompleted ? "PrepareCompleted" : "PrepareStarted";
}

}  // namespace

std::string CheckpointJson(const Checkpoint& checkpoint) {
  boost::json::object root;
  root["version"] = kVersion;
  root["node"] = checkpoint.node;
  boost::json::object claims;
  for (const auto& [uid, claim] : checkpoint.claims) {
    boost::json::object c;
    c["namespace"] = claim.namespace_;
    c["name"] = claim.name;
    c["state"] = StateName(claim.state);
    boost::json::array devices;
    for (const DeviceRecord& d : claim.devices) {
      boost::json::object device;
      device["request"] = d.request;
      device["driver"] = d.driver;
      device["pool"] = d.pool;
      device["device"] = d.device;
      if (d.share_id) device["shareID"] = *d.share_id;
      if (d.admin_access) device["adminAccess"] = true;
      boost::json::array ids;
      for (const std::string& id : d.cdi_device_ids) ids.emplace_back(id);
      device["cdiDeviceIDs"] = std::move(ids);
      if (d.network) device["networkData"] = api::resourcev1::Encode(*d.network);
      devices.push_back(std::move(device));
    }
    c["devices"] = std::move(devices);
    boost::json::array specs;
    for (const std::string& s : claim.cdi_specs) specs.emplace_back(s);
    c["cdiSpecs"] = std::move(specs);
    claims[uid] = std::move(c);
  }
  root["claims"] = std::move(claims);
  return api::codec::WriteJson(boost::json::value(std::move(root)));
}

StatusOr<Checkpoint> ParseCheckpoint(std::string_view text) {
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value json, api::codec::ParseJson(text));
  api::codec::FieldReader r(json, "");
  if (r.Int("version").value_or(0) != kVersion) {
    return InvalidArgumentError("version: unsupported checkpoint version");
  }
  Checkpoint out;
  out.node = r.String("node").value_or("");
  if (const boost::json::value* claims = r.Raw("claims")) {
    if (!claims->is_object()) return InvalidArgumentError("claims: must be a map");
    for (const auto& [uid, value] : claims->as_object()) {
      const std::string path = "claims." + std::string(uid);
      api::codec::FieldReader c(value, path);
      ClaimRecord claim;
      claim.namespace_ = c.String("namespace").value_or("");
      claim.name = c.String("name").value_or("");
      const std::string state = c.String("state").value_or("");
      if (state == "PrepareCompleted") {
        claim.state = PrepareState::kCompleted;
      } else if (state == "PrepareStarted") {
        claim.state = PrepareState::kStarted;
      } else {
        c.Fail("state", "must be PrepareStarted or PrepareCompleted");
      }
      for (const auto& [item, item_path] : c.ObjectList("devices")) {
        api::codec::FieldReader d(*item, item_path);
        DeviceRecord device;
        device.request = d.String("request").value_or("");
        device.driver = d.String("driver").value_or("");
        device.pool = d.String("pool").value_or("");
        device.device = d.String("device").value_or("");
        device.share_id = d.String("shareID");
        device.admin_access = d.Bool("adminAccess").value_or(false);
        device.cdi_device_ids = d.StringList("cdiDeviceIDs");
        if (const boost::json::value* net = d.Raw("networkData")) {
          api::FieldErrorList errors;
          api::resourcev1::NetworkDeviceData data;
          api::resourcev1::Decode(*net, &data, &errors);
          if (!errors.empty()) d.Fail("networkData", errors.front().ToString());
          device.network = std::move(data);
        }
        c.Merge(d.Finish());
        claim.devices.push_back(std::move(device));
      }
      claim.cdi_specs = c.StringList("cdiSpecs");
      DRAPLANE_RETURN_IF_ERROR(c.Finish());
      out.claims[std::string(uid)] = std::move(claim);
    }
  }
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  return out;
}

StatusOr<Checkpoint> LoadCheckpoint(const std::string& path) {
  StatusOr<std::string> text = internal::ReadFile(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return Checkpoint{};
    return text.status();
  }
  StatusOr<Checkpoint> checkpoint = ParseCheckpoint(*text);
  if (!checkpoint.ok()) {
    return InvalidArgumentError("corrupt checkpoint " + path + ": " +
                                std::string(checkpoint.status().message()));
  }
  return checkpoint;
}

Status SaveCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  return internal::WriteFileAtomically(path, CheckpointJson(checkpoint));
}

}  // namespace draplane::agent
