#include "agent/cdi.h"

#include <boost/json.hpp>
#include <cctype>

#include "agent/internal/files.h"
#include "api/codec/field_reader.h"
#include "api/codec/json.h"
#include "common/status_macros.h"

namespace draplane::agent {

namespace {

boost::json::object EditsJson(const ContainerEdits& edits) {
  boost::json::object out;
  if (!edits.env.empty()) {
    boost::json::array env;
    for (const std::string& e : edits.env) env.emplace_back(e);
    out["env"] = std::move(env);
  }
  if (!edits.device_nodes.empty()) {
    boost::json::array nodes;
    for (const DeviceNode& n : edits.device_nodes) {
      boost::json::object node;
      node["path"] = n.path;
      if (!n.type.empty()) node["type"] = n.type;
      if (n.major) node["major"] = *n.major;
      if (n.minor) node["minor"] = *n.minor;
      nodes.push_back(std::move(node));
    }
    out["deviceNodes"] = std::move(nodes);
  }
  return out;
}

Status ParseEdits(const boost::json::value& v, const std::string& path, ContainerEdits* out) {
  api::codec::FieldReader r(v, path);
  out->env = r.StringList("env");
  for (const auto& [item, item_path] : r.ObjectList("deviceNodes")) {
    api::codec::FieldReader n(*item, item_path);
    DeviceNode node;
    node.path = n.String("path").value_or("");
    node.type = n.String("type").value_or("");
    node.major = n.Int("major");
    node.minor = n.Int("minor");
    r.Merge(n.Finish());
    out->device_nodes.push_back(std::move(node));
  }
  return r.Finish();
}

}  // namespace

std::vector<std::string> CdiSpec::DeviceIds() const {
  std::vector<std::string> out;
  for (const CdiDevice& d : devices) out.push_back(kind + "=" + d.name);
  return out;
}

std::string RequestEnvName(std::string_view request) {
  std::string out = "DRA_DEVICE_";
  for (char c : request) {
    out += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
  }
  return out;
}

std::string CdiSpecJson(const CdiSpec& spec) {
  boost::json::object root;
  root["cdiVersion"] = kCdiVersion;
  root["kind"] = spec.kind;
  if (!spec.annotations.empty()) {
    boost::json::object annotations;
    for (const auto& [k, v] : spec.annotations) annotations[k] = v;
    root["annotations"] = std::move(annotations);
  }
  boost::json::array devices;
  for (const CdiDevice& d : spec.devices) {
    boost::json::object device;
    device["name"] = d.name;
    device["containerEdits"] = EditsJson(d.edits);
    devices.push_back(std::move(device));
  }
  root["devices"] = std::move(devices);
  boost::json::object edits = EditsJson(spec.edits);
  if (!edits.empty()) root["containerEdits"] = std::move(edits);
  return api::codec::WriteJson(boost::json::value(std::move(root)));
}

StatusOr<CdiSpec> ParseCdiSpec(std::string_view text) {
  DRAPLANE_ASSIGN_OR_RETURN(boost::json::value json, api::codec::ParseJson(text));
  api::codec::FieldReader r(json, "");
  CdiSpec spec;
  if (r.String("cdiVersion").value_or("") != kCdiVersion) {
    return InvalidArgumentError("cdiVersion: must be " + std::string(kCdiVersion));
  }
  spec.kind = r.String("kind").value_or("");
  spec.annotations = r.StringMap("annotations");
  for (const auto& [item, item_path] : r.ObjectList("devices")) {
    api::codec::FieldReader d(*item, item_path);
    CdiDevice device;
    device.name = d.String("name").value_or("");
    if (const boost::json::value* edits = d.Raw("containerEdits")) {
      d.Merge(ParseEdits(*edits, d.PathOf("containerEdits"), &device.edits));
    }
    r.Merge(d.Finish());
    spec.devices.push_back(std::move(device));
  }
  if (const boost::json::value* edits = r.Raw("containerEdits")) {
    r.Merge(ParseEdits(*edits, "containerEdits", &spec.edits));
  }
  DRAPLANE_RETURN_IF_ERROR(r.Finish());
  return spec;
}

std::string CdiSpecFileName(std::string_view kind, std::string_view claim_uid) {
  std::string flat(kind);
  for (char& c : flat) {
    if (c == '/') c = '_';
  }
  return flat + "_" + std::string(claim_uid) + ".json";
}

StatusOr<std::string> WriteCdiSpec(const std::string& dir, const CdiSpec& spec,
                                   std::string_view claim_uid) {
  DRAPLANE_RETURN_IF_ERROR(internal::MakeDirs(dir));
  const std::string path = dir + "/" + CdiSpecFileName(spec.kind, claim_uid);
  DRAPLANE_RETURN_IF_ERROR(internal::WriteFileAtomically(path, CdiSpecJson(spec)));
  return path;
}

}  // namespace draplane::agent
