#include "server/fieldmanager/field_manager.h"

#include <algorithm>
#include <boost/json.hpp>
#include <optional>
#include <tuple>

#include "api/codec/json.h"

namespace draplane::server::fieldmanager {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;
using Path = std::vector<std::string>;

constexpr std::string_view kApply = "Apply";
constexpr std::string_view kUpdate = "Update";
constexpr std::string_view kLastApplied = "kubectl.kubernetes.io/last-applied-configuration";
// Update entries beyond this many are merged, oldest first, into "ancient-changes".
constexpr size_t kMaxUpdateManagers = 10;

struct Entry {
  std::string manager;
  std::string operation;
  std::string api_version;
  std::string subresource;
  std::string time;  // empty: none
  FieldSet fields;
  // The fieldsV1 the entry was read with, written back as it is while `fields` did not change.
  value encoded;
  bool changed = true;

  // upstream's manager identifier (the entry without time and fields; Apply without apiVersion).
  bool SameManager(const Entry& other) const {
    return manager == other.manager && operation == other.operation &&
           subresource == other.subresource &&
           (operation == kApply || api_version == other.api_version);
  }
  auto Identity() const { return std::tie(manager, operation, api_version, subresource); }
};

// The entries of metadata.managedFields, or nullopt when they do not decode.
std::optional<std::vector<Entry>> DecodeEntries(const value& managed) {
  if (!managed.is_array()) return std::nullopt;
  std::vector<Entry> out;
  for (const value& item : managed.get_array()) {
    if (!item.is_object()) return std::nullopt;
    const object& o = item.get_object();
    auto text = [&](std::string_view key) -> std::optional<std::string> {
      const value* v = o.if_contains(key);
      if (v == nullptr) return std::string();
      if (!v->is_string()) return std::nullopt;
      return std::string(v->get_string());
    };
    Entry e;
    std::optional<std::string> manager = text("manager"), operation = text("operation"),
                               api_version = text("apiVersion"), time = text("time"),
                               subresource = text("subresource"), type = text("fieldsType");
    if (!manager || !operation || !api_version || !time || !subresource || !type) {
      return std::nullopt;
    }
    if ((*operation != kApply && *operation != kUpdate) || api_version->empty() ||
        *type != "FieldsV1") {
      return std::nullopt;
    }
    e.manager = manager->empty() ? "unknown" : *manager;
    e.operation = *operation;
    e.api_version = *api_version;
    e.time = *time;
    e.subresource = *subresource;
    if (const value* fields = o.if_contains("fieldsV1")) {
      StatusOr<FieldSet> set = FieldSet::FromFieldsV1(*fields);
      if (!set.ok()) return std::nullopt;
      e.fields = std::move(set).value();
      e.encoded = *fields;
      e.changed = false;
    }
    out.push_back(std::move(e));
  }
  return out;
}

const value* ManagedFieldsOf(const object& obj) {
  const value* meta = obj.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return nullptr;
  return meta->get_object().if_contains("managedFields");
}

std::vector<Entry> LiveEntries(const object* live) {
  if (live == nullptr) return {};
  const value* managed = ManagedFieldsOf(*live);
  if (managed == nullptr) return {};
  std::optional<std::vector<Entry>> entries = DecodeEntries(*managed);
  return entries ? std::move(*entries) : std::vector<Entry>();
}

// Merges the oldest Update entries into one "ancient-changes" entry per apiVersion until at
// most kMaxUpdateManagers are left (upstream's capManagers).
void CapManagers(std::vector<Entry>& entries) {
  std::vector<size_t> updates;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i].operation == kUpdate) updates.push_back(i);
  }
  size_t count = updates.size();
  if (count <= kMaxUpdateManagers) return;
  std::sort(updates.begin(), updates.end(), [&](size_t a, size_t b) {
    return std::tie(entries[a].time, entries[a].manager, entries[a].api_version,
                    entries[a].subresource) < std::tie(entries[b].time, entries[b].manager,
                                                       entries[b].api_version,
                                                       entries[b].subresource);
  });
  std::vector<bool> dropped(entries.size(), false);
  std::vector<Entry> buckets;
  std::vector<std::pair<std::string, size_t>> first_of_version;
  for (size_t index : updates) {
    if (count <= kMaxUpdateManagers) break;
    Entry& e = entries[index];
    auto bucket = std::find_if(buckets.begin(), buckets.end(),
                               [&](const Entry& b) { return b.api_version == e.api_version; });
    if (bucket != buckets.end()) {
      bucket->fields.Add(e.fields);
      bucket->time = e.time;
      dropped[index] = true;
      --count;
      continue;
    }
    auto first = std::find_if(first_of_version.begin(), first_of_version.end(),
                              [&](const auto& f) { return f.first == e.api_version; });
    if (first == first_of_version.end()) {
      first_of_version.emplace_back(e.api_version, index);
      continue;
    }
    Entry merged;
    merged.manager = "ancient-changes";
    merged.operation = std::string(kUpdate);
    merged.api_version = e.api_version;
    merged.fields = entries[first->second].fields.Union(e.fields);
    merged.time = e.time;
    dropped[first->second] = true;
    dropped[index] = true;
    buckets.push_back(std::move(merged));
    --count;
  }
  std::vector<Entry> kept;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(entries[i]));
  }
  for (Entry& b : buckets) kept.push_back(std::move(b));
  entries = std::move(kept);
}

