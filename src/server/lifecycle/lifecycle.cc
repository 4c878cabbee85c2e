#include "server/lifecycle/lifecycle.h"

#include <algorithm>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <map>

#include "api/codec/limits.h"
#include "api/deletion.h"
#include "api/gen/core_v1_codec.h"
#include "api/nodes.h"
#include "common/log.h"
#include "common/saturating.h"
#include "server/handlers/json_util.h"
#include "server/lifecycle/stored_metadata.h"

namespace draplane::server::lifecycle {
namespace {

using handlers::JsonObject;

std::string GroupOf(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string()
                                         : std::string(api_version.substr(0, slash));
}

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool HasAnyFinalizer(const JsonObject& obj, bool is_namespace) {
  if (!handlers::Finalizers(obj).empty()) return true;
  if (!is_namespace) return false;
  const JsonObject* spec = handlers::FindObject(obj, "spec");
  const boost::json::array* f = spec ? handlers::FindArray(*spec, "finalizers") : nullptr;
  return f != nullptr && !f->empty();
}

bool IsNamespaceKey(const store::Key& key) { return key.resource == "core/namespaces"; }

}  // namespace

LifecycleController::LifecycleController(store::Store* store, const Clock* clock)
    : store_(store), clock_(clock) {
  resources_ = handlers::Registry::Default().StoredResources();
}

LifecycleController::~LifecycleController() { Stop(); }

Status LifecycleController::Load() {
  StatusOr<store::Revision> current = store_->CurrentRevision();
  if (!current.ok()) return current.status();
  objects_.clear();
  by_uid_.clear();
  dependents_.clear();
  std::vector<std::string> watched;
  for (const handlers::ResourceInfo* resource : resources_) {
    watched.push_back(resource->StoreResource());
    store::ListOptions options;
    options.revision = *current;
    options.limit = 1000;
    while (true) {
      StatusOr<store::ListResult> page = store_->List(resource->StoreResource(), options);
      if (!page.ok()) return page.status();
      for (const store::ObjectPtr& obj : page->objects) Index(obj->key, &obj->value);
      if (page->continue_token.empty()) break;
      options.continue_token = page->continue_token;
    }
  }
  return watches_.Open(store_, watched, *current, [this] { worker_.Notify(); });
}

Status LifecycleController::Start() {
  if (Status s = Load(); !s.ok()) return s;
  if (!dirty_.empty()) worker_.Notify();
  worker_.Start("lifecycle", [this] { Run(); });
  return Status::Ok();
}

void LifecycleController::Stop() { worker_.Stop(); }

void LifecycleController::Tick() { worker_.Tick(); }

void LifecycleController::Run() {
  while (std::optional<bool> tick = worker_.Wait()) {
    bool watching = watches_.Drain([this](size_t, const store::WatchEvent& e) {
      Index(e.object->key,
            e.type == store::WatchEvent::Type::kDeleted ? nullptr : &e.object->value);
    });
    if (!watching) {
      log::Warning("lifecycle: watch ended; reloading the object index");
      if (Status s = Load(); !s.ok()) {
        log::Warning("lifecycle: reload failed: {}", s.ToString());
        if (!worker_.Pause(std::chrono::seconds(1))) return;
        worker_.Notify();  // try again
        continue;
      }
      for (const auto& [key, entry] : objects_) dirty_.insert(key);
    }
    if (*tick) dirty_.insert(timed_.begin(), timed_.end());
    // Bounded rounds: work that writes comes back through the watch.
    std::set<store::Key> work;
    work.swap(dirty_);
    for (const store::Key& key : work) {
      if (worker_.stopping()) return;
      Examine(key);
    }
    if (!dirty_.empty()) worker_.Notify();
  }
}

void LifecycleController::Index(const store::Key& key, const std::string* value) {
  std::optional<Entry> parsed;
  if (value != nullptr) parsed = ParseEntry(key, *value);
  auto it = objects_.find(key);
  // Most writes (status updates, claim allocations, bindings) change nothing the controller acts
  // on: the index stays and nothing needs a look, since whatever could make the object's owners
  // gone since it was last examined marks it by itself.
  if (it != objects_.end() && parsed && *parsed == it->second) return;
  if (it != objects_.end()) {
    const Entry& old = it->second;
    by_uid_.erase(old.uid);
    for (const OwnerRef& owner : old.owners) {
      auto d = dependents_.find(owner.uid);
      if (d == dependents_.end()) continue;
      d->second.erase(key);
      // An owner waiting for its dependents to go may now proceed.
      if (auto o = by_uid_.find(owner.uid); o != by_uid_.end()) dirty_.insert(o->second);
      if (d->second.empty()) dependents_.erase(d);
    }
    if (value == nullptr) {
      if (auto d = dependents_.find(old.uid); d != dependents_.end()) {
        dirty_.insert(d->second.begin(), d->second.end());
      }
      if (!key.ns.empty()) dirty_.insert(store::Key{"core/namespaces", "", key.ns});
      timed_.erase(key);
      objects_.erase(it);
      return;
    }
  }
  if (!parsed) return;
  Entry& entry = *parsed;
  if (!entry.uid.empty()) by_uid_[entry.uid] = key;
  for (const OwnerRef& owner : entry.owners) dependents_[owner.uid].insert(key);
  if (!entry.owners.empty() || entry.deleting) dirty_.insert(key);
  for (const OwnerRef& owner : entry.owners) {
    if (auto o = by_uid_.find(owner.uid); o != by_uid_.end()) {
      auto owner_entry = objects_.find(o->second);
      if (owner_entry != objects_.end() && owner_entry->second.deleting) dirty_.insert(o->second);
    }
  }
  if (!key.ns.empty()) {
    auto ns = objects_.find(store::Key{"core/namespaces", "", key.ns});
    if (ns != objects_.end() && ns->second.deleting) dirty_.insert(ns->first);
  }
  objects_[key] = std::move(entry);
}

std::optional<LifecycleController::Entry> LifecycleController::ParseEntry(
    const store::Key& key, const std::string& value) {
  Entry entry;
  if (!IsNamespaceKey(key)) {
    // Every write of every object passes here: read the metadata alone, without a DOM.
    StoredMetadata meta;
    if (!ReadStoredMetadata(value, &meta)) return std::nullopt;
    entry.uid = std::move(meta.uid);
    entry.owners = std::move(meta.owners);
    entry.finalizers = std::move(meta.finalizers);
    entry.deletion_timestamp = std::move(meta.deletion_timestamp);
    entry.deleting = !entry.deletion_timestamp.empty();
    return entry;
  }
  // Namespaces (few, rarely written) also need spec.finalizers.
  unsigned char arena_buffer[16 * 1024];
  boost::json::monotonic_resource arena(arena_buffer, sizeof arena_buffer);
  boost::json::parse_options options;
  options.max_depth = api::codec::ParseLimits{}.max_depth;
  boost::system::error_code error;
  boost::json::value document = boost::json::parse(value, error, &arena, options);
  if (error || !document.is_object()) return std::nullopt;
  const JsonObject& object = document.get_object();
  entry.uid = std::string(handlers::MetaString(object, "uid"));
  entry.finalizers = handlers::Finalizers(object);
  entry.deletion_timestamp = std::string(handlers::MetaString(object, "deletionTimestamp"));
  entry.deleting = !entry.deletion_timestamp.empty();
  entry.namespace_terminating = HasAnyFinalizer(object, true);
  if (const JsonObject* meta = handlers::FindObject(object, "metadata")) {
    if (const boost::json::array* refs = handlers::FindArray(*meta, "ownerReferences")) {
      for (const boost::json::value& r : *refs) {
        if (!r.is_object()) continue;
        const JsonObject& o = r.get_object();
        const boost::json::value* block = o.if_contains("blockOwnerDeletion");
        entry.owners.push_back(OwnerRef{std::string(handlers::GetString(o, "apiVersion")),
                                        std::string(handlers::GetString(o, "kind")),
                                        std::string(handlers::GetString(o, "name")),
                                        std::string(handlers::GetString(o, "uid")),
                                        block != nullptr && block->is_bool() && block->get_bool()});
      }
    }
  }
  return entry;
}

std::optional<store::Key> LifecycleController::OwnerKey(const store::Key& dependent,
                                                        const OwnerRef& owner) {
  const handlers::ResourceInfo* info =
      handlers::Registry::Default().FindKind(GroupOf(owner.api_version), owner.kind);
  if (info == nullptr || owner.uid.empty()) return std::nullopt;
  if (info->namespaced && dependent.ns.empty()) return std::nullopt;
  return store::Key{info->StoreResource(), info->namespaced ? dependent.ns : "", owner.name};
}

std::optional<store::Key> LifecycleController::ResolvedOwner(const store::Key& dependent,
                                                             const OwnerRef& owner) {
  auto indexed = by_uid_.find(owner.uid);
  if (indexed == by_uid_.end()) return std::nullopt;
  std::optional<store::Key> expected = OwnerKey(dependent, owner);
  if (!expected || *expected != indexed->second) return std::nullopt;
  return indexed->second;
}

std::set<store::Key> LifecycleController::DependentsOf(const store::Key& key, const Entry& entry) {
  std::set<store::Key> out;
  auto it = dependents_.find(entry.uid);
  if (it == dependents_.end()) return out;
  for (const store::Key& dependent : it->second) {
    auto d = objects_.find(dependent);
    if (d == objects_.end()) continue;
    for (const OwnerRef& owner : d->second.owners) {
      if (owner.uid == entry.uid && ResolvedOwner(dependent, owner) == key) {
        out.insert(dependent);
        break;
      }
    }
  }
  return out;
}

bool LifecycleController::OwnerGone(const store::Key& dependent, const OwnerRef& owner) {
  const handlers::ResourceInfo* info =
      handlers::Registry::Default().FindKind(GroupOf(owner.api_version), owner.kind);
  if (info == nullptr || owner.uid.empty()) return false;  // a kind this server cannot judge
  if (ResolvedOwner(dependent, owner)) return false;
  std::optional<store::Key> expected = OwnerKey(dependent, owner);
  if (!expected) {
    // A cluster-scoped object cannot have a namespaced owner: upstream's garbage collector
    // reports the reference as invalid (OwnerRefInvalidNamespace) and never deletes the object
    // for it, which would otherwise delete it however present the owner is.
    log::Warning(
        "{} {}: ownerReference to {} {} (uid {}) is invalid: a cluster-scoped object "
        "cannot have a namespaced owner; ignored",
        dependent.resource, dependent.name, owner.kind, owner.name, owner.uid);
    return false;
  }
  const store::Key& key = *expected;
  StatusOr<store::ObjectPtr> obj = store_->Get(key);
  if (!obj.ok()) return obj.status().code() == StatusCode::kNotFound;
  StatusOr<JsonObject> parsed = handlers::ParseObject((*obj)->value);
  return parsed.ok() && handlers::MetaString(*parsed, "uid") != owner.uid;
}

bool LifecycleController::KubeletEndsPod(const store::Key& pod_key) {
  StatusOr<store::ObjectPtr> pod = store_->Get(pod_key);
  if (!pod.ok()) return false;
  StatusOr<JsonObject> parsed_pod = handlers::ParseObject((*pod)->value);
  if (!parsed_pod.ok()) return false;
  const std::string_view node_name = handlers::GetPathString(*parsed_pod, {"spec", "nodeName"});
  if (node_name.empty()) return false;
  StatusOr<store::ObjectPtr> node =
      store_->Get(store::Key{"core/nodes", "", std::string(node_name)});
  if (!node.ok()) return false;
  StatusOr<JsonObject> parsed_node = handlers::ParseObject((*node)->value);
  if (!parsed_node.ok()) return false;
  api::corev1::Node typed;
  api::FieldErrorList ignored;
  api::corev1::Decode(boost::json::value(std::move(*parsed_node)), &typed, &ignored);
  return api::IsNodeReady(typed);
}

void LifecycleController::DeleteObject(const store::Key& key, bool foreground) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    StatusOr<store::ObjectPtr> current = store_->Get(key);
    if (!current.ok()) return;
    StatusOr<JsonObject> parsed = handlers::ParseObject((*current)->value);
    if (!parsed.ok()) return;
    const bool deleting = !handlers::MetaString(*parsed, "deletionTimestamp").empty();
    // A Pod bound to a node ends gracefully, as a delete without options ends it (upstream's
    // namespace deleter and garbage collector delete with default options): the node gets its
    // grace period to stop the containers and release the devices.
    const int64_t grace =
        key.resource == "core/pods" && !deleting ? handlers::PodDeletionGracePeriod(*parsed) : 0;
    if (!foreground && !HasAnyFinalizer(*parsed, IsNamespaceKey(key)) && grace == 0) {
      StatusOr<store::ObjectPtr> deleted =
          store_->Delete(key, store::Preconditions{(*current)->revision});
      if (deleted.ok() || deleted.status().code() != StatusCode::kConflict) return;
      continue;
    }
    if (deleting) return;
    JsonObject& meta = handlers::EnsureObject(*parsed, "metadata");
    if (foreground) {
      // Propagation Foreground: the object waits for its own dependents (the finalizer goes
      // once they are gone, Examine), as upstream's garbage collector deletes a dependent that
      // has dependents of its own while an owner of it waits.
      std::vector<std::string> finalizers = handlers::Finalizers(*parsed);
      if (!Contains(finalizers, "foregroundDeletion")) finalizers.push_back("foregroundDeletion");
      handlers::SetFinalizers(*parsed, finalizers);
    }
    api::MarkDeleting(meta, handlers::FormatTime(AddSeconds(clock_->Now(), grace)), grace);
    if (IsNamespaceKey(key)) handlers::EnsureObject(*parsed, "status")["phase"] = "Terminating";
    StatusOr<store::ObjectPtr> updated = store_->Update(key, handlers::ToStoredJson(*parsed),
                                                        store::Preconditions{(*current)->revision});
    if (updated.ok() || updated.status().code() != StatusCode::kConflict) return;
  }
}

