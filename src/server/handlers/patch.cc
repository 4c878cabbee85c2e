#include "server/handlers/patch.h"

#include <boost/json.hpp>
#include <map>
#include <utility>
#include <vector>

namespace draplane::server::handlers {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

// --- JSON pointer / JSON patch (RFC 6901 / 6902) ---------------------------------------------

StatusOr<std::vector<std::string>> ParsePointer(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (pointer.empty()) return tokens;
  if (pointer[0] != '/') {
    return InvalidArgumentError("invalid JSON pointer \"" + std::string(pointer) +
                                "\": must start with '/'");
  }
  pointer.remove_prefix(1);
  while (true) {
    size_t slash = pointer.find('/');
    std::string_view raw = pointer.substr(0, slash);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '~' && i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token.push_back(raw[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(raw[i]);
      }
    }
    tokens.push_back(std::move(token));
    if (slash == std::string_view::npos) break;
    pointer.remove_prefix(slash + 1);
  }
  return tokens;
}

std::optional<size_t> ParseIndex(const std::string& token, size_t limit) {
  if (token.empty() || token.size() > 18) return std::nullopt;
  if (token.size() > 1 && token[0] == '0') return std::nullopt;
  size_t index = 0;
  for (char c : token) {
    if (c < '0' || c > '9') return std::nullopt;
    index = index * 10 + static_cast<size_t>(c - '0');
  }
  if (index > limit) return std::nullopt;
  return index;
}

Status DoesNotApply(std::string_view op, std::string_view path) {
  return FailedPreconditionError("jsonpatch " + std::string(op) +
                                 " operation does not apply: doc is missing path: \"" +
                                 std::string(path) + "\"");
}

// The value at `tokens`, or nullptr.
value* Resolve(value& root, const std::vector<std::string>& tokens) {
  value* current = &root;
  for (const std::string& token : tokens) {
    if (current->is_object()) {
      current = current->get_object().if_contains(token);
    } else if (current->is_array()) {
      std::optional<size_t> i = ParseIndex(token, current->get_array().size() - 1);
      if (!i || current->get_array().empty()) return nullptr;
      current = &current->get_array()[*i];
    } else {
      return nullptr;
    }
    if (current == nullptr) return nullptr;
  }
  return current;
}

Status Add(value& root, const std::vector<std::string>& tokens, value v, std::string_view path) {
  if (tokens.empty()) {
    root = std::move(v);
    return Status::Ok();
  }
  std::vector<std::string> parent_tokens(tokens.begin(), tokens.end() - 1);
  value* parent = Resolve(root, parent_tokens);
  if (parent == nullptr) return DoesNotApply("add", path);
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    parent->get_object()[last] = std::move(v);
    return Status::Ok();
  }
  if (parent->is_array()) {
    array& a = parent->get_array();
    if (last == "-") {
      a.push_back(std::move(v));
      return Status::Ok();
    }
    std::optional<size_t> i = ParseIndex(last, a.size());
    if (!i) return DoesNotApply("add", path);
    a.insert(a.begin() + static_cast<std::ptrdiff_t>(*i), std::move(v));
    return Status::Ok();
  }
  return DoesNotApply("add", path);
}

StatusOr<value> Remove(value& root, const std::vector<std::string>& tokens, std::string_view op,
                       std::string_view path) {
  if (tokens.empty()) return DoesNotApply(op, path);
  std::vector<std::string> parent_tokens(tokens.begin(), tokens.end() - 1);
  value* parent = Resolve(root, parent_tokens);
  if (parent == nullptr) return DoesNotApply(op, path);
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    object& o = parent->get_object();
    auto it = o.find(last);
    if (it == o.end()) return DoesNotApply(op, path);
    value removed = std::move(it->value());
    o.erase(it);
    return removed;
  }
  if (parent->is_array()) {
    array& a = parent->get_array();
    if (a.empty()) return DoesNotApply(op, path);
    std::optional<size_t> i = ParseIndex(last, a.size() - 1);
    if (!i) return DoesNotApply(op, path);
    value removed = std::move(a[*i]);
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(*i));
    return removed;
  }
  return DoesNotApply(op, path);
}

