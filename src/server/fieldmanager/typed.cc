#include "server/fieldmanager/typed.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>

#include "api/codec/json.h"
#include "api/patch/patch.h"

namespace draplane::server::fieldmanager {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;
using Path = std::vector<std::string>;

// The node that stands for values without a schema: their shape is deduced from the value.
const openapi::SchemaNode* Untyped() {
  static const openapi::SchemaNode* node = [] {
    auto* n = new openapi::SchemaNode();
    n->untyped = true;
    return n;
  }();
  return node;
}

enum class Shape { kLeaf, kStruct, kMap, kSetList, kMapList };

// The type at one place of an object: its schema node and the field path list types are looked
// up by.
struct Type {
  const openapi::SchemaNode* node = nullptr;  // nullptr: a scalar
  std::string list_path;
};

class Typer {
 public:
  explicit Typer(const KindType& kind) : kind_(kind.kind) {}

  Shape ShapeOf(const Type& t, const value* v, ListType* list) const {
    const openapi::SchemaNode* n = t.node;
    if (n == nullptr) return Shape::kLeaf;
    if (n->untyped && v != nullptr && v->is_object()) return Shape::kMap;
    if (n->untyped && (v == nullptr || !v->is_array())) return Shape::kLeaf;
    if (n->has_properties) return Shape::kStruct;
    if (n->additional != nullptr) return Shape::kMap;
    // A list: typed, or an unmodelled field whose upstream list type is known (a container's
    // ports, env, volumeMounts).
    if (n->items != nullptr || n->untyped) {
      *list = ListTypeOf(kind_, t.list_path);
      switch (list->kind) {
        case ListType::Kind::kSet:
          return Shape::kSetList;
        case ListType::Kind::kMap:
          return Shape::kMapList;
        case ListType::Kind::kAtomic:
          return Shape::kLeaf;
      }
    }
    return Shape::kLeaf;
  }

  // Whether upstream's empty object already has this list (a Go field without omitempty, null
  // there): its appearance is then no addition of its own.
  bool AlwaysPresent(const Type& t) const {
    return kind_ == "Pod" && t.list_path == "spec.containers";
  }

  // The type of member `key` of a struct or map; `declared` says whether the struct names it.
  static Type Member(const Type& t, std::string_view key, bool* declared) {
    *declared = false;
    Type child;
    child.list_path = t.list_path.empty() ? std::string(key) : t.list_path + "." + std::string(key);
    const openapi::SchemaNode* n = t.node;
    if (n == nullptr || n->untyped) {
      child.node = Untyped();
    } else if (n->has_properties) {
      auto it = n->properties.find(key);
      if (it != n->properties.end()) {
        *declared = true;
        child.node = it->second;
      } else {
        child.node = Untyped();
      }
    } else if (n->additional != nullptr) {
      child.node = n->additional;
    } else {
      child.node = Untyped();
    }
    return child;
  }

  static Type Item(const Type& t) {
    Type child;
    child.list_path = t.list_path + "[]";
    child.node = t.node != nullptr && t.node->items != nullptr ? t.node->items : Untyped();
    return child;
  }

