#include "client/informer.h"

#include <algorithm>
#include <boost/json.hpp>
#include <utility>

#include "common/check.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "common/thread_name.h"

namespace draplane::client {
namespace {

// Removes `key` from the objects an index lists under `value`, and the value once it lists none.
template <typename Values>
void EraseFromValue(Values& values, const std::string& value, const std::string& key) {
  auto it = values.find(value);
  if (it == values.end()) return;
  if (auto k = it->second.find(key); k != it->second.end()) it->second.erase(k);
  if (it->second.empty()) values.erase(it);
}

// Lists `entry` under `value` as the object at `key`, in place of its older version; returns
// where it is listed.
template <typename Values, typename Entry>
Entry* PutInValue(Values& values, const std::string& value, const std::string& key,
                  const Entry& entry) {
  auto [it, inserted] = values[value].try_emplace(key, entry);
  if (!inserted) it->second = entry;
  return &it->second;
}

}  // namespace

InformerBase::InformerBase(ApiClient& api, const ResourceType& type, InformerOptions options)
    : api_(api), type_(type), options_(std::move(options)), backoff_(options_.initial_backoff) {}

InformerBase::~InformerBase() { Stop(); }

InformerBase::HandlerId InformerBase::AddRawHandlers(RawHandlers handlers) {
  MutexLock lock(handler_mu_);
  // Holding handler_mu_ keeps the cache and the notifications still while the cached objects
  // are replayed: the new handler misses nothing and sees nothing twice.
  if (handlers.on_add) {
    for (const Entry& entry : ListEntries()) handlers.on_add(entry);
  }
  HandlerId id = next_handler_id_++;
  handlers_.emplace_back(id, std::move(handlers));
  return id;
}

void InformerBase::RemoveHandlers(HandlerId id) {
  MutexLock lock(handler_mu_);
  std::erase_if(handlers_, [id](const auto& entry) { return entry.first == id; });
}

void InformerBase::AddRawIndex(std::string name,
                               std::function<std::vector<std::string>(const Entry&)> fn) {
  MutexLock lock(mu_);
  Index& index = indexes_[std::move(name)];
  index.fn = std::move(fn);
  // The listings are kept per index in indexes_ order, which a new index may change: every
  // index lists the cache again.
  for (auto& [index_name, each] : indexes_) each.values.clear();
  for (auto& [key, cached] : cache_) {
    cached.listings.clear();
    IndexInsert(key, cached);
  }
}

void InformerBase::Start() {
  if (started_.exchange(true)) return;
  if (options_.manual) {
    Status s = ReopenManual();
    if (!s.ok()) log::Warning("informer {}: {}", type_.resource, s.ToString());
    return;
  }
  thread_ = std::thread([this] {
    SetCurrentThreadName("inf-" + std::string(type_.resource));
    Run();
  });
  if (options_.resync_period > Duration::zero()) {
    resync_thread_ = std::thread([this] {
      SetCurrentThreadName("resync-" + std::string(type_.resource));
      RunResync();
    });
  }
}

void InformerBase::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_.exchange(true)) {
      // Already stopping; fall through to join (a second caller waits too).
    }
    if (watch_) watch_->Cancel();
    cv_.NotifyAll();
  }
  if (thread_.joinable()) thread_.join();
  if (resync_thread_.joinable()) resync_thread_.join();
}

bool InformerBase::WaitForSync() {
  if (options_.manual) return synced_.load();  // nothing to wait for: Start() listed
  MutexLock lock(mu_);
  cv_.Wait(lock, [&]() DRAPLANE_REQUIRES(mu_) { return synced_.load() || stopping_.load(); });
  return synced_.load();
}

std::string InformerBase::resource_version() const {
  MutexLock lock(mu_);
  return resource_version_;
}

size_t InformerBase::size() const {
  MutexLock lock(mu_);
  return cache_.size();
}

InformerBase::Entry InformerBase::GetEntry(const std::string& key) const {
  MutexLock lock(mu_);
  auto it = cache_.find(key);
  return it == cache_.end() ? nullptr : it->second.entry;
}

std::vector<InformerBase::Entry> InformerBase::ListEntries() const {
  MutexLock lock(mu_);
  std::vector<Entry> out;
  out.reserve(cache_.size());
  for (const auto& [key, cached] : cache_) out.push_back(cached.entry);
  return out;
}

std::vector<InformerBase::Entry> InformerBase::EntriesByIndex(const std::string& name,
                                                              const std::string& value) const {
  MutexLock lock(mu_);
  std::vector<Entry> out;
  auto index = indexes_.find(name);
  if (index == indexes_.end()) return out;
  auto values = index->second.values.find(value);
  if (values == index->second.values.end()) return out;
  out.reserve(values->second.size());
  for (const auto& [key, entry] : values->second) out.push_back(entry);
  return out;
}

