#include "store/memory/memory_store.h"

#include <algorithm>
#include <deque>
#include <map>

#include "common/mutex.h"
#include "common/status_macros.h"
#include "store/internal/keys.h"
#include "store/internal/watch_hub.h"

namespace draplane::store {
namespace {

constexpr int64_t kMemoryDefaultRetainedRevisions = 10'000;

using internal::EncodeKey;

// Memory backend. Algorithm:
//   1. `keys_` maps each encoded key to its versions in revision order; a version with a null
//      object is a delete (tombstone).
//   2. A write takes the lock exclusively, checks its precondition against the newest version,
//      takes the next revision, appends a version and publishes the event to the hub while
//      still holding the lock, so events reach the hub in revision order.
//   3. A snapshot read at revision R takes, per key, the newest version at or before R.
//   4. Compaction to C drops, for every key written at or before C, the versions older than its
//      newest one at or before C, and that one too when it is a tombstone. `written_` lists the
//      (revision, key, bytes) of every write so compaction touches only keys that changed. The
//      store compacts itself to keep `retained_revisions` revisions and, when the values written
//      since the last compaction pass `max_history_bytes`, to the revision that leaves half.
class MemoryStore final : public Store {
 public:
  explicit MemoryStore(const StoreOptions& options)
      : retained_(options.retained_revisions > 0 ? options.retained_revisions
                                                 : kMemoryDefaultRetainedRevisions),
        max_history_bytes_(options.max_history_bytes),
        hub_(internal::WatchHubOptions{.backend = "memory",
                                       .ring_limit = 0,
                                       .default_queue_limit = options.watch_queue_limit,
                                       .start_revision = 0}) {}

  std::string_view backend() const override { return "memory"; }

  StatusOr<ObjectPtr> Get(const Key& key) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    ReaderLock lock(mu_);
    const Version* latest = LatestLocked(EncodeKey(key));
    if (latest == nullptr || latest->object == nullptr) return NotFound(key);
    return latest->object;
  }

  StatusOr<ListResult> List(std::string_view resource, const ListOptions& options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    if (options.limit < 0) return InvalidArgumentError("list limit must not be negative");
    const std::string prefix = internal::ListPrefix(resource, options.ns);
    const std::string end = internal::PrefixEnd(prefix);
    std::string start = prefix;
    ReaderLock lock(mu_);
    Revision revision = options.revision > 0 ? options.revision : current_;
    if (!options.continue_token.empty()) {
      DRAPLANE_ASSIGN_OR_RETURN(internal::ContinuePosition position,
                                internal::DecodeContinueToken(options.continue_token, prefix));
      revision = position.revision > 0 ? position.revision : current_;  // 0: the newest
      start = std::move(position.start_key);
      if (revision < compacted_) return ContinueExpired(revision);
    }
    if (revision < compacted_) return RevisionCompacted(revision);
    if (revision > current_) return FutureRevision(revision);

    ListResult result;
    result.revision = revision;
    for (auto it = keys_.lower_bound(start); it != keys_.end() && it->first < end; ++it) {
      const Version* version = AtRevision(it->second, revision);
      if (version == nullptr || version->object == nullptr) continue;
      if (options.limit > 0 && static_cast<int64_t>(result.objects.size()) == options.limit) {
        result.continue_token = internal::EncodeContinueToken(revision, it->first);
        break;
      }
      result.objects.push_back(version->object);
    }
    return result;
  }

  StatusOr<ObjectPtr> Create(const Key& key, std::string value) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    internal::NotifyList notify;
    ObjectPtr created;
    {
      WriterLock lock(mu_);
      std::string encoded = EncodeKey(key);
      std::vector<Version>& versions = keys_[encoded];
      if (!versions.empty() && versions.back().object != nullptr) {
        return AlreadyExistsError(KeyToString(key) + " already exists");
      }
      const Revision revision = current_ + 1;
      created = std::make_shared<Object>(Object{key, std::move(value), revision, revision});
      notify = CommitLocked(std::move(encoded), versions, created,
                            WatchEvent{WatchEvent::Type::kAdded, revision, created, nullptr});
    }
    internal::RunNotifies(notify);
    return created;
  }

