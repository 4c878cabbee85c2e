#include <boost/json.hpp>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/patch/patch.h"

namespace draplane::api::patch {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

// --- Strategic merge patch --------------------------------------------------------------------

bool IsDirective(std::string_view key) { return !key.empty() && key[0] == '$'; }

// A new value from a patch, with directives removed.
value StripDirectives(const value& v) {
  if (v.is_object()) {
    object out;
    for (const auto& member : v.get_object()) {
      if (IsDirective(member.key())) continue;
      out[member.key()] = StripDirectives(member.value());
    }
    return out;
  }
  if (v.is_array()) {
    array out;
    for (const value& item : v.get_array()) {
      if (item.is_object()) {
        const value* directive = item.get_object().if_contains("$patch");
        if (directive != nullptr && directive->is_string() &&
            (directive->get_string() == "delete" || directive->get_string() == "replace")) {
          continue;
        }
      }
      out.push_back(StripDirectives(item));
    }
    return out;
  }
  return v;
}

class StrategicMerger {
 public:
  explicit StrategicMerger(std::string_view kind) : kind_(kind) {}

  // Merges `patch` into `doc` (both objects). Returns std::nullopt when the patch says
  // `$patch: delete` for this map.
  StatusOr<std::optional<object>> MergeMap(object doc, const object& patch,
                                           const std::string& path) {
    if (const value* directive = patch.if_contains("$patch")) {
      if (!directive->is_string()) {
        return InvalidArgumentError("invalid value for $patch at " + Display(path));
      }
      std::string_view d = directive->get_string();
      if (d == "delete") return std::optional<object>();
      if (d == "replace") return std::optional<object>(StripDirectives(patch).get_object());
      if (d != "merge") {
        return InvalidArgumentError("unknown patch type: " + std::string(d) + " in map at " +
                                    Display(path));
      }
    }
    std::map<std::string, const array*> orders;
    std::map<std::string, const array*> primitive_deletes;
    const array* retain = nullptr;
    for (const auto& member : patch) {
      std::string_view key = member.key();
      const value& v = member.value();
      if (key == "$patch") continue;
      if (key == "$retainKeys") {
        if (!v.is_array()) return InvalidArgumentError("$retainKeys must be a list");
        retain = &v.get_array();
        continue;
      }
      if (key.rfind("$setElementOrder/", 0) == 0) {
        if (!v.is_array()) return InvalidArgumentError(std::string(key) + " must be a list");
        orders[std::string(key.substr(17))] = &v.get_array();
        continue;
      }
      if (key.rfind("$deleteFromPrimitiveList/", 0) == 0) {
        if (!v.is_array()) return InvalidArgumentError(std::string(key) + " must be a list");
        primitive_deletes[std::string(key.substr(25))] = &v.get_array();
        continue;
      }
      if (IsDirective(key)) continue;
      std::string child = path.empty() ? std::string(key) : path + "." + std::string(key);
      if (v.is_null()) {
        doc.erase(key);
      } else if (v.is_object()) {
        value* existing = doc.if_contains(key);
        if (existing != nullptr && existing->is_object()) {
          auto merged = MergeMap(existing->get_object(), v.get_object(), child);
          if (!merged.ok()) return merged.status();
          if (merged->has_value()) {
            *existing = std::move(**merged);
          } else {
            doc.erase(key);
          }
        } else {
          const value* directive = v.get_object().if_contains("$patch");
          if (directive != nullptr && directive->is_string() &&
              directive->get_string() == "delete") {
            doc.erase(key);
          } else {
            doc[key] = StripDirectives(v);
          }
        }
      } else if (v.is_array()) {
        ListStrategy strategy = MergeKeyFor(kind_, child);
        value* existing = doc.if_contains(key);
        if (strategy.merge && existing != nullptr && existing->is_array()) {
          auto merged = MergeList(existing->get_array(), v.get_array(), strategy, child + "[]");
          if (!merged.ok()) return merged.status();
          *existing = std::move(*merged);
        } else {
          doc[key] = StripDirectives(v);
        }
      } else {
        doc[key] = v;
      }
    }
    for (const auto& [field, values] : primitive_deletes) {
      value* existing = doc.if_contains(field);
      if (existing == nullptr || !existing->is_array()) continue;
      array kept;
      for (const value& item : existing->get_array()) {
        bool drop = false;
        for (const value& d : *values) drop = drop || d == item;
        if (!drop) kept.push_back(item);
      }
      *existing = std::move(kept);
    }
    for (const auto& [field, order] : orders) {
      value* existing = doc.if_contains(field);
      if (existing == nullptr || !existing->is_array()) continue;
      std::string child = path.empty() ? field : path + "." + field;
      Reorder(existing->get_array(), *order, MergeKeyFor(kind_, child));
    }
    if (retain != nullptr) {
      object kept;
      for (const auto& member : doc) {
        for (const value& k : *retain) {
          if (k.is_string() && k.get_string() == member.key()) {
            kept[member.key()] = member.value();
            break;
          }
        }
      }
      doc = std::move(kept);
    }
    return std::optional<object>(std::move(doc));
  }