// Writes `entries` into `obj`'s metadata.managedFields in upstream's order (operation, time,
// manager, apiVersion, subresource); none leaves the member out.
void EncodeEntries(std::vector<Entry> entries, object& obj) {
  CapManagers(entries);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.operation, a.time, a.manager, a.api_version, a.subresource) <
           std::tie(b.operation, b.time, b.manager, b.api_version, b.subresource);
  });
  value& meta_value = obj["metadata"];
  if (!meta_value.is_object()) meta_value = object();
  object& meta = meta_value.get_object();
  if (entries.empty()) {
    meta.erase("managedFields");
    return;
  }
  array out;
  for (Entry& e : entries) {
    object o;
    o["manager"] = e.manager;
    o["operation"] = e.operation;
    o["apiVersion"] = e.api_version;
    if (!e.time.empty()) o["time"] = e.time;
    o["fieldsType"] = "FieldsV1";
    o["fieldsV1"] = e.changed ? e.fields.ToFieldsV1() : std::move(e.encoded);
    if (!e.subresource.empty()) o["subresource"] = e.subresource;
    out.push_back(std::move(o));
  }
  meta["managedFields"] = std::move(out);
}

// The paths nobody owns through a write: apiVersion, kind and the system's metadata
// (upstream's stripMeta, exact paths only).
void StripMeta(FieldSet& set) {
  set.Erase({"f:apiVersion"});
  set.Erase({"f:kind"});
  set.Erase({"f:metadata"});
  for (std::string_view field : {"name", "namespace", "creationTimestamp", "selfLink", "uid",
                                 "clusterName", "generation", "managedFields", "resourceVersion"}) {
    set.Erase({"f:metadata", "f:" + std::string(field)});
  }
}

void RemoveResets(FieldSet& set, const WriteContext& context) {
  for (const Path& path : context.reset_paths) set.RemoveSubtree(path);
}

void RemoveResets(Comparison& cmp, const WriteContext& context) {
  RemoveResets(cmp.added, context);
  RemoveResets(cmp.modified, context);
  RemoveResets(cmp.removed, context);
}

std::string Describe(const Entry& e) {
  std::string out = boost::json::serialize(value(e.manager));
  if (!e.subresource.empty()) {
    out += " with subresource " + boost::json::serialize(value(e.subresource));
  }
  if (e.operation == kUpdate) out += " using " + e.api_version;
  return out;
}

// Every entry but `except` loses what the comparison changed (added or modified: taken by the
// writer) and what it removed; entries left empty go (upstream's Updater.update, forced).
// Without `force`, returns the conflicts instead when there are any.
std::vector<Conflict> TakeOver(std::vector<Entry>& entries, const Entry* except,
                               const Comparison& cmp, bool force) {
  if (force) {
    for (Entry& e : entries) {
      if (&e == except) continue;
      bool lost = e.fields.Subtract(cmp.modified);
      lost = e.fields.Subtract(cmp.added) || lost;
      lost = e.fields.Subtract(cmp.removed) || lost;
      if (lost) e.changed = true;
    }
    std::erase_if(entries, [&](const Entry& e) { return &e != except && e.fields.Empty(); });
    return {};
  }
  FieldSet changed = cmp.modified.Union(cmp.added);
  std::vector<std::pair<const Entry*, FieldSet>> conflicting;
  for (const Entry& e : entries) {
    if (&e == except || !e.fields.Intersects(changed)) continue;
    conflicting.emplace_back(&e, e.fields.Intersection(changed));
  }
  if (!conflicting.empty()) {
    std::sort(conflicting.begin(), conflicting.end(), [](const auto& a, const auto& b) {
      return a.first->Identity() < b.first->Identity();
    });
    std::vector<Conflict> out;
    for (const auto& [entry, set] : conflicting) {
      Conflict c;
      c.manager = Describe(*entry);
      set.ForEachPath([&](const Path& path) { c.paths.push_back(PathString(path)); });
      out.push_back(std::move(c));
    }
    return out;
  }
  for (Entry& e : entries) {
    if (&e == except) continue;
    if (e.fields.Subtract(cmp.removed)) e.changed = true;
  }
  std::erase_if(entries, [&](const Entry& e) { return &e != except && e.fields.Empty(); });
  return {};
}