void LifecycleController::EditObject(const store::Key& key,
                                     const std::function<bool(JsonObject&)>& edit) {
  bool deleting = false;
  bool finalized = false;
  auto fn = [&](const store::Object* current) -> StatusOr<std::string> {
    StatusOr<JsonObject> parsed = handlers::ParseObject(current->value);
    if (!parsed.ok()) return parsed.status();
    if (!edit(*parsed)) return current->value;
    deleting = !handlers::MetaString(*parsed, "deletionTimestamp").empty();
    finalized = !HasAnyFinalizer(*parsed, IsNamespaceKey(key));
    return handlers::ToStoredJson(*parsed);
  };
  StatusOr<store::ObjectPtr> result = store_->GuaranteedUpdate(key, fn, {});
  if (result.ok() && deleting && finalized) {
    store_->Delete(key, store::Preconditions{(*result)->revision}).status().IgnoreError();
  }
}

void LifecycleController::Examine(const store::Key& key) {
  auto it = objects_.find(key);
  if (it == objects_.end()) return;
  const Entry entry = it->second;

  if (entry.deleting) {
    if (IsNamespaceKey(key)) ExamineNamespace(key, entry);
    std::set<store::Key> deps = DependentsOf(key, entry);
    if (Contains(entry.finalizers, "foregroundDeletion")) {
      // upstream processDeletingDependentsItem: the owner waits only for dependents whose
      // reference to it has blockOwnerDeletion; every dependent is looked at (Examine's owner
      // part decides: deleted when no other owner stays, else only this reference goes).
      bool blocked = false;
      for (const store::Key& dep : deps) {
        dirty_.insert(dep);
        if (BlocksOwner(dep, entry.uid)) blocked = true;
      }
      if (!blocked) {
        EditObject(key, [](JsonObject& obj) {
          std::vector<std::string> f = handlers::Finalizers(obj);
          f.erase(std::remove(f.begin(), f.end(), "foregroundDeletion"), f.end());
          handlers::SetFinalizers(obj, f);
          return true;
        });
      }
    }
    if (Contains(entry.finalizers, "orphan")) {
      std::string uid = entry.uid;
      for (const store::Key& dep : deps) {
        EditObject(dep, [&uid](JsonObject& obj) {
          JsonObject& meta = handlers::EnsureObject(obj, "metadata");
          auto refs = meta.find("ownerReferences");
          if (refs == meta.end() || !refs->value().is_array()) return false;
          boost::json::array kept;
          for (const boost::json::value& r : refs->value().get_array()) {
            if (r.is_object() && handlers::GetString(r.get_object(), "uid") == uid) continue;
            kept.push_back(r);
          }
          if (kept.size() == refs->value().get_array().size()) return false;
          if (kept.empty()) {
            meta.erase("ownerReferences");
          } else {
            refs->value() = std::move(kept);
          }
          return true;
        });
      }
      if (deps.empty()) {
        EditObject(key, [](JsonObject& obj) {
          std::vector<std::string> f = handlers::Finalizers(obj);
          f.erase(std::remove(f.begin(), f.end(), "orphan"), f.end());
          handlers::SetFinalizers(obj, f);
          return true;
        });
      }
    }
    if (key.resource == "core/pods" && entry.finalizers.empty()) {
      std::optional<Timestamp> deadline = handlers::ParseTime(entry.deletion_timestamp);
      if (deadline && *deadline <= clock_->Now() && !KubeletEndsPod(key)) {
        timed_.erase(key);
        DeleteObject(key);
      } else {
        timed_.insert(key);
      }
    }
  }

  // Owners, as upstream's attemptToDeleteItem sorts them: gone (dangling), being deleted in the
  // foreground (waiting for their dependents), and solid. With a solid owner the object stays
  // and only its references to the others go; without one it is deleted, in the foreground when
  // it has dependents of its own and an owner waits for it (so the wait is recursive).
  if (entry.owners.empty()) return;
  if (entry.deleting && !Contains(entry.finalizers, "foregroundDeletion")) return;
  std::vector<std::string> gone;  // dangling and waiting owners' uids: their references go
  size_t solid = 0;
  bool owner_waiting = false;
  for (const OwnerRef& owner : entry.owners) {
    if (OwnerGone(key, owner)) {
      gone.push_back(owner.uid);
      continue;
    }
    std::optional<store::Key> o = ResolvedOwner(key, owner);
    auto owner_entry = o ? objects_.find(*o) : objects_.end();
    if (owner_entry != objects_.end() && owner_entry->second.deleting &&
        Contains(owner_entry->second.finalizers, "foregroundDeletion")) {
      owner_waiting = true;
      gone.push_back(owner.uid);
      continue;
    }
    ++solid;
  }
  if (solid > 0) {
    if (gone.empty()) return;
    EditObject(key, [&gone](JsonObject& obj) {
      JsonObject& meta = handlers::EnsureObject(obj, "metadata");
      auto refs = meta.find("ownerReferences");
      if (refs == meta.end() || !refs->value().is_array()) return false;
      boost::json::array kept;
      for (const boost::json::value& r : refs->value().get_array()) {
        if (r.is_object() && Contains(gone, handlers::GetString(r.get_object(), "uid"))) continue;
        kept.push_back(r);
      }
      if (kept.size() == refs->value().get_array().size() || kept.empty()) return false;
      refs->value() = std::move(kept);
      return true;
    });
    return;
  }
  std::set<store::Key> own_dependents = DependentsOf(key, entry);
  if (owner_waiting && !own_dependents.empty()) {
    // A dependent of ours that waits for its own dependents in the foreground while an owner of
    // ours waits for us: a cycle upstream breaks by making our references non-blocking.
    bool cycle = false;
    for (const store::Key& d : own_dependents) {
      auto e = objects_.find(d);
      if (e != objects_.end() && e->second.deleting &&
          Contains(e->second.finalizers, "foregroundDeletion")) {
        cycle = true;
      }
    }
    if (cycle) {
      EditObject(key, [](JsonObject& obj) {
        JsonObject& meta = handlers::EnsureObject(obj, "metadata");
        boost::json::array* refs = handlers::FindArray(meta, "ownerReferences");
        if (refs == nullptr) return false;
        bool changed = false;
        for (boost::json::value& r : *refs) {
          if (!r.is_object()) continue;
          auto block = r.get_object().find("blockOwnerDeletion");
          if (block == r.get_object().end() || !block->value().is_bool() ||
              !block->value().get_bool()) {
            continue;
          }
          block->value() = false;
          changed = true;
        }
        return changed;
      });
    }
    DeleteObject(key, /*foreground=*/true);
    return;
  }
  if (!entry.deleting) DeleteObject(key);
}