void InformerBase::IndexInsert(const std::string& key, Cached& cached) {
  cached.listings.reserve(indexes_.size());
  for (auto& [name, index] : indexes_) {
    std::vector<Listing>& listings = cached.listings.emplace_back();
    for (std::string& value : index.fn(cached.entry)) {
      Entry* slot = PutInValue(index.values, value, key, cached.entry);
      listings.push_back({std::move(value), slot});
    }
  }
}

void InformerBase::IndexErase(const std::string& key, const Cached& cached) {
  size_t i = 0;
  for (auto& [name, index] : indexes_) {
    for (const Listing& l : cached.listings[i++]) EraseFromValue(index.values, l.value, key);
  }
}

InformerBase::Entry InformerBase::Upsert(const std::string& key, const Entry& entry) {
  MutexLock lock(mu_);
  auto [it, inserted] = cache_.try_emplace(key);
  Cached& cached = it->second;
  if (inserted) {
    cached.entry = entry;
    IndexInsert(key, cached);
    return nullptr;
  }
  Entry old = std::exchange(cached.entry, entry);
  size_t i = 0;
  for (auto& [name, index] : indexes_) {
    std::vector<Listing>& listings = cached.listings[i++];
    std::vector<std::string> after = index.fn(entry);
    const bool same =
        after.size() == listings.size() &&
        std::equal(after.begin(), after.end(), listings.begin(),
                   [](const std::string& v, const Listing& l) { return v == l.value; });
    if (same) {
      for (Listing& l : listings) *l.slot = entry;
      continue;
    }
    for (const Listing& l : listings) {
      if (std::find(after.begin(), after.end(), l.value) == after.end()) {
        EraseFromValue(index.values, l.value, key);
      }
    }
    listings.clear();
    for (std::string& value : after) {
      Entry* slot = PutInValue(index.values, value, key, entry);
      listings.push_back({std::move(value), slot});
    }
  }
  return old;
}

InformerBase::Entry InformerBase::Remove(const std::string& key) {
  MutexLock lock(mu_);
  auto it = cache_.find(key);
  if (it == cache_.end()) return nullptr;
  Entry old = it->second.entry;
  IndexErase(key, it->second);
  cache_.erase(it);
  return old;
}

void InformerBase::NotifyAdd(const Entry& entry) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_add) h.on_add(entry);
  }
}

void InformerBase::NotifyUpdate(const Entry& old_entry, const Entry& new_entry) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_update) h.on_update(old_entry, new_entry);
  }
}

void InformerBase::NotifyDelete(const Entry& entry) {
  for (const auto& [id, h] : handlers_) {
    if (h.on_delete) h.on_delete(entry);
  }
}

void InformerBase::Backoff() {
  MutexLock lock(mu_);
  // Pacing only: the wait is a real-time sleep that Stop() interrupts; no decision reads time.
  cv_.WaitFor(lock, backoff_, [&]() DRAPLANE_REQUIRES(mu_) { return stopping_.load(); });
  backoff_ = std::min(backoff_ * 2, options_.max_backoff);
}

void InformerBase::ResetBackoff() { backoff_ = options_.initial_backoff; }