  StatusOr<ObjectPtr> Update(const Key& key, std::string value,
                             const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    internal::NotifyList notify;
    ObjectPtr updated;
    {
      WriterLock lock(mu_);
      std::string encoded = EncodeKey(key);
      auto it = keys_.find(encoded);
      if (it == keys_.end() || it->second.back().object == nullptr) return NotFound(key);
      const ObjectPtr& current = it->second.back().object;
      DRAPLANE_RETURN_IF_ERROR(CheckPreconditions(*current, preconditions));
      const Revision revision = current_ + 1;
      updated = std::make_shared<Object>(
          Object{key, std::move(value), revision, current->create_revision});
      notify = CommitLocked(std::move(encoded), it->second, updated,
                            WatchEvent{WatchEvent::Type::kModified, revision, updated, current});
    }
    internal::RunNotifies(notify);
    return updated;
  }

  StatusOr<ObjectPtr> Delete(const Key& key, const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    internal::NotifyList notify;
    ObjectPtr deleted;
    {
      WriterLock lock(mu_);
      std::string encoded = EncodeKey(key);
      auto it = keys_.find(encoded);
      if (it == keys_.end() || it->second.back().object == nullptr) return NotFound(key);
      ObjectPtr current = it->second.back().object;
      DRAPLANE_RETURN_IF_ERROR(CheckPreconditions(*current, preconditions));
      const Revision revision = current_ + 1;
      deleted =
          std::make_shared<Object>(Object{key, current->value, revision, current->create_revision});
      notify = CommitLocked(std::move(encoded), it->second, nullptr,
                            WatchEvent{WatchEvent::Type::kDeleted, revision, deleted, current});
    }
    internal::RunNotifies(notify);
    return deleted;
  }

  StatusOr<std::unique_ptr<Watcher>> Watch(std::string_view resource,
                                           WatchOptions options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    // The hub's history is the store's: both are compacted together under mu_.
    ReaderLock lock(mu_);
    return hub_.Subscribe(resource, options, nullptr);
  }

  StatusOr<Revision> CurrentRevision() override {
    ReaderLock lock(mu_);
    return current_;
  }

  Status Compact(Revision revision) override {
    WriterLock lock(mu_);
    if (revision > current_) {
      return InvalidArgumentError("cannot compact to revision " + std::to_string(revision) +
                                  ": the current revision is " + std::to_string(current_));
    }
    CompactLocked(revision);
    return Status::Ok();
  }

 private:
  struct Version {
    Revision revision;
    ObjectPtr object;  // nullptr: deleted at `revision`
  };

  static Status NotFound(const Key& key) { return NotFoundError(KeyToString(key) + " not found"); }

  static Status CheckPreconditions(const Object& current, const Preconditions& preconditions) {
    if (preconditions.revision != 0 && preconditions.revision != current.revision) {
      return ConflictError("precondition failed for " + KeyToString(current.key) +
                           ": expected revision " + std::to_string(preconditions.revision) +
                           ", stored revision is " + std::to_string(current.revision));
    }
    return Status::Ok();
  }

  Status RevisionCompacted(Revision revision) const DRAPLANE_REQUIRES_SHARED(mu_) {
    return ExpiredError("revision " + std::to_string(revision) + " has been compacted (oldest is " +
                        std::to_string(compacted_) + ")");
  }
  Status ContinueExpired(Revision revision) const {
    return ExpiredError("the continue token's revision " + std::to_string(revision) +
                        " has been compacted; restart the list without a continue token");
  }
  Status FutureRevision(Revision revision) const DRAPLANE_REQUIRES_SHARED(mu_) {
    return DeadlineExceededError("revision " + std::to_string(revision) +
                                 " is newer than the current revision " + std::to_string(current_));
  }