 private:
  static std::string Display(const std::string& path) { return path.empty() ? "<root>" : path; }

  // Lists are matched through an index of their items' keys (the key's JSON text), so a patch of
  // m items on a list of n costs O(n + m): a client must not be able to make the server spend
  // seconds per request on a list of some ten thousand items.
  static std::string IndexKey(const value& key) { return boost::json::serialize(key); }

  StatusOr<array> MergeList(array doc, const array& patch, const ListStrategy& strategy,
                            const std::string& item_path) {
    if (strategy.merge_key.empty()) {
      std::unordered_set<std::string> present;
      for (const value& existing : doc) present.insert(IndexKey(existing));
      for (const value& item : patch) {
        if (item.is_object()) {
          const value* d = item.get_object().if_contains("$patch");
          if (d != nullptr && d->is_string() && d->get_string() == "replace") {
            return StripDirectives(value(patch)).get_array();
          }
          continue;
        }
        if (present.insert(IndexKey(item)).second) doc.push_back(item);
      }
      return doc;
    }
    // Positions in `doc` of the items with each key; deleted items are dropped at the end.
    std::unordered_map<std::string, std::vector<size_t>> positions;
    for (size_t i = 0; i < doc.size(); ++i) {
      if (!doc[i].is_object()) continue;
      if (const value* k = doc[i].get_object().if_contains(strategy.merge_key)) {
        positions[IndexKey(*k)].push_back(i);
      }
    }
    std::vector<bool> deleted(doc.size(), false);
    for (const value& item : patch) {
      if (!item.is_object()) {
        return InvalidArgumentError("expected a map in the list at " + item_path +
                                    " (merge key \"" + strategy.merge_key + "\")");
      }
      const object& patch_item = item.get_object();
      if (const value* d = patch_item.if_contains("$patch"); d != nullptr && d->is_string()) {
        if (d->get_string() == "replace") return StripDirectives(value(patch)).get_array();
        if (d->get_string() == "delete") {
          if (const value* key = patch_item.if_contains(strategy.merge_key)) {
            auto it = positions.find(IndexKey(*key));
            if (it != positions.end()) {
              for (size_t i : it->second) deleted[i] = true;
              positions.erase(it);
            }
          }
          continue;
        }
      }
      const value* key = patch_item.if_contains(strategy.merge_key);
      if (key == nullptr) {
        return InvalidArgumentError("map: " + boost::json::serialize(item) +
                                    " does not contain declared merge key: " + strategy.merge_key);
      }
      std::vector<size_t>& same_key = positions[IndexKey(*key)];
      if (!same_key.empty()) {
        value& existing = doc[same_key.front()];
        auto result = MergeMap(existing.get_object(), patch_item, item_path);
        if (!result.ok()) return result.status();
        if (result->has_value()) existing = std::move(**result);
      } else {
        same_key.push_back(doc.size());
        doc.push_back(StripDirectives(item));
        deleted.push_back(false);
      }
    }
    array kept;
    kept.reserve(doc.size());
    for (size_t i = 0; i < doc.size(); ++i) {
      if (!deleted[i]) kept.push_back(std::move(doc[i]));
    }
    return kept;
  }

  // $setElementOrder: the listed items first, in that order, then the others as they were.
  static void Reorder(array& list, const array& order, const ListStrategy& strategy) {
    auto key_of = [&](const value& v) -> const value* {
      if (strategy.merge_key.empty()) return &v;
      return v.is_object() ? v.get_object().if_contains(strategy.merge_key) : nullptr;
    };
    // Unused positions of the items with each key, first first.
    std::unordered_map<std::string, std::deque<size_t>> positions;
    for (size_t i = 0; i < list.size(); ++i) {
      if (const value* k = key_of(list[i])) positions[IndexKey(*k)].push_back(i);
    }
    array ordered;
    std::vector<bool> used(list.size(), false);
    for (const value& o : order) {
      const value* wanted = key_of(o);
      if (wanted == nullptr) continue;
      auto it = positions.find(IndexKey(*wanted));
      if (it == positions.end() || it->second.empty()) continue;
      const size_t i = it->second.front();
      it->second.pop_front();
      ordered.push_back(list[i]);
      used[i] = true;
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!used[i]) ordered.push_back(list[i]);
    }
    list = std::move(ordered);
  }

  std::string_view kind_;
};

}  // namespace

value ApplyMergePatch(const value& document, const value& patch) {
  if (!patch.is_object()) return patch;
  value result = document.is_object() ? document : value(object());
  MergePatchInto(result, patch);
  return result;
}

void MergePatchInto(value& document, const value& patch) {
  if (!patch.is_object()) {
    document = patch;
    return;
  }
  if (!document.is_object()) document = object();
  object& target = document.get_object();
  for (const auto& member : patch.get_object()) {
    if (member.value().is_null()) {
      target.erase(member.key());
      continue;
    }
    if (value* existing = target.if_contains(member.key())) {
      MergePatchInto(*existing, member.value());
    } else {
      value added;
      MergePatchInto(added, member.value());
      target.emplace(member.key(), std::move(added));
    }
  }
}