Entry* Find(std::vector<Entry>& entries, const Entry& key) {
  for (Entry& e : entries) {
    if (e.SameManager(key)) return &e;
  }
  return nullptr;
}

// The configuration of the last-applied annotation of `obj`, or nullopt.
std::optional<value> LastApplied(const object& obj) {
  const value* meta = obj.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return std::nullopt;
  const value* annotations = meta->get_object().if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object()) return std::nullopt;
  const value* text = annotations->get_object().if_contains(kLastApplied);
  if (text == nullptr || !text->is_string() || text->get_string().empty()) return std::nullopt;
  StatusOr<value> parsed = api::codec::ParseJson(text->get_string());
  if (!parsed.ok() || !parsed->is_object()) return std::nullopt;
  return std::move(parsed).value();
}

StatusOr<ApplyResult> ApplyOnce(const object* live, const object& config, std::string_view manager,
                                bool force, const WriteContext& context) {
  static const value kEmpty = object();
  const value live_value = live != nullptr ? value(*live) : kEmpty;
  std::vector<Entry> entries = LiveEntries(live);
  if (live != nullptr && entries.empty()) {
    // An object written before any field was tracked: what it holds belongs to
    // "before-first-apply", so the first apply conflicts with it like with any other owner.
    StatusOr<Comparison> all = Compare(kEmpty, live_value, context.type);
    if (!all.ok()) return all.status();
    Entry before;
    before.manager = "before-first-apply";
    before.operation = std::string(kUpdate);
    before.api_version = context.api_version;
    before.time = context.now;
    before.fields = std::move(all->added);
    before.fields.Add(all->modified);
    RemoveResets(before.fields, context);
    StripMeta(before.fields);
    if (!before.fields.Empty()) entries.push_back(std::move(before));
  }
  StatusOr<value> merged = Merge(live_value, value(config), context.type);
  if (!merged.ok()) return merged.status();

  Entry key;
  key.manager = std::string(manager);
  key.operation = std::string(kApply);
  key.subresource = context.subresource;
  FieldSet last;
  if (Entry* previous = Find(entries, key)) {
    last = previous->fields;
  } else {
    entries.push_back(key);
  }
  StatusOr<FieldSet> applied = FieldsOf(value(config), context.type);
  if (!applied.ok()) return applied.status();
  RemoveResets(*applied, context);
  StripMeta(*applied);
  Entry* applier = Find(entries, key);
  applier->fields = std::move(applied).value();
  applier->changed = true;
  applier->api_version = context.api_version;

  // Fields the manager applied before and no longer does go, unless someone owns them.
  if (!last.Empty()) {
    FieldSet owned;
    for (const Entry& e : entries) owned.Add(e.fields);
    RemoveUnowned(*merged, last, owned, context.type);
  }
  StatusOr<Comparison> cmp = Compare(live_value, *merged, context.type);
  if (!cmp.ok()) return cmp.status();
  RemoveResets(*cmp, context);
  ApplyResult result;
  result.conflicts = TakeOver(entries, applier, *cmp, force);
  if (!result.conflicts.empty()) return result;
  applier = Find(entries, key);
  bool changed = !cmp->added.Empty() || !cmp->modified.Empty() || !cmp->removed.Empty();
  if (applier != nullptr && applier->fields.Empty()) {
    std::erase_if(entries, [&](const Entry& e) { return e.SameManager(key); });
  } else if (applier != nullptr && changed) {
    applier->time = context.now;
  }
  result.object = std::move(merged->get_object());
  EncodeEntries(std::move(entries), result.object);
  return result;
}

// kubectl's last-applied-configuration annotation, where `obj` has one, becomes `config` without
// that annotation (upstream's lastAppliedUpdater), so a later client-side apply diffs against
// what was applied last.
void FollowLastApplied(object& obj, const object& config) {
  value* meta = obj.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return;
  value* annotations = meta->get_object().if_contains("annotations");
  if (annotations == nullptr || !annotations->is_object() ||
      !annotations->get_object().contains(kLastApplied)) {
    return;
  }
  object applied = config;
  if (value* m = applied.if_contains("metadata"); m != nullptr && m->is_object()) {
    if (value* a = m->get_object().if_contains("annotations"); a != nullptr && a->is_object()) {
      a->get_object().erase(kLastApplied);
    }
  }
  annotations->get_object()[kLastApplied] = boost::json::serialize(applied);
}

}  // namespace

std::vector<Path> ResetPaths(std::string_view subresource, bool has_status_subresource) {
  if (subresource == "status") return {{"f:spec"}};
  if (subresource.empty() && has_status_subresource) return {{"f:status"}};
  return {};
}

