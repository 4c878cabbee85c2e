#include "server/handlers/discovery.h"

#include <boost/json.hpp>

#include "server/handlers/json_util.h"

namespace draplane::server::handlers {
namespace {

using boost::json::array;
using boost::json::object;

// metav1.APIResource entries of one group version, subresources as "<resource>/<sub>".
array ResourceEntries(const GroupVersionInfo& gv) {
  array out;
  for (const ResourceInfo* info : gv.resources) {
    object r;
    if (!info->categories.empty()) r["categories"] = StringArray(info->categories);
    r["kind"] = info->kind;
    r["name"] = info->resource;
    r["namespaced"] = info->namespaced;
    if (!info->short_names.empty()) r["shortNames"] = StringArray(info->short_names);
    r["singularName"] = info->singular;
    r["verbs"] = StringArray(info->verbs);
    out.push_back(std::move(r));
    for (const SubresourceInfo& sub : info->subresources) {
      object s;
      // kubectl drain looks for pods/eviction's group and version here.
      if (!sub.group.empty()) s["group"] = sub.group;
      s["kind"] = sub.kind;
      s["name"] = info->resource + "/" + sub.name;
      s["namespaced"] = info->namespaced;
      s["singularName"] = "";
      s["verbs"] = StringArray(sub.verbs);
      if (!sub.version.empty()) s["version"] = sub.version;
      out.push_back(std::move(s));
    }
  }
  // Upstream lists entries sorted by name.
  std::sort(out.begin(), out.end(), [](const boost::json::value& a, const boost::json::value& b) {
    return a.at("name").get_string() < b.at("name").get_string();
  });
  return out;
}

object ResponseKind(std::string_view kind, std::string_view group = "",
                    std::string_view version = "") {
  object k;
  k["group"] = group;
  k["kind"] = kind;
  k["version"] = version;
  return k;
}

// apidiscovery.k8s.io APIResourceDiscovery entries of one group version.
array AggregatedResources(const GroupVersionInfo& gv) {
  array out;
  for (const ResourceInfo* info : gv.resources) {
    object r;
    if (!info->categories.empty()) r["categories"] = StringArray(info->categories);
    r["resource"] = info->resource;
    r["responseKind"] = ResponseKind(info->kind);
    r["scope"] = info->namespaced ? "Namespaced" : "Cluster";
    if (!info->short_names.empty()) r["shortNames"] = StringArray(info->short_names);
    r["singularResource"] = info->singular;
    if (!info->subresources.empty()) {
      array subs;
      for (const SubresourceInfo& sub : info->subresources) {
        object s;
        s["responseKind"] = ResponseKind(sub.kind, sub.group, sub.version);
        s["subresource"] = sub.name;
        s["verbs"] = StringArray(sub.verbs);
        subs.push_back(std::move(s));
      }
      r["subresources"] = std::move(subs);
    }
    r["verbs"] = StringArray(info->verbs);
    out.push_back(std::move(r));
  }
  return out;
}

object AggregatedGroup(std::string_view name, const std::vector<const GroupVersionInfo*>& gvs) {
  object group;
  object meta;
  meta["creationTimestamp"] = nullptr;
  meta["name"] = name;
  group["metadata"] = std::move(meta);
  array versions;
  for (const GroupVersionInfo* gv : gvs) {
    object v;
    v["freshness"] = "Current";
    v["resources"] = AggregatedResources(*gv);
    v["version"] = gv->version;
    versions.push_back(std::move(v));
  }
  group["versions"] = std::move(versions);
  return group;
}

std::string AggregatedContentType(const std::string& version) {
  return "application/json;g=apidiscovery.k8s.io;v=" + version + ";as=APIGroupDiscoveryList";
}

DiscoveryDocument AggregatedList(array items, const std::string& version) {
  object list;
  list["apiVersion"] = "apidiscovery.k8s.io/" + version;
  list["items"] = std::move(items);
  list["kind"] = "APIGroupDiscoveryList";
  list["metadata"] = object();
  return {AggregatedContentType(version), boost::json::serialize(list)};
}

// The named groups in registry order, each with its versions.
std::vector<std::pair<std::string, std::vector<const GroupVersionInfo*>>> NamedGroups(
    const Registry& registry) {
  std::vector<std::pair<std::string, std::vector<const GroupVersionInfo*>>> out;
  for (const GroupVersionInfo& gv : registry.group_versions()) {
    if (gv.group.empty()) continue;
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& entry) { return entry.first == gv.group; });
    if (it == out.end()) {
      out.push_back({gv.group, {&gv}});
    } else {
      it->second.push_back(&gv);
    }
  }
  return out;
}