 private:
  std::string kind_;
};

// The path element of a list item: `v:<json>` in a set, `k:{...}` in an associative list.
StatusOr<std::string> ItemElement(const value& item, Shape shape, const ListType& list,
                                  const Path& path, size_t index) {
  if (shape == Shape::kSetList) return "v:" + boost::json::serialize(item);
  if (!item.is_object()) {
    return InvalidArgumentError(PathString(path) + ": element " + std::to_string(index) +
                                ": expected a map in an associative list");
  }
  std::vector<std::string> keys = list.keys;
  std::sort(keys.begin(), keys.end());
  object key;
  for (const std::string& k : keys) {
    if (const value* v = item.get_object().if_contains(k); v != nullptr && !v->is_null()) {
      key.emplace(k, *v);
      continue;
    }
    for (const auto& [field, fallback] : list.key_defaults) {
      if (field == k) key.emplace(k, fallback);
    }
  }
  if (key.empty()) {
    std::string names;
    for (const std::string& k : list.keys) names += (names.empty() ? "" : " ") + k;
    return InvalidArgumentError(PathString(path) + ": element " + std::to_string(index) +
                                ": associative list with keys has an element that omits all key "
                                "fields [" +
                                names + "]");
  }
  return "k:" + boost::json::serialize(key);
}

// metadata.managedFields is the bookkeeping itself, never a tracked field.
bool Bookkeeping(const Path& path, std::string_view key) {
  return key == "managedFields" && path.size() == 1 && path[0] == "f:metadata";
}

// Top-level members a comparison leaves out (what a write's strategy resets).
bool Ignored(const std::vector<std::string>& ignored, const Path& path, std::string_view key) {
  return path.empty() && std::find(ignored.begin(), ignored.end(), key) != ignored.end();
}

// ---- ToFieldSet ----

class FieldSetWalker {
 public:
  FieldSetWalker(const Typer& typer, FieldSet* out) : typer_(typer), out_(out) {}

  Status Walk(const value& v, const Type& t, Path& path) {
    ListType list;
    Shape shape = typer_.ShapeOf(t, &v, &list);
    if (shape == Shape::kLeaf) {
      if (!path.empty()) out_->Insert(path);
      return Status::Ok();
    }
    if (shape == Shape::kStruct || shape == Shape::kMap) {
      if (!v.is_object()) {
        // A null or mistyped value: the field itself.
        if (!path.empty() && !v.is_null()) out_->Insert(path);
        return Status::Ok();
      }
      for (const auto& member : v.get_object()) {
        if (Bookkeeping(path, member.key())) continue;
        bool declared = false;
        Type child = Typer::Member(t, member.key(), &declared);
        path.emplace_back("f:" + std::string(member.key()));
        if (Status s = Walk(member.value(), child, path); !s.ok()) return s;
        if (member.value().is_null() ||
            (member.value().is_object() && member.value().get_object().empty()) || !declared) {
          out_->Insert(path);
        }
        path.pop_back();
      }
      return Status::Ok();
    }
    if (!v.is_array()) {
      if (!path.empty() && !v.is_null()) out_->Insert(path);
      return Status::Ok();
    }
    const array& items = v.get_array();
    std::map<std::string, int> seen;
    std::vector<std::string> elements(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      StatusOr<std::string> pe = ItemElement(items[i], shape, list, path, i);
      if (!pe.ok()) return pe.status();
      elements[i] = std::move(pe).value();
      ++seen[elements[i]];
    }
    Type item_type = Typer::Item(t);
    for (size_t i = 0; i < items.size(); ++i) {
      path.push_back(elements[i]);
      if (seen[elements[i]] == 1) {
        if (Status s = Walk(items[i], item_type, path); !s.ok()) return s;
      }
      out_->Insert(path);
      path.pop_back();
    }
    return Status::Ok();
  }

 private:
  const Typer& typer_;
  FieldSet* out_;
};

// ---- Compare ----

class Comparer {
 public:
  Comparer(const Typer& typer, Comparison* out) : typer_(typer), out_(out) {}

  void Ignore(std::string member) { ignored_.push_back(std::move(member)); }