// The length of `v` serialized as compact JSON (strings counted without escapes), or some
// number over `limit` as soon as it is known to exceed it: the walk stops there, so measuring a
// huge value costs no more than `limit` allows.
size_t EncodedSizeUpTo(const value& v, size_t limit) {
  size_t size = 0;
  std::vector<const value*> pending{&v};
  while (!pending.empty() && size <= limit) {
    const value* current = pending.back();
    pending.pop_back();
    switch (current->kind()) {
      case boost::json::kind::object:
        size += 2;
        for (const auto& member : current->get_object()) {
          size += member.key().size() + 4;  // "key": and the separating comma
          pending.push_back(&member.value());
        }
        break;
      case boost::json::kind::array:
        size += 2 + current->get_array().size();
        for (const value& item : current->get_array()) pending.push_back(&item);
        break;
      case boost::json::kind::string:
        size += current->get_string().size() + 2;
        break;
      default:
        size += 8;  // numbers, booleans, null: a typical width
        break;
    }
  }
  return size;
}

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

  StatusOr<array> MergeList(array doc, const array& patch, const ListStrategy& strategy,
                            const std::string& item_path) {
    if (strategy.merge_key.empty()) {
      for (const value& item : patch) {
        if (item.is_object()) {
          const value* d = item.get_object().if_contains("$patch");
          if (d != nullptr && d->is_string() && d->get_string() == "replace") {
            return StripDirectives(value(patch)).get_array();
          }
          continue;
        }
        bool present = false;
        for (const value& existing : doc) present = present || existing == item;
        if (!present) doc.push_back(item);
      }
      return doc;
    }
    for (const value& item : patch) {
      if (!item.is_object()) {
        return InvalidArgumentError("expected a map in the list at " + item_path +
                                    " (merge key \"" + strategy.merge_key + "\")");
      }
      const object& patch_item = item.get_object();
      if (const value* d = patch_item.if_contains("$patch"); d != nullptr && d->is_string()) {
        if (d->get_string() == "replace") return StripDirectives(value(patch)).get_array();
        if (d->get_string() == "delete") {
          const value* key = patch_item.if_contains(strategy.merge_key);
          array kept;
          for (const value& existing : doc) {
            const value* existing_key = existing.is_object()
                                            ? existing.get_object().if_contains(strategy.merge_key)
                                            : nullptr;
            if (key == nullptr || existing_key == nullptr || !(*existing_key == *key)) {
              kept.push_back(existing);
            }
          }
          doc = std::move(kept);
          continue;
        }
      }
      const value* key = patch_item.if_contains(strategy.merge_key);
      if (key == nullptr) {
        return InvalidArgumentError("map: " + boost::json::serialize(item) +
                                    " does not contain declared merge key: " + strategy.merge_key);
      }
      bool merged = false;
      for (value& existing : doc) {
        if (!existing.is_object()) continue;
        const value* existing_key = existing.get_object().if_contains(strategy.merge_key);
        if (existing_key == nullptr || !(*existing_key == *key)) continue;
        auto result = MergeMap(existing.get_object(), patch_item, item_path);
        if (!result.ok()) return result.status();
        if (result->has_value()) existing = std::move(**result);
        merged = true;
        break;
      }
      if (!merged) doc.push_back(StripDirectives(item));
    }
    return doc;
  }

  // $setElementOrder: the listed items first, in that order, then the others as they were.
  static void Reorder(array& list, const array& order, const ListStrategy& strategy) {
    auto key_of = [&](const value& v) -> const value* {
      if (strategy.merge_key.empty()) return &v;
      return v.is_object() ? v.get_object().if_contains(strategy.merge_key) : nullptr;
    };
    array ordered;
    std::vector<bool> used(list.size(), false);
    for (const value& o : order) {
      const value* wanted = key_of(o);
      if (wanted == nullptr) continue;
      for (size_t i = 0; i < list.size(); ++i) {
        const value* k = key_of(list[i]);
        if (!used[i] && k != nullptr && *k == *wanted) {
          ordered.push_back(list[i]);
          used[i] = true;
          break;
        }
      }
    }
    for (size_t i = 0; i < list.size(); ++i) {
      if (!used[i]) ordered.push_back(list[i]);
    }
    list = std::move(ordered);
  }

  std::string_view kind_;
};

}  // namespace