bool LifecycleController::BlocksOwner(const store::Key& dependent, const std::string& owner_uid) {
  auto d = objects_.find(dependent);
  if (d == objects_.end()) return false;
  for (const OwnerRef& owner : d->second.owners) {
    if (owner.uid == owner_uid && owner.block_owner_deletion) return true;
  }
  return false;
}

std::string LifecycleController::ResourceLabel(std::string_view store_resource) {
  // upstream's "<resource>.<group>" ("pods." for the core group).
  size_t slash = store_resource.find('/');
  std::string_view group = store_resource.substr(0, slash);
  std::string_view resource =
      slash == std::string_view::npos ? store_resource : store_resource.substr(slash + 1);
  return std::string(resource) + "." + std::string(group == "core" ? "" : group);
}

void LifecycleController::UpdateNamespaceConditions(
    const store::Key& key, const std::map<std::string, int64_t>& remaining,
    const std::map<std::string, int64_t>& finalizers) {
  // upstream's namespace deleter keeps these five conditions; draplane discovers and parses
  // nothing at run time and deletes through its own store, so the first three are always fine.
  struct Wanted {
    const char* type;
    bool status;
    std::string reason;
    std::string message;
  };
  std::vector<Wanted> wanted = {
      {"NamespaceDeletionDiscoveryFailure", false, "ResourcesDiscovered",
       "All resources successfully discovered"},
      {"NamespaceDeletionGroupVersionParsingFailure", false, "ParsedGroupVersions",
       "All legacy kube types successfully parsed"},
      {"NamespaceDeletionContentFailure", false, "ContentDeleted",
       "All content successfully deleted, may be waiting on finalization"},
      {"NamespaceContentRemaining", false, "ContentRemoved", "All content successfully removed"},
      {"NamespaceFinalizersRemaining", false, "ContentHasNoFinalizers",
       "All content-preserving finalizers finished"},
  };
  // "<what><infix><count> resource instances", joined with ", " in name order.
  auto counted = [](const std::map<std::string, int64_t>& counts, std::string_view infix) {
    std::string out;
    for (const auto& [what, count] : counts) {
      out += (out.empty() ? "" : ", ") + what + std::string(infix) + std::to_string(count) +
             " resource instances";
    }
    return out;
  };
  if (!remaining.empty()) {
    wanted[3] = {"NamespaceContentRemaining", true, "SomeResourcesRemain",
                 "Some resources are remaining: " + counted(remaining, " has ")};
  }
  if (!finalizers.empty()) {
    wanted[4] = {
        "NamespaceFinalizersRemaining", true, "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: " + counted(finalizers, " in ")};
  }
  const std::string now = handlers::FormatTime(clock_->Now());
  EditObject(key, [&](JsonObject& obj) {
    JsonObject& status = handlers::EnsureObject(obj, "status");
    boost::json::array before;
    if (const boost::json::array* c = handlers::FindArray(status, "conditions")) before = *c;
    boost::json::array after;
    bool changed = false;
    for (const Wanted& w : wanted) {
      boost::json::object condition;
      condition["type"] = w.type;
      condition["status"] = w.status ? "True" : "False";
      condition["lastTransitionTime"] = now;
      condition["reason"] = w.reason;
      condition["message"] = w.message;
      const boost::json::object* old = nullptr;
      for (const boost::json::value& c : before) {
        if (c.is_object() && handlers::GetString(c.get_object(), "type") == w.type) {
          old = &c.get_object();
        }
      }
      if (old != nullptr &&
          handlers::GetString(*old, "status") == condition["status"].as_string()) {
        condition["lastTransitionTime"] = old->contains("lastTransitionTime")
                                              ? old->at("lastTransitionTime")
                                              : boost::json::value(now);
      }
      if (old == nullptr || *old != condition) changed = true;
      after.push_back(std::move(condition));
    }
    // Conditions of other types (none upstream writes) stay.
    for (const boost::json::value& c : before) {
      if (!c.is_object()) continue;
      std::string_view type = handlers::GetString(c.get_object(), "type");
      bool ours = std::any_of(wanted.begin(), wanted.end(),
                              [&](const Wanted& w) { return type == w.type; });
      if (!ours) after.push_back(c);
    }
    if (!changed) return false;
    status["conditions"] = std::move(after);
    return true;
  });
}