  // `old_v` or `new_v` may be nullptr (absent).
  Status Compare(const value* old_v, const value* new_v, const Type& t, Path& path) {
    ListType list;
    Shape shape = typer_.ShapeOf(t, new_v != nullptr ? new_v : old_v, &list);
    bool old_fits = old_v != nullptr && Fits(*old_v, shape);
    bool new_fits = new_v != nullptr && Fits(*new_v, shape);
    if (shape == Shape::kLeaf || (old_v != nullptr && !old_v->is_null() && !old_fits) ||
        (new_v != nullptr && !new_v->is_null() && !new_fits)) {
      Leaf(old_v, new_v, path);
      return Status::Ok();
    }
    // A container: its own path when it appears or disappears (a struct is a Go value that the
    // empty object already has, so only maps and optional lists count), then its members.
    bool old_present = old_v != nullptr && !old_v->is_null();
    bool new_present = new_v != nullptr && !new_v->is_null();
    // Most of an updated object is what it was: an equal subtree has nothing to report, and
    // comparing it whole costs no allocations.
    if (old_present && new_present && api::codec::JsonEqual(*old_v, *new_v)) return Status::Ok();
    if (!path.empty() && shape != Shape::kStruct && old_present != new_present &&
        !typer_.AlwaysPresent(t)) {
      (new_present ? out_->added : out_->removed).Insert(path);
    }
    if (shape == Shape::kStruct || shape == Shape::kMap) {
      return CompareMembers(old_present ? &old_v->get_object() : nullptr,
                            new_present ? &new_v->get_object() : nullptr, t, path);
    }
    return CompareItems(old_present ? old_v : nullptr, new_present ? new_v : nullptr, t, shape,
                        list, path);
  }

  // The members of two structs or maps (either may be absent).
  Status CompareMembers(const object* o, const object* n, const Type& t, Path& path) {
    if (o != nullptr) {
      for (const auto& member : *o) {
        if (Bookkeeping(path, member.key()) || Ignored(ignored_, path, member.key())) continue;
        bool declared = false;
        Type child = Typer::Member(t, member.key(), &declared);
        path.emplace_back("f:" + std::string(member.key()));
        const value* other = n != nullptr ? n->if_contains(member.key()) : nullptr;
        if (Status s = Compare(&member.value(), other, child, path); !s.ok()) return s;
        path.pop_back();
      }
    }
    if (n != nullptr) {
      for (const auto& member : *n) {
        if ((o != nullptr && o->contains(member.key())) || Bookkeeping(path, member.key()) ||
            Ignored(ignored_, path, member.key())) {
          continue;
        }
        bool declared = false;
        Type child = Typer::Member(t, member.key(), &declared);
        path.emplace_back("f:" + std::string(member.key()));
        if (Status s = Compare(nullptr, &member.value(), child, path); !s.ok()) return s;
        path.pop_back();
      }
    }
    return Status::Ok();
  }

  // The items of two set or associative lists (either may be absent), matched by their path
  // elements.
  Status CompareItems(const value* old_v, const value* new_v, const Type& t, Shape shape,
                      const ListType& list, Path& path) {
    std::map<std::string, std::vector<const value*>> old_items, new_items;
    auto index = [&](const value* v, std::map<std::string, std::vector<const value*>>& into) {
      if (v == nullptr || !v->is_array()) return Status::Ok();
      const array& items = v->get_array();
      for (size_t i = 0; i < items.size(); ++i) {
        StatusOr<std::string> pe = ItemElement(items[i], shape, list, path, i);
        if (!pe.ok()) return pe.status();
        into[*pe].push_back(&items[i]);
      }
      return Status::Ok();
    };
    if (Status s = index(old_v, old_items); !s.ok()) return s;
    if (Status s = index(new_v, new_items); !s.ok()) return s;
    std::vector<std::string> order;
    for (const auto& [pe, items] : old_items) order.push_back(pe);
    for (const auto& [pe, items] : new_items) {
      if (!old_items.contains(pe)) order.push_back(pe);
    }
    Type item_type = Typer::Item(t);
    for (const std::string& pe : order) {
      auto o = old_items.find(pe);
      auto n = new_items.find(pe);
      size_t old_count = o == old_items.end() ? 0 : o->second.size();
      size_t new_count = n == new_items.end() ? 0 : n->second.size();
      path.push_back(pe);
      if (old_count > 1 || new_count > 1) {
        // Duplicated keys: the item as a whole.
        if (old_count > 1 && new_count > 1) {
          bool same = old_count == new_count;
          for (size_t i = 0; same && i < old_count; ++i) {
            same = api::codec::JsonEqual(*o->second[i], *n->second[i]);
          }
          if (!same) out_->modified.Insert(path);
        } else if (new_count > old_count) {
          out_->added.Insert(path);
        } else {
          out_->removed.Insert(path);
        }
      } else {
        const value* ov = old_count == 1 ? o->second[0] : nullptr;
        const value* nv = new_count == 1 ? n->second[0] : nullptr;
        if (ov == nullptr || nv == nullptr)
          (nv != nullptr ? out_->added : out_->removed).Insert(path);
        if (Status s = Compare(ov, nv, item_type, path); !s.ok()) return s;
      }
      path.pop_back();
    }
    return Status::Ok();
  }