std::string ManagerFromUserAgent(std::string_view user_agent) {
  std::string out;
  for (char c : user_agent.substr(0, user_agent.find('/'))) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) continue;
    if (out.size() + 1 >= 128) break;
    out.push_back(c);
  }
  return out;
}

Status TrackUpdate(const object* live, object& updated, std::string_view manager,
                   const WriteContext& context) {
  // The request's managed fields on a main-resource write: `[{}]` clears them, valid ones are
  // the starting point; otherwise (`[]` included, so that clients unaware of the field cannot
  // strip it, and on subresources) the live object's.
  const value* requested = context.subresource.empty() ? ManagedFieldsOf(updated) : nullptr;
  const bool clear = requested != nullptr && requested->is_array() &&
                     requested->get_array().size() == 1 && requested->get_array()[0].is_object() &&
                     requested->get_array()[0].get_object().empty();
  std::optional<std::vector<Entry>> given =
      requested != nullptr && !clear ? DecodeEntries(*requested) : std::nullopt;
  std::vector<Entry> entries;
  if (given && !given->empty()) {
    entries = std::move(*given);
  } else if (!clear) {
    entries = LiveEntries(live);
  }
  if (live != nullptr && entries.empty()) {
    // Fields of an object nobody tracked are tracked from its first apply (skipNonApplied).
    if (value* meta = updated.if_contains("metadata"); meta != nullptr && meta->is_object()) {
      meta->get_object().erase("managedFields");
    }
    return Status::Ok();
  }
  static const object kEmpty;
  // The reset subtrees are nobody's: not even compared.
  StatusOr<Comparison> cmp =
      Compare(live != nullptr ? *live : kEmpty, updated, context.type, context.reset_paths);
  if (!cmp.ok()) return cmp.status();
  RemoveResets(*cmp, context);
  TakeOver(entries, nullptr, *cmp, /*force=*/true);
  FieldSet mine = std::move(cmp->modified);
  mine.Add(cmp->added);
  StripMeta(mine);
  if (!mine.Empty()) {
    Entry key;
    key.manager = manager.empty() ? "unknown" : std::string(manager);
    key.operation = std::string(kUpdate);
    key.api_version = context.api_version;
    key.subresource = context.subresource;
    Entry* entry = Find(entries, key);
    if (entry == nullptr) {
      entries.push_back(key);
      entry = &entries.back();
    }
    entry->fields.Add(mine);
    entry->changed = true;
    entry->time = context.now;
  }
  EncodeEntries(std::move(entries), updated);
  return Status::Ok();
}

StatusOr<ApplyResult> Apply(const object* live, const object& config, std::string_view manager,
                            bool force, const WriteContext& context) {
  StatusOr<ApplyResult> result = ApplyOnce(live, config, manager, force, context);
  if (!result.ok() || manager != "kubectl") return result;
  if (result->conflicts.empty()) {
    FollowLastApplied(result->object, config);
    return result;
  }
  // Upgrading from client-side apply (upstream's lastAppliedManager): conflicts only on fields
  // whose live value is still what the last-applied configuration holds are kubectl's own
  // earlier apply, and taken over.
  std::optional<value> last_applied = live != nullptr ? LastApplied(*live) : std::nullopt;
  if (!last_applied) return result;
  StatusOr<FieldSet> applied_before = FieldsOf(*last_applied, context.type);
  StatusOr<Comparison> drift = Compare(*last_applied, value(*live), context.type);
  if (!applied_before.ok() || !drift.ok()) return result;
  FieldSet unchanged =
      applied_before->Difference(drift->added.Union(drift->modified).Union(drift->removed));
  std::vector<std::string> own;
  unchanged.ForEachPath([&](const Path& path) { own.push_back(PathString(path)); });
  std::sort(own.begin(), own.end());
  for (Conflict& c : result->conflicts) {
    std::erase_if(c.paths, [&](const std::string& path) {
      return std::binary_search(own.begin(), own.end(), path);
    });
  }
  std::erase_if(result->conflicts, [](const Conflict& c) { return c.paths.empty(); });
  if (!result->conflicts.empty()) return result;
  return Apply(live, config, manager, /*force=*/true, context);
}

std::string ConflictMessage(const std::vector<Conflict>& conflicts) {
  size_t total = 0;
  for (const Conflict& c : conflicts) total += c.paths.size();
  if (total == 1) {
    return "Apply failed with 1 conflict: conflict with " + conflicts[0].manager + ": " +
           conflicts[0].paths[0];
  }
  std::string out = "Apply failed with " + std::to_string(total) + " conflicts: ";
  bool first = true;
  for (const Conflict& c : conflicts) {
    if (!first) out += "\n";
    first = false;
    out += "conflicts with " + c.manager + ":";
    for (const std::string& path : c.paths) out += "\n- " + path;
  }
  return out;
}

}  // namespace draplane::server::fieldmanager