void LifecycleController::ExamineNamespace(const store::Key& key, const Entry& entry) {
  const std::string& ns = key.name;
  bool empty = true;
  std::vector<store::Key> to_delete;
  std::map<std::string, int64_t> remaining;   // "leases.coordination.k8s.io" -> objects
  std::map<std::string, int64_t> finalizers;  // finalizer -> objects holding it
  for (const auto& [other, other_entry] : objects_) {
    if (other.ns != ns) continue;
    empty = false;
    if (!other_entry.deleting) to_delete.push_back(other);
    ++remaining[ResourceLabel(other.resource)];
    for (const std::string& f : other_entry.finalizers) ++finalizers[f];
  }
  std::sort(to_delete.begin(), to_delete.end());  // in key order, as a listing would give them
  for (const store::Key& k : to_delete) DeleteObject(k);
  UpdateNamespaceConditions(key, remaining, finalizers);
  if (!empty) {
    timed_.insert(key);
    return;
  }
  timed_.erase(key);
  if (!entry.namespace_terminating && entry.finalizers.empty()) {
    DeleteObject(key);
    return;
  }
  EditObject(key, [](JsonObject& obj) {
    JsonObject& spec = handlers::EnsureObject(obj, "spec");
    auto f = spec.find("finalizers");
    if (f == spec.end() || !f->value().is_array()) return false;
    boost::json::array kept;
    for (const boost::json::value& v : f->value().get_array()) {
      if (v.is_string() && v.get_string() == "kubernetes") continue;
      kept.push_back(v);
    }
    if (kept.size() == f->value().get_array().size()) return false;
    if (kept.empty()) {
      spec.erase("finalizers");
    } else {
      f->value() = std::move(kept);
    }
    return true;
  });
}

}  // namespace draplane::server::lifecycle