 private:
  static bool Fits(const value& v, Shape shape) {
    if (shape == Shape::kStruct || shape == Shape::kMap) return v.is_object();
    if (shape == Shape::kSetList || shape == Shape::kMapList) return v.is_array();
    return true;
  }

  void Leaf(const value* old_v, const value* new_v, const Path& path) {
    if (path.empty()) return;
    if (old_v == nullptr && new_v == nullptr) return;
    if (old_v == nullptr) {
      out_->added.Insert(path);
    } else if (new_v == nullptr) {
      out_->removed.Insert(path);
    } else if (!api::codec::JsonEqual(*old_v, *new_v)) {
      out_->modified.Insert(path);
    }
  }

  const Typer& typer_;
  Comparison* out_;
  std::vector<std::string> ignored_;
};

// ---- Merge ----

class Merger {
 public:
  explicit Merger(const Typer& typer) : typer_(typer) {}

  StatusOr<value> Merge(const value& live, const value& config, const Type& t, Path& path) {
    static const value kNoObject = object();
    static const value kNoList = array();
    ListType list;
    Shape shape = typer_.ShapeOf(t, &config, &list);
    if (shape == Shape::kLeaf) return config;
    if (shape == Shape::kStruct || shape == Shape::kMap) {
      if (config.is_null() && live.is_object()) return live;  // merging never deletes
      if (!config.is_object()) return config;
      // A new value is still walked, so that its lists are checked for duplicate keys.
      if (!live.is_object()) return Merge(kNoObject, config, t, path);
      object out;
      const object& c = config.get_object();
      for (const auto& member : live.get_object()) {
        const value* theirs = c.if_contains(member.key());
        if (theirs == nullptr) {
          out.emplace(member.key(), member.value());
          continue;
        }
        bool declared = false;
        Type child = Typer::Member(t, member.key(), &declared);
        path.emplace_back("f:" + std::string(member.key()));
        StatusOr<value> merged = Merge(member.value(), *theirs, child, path);
        path.pop_back();
        if (!merged.ok()) return merged.status();
        out.emplace(member.key(), std::move(merged).value());
      }
      for (const auto& member : c) {
        if (out.contains(member.key())) continue;
        bool declared = false;
        Type child = Typer::Member(t, member.key(), &declared);
        path.emplace_back("f:" + std::string(member.key()));
        StatusOr<value> added = Merge(value(), member.value(), child, path);
        path.pop_back();
        if (!added.ok()) return added.status();
        out.emplace(member.key(), std::move(added).value());
      }
      return value(std::move(out));
    }
    if (config.is_null() && live.is_array()) return live;
    if (!config.is_array()) return config;
    return MergeList(live.is_array() ? live.get_array() : kNoList.get_array(), config.get_array(),
                     t, shape, list, path);
  }