Status CheckJsonPatchOperations(const value& patch, const JsonPatchLimits& limits) {
  if (!patch.is_array() || patch.get_array().size() <= limits.max_operations) return Status::Ok();
  return ResourceExhaustedError("The allowed maximum operations in a JSON patch is " +
                                std::to_string(limits.max_operations) + ", got " +
                                std::to_string(patch.get_array().size()));
}

StatusOr<value> ApplyJsonPatch(const value& document, const value& patch,
                               const JsonPatchLimits& limits) {
  if (!patch.is_array()) {
    return InvalidArgumentError("json: cannot unmarshal " +
                                std::string(patch.is_object() ? "object" : "value") +
                                " into Go value of type jsonpatch.Patch");
  }
  if (Status s = CheckJsonPatchOperations(patch, limits); !s.ok()) return s;
  size_t copied = 0;
  value doc = document;
  for (const value& op_value : patch.get_array()) {
    if (!op_value.is_object()) return InvalidArgumentError("a JSON patch operation must be a map");
    const object& op = op_value.get_object();
    const value* op_name = op.if_contains("op");
    const value* path_value = op.if_contains("path");
    if (op_name == nullptr || !op_name->is_string()) {
      return InvalidArgumentError("Unexpected kind: missing or invalid \"op\"");
    }
    if (path_value == nullptr || !path_value->is_string()) {
      return InvalidArgumentError("operation missing path field");
    }
    std::string name(op_name->get_string());
    std::string path(path_value->get_string());
    StatusOr<std::vector<std::string>> tokens = ParsePointer(path);
    if (!tokens.ok()) return tokens.status();
    const value* v = op.if_contains("value");
    if (name == "add") {
      if (v == nullptr) return InvalidArgumentError("add operation missing value");
      if (Status s = Add(doc, *tokens, *v, path); !s.ok()) return s;
    } else if (name == "remove") {
      if (auto r = Remove(doc, *tokens, "remove", path); !r.ok()) return r.status();
    } else if (name == "replace") {
      if (v == nullptr) return InvalidArgumentError("replace operation missing value");
      value* target = Resolve(doc, *tokens);
      if (target == nullptr) return DoesNotApply("replace", path);
      *target = *v;
    } else if (name == "move" || name == "copy") {
      const value* from_value = op.if_contains("from");
      if (from_value == nullptr || !from_value->is_string()) {
        return InvalidArgumentError(name + " operation missing from field");
      }
      std::string from(from_value->get_string());
      StatusOr<std::vector<std::string>> from_tokens = ParsePointer(from);
      if (!from_tokens.ok()) return from_tokens.status();
      value moved;
      if (name == "move") {
        auto removed = Remove(doc, *from_tokens, "move", from);
        if (!removed.ok()) return removed.status();
        moved = std::move(*removed);
      } else {
        value* source = Resolve(doc, *from_tokens);
        if (source == nullptr) return DoesNotApply("copy", from);
        copied += EncodedSizeUpTo(*source,
                                  limits.max_copy_bytes - std::min(copied, limits.max_copy_bytes));
        if (copied > limits.max_copy_bytes) {
          return ResourceExhaustedError(
              "Unable to complete the copy, the accumulated size increase of copy is " +
              std::to_string(copied) + ", exceeding the limit " +
              std::to_string(limits.max_copy_bytes));
        }
        moved = *source;
      }
      if (Status s = Add(doc, *tokens, std::move(moved), path); !s.ok()) return s;
    } else if (name == "test") {
      value* target = Resolve(doc, *tokens);
      if (v == nullptr) return InvalidArgumentError("test operation missing value");
      if (target == nullptr || !(*target == *v)) {
        return FailedPreconditionError("testing value " + path + " failed: test failed");
      }
    } else {
      return InvalidArgumentError("Unexpected kind: " + name);
    }
  }
  return doc;
}

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

}  // namespace draplane::server::handlers