Status InformerBase::ListAndReplace() {
  std::map<std::string, Decoded> listed;
  std::string continue_token;
  std::string list_rv;
  bool paged = options_.page_size > 0;
  while (true) {
    ApiRequest request;
    request.verb = Verb::kList;
    request.resource = &type_;
    request.namespace_ = options_.namespace_;
    request.list.label_selector = options_.label_selector;
    request.list.field_selector = options_.field_selector;
    request.list.limit = paged ? options_.page_size : 0;
    request.list.continue_token = continue_token;
    StatusOr<boost::json::value> page = api_.Do(request);
    if (!page.ok()) {
      if (page.status().code() == StatusCode::kExpired && !continue_token.empty()) {
        // The continue token expired: start over with one unpaged list (client-go does the same).
        listed.clear();
        continue_token.clear();
        paged = false;
        continue;
      }
      return page.status();
    }
    const boost::json::object* object = page->if_object();
    if (object == nullptr) return InternalError("list response is not an object");
    continue_token.clear();
    if (const boost::json::value* meta = object->if_contains("metadata");
        meta != nullptr && meta->is_object()) {
      if (const boost::json::value* rv = meta->as_object().if_contains("resourceVersion");
          rv != nullptr && rv->is_string()) {
        list_rv = std::string(rv->as_string());
      }
      if (const boost::json::value* token = meta->as_object().if_contains("continue");
          token != nullptr && token->is_string()) {
        continue_token = std::string(token->as_string());
      }
    }
    if (const boost::json::value* items = object->if_contains("items");
        items != nullptr && items->is_array()) {
      for (const boost::json::value& item : items->as_array()) {
        StatusOr<Decoded> decoded = DecodeEntry(item);
        if (!decoded.ok()) {
          log::Warning("informer {}: skipping undecodable object: {}", type_.resource,
                       decoded.status().message());
          continue;
        }
        std::string key = decoded->key;
        listed[key] = std::move(*decoded);
      }
    }
    if (continue_token.empty()) break;
  }
  list_count_.fetch_add(1);

  // Replace: deletions first, then additions and updates, each in key order.
  MutexLock handlers_lock(handler_mu_);
  std::vector<Entry> removed;
  {
    MutexLock lock(mu_);
    std::vector<std::string> gone;
    for (const auto& [key, cached] : cache_) {
      if (!listed.contains(key)) gone.push_back(key);
    }
    for (const std::string& key : gone) {
      auto it = cache_.find(key);
      IndexErase(key, it->second);
      removed.push_back(it->second.entry);
      cache_.erase(it);
    }
  }
  for (const Entry& e : removed) NotifyDelete(e);
  for (auto& [key, decoded] : listed) {
    Entry previous = Upsert(key, decoded.entry);
    if (previous == nullptr) {
      NotifyAdd(decoded.entry);
    } else {
      NotifyUpdate(previous, decoded.entry);
    }
  }
  {
    MutexLock lock(mu_);
    resource_version_ = list_rv;
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<WatchStream>> InformerBase::OpenWatch() {
  ApiRequest request;
  request.resource = &type_;
  request.namespace_ = options_.namespace_;
  request.list.label_selector = options_.label_selector;
  request.list.field_selector = options_.field_selector;
  request.list.resource_version = resource_version();
  request.list.allow_watch_bookmarks = true;
  request.list.typed_events = true;
  request.list.timeout_seconds = options_.watch_timeout_seconds;
  StatusOr<std::unique_ptr<WatchStream>> stream = api_.Watch(request);
  if (stream.ok()) watch_count_.fetch_add(1);
  return stream;
}

Status InformerBase::ApplyEvent(WatchEvent& event) {
  if (event.type == "ERROR") return StatusFromWatchError(*event.object);
  if (event.type == "BOOKMARK") {
    const boost::json::object* object = event.object->if_object();
    const boost::json::value* meta = object ? object->if_contains("metadata") : nullptr;
    const boost::json::value* rv =
        meta && meta->is_object() ? meta->as_object().if_contains("resourceVersion") : nullptr;
    if (rv != nullptr && rv->is_string()) {
      MutexLock lock(mu_);
      resource_version_ = std::string(rv->as_string());
    }
    return Status::Ok();
  }
  std::optional<Decoded> decoded = DecodeEvent(event);
  if (decoded.has_value()) ApplyDecoded(event.type == "DELETED", *decoded);
  return Status::Ok();
}

std::optional<InformerBase::Decoded> InformerBase::DecodeEvent(const WatchEvent& event) {
  std::optional<Decoded> typed = TypedEntry(event);
  if (typed.has_value()) return typed;
  StatusOr<Decoded> decoded = event.object != nullptr
                                  ? DecodeEntry(*event.object)
                                  : StatusOr<Decoded>(InternalError("an event without an object"));
  if (!decoded.ok()) {
    log::Warning("informer {}: skipping undecodable {} event: {}", type_.resource, event.type,
                 decoded.status().message());
    return std::nullopt;
  }
  return std::move(*decoded);
}

void InformerBase::ApplyDecoded(bool deleted, const Decoded& decoded) {
  ResetBackoff();
  MutexLock handlers_lock(handler_mu_);
  if (deleted) {
    Entry old = Remove(decoded.key);
    {
      MutexLock lock(mu_);
      resource_version_ = decoded.resource_version;
    }
    NotifyDelete(old != nullptr ? old : decoded.entry);
  } else {
    Entry old = Upsert(decoded.key, decoded.entry);
    {
      MutexLock lock(mu_);
      resource_version_ = decoded.resource_version;
    }
    if (old == nullptr) {
      NotifyAdd(decoded.entry);
    } else {
      NotifyUpdate(old, decoded.entry);
    }
  }
}

Status InformerBase::WatchOnce() {
  StatusOr<std::unique_ptr<WatchStream>> stream = OpenWatch();
  if (!stream.ok()) return stream.status();
  WatchStream* raw = stream->get();
  {
    MutexLock lock(mu_);
    if (stopping_.load()) return CancelledError("informer stopping");
    watch_ = std::move(*stream);
  }
  Status result;
  while (true) {
    StatusOr<std::optional<WatchEvent>> next = raw->Next();
    if (!next.ok()) {
      result = next.status();
      break;
    }
    if (!next->has_value()) break;  // the server ended the watch: resume
    result = ApplyEvent(**next);
    if (!result.ok()) break;
  }
  MutexLock lock(mu_);
  watch_.reset();
  return result;
}

Status InformerBase::ReopenManual() {
  if (manual_needs_list_) {
    DRAPLANE_RETURN_IF_ERROR(ListAndReplace());
    manual_needs_list_ = false;
    synced_.store(true);
  }
  StatusOr<std::unique_ptr<WatchStream>> stream = OpenWatch();
  if (!stream.ok()) {
    if (stream.status().code() == StatusCode::kExpired) manual_needs_list_ = true;
    return stream.status();
  }
  MutexLock lock(mu_);
  watch_ = std::move(*stream);
  manual_stream_ = watch_.get();
  return Status::Ok();
}

StatusOr<std::optional<uint64_t>> InformerBase::PeekManual() {
  if (manual_next_.has_value()) return std::optional<uint64_t>(manual_next_rv_);
  // A few re-opens in a row without an event mean the API keeps failing: report it.
  for (int reopened = 0; reopened < 3;) {
    WatchStream* stream = manual_stream_;
    if (Stopping()) return CancelledError("informer stopping");
    if (stream == nullptr) {
      ++reopened;
      Status s = ReopenManual();
      if (!s.ok()) {
        if (s.code() == StatusCode::kExpired) continue;  // relist on the next round
        return s;
      }
      continue;
    }
    StatusOr<std::optional<WatchEvent>> polled = stream->Poll();
    Status failure;
    if (!polled.ok()) {
      failure = polled.status();
    } else if (!polled->has_value()) {
      return std::optional<uint64_t>();
    } else if ((*polled)->type == "ERROR") {
      failure = StatusFromWatchError(*(*polled)->object);
    } else if ((*polled)->type == "BOOKMARK") {
      ApplyEvent(**polled).IgnoreError();  // only advances the resourceVersion
      continue;
    } else {
      // Decoded now, once: the resourceVersion orders it, DeliverManual applies it.
      std::optional<Decoded> decoded = DecodeEvent(**polled);
      if (!decoded.has_value()) continue;  // skipped, as a watching informer skips it
      uint64_t rv = 0;
      for (char c : decoded->resource_version) {
        if (c < '0' || c > '9') break;
        rv = rv * 10 + static_cast<uint64_t>(c - '0');
      }
      manual_next_deleted_ = (*polled)->type == "DELETED";
      manual_next_ = std::move(*decoded);
      manual_next_rv_ = rv;
      return std::optional<uint64_t>(rv);
    }
    // The stream ended or failed: resume from the last resourceVersion, relist on 410.
    if (failure.code() == StatusCode::kExpired) manual_needs_list_ = true;
    manual_stream_ = nullptr;
    MutexLock lock(mu_);
    watch_.reset();
  }
  return UnavailableError("informer " + std::string(type_.resource) +
                          ": the watch keeps ending without events");
}

void InformerBase::DeliverManual() {
  if (!manual_next_.has_value()) return;
  Decoded decoded = std::move(*manual_next_);
  manual_next_.reset();
  ApplyDecoded(manual_next_deleted_, decoded);
}

void InformerBase::Run() {
  bool need_list = true;
  while (!Stopping()) {
    if (need_list) {
      Status s = ListAndReplace();
      if (!s.ok()) {
        if (Stopping()) break;
        log::Warning("informer {}: list failed: {}", type_.resource, s.ToString());
        Backoff();
        continue;
      }
      need_list = false;
      ResetBackoff();
      if (!synced_.exchange(true)) {
        MutexLock lock(mu_);
        cv_.NotifyAll();
      }
    }
    Status s = WatchOnce();
    if (Stopping()) break;
    if (s.code() == StatusCode::kExpired) {
      log::Debug("informer {}: resourceVersion expired, relisting", type_.resource);
      need_list = true;
    } else if (!s.ok()) {
      log::Warning("informer {}: watch failed: {}", type_.resource, s.ToString());
      Backoff();
    }
  }
  MutexLock lock(mu_);
  cv_.NotifyAll();
}

void InformerBase::RunResync() {
  while (true) {
    {
      MutexLock lock(mu_);
      // Pacing only (see Backoff).
      cv_.WaitFor(lock, options_.resync_period,
                  [&]() DRAPLANE_REQUIRES(mu_) { return stopping_.load(); });
      if (stopping_.load()) return;
    }
    if (!synced_.load()) continue;
    MutexLock handlers_lock(handler_mu_);
    for (const Entry& entry : ListEntries()) NotifyUpdate(entry, entry);
  }
}

}  // namespace draplane::client
