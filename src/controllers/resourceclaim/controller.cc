#include "controllers/resourceclaim/controller.h"

#include <algorithm>
#include <boost/json.hpp>

#include "api/object.h"
#include "api/pod_claims.h"
#include "api/pods.h"
#include "api/resource_claims.h"
#include "api/validation/validation.h"
#include "client/typed.h"
#include "common/log.h"
#include "common/mutex.h"

namespace draplane::controllers {

namespace rv1 = api::resourcev1;
using api::corev1::Pod;

namespace {

constexpr size_t kDeletedMemory = 10'000;

// upstream isPodDone: none of the containers runs now or ever will.
bool IsPodDone(const Pod& pod) {
  return api::IsPodTerminal(pod) ||
         (pod.metadata.deletion_timestamp.has_value() && pod.spec.node_name.empty());
}

// The controlling Pod owner of a claim (upstream owningPod).
const api::metav1::OwnerReference* OwningPod(const rv1::ResourceClaim& claim) {
  for (const api::metav1::OwnerReference& owner : claim.metadata.owner_references) {
    if (owner.controller.value_or(false) && owner.api_version == "v1" && owner.kind == "Pod") {
      return &owner;
    }
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> PodClaimNames(const Pod& pod) {
  std::vector<std::string> out;
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    if (entry.resource_claim_name) out.push_back(*entry.resource_claim_name);
  }
  for (const api::corev1::PodResourceClaimStatus& s : pod.status.resource_claim_statuses) {
    if (s.resource_claim_name) out.push_back(*s.resource_claim_name);
  }
  if (pod.status.extended_resource_claim_status) {
    out.push_back(pod.status.extended_resource_claim_status->resource_claim_name);
  }
  return out;
}

std::string ResourceClaimController::GenerateName(std::string_view pod_name,
                                                  std::string_view claim_name) {
  std::string name = std::string(pod_name) + "-" + std::string(claim_name) + "-";
  constexpr size_t kMaxBaseLen = 57;  // room for 5 random characters in 63
  if (name.size() > kMaxBaseLen) {
    // Both parts cut in proportion to their length (upstream keeps no trailing hyphen here).
    size_t total = name.size();
    name = std::string(pod_name.substr(0, pod_name.size() * kMaxBaseLen / total)) + "-" +
           std::string(claim_name.substr(0, claim_name.size() * kMaxBaseLen / total));
  }
  return name;
}

ResourceClaimController::ResourceClaimController(client::ApiClient& api,
                                                 client::SharedInformers& informers,
                                                 const Clock& clock,
                                                 ResourceClaimControllerOptions options)
    : api_(api),
      options_(std::move(options)),
      pods_(informers.Get<Pod>()),
      claims_(informers.Get<rv1::ResourceClaim>()),
      templates_(informers.Get<rv1::ResourceClaimTemplate>()),
      events_(api, clock,
              client::EventRecorderOptions{.component = "resource_claim",  // upstream's source
                                           .host = "",
                                           .synchronous = options_.workers == 0}),
      queue_(clock, options_.rate_limits, "resource_claim"),
      workers_("resourceclaim-controller", queue_,
               [this](const std::string& key) { return Sync(key); }) {
  claims_.AddIndex("owner-pod", [](const rv1::ResourceClaim& c) {
    std::vector<std::string> out;
    if (const api::metav1::OwnerReference* owner = OwningPod(c)) out.push_back(owner->uid);
    return out;
  });
  pods_.AddIndex("template", [](const Pod& p) {
    std::vector<std::string> out;
    for (const auto& entry : p.spec.resource_claims) {
      if (entry.resource_claim_template_name) {
        out.push_back(p.metadata.namespace_ + "/" + *entry.resource_claim_template_name);
      }
    }
    return out;
  });
  pods_.AddIndex("claim", [](const Pod& p) {
    std::vector<std::string> out;
    for (const std::string& name : PodClaimNames(p)) {
      out.push_back(p.metadata.namespace_ + "/" + name);
    }
    return out;
  });
  pods_.AddHandlers({
      .on_add = [this](const auto& p) { EnqueuePod(*p); },
      .on_update = [this](const auto&, const auto& p) { EnqueuePod(*p); },
      .on_delete =
          [this](const auto& p) {
            RememberDeleted(p->metadata.uid);
            EnqueuePodClaims(*p);
          },
  });
  claims_.AddHandlers({
      .on_add = [this](const auto& c) { EnqueueClaim(*c); },
      .on_update = [this](const auto&, const auto& c) { EnqueueClaim(*c); },
      .on_delete =
          [this](const auto& c) {
            // The pod may need a new claim (or at least a fresh look).
            if (const api::metav1::OwnerReference* owner = OwningPod(*c)) {
              queue_.Add("pod:" + client::ObjectKey(c->metadata.namespace_, owner->name));
            }
          },
  });
  templates_.AddHandlers({
      .on_add =
          [this](const auto& t) {
            for (const auto& pod :
                 pods_.ByIndex("template", t->metadata.namespace_ + "/" + t->metadata.name)) {
              queue_.Add("pod:" + client::ObjectKey(pod->metadata.namespace_, pod->metadata.name));
            }
          },
  });
}

ResourceClaimController::~ResourceClaimController() { Stop(); }

void ResourceClaimController::Start() { workers_.Start(options_.workers); }

void ResourceClaimController::Stop() {
  workers_.Stop();
  events_.Stop();
}

void ResourceClaimController::EnqueuePod(const Pod& pod) {
  if (IsPodDone(pod) || pod.metadata.deletion_timestamp.has_value()) {
    EnqueuePodClaims(pod);
    return;
  }
  if (PodNeedsWork(pod)) {
    queue_.Add("pod:" + client::ObjectKey(pod.metadata.namespace_, pod.metadata.name));
  }
}

void ResourceClaimController::EnqueueClaim(const rv1::ResourceClaim& claim) {
  const std::string key = client::ObjectKey(claim.metadata.namespace_, claim.metadata.name);
  if (ClaimNeedsWork(claim)) queue_.Add("claim:" + key);
  // A pod placed without the scheduler may wait for this claim's allocation to reserve it.
  for (const auto& pod : pods_.ByIndex("claim", key)) EnqueuePod(*pod);
}

bool ResourceClaimController::PodNeedsWork(const Pod& pod) const {
  if (IsPodDone(pod) || pod.metadata.deletion_timestamp.has_value()) return false;
  for (const api::corev1::PodResourceClaim& entry : pod.spec.resource_claims) {
    if (!entry.resource_claim_template_name) continue;
    const auto& statuses = pod.status.resource_claim_statuses;
    if (std::none_of(statuses.begin(), statuses.end(),
                     [&](const auto& s) { return s.name == entry.name; })) {
      return true;  // the claim must be created from the template
    }
  }
  if (pod.spec.node_name.empty()) return false;  // the scheduler reserves its claims
  for (const std::string& name : PodClaimNames(pod)) {
    client::Informer<rv1::ResourceClaim>::Ptr claim = claims_.Get(pod.metadata.namespace_, name);
    if (claim != nullptr && claim->status.allocation && !api::IsReservedForPod(pod, *claim) &&
        claim->status.reserved_for.size() < api::validation::kResourceClaimReservedForMaxSize) {
      return true;
    }
  }
  return false;
}

ResourceClaimController::Reservation ResourceClaimController::JudgeReservation(
    const std::string& ns, const rv1::ResourceClaimConsumerReference& ref) {
  if (!(ref.api_group.empty() && ref.resource == "pods")) {
    return Reservation::kValid;  // another kind of consumer: not ours to judge
  }
  if (WasDeleted(ref.uid)) return Reservation::kStale;
  client::Informer<Pod>::Ptr pod = pods_.Get(ns, ref.name);
  if (pod == nullptr) return Reservation::kUnknown;
  return pod->metadata.uid != ref.uid || IsPodDone(*pod) ? Reservation::kStale
                                                         : Reservation::kValid;
}

bool ResourceClaimController::OwnerWillNotRun(const rv1::ResourceClaim& claim) const {
  const api::metav1::OwnerReference* owner = OwningPod(claim);
  if (owner == nullptr) return false;
  client::Informer<Pod>::Ptr pod = pods_.Get(claim.metadata.namespace_, owner->name);
  return pod != nullptr && (pod->metadata.uid != owner->uid || IsPodDone(*pod));
}

bool ResourceClaimController::ClaimNeedsWork(const rv1::ResourceClaim& claim) {
  for (const rv1::ResourceClaimConsumerReference& ref : claim.status.reserved_for) {
    if (JudgeReservation(claim.metadata.namespace_, ref) != Reservation::kValid) return true;
  }
  if (!claim.status.reserved_for.empty()) return false;
  const bool deleted = claim.metadata.deletion_timestamp.has_value();
  if (api::HasClaimFinalizer(claim) && (deleted || claim.status.allocation.has_value()))
    return true;
  return !deleted && OwnerWillNotRun(claim);
}

void ResourceClaimController::EnqueuePodClaims(const Pod& pod) {
  for (const std::string& name : PodClaimNames(pod)) {
    queue_.Add("claim:" + client::ObjectKey(pod.metadata.namespace_, name));
  }
  for (const auto& claim : claims_.ByIndex("owner-pod", pod.metadata.uid)) {
    queue_.Add("claim:" + client::ObjectKey(claim->metadata.namespace_, claim->metadata.name));
  }
}

void ResourceClaimController::RememberDeleted(const std::string& uid) {
  MutexLock lock(mu_);
  if (!deleted_.insert(uid).second) return;
  deleted_order_.push_back(uid);
  if (deleted_order_.size() > kDeletedMemory) {
    deleted_.erase(deleted_order_.front());
    deleted_order_.pop_front();
  }
}

bool ResourceClaimController::WasDeleted(const std::string& uid) {
  MutexLock lock(mu_);
  return deleted_.contains(uid);
}

Status ResourceClaimController::Sync(const std::string& key) {
  size_t colon = key.find(':');
  if (colon == std::string::npos) return InvalidArgumentError("bad key " + key);
  std::string ns;
  std::string name;
  client::SplitObjectKey(std::string_view(key).substr(colon + 1), &ns, &name);
  if (key.starts_with("pod:")) return SyncPod(ns, name);
  if (key.starts_with("claim:")) return SyncClaim(ns, name);
  return InvalidArgumentError("bad key " + key);
}

Status ResourceClaimController::SyncPod(const std::string& ns, const std::string& name) {
  client::Informer<Pod>::Ptr pod = pods_.Get(ns, name);
  if (pod == nullptr) return Status::Ok();
  if (IsPodDone(*pod) || pod->metadata.deletion_timestamp.has_value()) {
    EnqueuePodClaims(*pod);
    return Status::Ok();
  }
  std::vector<api::corev1::PodResourceClaimStatus> statuses = pod->status.resource_claim_statuses;
  bool changed = false;
  for (const api::corev1::PodResourceClaim& entry : pod->spec.resource_claims) {
    if (!entry.resource_claim_template_name) continue;
    bool recorded = std::any_of(statuses.begin(), statuses.end(),
                                [&](const auto& s) { return s.name == entry.name; });
    if (recorded) continue;
    // A claim created earlier whose name did not make it into the status.
    std::shared_ptr<const rv1::ResourceClaim> existing;
    for (const auto& claim : claims_.ByIndex("owner-pod", pod->metadata.uid)) {
      auto a = claim->metadata.annotations.find(kPodClaimNameAnnotation);
      if (a != claim->metadata.annotations.end() && a->second == entry.name) {
        existing = claim;
        break;
      }
    }
    std::string claim_name;
    if (existing) {
      claim_name = existing->metadata.name;
    } else {
      auto tmpl = templates_.Get(ns, *entry.resource_claim_template_name);
      if (tmpl == nullptr) {
        // The informer may lag behind; ask the API before giving up for now.
        StatusOr<rv1::ResourceClaimTemplate> fetched =
            client::Get<rv1::ResourceClaimTemplate>(api_, ns, *entry.resource_claim_template_name);
        if (!fetched.ok()) {
          return ClaimCreationFailed(
              *pod, entry.name,
              fetched.status().WithPrefix("resource claim template \"" +
                                          *entry.resource_claim_template_name + "\""));
        }
        tmpl = std::make_shared<const rv1::ResourceClaimTemplate>(std::move(*fetched));
      }
      rv1::ResourceClaim claim;
      claim.metadata.namespace_ = ns;
      claim.metadata.generate_name = GenerateName(pod->metadata.name, entry.name);
      claim.metadata.labels = tmpl->spec.metadata.labels;
      claim.metadata.annotations = tmpl->spec.metadata.annotations;
      claim.metadata.annotations[std::string(kPodClaimNameAnnotation)] = entry.name;
      claim.metadata.owner_references.push_back(api::NewControllerRef(*pod));
      claim.spec = tmpl->spec.spec;
      StatusOr<std::shared_ptr<const rv1::ResourceClaim>> created =
          client::CreateShared(api_, std::move(claim), options_.field_manager);
      if (!created.ok()) {
        return ClaimCreationFailed(
            *pod, entry.name, created.status().WithPrefix("create ResourceClaim " + entry.name));
      }
      claim_name = (*created)->metadata.name;
    }
    api::corev1::PodResourceClaimStatus status;
    status.name = entry.name;
    status.resource_claim_name = claim_name;
    statuses.push_back(std::move(status));
    changed = true;
  }
  if (changed) {
    boost::json::array list;
    for (const auto& s : statuses) list.push_back(api::corev1::Encode(s));
    boost::json::object patch{
        {"status", boost::json::object{{"resourceClaimStatuses", std::move(list)}}}};
    Status patched = client::PatchOnly<Pod>(api_, ns, name, client::PatchType::kMerge,
                                            std::move(patch), "status", options_.field_manager);
    if (!patched.ok()) return patched.WithPrefix("update pod claim statuses");
  }
  // Pods placed without the scheduler: reserve their allocated claims, those of their
  // spec.resourceClaims entries only (upstream syncPod): a status entry naming some other claim,
  // or a template's claim the Pod does not control, never makes the Pod its user.
  if (!pod->spec.node_name.empty()) {
    for (const api::corev1::PodResourceClaim& entry : pod->spec.resource_claims) {
      api::PodClaimName claim_name = api::ClaimNameForPod(*pod, entry);
      if (claim_name.name.empty()) continue;
      auto claim = claims_.Get(ns, claim_name.name);
      if (claim == nullptr || !claim->status.allocation || api::IsReservedForPod(*pod, *claim))
        continue;
      if (claim_name.must_check_owner && !api::IsForPod(*pod, *claim)) continue;
      if (claim->status.reserved_for.size() >= api::validation::kResourceClaimReservedForMaxSize) {
        continue;
      }
      rv1::ResourceClaim next = *claim;
      next.status.reserved_for.push_back(api::PodConsumerReference(*pod));
      Status written = client::UpdateStatusOnly(api_, std::move(next), options_.field_manager);
      if (!written.ok()) return written.WithPrefix("reserve claim for pod");
    }
  }
  return Status::Ok();
}

Status ResourceClaimController::ClaimCreationFailed(const Pod& pod, const std::string& entry,
                                                    Status error) {
  events_.Record(client::ReferenceTo(pod), api::corev1::kEventTypeWarning,
                 "FailedResourceClaimCreation",
                 "PodResourceClaim " + entry + ": " + std::string(error.message()));
  return error;
}

Status ResourceClaimController::SyncClaim(const std::string& ns, const std::string& name) {
  client::Informer<rv1::ResourceClaim>::Ptr cached = claims_.Get(ns, name);
  if (cached == nullptr) return Status::Ok();
  const rv1::ResourceClaim& claim = *cached;

  // 4. Valid reservations.
  std::vector<rv1::ResourceClaimConsumerReference> valid;
  for (const rv1::ResourceClaimConsumerReference& r : claim.status.reserved_for) {
    Reservation judged = JudgeReservation(ns, r);
    if (judged == Reservation::kUnknown) {
      // Not in the cache: the scheduler may have just created the reservation for a pod the
      // informer has not delivered yet. Only the API can tell.
      StatusOr<Pod> fetched = client::Get<Pod>(api_, ns, r.name);
      if (!fetched.ok() && fetched.status().code() != StatusCode::kNotFound) {
        return fetched.status();
      }
      judged = !fetched.ok() || fetched->metadata.uid != r.uid || IsPodDone(*fetched)
                   ? Reservation::kStale
                   : Reservation::kValid;
    }
    if (judged == Reservation::kValid) {
      valid.push_back(r);
    } else {
      log::Debug("resourceclaim: claim {}/{}: pod {} ({}) no longer uses it", ns, name, r.name,
                 r.uid);
    }
  }

  const bool finalizer = api::HasClaimFinalizer(claim);
  if (valid.size() < claim.status.reserved_for.size()) {
    rv1::ResourceClaim next = claim;
    next.status.reserved_for = valid;
    // 5. Deallocate on the transition to "not used anymore".
    if (valid.empty() && finalizer) api::ClearAllocation(&next.status);
    StatusOr<std::shared_ptr<const rv1::ResourceClaim>> written =
        client::UpdateStatusShared(api_, std::move(next), options_.field_manager);
    if (!written.ok()) return written.status().WithPrefix("update claim reservations");
    if (finalizer && !(*written)->status.allocation) {
      rv1::ResourceClaim unfinalized = **written;
      api::RemoveClaimFinalizer(&unfinalized);
      Status updated = client::UpdateOnly(api_, std::move(unfinalized), options_.field_manager);
      if (!updated.ok()) return updated.WithPrefix("remove claim finalizer");
    }
  } else if (finalizer && valid.empty() &&
             (claim.metadata.deletion_timestamp.has_value() ||
              claim.status.allocation.has_value())) {
    // Deleted or allocated while nobody uses it: an allocation whose reservation was removed
    // elsewhere (scheduler Unreserve), or a claim being deleted.
    rv1::ResourceClaim next = claim;
    if (next.status.allocation) {
      log::Debug("resourceclaim: claim {}/{}: deallocating, nobody uses it", ns, name);
      api::ClearAllocation(&next.status);
      StatusOr<rv1::ResourceClaim> written =
          client::UpdateStatus(api_, std::move(next), options_.field_manager);
      if (!written.ok()) return written.status().WithPrefix("deallocate claim");
      next = std::move(*written);
    }
    api::RemoveClaimFinalizer(&next);
    Status updated = client::UpdateOnly(api_, std::move(next), options_.field_manager);
    if (!updated.ok()) return updated.WithPrefix("remove claim finalizer");
  }

  // 6. Generated claims of pods that will not run.
  if (valid.empty() && !claim.metadata.deletion_timestamp.has_value() && OwnerWillNotRun(claim)) {
    client::DeleteOptions options;
    options.precondition_uid = claim.metadata.uid;
    Status s = client::Delete<rv1::ResourceClaim>(api_, ns, name, options);
    if (!s.ok() && s.code() != StatusCode::kNotFound) {
      return s.WithPrefix("delete unused generated claim");
    }
  }
  return Status::Ok();
}

}  // namespace draplane::controllers