ListStrategy MergeKeyFor(std::string_view kind, std::string_view path) {
  // Go struct tags (patchStrategy / patchMergeKey) of the served types, by field path.
  static const std::map<std::string, ListStrategy, std::less<>> kCommon = {
      {"metadata.finalizers", {true, ""}},
      {"metadata.ownerReferences", {true, "uid"}},
      {"status.conditions", {true, "type"}},
  };
  static const std::map<std::string, ListStrategy, std::less<>> kPod = {
      {"spec.containers", {true, "name"}},
      {"spec.initContainers", {true, "name"}},
      {"spec.ephemeralContainers", {true, "name"}},
      {"spec.containers[].ports", {true, "containerPort"}},
      {"spec.initContainers[].ports", {true, "containerPort"}},
      {"spec.containers[].env", {true, "name"}},
      {"spec.initContainers[].env", {true, "name"}},
      {"spec.containers[].volumeMounts", {true, "mountPath"}},
      {"spec.initContainers[].volumeMounts", {true, "mountPath"}},
      {"spec.containers[].volumeDevices", {true, "devicePath"}},
      {"spec.volumes", {true, "name"}},
      {"spec.imagePullSecrets", {true, "name"}},
      {"spec.hostAliases", {true, "ip"}},
      {"spec.resourceClaims", {true, "name"}},
      {"spec.schedulingGates", {true, "name"}},
      {"status.podIPs", {true, "ip"}},
      {"status.hostIPs", {true, "ip"}},
      {"status.resourceClaimStatuses", {true, "name"}},
  };
  static const std::map<std::string, ListStrategy, std::less<>> kNode = {
      {"spec.podCIDRs", {true, ""}},
      {"status.addresses", {true, "type"}},
      {"status.volumesAttached", {true, "name"}},
  };
  static const std::map<std::string, ListStrategy, std::less<>> kResourceClaim = {
      {"status.reservedFor", {true, "uid"}},
  };
  auto lookup = [&](const std::map<std::string, ListStrategy, std::less<>>& table)
      -> std::optional<ListStrategy> {
    auto it = table.find(path);
    if (it == table.end()) return std::nullopt;
    return it->second;
  };
  if (auto s = lookup(kCommon)) return *s;
  if (kind == "Pod") {
    if (auto s = lookup(kPod)) return *s;
  } else if (kind == "Node") {
    if (auto s = lookup(kNode)) return *s;
  } else if (kind == "ResourceClaim") {
    if (auto s = lookup(kResourceClaim)) return *s;
  }
  return ListStrategy{};
}

StatusOr<value> ApplyStrategicMergePatch(const value& document, const value& patch,
                                         std::string_view kind) {
  if (!patch.is_object()) {
    return InvalidArgumentError("the strategic merge patch must be a JSON object");
  }
  if (!document.is_object()) return InvalidArgumentError("the patched object must be a map");
  StrategicMerger merger(kind);
  auto merged = merger.MergeMap(document.get_object(), patch.get_object(), "");
  if (!merged.ok()) return merged.status();
  if (!merged->has_value()) return value(object());
  return value(std::move(**merged));
}

std::optional<PatchFormat> PatchFormatOf(std::string_view content_type) {
  if (content_type == "application/json-patch+json") return PatchFormat::kJson;
  if (content_type == "application/merge-patch+json") return PatchFormat::kMerge;
  if (content_type == "application/strategic-merge-patch+json") {
    return PatchFormat::kStrategicMerge;
  }
  return std::nullopt;
}

Status CheckPatchShape(const value& patch, PatchFormat format) {
  if (format == PatchFormat::kJson) {
    if (!patch.is_array()) {
      return InvalidArgumentError("json: cannot unmarshal " +
                                  std::string(patch.is_object() ? "object" : "value") +
                                  " into Go value of type jsonpatch.Patch");
    }
    return Status::Ok();
  }
  if (!patch.is_object()) return InvalidArgumentError("the patch must be a JSON object");
  return Status::Ok();
}

StatusOr<value> ApplyPatch(const value& document, const value& patch, PatchFormat format,
                           std::string_view kind) {
  if (Status shape = CheckPatchShape(patch, format); !shape.ok()) return shape;
  switch (format) {
    case PatchFormat::kJson:
      return ApplyJsonPatch(document, patch);
    case PatchFormat::kMerge: {
      // One copy of the document, patched in place.
      value merged(document);
      MergePatchInto(merged, patch);
      return merged;
    }
    case PatchFormat::kStrategicMerge:
      return ApplyStrategicMergePatch(document, patch, kind);
  }
  return InternalError("unknown patch format");
}

Status AsClientError(const Status& patch_error) {
  if (patch_error.code() != StatusCode::kFailedPrecondition &&
      patch_error.code() != StatusCode::kResourceExhausted) {
    return patch_error;
  }
  return InvalidArgumentError(std::string(patch_error.message()));
}

}  // namespace draplane::api::patch