object GroupVersionForDiscovery(const std::string& group, const std::string& version) {
  object v;
  v["groupVersion"] = group + "/" + version;
  v["version"] = version;
  return v;
}

object ApiGroup(const std::string& name, const std::vector<const GroupVersionInfo*>& gvs) {
  object g;
  g["name"] = name;
  array versions;
  for (const GroupVersionInfo* gv : gvs)
    versions.push_back(GroupVersionForDiscovery(name, gv->version));
  g["versions"] = std::move(versions);
  g["preferredVersion"] = GroupVersionForDiscovery(name, gvs.front()->version);
  return g;
}

}  // namespace

std::string VersionJson(std::string_view draplane_version) {
  object v;
  v["major"] = kServedKubernetesMajor;
  v["minor"] = kServedKubernetesMinor;
  v["gitVersion"] =
      std::string(kServedKubernetesGitVersion) + "+draplane-" + std::string(draplane_version);
  v["gitCommit"] = "";
  v["gitTreeState"] = "clean";
  v["buildDate"] = "1970-01-01T00:00:00Z";
  v["goVersion"] = "";
  v["compiler"] = "draplane";
  v["platform"] = "linux/amd64";
  return boost::json::serialize(v);
}

std::optional<std::string> AggregatedVersion(std::string_view accept) {
  // Media ranges in order of appearance; client-go lists its preference first.
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    if (range.find("as=APIGroupDiscoveryList") == std::string_view::npos ||
        range.find("g=apidiscovery.k8s.io") == std::string_view::npos) {
      if (range.find("application/json") != std::string_view::npos ||
          range.find("*/*") != std::string_view::npos) {
        return std::nullopt;  // plain JSON preferred
      }
      continue;
    }
    // Exact parameter match: "v=v2;" or "v=v2" at the end must not match "v=v2beta1".
    for (std::string version : {"v2beta1", "v2"}) {
      std::string needle = "v=" + version;
      size_t pos = range.find(needle);
      if (pos == std::string_view::npos) continue;
      size_t end = pos + needle.size();
      if (end == range.size() || range[end] == ';' || range[end] == ' ') return version;
    }
  }
  return std::nullopt;
}

DiscoveryDocument CoreGroupDiscovery(const Registry& registry,
                                     const std::optional<std::string>& aggregated_version,
                                     std::string_view server_address) {
  if (aggregated_version) {
    std::vector<const GroupVersionInfo*> core;
    for (const GroupVersionInfo& gv : registry.group_versions()) {
      if (gv.group.empty()) core.push_back(&gv);
    }
    array items;
    items.push_back(AggregatedGroup("", core));
    return AggregatedList(std::move(items), *aggregated_version);
  }
  object v;
  v["kind"] = "APIVersions";
  v["versions"] = array{"v1"};
  object address;
  address["clientCIDR"] = "0.0.0.0/0";
  address["serverAddress"] = server_address;
  v["serverAddressByClientCIDRs"] = array{address};
  return {"application/json", boost::json::serialize(v)};
}

DiscoveryDocument GroupsDiscovery(const Registry& registry,
                                  const std::optional<std::string>& aggregated_version) {
  auto groups = NamedGroups(registry);
  if (aggregated_version) {
    array items;
    for (const auto& [name, gvs] : groups) items.push_back(AggregatedGroup(name, gvs));
    return AggregatedList(std::move(items), *aggregated_version);
  }
  object list;
  list["kind"] = "APIGroupList";
  list["apiVersion"] = "v1";
  array out;
  for (const auto& [name, gvs] : groups) out.push_back(ApiGroup(name, gvs));
  list["groups"] = std::move(out);
  return {"application/json", boost::json::serialize(list)};
}

std::optional<std::string> GroupDiscovery(const Registry& registry, std::string_view group) {
  for (const auto& [name, gvs] : NamedGroups(registry)) {
    if (name != group) continue;
    object g = ApiGroup(name, gvs);
    object out;
    out["kind"] = "APIGroup";
    out["apiVersion"] = "v1";
    for (auto& member : g) out[member.key()] = member.value();
    return boost::json::serialize(out);
  }
  return std::nullopt;
}

std::optional<std::string> ResourceListDiscovery(const Registry& registry, std::string_view group,
                                                 std::string_view version) {
  for (const GroupVersionInfo& gv : registry.group_versions()) {
    if (gv.group != group || gv.version != version) continue;
    object list;
    list["kind"] = "APIResourceList";
    list["apiVersion"] = "v1";
    list["groupVersion"] =
        group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
    list["resources"] = ResourceEntries(gv);
    return boost::json::serialize(list);
  }
  return std::nullopt;
}

}  // namespace draplane::server::handlers
