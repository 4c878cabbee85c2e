// An in-memory Kubernetes API: the fast ApiClient the simulator runs components against (issue
// 21: the full handler chain per request is too slow for 100,000 Pods in under 30 s), with the
// API server semantics those components depend on. The rules it shares with the server come from
// `api/` (patches, field selectors, resourceVersions), so its answers equal the server's there;
// testing/parity_test.cc checks that. It is not the unit tests' API: they run against the real
// server in-process (testing/test_api.h). Only sim/, testing/ and tests include it (checked by
// tools/check_layering.sh; docs/architecture.md, "client").
//
// Left out on purpose (the server has them; the simulator's components need none of them):
// authentication and authorization, admission other than ResourceQuota's, defaulting and
// validation of objects, strategic details of kinds beyond those listed below, tables and
// protobuf.
//
// Semantics (kube-apiserver's generic registry, reduced to what draplane's components use):
//   - every resource of KnownResources(); namespaced resources need a namespace;
//   - create: `generateName` + 5 random characters, uid, resourceVersion (one counter for the
//     whole store), creationTimestamp, generation 1; AlreadyExists for a taken name; Forbidden
//     (FailedPrecondition) in a namespace that is being deleted; namespaces get the `kubernetes`
//     finalizer in `spec.finalizers` and phase Active;
//   - update: Conflict when the body's resourceVersion is set and stale; for resources with a
//     status subresource the main resource ignores `status` and the `status` subresource changes
//     only `status`; generation is bumped when `spec` changes; an object that is being deleted
//     with no grace period to wait out and loses its last finalizer is removed (a Pod in graceful
//     deletion stays until it is deleted with grace period 0: api/deletion.h);
//   - patch: JSON patch, merge patch and strategic merge patch with the server's rules and
//     messages (api/patch/patch.h); a patch that does not apply is InvalidArgument, as a client
//     of the server sees its 422;
//   - delete: preconditions (uid, resourceVersion); objects with finalizers get a
//     deletionTimestamp; a bound pod is deleted gracefully (deletionTimestamp and
//     deletionGracePeriodSeconds from the options, else the pod's
//     terminationGracePeriodSeconds, else 30) unless the grace period is 0 — the kubelet (or
//     draplane's kubelet simulation) finishes the deletion; a namespace becomes Terminating and
//     is removed once `spec.finalizers` (the `finalize` subresource) and its metadata finalizers
//     are empty;
//   - pods/binding: sets `spec.nodeName` and the PodScheduled=True condition; Conflict when the
//     pod is already bound or the binding's uid differs;
//   - list: label selectors (api/labels/selector.h) and field selectors with the server's
//     parser, selectable fields and messages (api/labels/field_selector.h), paging with `limit`
//     / `continue`;
//   - ResourceQuota (memory_quota.h): creates a quota tracks are refused as the server's quota
//     admission refuses them (403 Forbidden, "exceeded quota: ...") or charged to status.used
//     first; removed objects and Pods that turn terminal give their usage back; a quota's status
//     is synced (status.hard, status.used of the keys the server owns) when it is created or its
//     spec changes. Deletion, termination and spec changes take effect at once, where the
//     server's quota controller takes a moment;
//   - watch: from a resourceVersion (events kept in a bounded log; Expired when it is older than
//     the log), or from "" / "0" with synthetic ADDED events first; selector transitions turn
//     into ADDED / DELETED as the API server does; bookmarks on request (SendBookmarks).
//
// Stored objects are immutable, shared values: the watch log and every watcher's event hold the
// stored version itself. DoShared answers with it too (and a create or update keeps its body as
// the new version); Do copies it out, only for a caller that reads it (not under
// ApiRequest::discard_response).
//
// Typed writes (DoTyped, which the typed helpers of typed.h use) are stored as the typed object
// itself: no JSON is encoded for them, and a watch that asks for typed events (the informers)
// gets that object, so no JSON is decoded either. A version's JSON is made from it the first time
// something reads JSON (a patch, a list, Do, a watch with selectors) and kept; a typed reader of a
// JSON version decodes it once the same way. Create's and update's rules are applied to the typed
// object as they are to JSON (MemoryApiTypedTest checks that both give the same objects, answers,
// errors and events), and so are a Pod's own (its phase on create, its binding, its graceful
// deletion). A merge patch of a typed version is applied to the typed object member by member
// (TypedKind::merge_patch_member: only the metadata, spec or status it names is encoded, patched
// and decoded), so a Pod created typed stays typed through the status patches of its controllers
// and kubelet. Kinds and namespaces with rules of their own that the typed path lacks
// (Namespaces, ResourceQuotas, namespaces with a quota), other patches, and patches of members
// the model does not know take the JSON path.
//
// Options: how many events the log keeps for watches resuming from a resourceVersion, and an
// event TTL (kube-apiserver's --event-ttl, one hour by default there): core/v1 and events.k8s.io
// Events not written for that long are deleted, as the expiry of their etcd lease (which every
// create and update of an Event renews) deletes them. Unlike the API server (api/events.h), the
// two Event APIs keep their objects apart here: a simulation's components write core/v1 Events
// only, and the simulator reads those (the reasons of unscheduled Pods).
//
// Hooks for a driver of the simulation: an interceptor that can fail requests (injected
// conflicts and outages), closing every watch, compacting the event log, and per-verb request
// counters.
//
// Thread-safety: safe for concurrent use; watch events are delivered in resourceVersion order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "client/api_client.h"
#include "common/clock.h"
#include "common/random.h"