  const Version* LatestLocked(const std::string& encoded) const DRAPLANE_REQUIRES_SHARED(mu_) {
    auto it = keys_.find(encoded);
    if (it == keys_.end()) return nullptr;
    return &it->second.back();
  }

  // The newest version at or before `revision`, or nullptr.
  static const Version* AtRevision(const std::vector<Version>& versions, Revision revision) {
    auto it = std::upper_bound(versions.begin(), versions.end(), revision,
                               [](Revision r, const Version& v) { return r < v.revision; });
    if (it == versions.begin()) return nullptr;
    return &*std::prev(it);
  }

  // Appends the version (object nullptr for a delete), publishes the event, and compacts when
  // the history outgrew `retained_`. Returns the watchers to notify after unlocking.
  internal::NotifyList CommitLocked(std::string encoded, std::vector<Version>& versions,
                                    ObjectPtr object, WatchEvent event) DRAPLANE_REQUIRES(mu_) {
    current_ = event.revision;
    const int64_t bytes = object != nullptr ? static_cast<int64_t>(object->value.size()) : 0;
    versions.push_back(Version{current_, std::move(object)});
    written_.push_back(Written{current_, std::move(encoded), bytes});
    written_bytes_ += bytes;
    internal::NotifyList notify = hub_.Publish({std::move(event)});
    // Compact in steps of an eighth of the retained history so the cost is amortised.
    if (current_ - compacted_ > retained_ + std::max<int64_t>(1, retained_ / 8)) {
      CompactLocked(current_ - retained_);
    }
    // And by size: down to half the bound, so the cost is amortised too.
    if (max_history_bytes_ > 0 && written_bytes_ > max_history_bytes_) {
      int64_t left = written_bytes_;
      Revision target = compacted_;
      for (const Written& w : written_) {
        if (left <= max_history_bytes_ / 2) break;
        left -= w.bytes;
        target = w.revision;
      }
      CompactLocked(target);
    }
    return notify;
  }

  void CompactLocked(Revision revision) DRAPLANE_REQUIRES(mu_) {
    if (revision <= compacted_) return;
    while (!written_.empty() && written_.front().revision <= revision) {
      auto it = keys_.find(written_.front().key);
      written_bytes_ -= written_.front().bytes;
      written_.pop_front();
      if (it == keys_.end()) continue;
      std::vector<Version>& versions = it->second;
      auto keep = std::upper_bound(versions.begin(), versions.end(), revision,
                                   [](Revision r, const Version& v) { return r < v.revision; });
      // `keep - 1` is the newest version at or before `revision`: the snapshot base.
      if (keep != versions.begin()) {
        --keep;
        if (keep->object == nullptr) ++keep;
        versions.erase(versions.begin(), keep);
      }
      if (versions.empty()) keys_.erase(it);
    }
    compacted_ = revision;
    hub_.Compact(revision);
  }

  // One write since the last compaction.
  struct Written {
    Revision revision;
    std::string key;
    int64_t bytes;  // of the value written (0 for a delete)
  };

  const int64_t retained_;
  const int64_t max_history_bytes_;
  mutable SharedMutex mu_;
  std::map<std::string, std::vector<Version>, std::less<>> keys_ DRAPLANE_GUARDED_BY(mu_);
  std::deque<Written> written_ DRAPLANE_GUARDED_BY(mu_);
  int64_t written_bytes_ DRAPLANE_GUARDED_BY(mu_) = 0;  // the sum of written_'s bytes
  Revision current_ DRAPLANE_GUARDED_BY(mu_) = 0;
  Revision compacted_ DRAPLANE_GUARDED_BY(mu_) = 0;
  internal::WatchHub hub_;
};

}  // namespace

std::unique_ptr<Store> NewMemoryStore(const StoreOptions& options) {
  return std::make_unique<MemoryStore>(options);
}

}  // namespace draplane::store
