// Object lifecycle work the API server does after a delete was accepted, running inside the
// server over the store (upstream runs these in kube-controller-manager):
//
//   garbage collection (pkg/controller/garbagecollector): an object whose owners
//     (metadata.ownerReferences of a served kind) are all gone is deleted (background
//     propagation); references to owners that are gone are removed when other owners remain;
//   foreground deletion: an owner being deleted with the `foregroundDeletion` finalizer has its
//     dependents deleted (those with another owner that stays lose only their reference to it;
//     one with dependents of its own is deleted in the foreground in turn), and loses the
//     finalizer (and is then deleted) once no dependent whose reference has blockOwnerDeletion
//     is left (upstream attemptToDeleteItem, processDeletingDependentsItem);
//   orphaning: an owner being deleted with the `orphan` finalizer has its references removed
//     from its dependents, then loses the finalizer;
//   namespace deletion (pkg/controller/namespace): a namespace being deleted has every object in
//     it deleted; once it is empty the `kubernetes` entry of spec.finalizers is removed and the
//     namespace goes away;
//   graceful pod deletion: a pod whose deletionTimestamp (its grace period's end) has passed,
//     that has no finalizers and whose node is not Ready (gone, silent, never reported) is
//     removed. On a Ready node its kubelet player (node agent, fake kubelet, kubelet simulator)
//     ends it once its devices were unprepared, however long that takes, as upstream leaves it
//     to the kubelet; docs/architecture.md "Who owns what".
//
// The controller keeps an index of every object's uid and owners, built by a full load and kept
// current by store watches, and works on one thread. Decisions that delete are re-checked
// against the store before they are made.
//
// Thread-safety: Start/Stop/Tick may be called from any thread.
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "server/handlers/registry.h"
#include "server/internal/watch_worker.h"
#include "server/lifecycle/stored_metadata.h"
#include "store/store.h"

namespace draplane::server::lifecycle {

class LifecycleController {
 public:
  LifecycleController(store::Store* store, const Clock* clock);
  ~LifecycleController();

  // Loads the index and starts the worker thread.
  Status Start();
  // Stops the worker. Idempotent.
  void Stop();
  // Wakes the worker for time-based work (pod grace periods); called about once a second.
  void Tick();

  using OwnerRef = lifecycle::OwnerRef;
  // What the index keeps of a stored object.
  struct Entry {
    std::string uid;
    std::vector<OwnerRef> owners;
    std::vector<std::string> finalizers;
    bool deleting = false;
    std::string deletion_timestamp;
    bool namespace_terminating = false;  // namespaces: spec.finalizers still non-empty
    bool operator==(const Entry&) const = default;
  };
  // The entry of a stored object; nullopt when it does not parse.
  static std::optional<Entry> ParseEntry(const store::Key& key, const std::string& value);

 private:
  Status Load();
  void Run();
  // Applies one stored object (nullptr value: deleted) to the index; marks what to look at.
  void Index(const store::Key& key, const std::string* value);
  void Examine(const store::Key& key);
  void ExamineNamespace(const store::Key& key, const Entry& entry);
  // upstream's namespace deletion conditions: what content and which finalizers remain.
  void UpdateNamespaceConditions(const store::Key& key,
                                 const std::map<std::string, int64_t>& remaining,
                                 const std::map<std::string, int64_t>& finalizers);
  // "<resource>.<group>" of a store resource ("leases.coordination.k8s.io", "pods.").
  static std::string ResourceLabel(std::string_view store_resource);
  // Where the owner a reference of `dependent` names would live: upstream's garbage collector
  // resolves a namespaced owner in the dependent's namespace only (a cluster-scoped dependent
  // cannot have one). std::nullopt for a kind this server does not serve or a reference that
  // cannot resolve.
  static std::optional<store::Key> OwnerKey(const store::Key& dependent, const OwnerRef& owner);
  // The indexed object the reference resolves to: the object with the reference's uid, at the
  // key OwnerKey names. A uid found elsewhere (another tenant's object) is not the owner.
  std::optional<store::Key> ResolvedOwner(const store::Key& dependent, const OwnerRef& owner);
  // Whether an owner reference points at an object that is gone (only for served kinds; the
  // index is confirmed against the store). A reference that cannot resolve is gone.
  bool OwnerGone(const store::Key& dependent, const OwnerRef& owner);
  // The dependents whose references resolve to the owner at `key`.
  std::set<store::Key> DependentsOf(const store::Key& key, const Entry& entry);
  // Whether the terminating Pod at `pod_key` is left to its node's kubelet past its grace period:
  // its node is Ready, so a kubelet (a node agent, a fake kubelet) is there to end it once its
  // containers stopped and its devices were unprepared, as upstream leaves it (the API server
  // never ends a Pod for its grace period; the devices would go to the next claim while still
  // in use). A Pod on a node that is gone, not Ready or never reported is ended here.
  bool KubeletEndsPod(const store::Key& pod_key);
  // Deletes an object, setting deletionTimestamp instead when it has finalizers; `foreground`
  // always sets it, with the `foregroundDeletion` finalizer (propagation Foreground).
  void DeleteObject(const store::Key& key, bool foreground = false);
  // Whether the indexed `dependent`'s reference to the owner with `owner_uid` has
  // blockOwnerDeletion (the owner's foreground deletion waits for it).
  bool BlocksOwner(const store::Key& dependent, const std::string& owner_uid);
  // Rewrites metadata of an object; `edit` returns false to leave it unchanged.
  void EditObject(const store::Key& key, const std::function<bool(boost::json::object&)>& edit);

  store::Store* store_;
  const Clock* clock_;
  std::vector<const handlers::ResourceInfo*> resources_;

  internal::WatchWorker worker_;

  // Owned by the worker thread (and by Load before the thread starts).
  internal::ResourceWatches watches_;
  // Hash maps: every write passes through Index. None is iterated where the order could show
  // (ExamineNamespace sorts what it deletes).
  std::unordered_map<store::Key, Entry, store::KeyHash> objects_;
  std::unordered_map<std::string, store::Key> by_uid_;
  std::unordered_map<std::string, std::set<store::Key>> dependents_;  // owner uid -> dependents
  std::set<store::Key> dirty_;
  std::set<store::Key> timed_;  // pods waiting for their grace period; namespaces emptying
};

}  // namespace draplane::server::lifecycle