 private:
  // Configured items in the configuration's order, each merged with its live item; live items
  // the configuration does not name stay where they stood among them.
  StatusOr<value> MergeList(const array& live, const array& config, const Type& t, Shape shape,
                            const ListType& list, Path& path) {
    std::vector<std::string> live_pe(live.size()), config_pe(config.size());
    std::map<std::string, size_t> in_config;
    std::map<std::string, std::vector<size_t>> in_live;
    for (size_t i = 0; i < config.size(); ++i) {
      StatusOr<std::string> pe = ItemElement(config[i], shape, list, path, i);
      if (!pe.ok()) return pe.status();
      config_pe[i] = std::move(pe).value();
      if (!in_config.emplace(config_pe[i], i).second) {
        return InvalidArgumentError(PathString(path) + ": duplicate entries for key " +
                                    PathString({config_pe[i]}));
      }
    }
    for (size_t i = 0; i < live.size(); ++i) {
      StatusOr<std::string> pe = ItemElement(live[i], shape, list, path, i);
      if (!pe.ok()) return pe.status();
      live_pe[i] = std::move(pe).value();
      in_live[live_pe[i]].push_back(i);
    }
    Type item_type = Typer::Item(t);
    array out;
    auto emit_config = [&](size_t j) -> Status {
      auto it = in_live.find(config_pe[j]);
      if (it != in_live.end() && it->second.size() > 1) {
        out.push_back(config[j]);  // replacing duplicated live items once
        return Status::Ok();
      }
      if (it == in_live.end()) {
        path.push_back(config_pe[j]);
        StatusOr<value> added = Merge(value(), config[j], item_type, path);
        path.pop_back();
        if (!added.ok()) return added.status();
        out.push_back(std::move(added).value());
        return Status::Ok();
      }
      path.push_back(config_pe[j]);
      StatusOr<value> merged = Merge(live[it->second[0]], config[j], item_type, path);
      path.pop_back();
      if (!merged.ok()) return merged.status();
      out.push_back(std::move(merged).value());
      return Status::Ok();
    };
    size_t i = 0, j = 0;
    while (i < live.size() || j < config.size()) {
      if (i < live.size() && j < config.size() && live_pe[i] == config_pe[j]) {
        if (in_live[live_pe[i]].size() == 1) {
          if (Status s = emit_config(j); !s.ok()) return s;
          ++j;
        }
        ++i;
      } else if (i < live.size() && in_config.contains(live_pe[i])) {
        ++i;  // emitted where the configuration puts it
      } else if (i < live.size()) {
        out.push_back(live[i]);
        ++i;
      } else {
        if (Status s = emit_config(j); !s.ok()) return s;
        ++j;
      }
    }
    return value(std::move(out));
  }

  const Typer& typer_;
};

// ---- RemoveUnowned ----

class Remover {
 public:
  explicit Remover(const Typer& typer) : typer_(typer) {}

  void Remove(value& v, const FieldSet& remove, const FieldSet* keep, const Type& t, Path& path) {
    ListType list;
    Shape shape = typer_.ShapeOf(t, &v, &list);
    if (shape == Shape::kLeaf) return;
    if (shape == Shape::kStruct || shape == Shape::kMap) {
      if (!v.is_object()) return;
      object& o = v.get_object();
      for (const auto& [element, below] : remove.Children()) {
        if (!element.starts_with("f:")) continue;
        std::string key = element.substr(2);
        value* child = o.if_contains(key);
        if (child == nullptr) continue;
        const FieldSet* kept = keep != nullptr ? keep->Child(element) : nullptr;
        if (below.Member() && (kept == nullptr || kept->Empty())) {
          o.erase(key);
          continue;
        }
        bool declared = false;
        Type child_type = Typer::Member(t, key, &declared);
        path.push_back(element);
        Remove(*child, below, kept, child_type, path);
        path.pop_back();
      }
      return;
    }
    if (!v.is_array()) return;
    array& items = v.get_array();
    Type item_type = Typer::Item(t);
    array out;
    for (size_t i = 0; i < items.size(); ++i) {
      StatusOr<std::string> pe = ItemElement(items[i], shape, list, path, i);
      const FieldSet* below = pe.ok() ? remove.Child(*pe) : nullptr;
      if (below == nullptr) {
        out.push_back(std::move(items[i]));
        continue;
      }
      const FieldSet* kept = keep != nullptr ? keep->Child(*pe) : nullptr;
      if (below->Member() && (kept == nullptr || kept->Empty())) continue;
      path.push_back(*pe);
      Remove(items[i], *below, kept, item_type, path);
      path.pop_back();
      out.push_back(std::move(items[i]));
    }
    items = std::move(out);
  }