namespace draplane::client {

struct MemoryApiOptions {
  size_t event_log_capacity = 200'000;
  // Zero: Events are kept until deleted.
  Duration event_ttl{0};
};

class MemoryApi : public ApiClient {
 public:
  // Returns a non-OK status to fail the request before it is executed, nullopt to proceed.
  using Interceptor = std::function<std::optional<Status>(const ApiRequest&)>;

  // The clock stamps creation and deletion times; the random source makes uids and generated
  // names. Both must outlive the API.
  MemoryApi(const Clock& clock, Random& random, MemoryApiOptions options = {});
  ~MemoryApi() override;

  StatusOr<boost::json::value> Do(const ApiRequest& request) override;
  // Stores a create's or update's body as it is, and answers with the stored version itself.
  StatusOr<std::shared_ptr<const boost::json::value>> DoShared(ApiRequest&& request) override;
  // Stores a create's or update's typed body typed (its JSON is made when something reads it) and
  // answers with the stored typed object itself. Kinds and namespaces with rules of their own
  // that the typed path lacks (Namespaces, ResourceQuotas, namespaces with a quota) go through
  // the JSON path, and everything does while an interceptor is set (it may read the body).
  StatusOr<std::shared_ptr<const void>> DoTyped(ApiRequest&& request, std::shared_ptr<void> object,
                                                const TypedKind& kind) override;
  StatusOr<std::unique_ptr<WatchStream>> Watch(const ApiRequest& request) override;

  void SetInterceptor(Interceptor interceptor);
  // Sends a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks.
  void SendBookmarks();
  // Ends every open watch stream normally (as a server-side timeout would).
  void CloseWatches();
  // Forgets the event log: watches from any earlier resourceVersion get Expired (410).
  void CompactLog();
  // The number of requests of `verb` executed so far (interceptor failures not counted).
  int64_t RequestCount(Verb verb) const;
  // The current resourceVersion.
  uint64_t resource_version() const;

 private:
  struct State;
  // What a request read or wrote: the stored version as JSON or, for DoTyped, typed (null for a
  // discarded answer), or for a list the new list object.
  struct Answer {
    std::shared_ptr<const boost::json::value> stored{};
    std::shared_ptr<const void> typed{};
    boost::json::value list{};
  };
  // Whether `request` may run: it names a resource and the interceptor lets it through.
  Status Admit(const ApiRequest& request) const;
  // Counts and runs an admitted `request`; `body` is its body for a create or update (kept as
  // the stored object where it can be), or `typed_body`, a `kind` object, for DoTyped (which
  // then reads the answer typed).
  StatusOr<Answer> Execute(const ApiRequest& request, boost::json::value body,
                           std::shared_ptr<void> typed_body = nullptr,
                           const TypedKind* kind = nullptr);

  std::shared_ptr<State> state_;
};

}  // namespace draplane::client