 private:
  const Typer& typer_;
};

Type RootType(const KindType& type) { return Type{type.root, ""}; }

}  // namespace

ListType ListTypeOf(std::string_view kind, std::string_view path) {
  // +listType=map lists whose keys are not (only) the strategic merge key.
  struct Override {
    std::string_view kind, path;
    std::vector<std::string> keys;
    std::vector<std::pair<std::string, std::string>> key_defaults;
  };
  static const std::vector<Override> kOverrides = {
      {"Pod", "spec.containers[].ports", {"containerPort", "protocol"}, {{"protocol", "TCP"}}},
      {"Pod", "spec.initContainers[].ports", {"containerPort", "protocol"}, {{"protocol", "TCP"}}},
      {"Pod",
       "spec.ephemeralContainers[].ports",
       {"containerPort", "protocol"},
       {{"protocol", "TCP"}}},
      {"Pod", "spec.topologySpreadConstraints", {"topologyKey", "whenUnsatisfiable"}, {}},
      {"ResourceClaim", "status.devices", {"driver", "device", "pool", "shareID"}, {}},
      {"ResourceClaim", "status.devices[].conditions", {"type"}, {}},
  };
  for (const Override& o : kOverrides) {
    if (o.kind == kind && o.path == path) {
      return ListType{ListType::Kind::kMap, o.keys, o.key_defaults};
    }
  }
  // Otherwise the patch strategy decides, as upstream's schemas derive list types from it where
  // no +listType is declared: merge with a key is an associative list, merge without one a set.
  api::patch::ListStrategy strategy = api::patch::MergeKeyFor(kind, path);
  if (!strategy.merge) return ListType{};
  if (strategy.merge_key.empty()) return ListType{ListType::Kind::kSet, {}, {}};
  return ListType{ListType::Kind::kMap, {strategy.merge_key}, {}};
}

StatusOr<FieldSet> FieldsOf(const value& obj, const KindType& type) {
  Typer typer(type);
  FieldSet out;
  FieldSetWalker walker(typer, &out);
  Path path;
  if (Status s = walker.Walk(obj, RootType(type), path); !s.ok()) return s;
  return out;
}

StatusOr<Comparison> Compare(const value& old_object, const value& new_object,
                             const KindType& type) {
  Typer typer(type);
  Comparison out;
  Comparer comparer(typer, &out);
  Path path;
  if (Status s = comparer.Compare(&old_object, &new_object, RootType(type), path); !s.ok()) {
    return s;
  }
  return out;
}

StatusOr<Comparison> Compare(const object& old_object, const object& new_object,
                             const KindType& type, const std::vector<Path>& ignore) {
  Typer typer(type);
  Comparison out;
  Comparer comparer(typer, &out);
  for (const Path& p : ignore) {
    if (p.size() == 1 && p[0].starts_with("f:")) comparer.Ignore(p[0].substr(2));
  }
  Path path;
  if (Status s = comparer.CompareMembers(&old_object, &new_object, RootType(type), path); !s.ok()) {
    return s;
  }
  return out;
}

StatusOr<value> Merge(const value& live, const value& config, const KindType& type) {
  Typer typer(type);
  Merger merger(typer);
  Path path;
  return merger.Merge(live, config, RootType(type), path);
}

void RemoveUnowned(value& obj, const FieldSet& remove, const FieldSet& keep, const KindType& type) {
  Typer typer(type);
  Remover remover(typer);
  Path path;
  remover.Remove(obj, remove, &keep, RootType(type), path);
}

}  // namespace draplane::server::fieldmanager
