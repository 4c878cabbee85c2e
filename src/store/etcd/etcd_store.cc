#include "store/etcd/etcd_store.h"

#include <algorithm>
#include <boost/json.hpp>
#include <thread>

#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"
#include "store/etcd/etcd_client.h"
#include "store/internal/keys.h"
#include "store/internal/watch_hub.h"

namespace draplane::store {
namespace {

using boost::json::array;
using boost::json::object;
using internal::Base64Encode;

constexpr int64_t kDefaultWatchCacheEvents = 10'000;

// etcd's JSON gateway writes int64 fields as strings and omits zero values.
int64_t Int(const object& o, std::string_view field) {
  const boost::json::value* v = o.if_contains(field);
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->get_uint64());
  if (v->is_string()) {
    try {
      return std::stoll(std::string(v->get_string()));
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

bool Bool(const object& o, std::string_view field) {
  const boost::json::value* v = o.if_contains(field);
  return v != nullptr && v->is_bool() && v->get_bool();
}

const object* ObjectField(const object& o, std::string_view field) {
  const boost::json::value* v = o.if_contains(field);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

const array* ArrayField(const object& o, std::string_view field) {
  const boost::json::value* v = o.if_contains(field);
  return v != nullptr && v->is_array() ? &v->get_array() : nullptr;
}

StatusOr<std::string> Bytes(const object& o, std::string_view field) {
  const boost::json::value* v = o.if_contains(field);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return InternalError("etcd sent a non-string " + std::string(field));
  StatusOr<std::string> bytes = internal::Base64Decode(v->get_string());
  if (!bytes.ok()) return InternalError("etcd sent malformed base64 in " + std::string(field));
  return bytes;
}

Revision HeaderRevision(const object& response) {
  const object* header = ObjectField(response, "header");
  return header != nullptr ? Int(*header, "revision") : 0;
}

object Compare(const std::string& key, std::string_view target, std::string_view result,
               Revision value) {
  object compare;
  compare["key"] = Base64Encode(key);
  compare["target"] = target;
  compare["result"] = result;
  compare[target == "MOD" ? "mod_revision" : "create_revision"] = std::to_string(value);
  return compare;
}

object KeyRequest(const std::string& key) {
  object request;
  request["key"] = Base64Encode(key);
  return request;
}

// etcd backend. Algorithm (docs/design/store.md, "etcd"):
//   1. Writes are single transactions: Create compares create_revision == 0; Update and Delete
//      compare mod_revision with the precondition (or create_revision > 0 when unconditional)
//      and read the key on failure to tell NotFound from Conflict.
//   2. Reads are linearizable etcd ranges; a list pins its snapshot with `revision`.
//   3. One thread keeps an etcd watch on the whole prefix from the revision the store opened
//      at, converts its events and publishes them to the hub, resuming after the last event it
//      saw when the stream breaks. If etcd compacted past that point meanwhile, every watcher
//      ends with Expired (its clients re-list) and the hub restarts at the current revision.
class EtcdStore final : public Store {
 public:
  ~EtcdStore() override {
    {
      MutexLock lock(mu_);
      stopping_ = true;
      if (stream_ != nullptr) stream_->Close();
    }
    cv_.NotifyAll();
    if (watch_thread_.joinable()) watch_thread_.join();
  }

  static StatusOr<std::unique_ptr<Store>> Open(const std::string& endpoints,
                                               const StoreOptions& options) {
    const std::string& prefix = options.etcd.prefix;
    if (prefix.size() < 2 || prefix.front() != '/' || prefix.back() != '/') {
      return InvalidArgumentError("etcd prefix \"" + prefix + "\" must start and end with '/'");
    }
    DRAPLANE_ASSIGN_OR_RETURN(std::vector<internal::EtcdEndpoint> parsed,
                              internal::ParseEtcdEndpoints(endpoints));
    DRAPLANE_ASSIGN_OR_RETURN(std::unique_ptr<internal::EtcdClient> client,
                              internal::EtcdClient::Create(internal::EtcdClientOptions{
                                  .endpoints = std::move(parsed),
                                  .ca_file = options.etcd.ca_file,
                                  .cert_file = options.etcd.cert_file,
                                  .key_file = options.etcd.key_file,
                                  .request_timeout = options.etcd.request_timeout,
                              }));
    auto store = std::unique_ptr<EtcdStore>(new EtcdStore(std::move(client), options));
    DRAPLANE_RETURN_IF_ERROR(store->StartWatching());
    return std::unique_ptr<Store>(std::move(store));
  }

  std::string_view backend() const override { return "etcd"; }

  StatusOr<ObjectPtr> Get(const Key& key) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    DRAPLANE_ASSIGN_OR_RETURN(object response,
                              client_->Call("/v3/kv/range", KeyRequest(EtcdKey(key))));
    const array* kvs = ArrayField(response, "kvs");
    if (kvs == nullptr || kvs->empty()) return NotFoundError(KeyToString(key) + " not found");
    return ToObject(key, kvs->at(0).as_object(), 0);
  }

  StatusOr<ListResult> List(std::string_view resource, const ListOptions& options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    if (options.limit < 0) return InvalidArgumentError("list limit must not be negative");
    const std::string list_prefix = internal::ListPrefix(resource, options.ns);
    std::string start = list_prefix;
    Revision revision = options.revision;
    const bool continuing = !options.continue_token.empty();
    if (continuing) {
      DRAPLANE_ASSIGN_OR_RETURN(internal::ContinuePosition position,
                                internal::DecodeContinueToken(options.continue_token, list_prefix));
      revision = position.revision;
      start = std::move(position.start_key);
    }
    object request;
    request["key"] = Base64Encode(prefix_ + start);
    request["range_end"] = Base64Encode(prefix_ + internal::PrefixEnd(list_prefix));
    if (options.limit > 0) request["limit"] = std::to_string(options.limit);
    if (revision > 0) request["revision"] = std::to_string(revision);
    StatusOr<object> response = client_->Call("/v3/kv/range", request);
    if (!response.ok()) {
      if (response.status().code() == StatusCode::kExpired) {
        return ExpiredError(continuing
                                ? "the continue token's revision " + std::to_string(revision) +
                                      " has been compacted; restart the list without a "
                                      "continue token"
                                : "revision " + std::to_string(revision) + " has been compacted");
      }
      if (response.status().code() == StatusCode::kDeadlineExceeded) {
        return DeadlineExceededError("revision " + std::to_string(revision) +
                                     " is newer than the current revision");
      }
      return response.status();
    }
    ListResult result;
    result.revision = revision > 0 ? revision : HeaderRevision(*response);
    std::string last_key;  // the last key of the page, draplane's or not
    if (const array* kvs = ArrayField(*response, "kvs")) {
      result.objects.reserve(kvs->size());
      if (!kvs->empty()) {
        DRAPLANE_ASSIGN_OR_RETURN(last_key, Bytes(kvs->back().as_object(), "key"));
      }
      for (const boost::json::value& kv : *kvs) {
        StatusOr<ObjectPtr> item = ToObject(kv.as_object(), 0);
        if (item.ok()) {
          result.objects.push_back(std::move(*item));
        } else if (item.status().code() == StatusCode::kInvalidArgument) {
          log::Warning("etcd store: ignoring a foreign key: {}", item.status().ToString());
        } else {
          return item.status();
        }
      }
    }
    if (Bool(*response, "more") && last_key.size() > prefix_.size()) {
      result.continue_token =
          internal::EncodeContinueToken(result.revision, last_key.substr(prefix_.size()) + '\0');
    }
    return result;
  }

  StatusOr<ObjectPtr> Create(const Key& key, std::string value) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    const std::string etcd_key = EtcdKey(key);
    object put = KeyRequest(etcd_key);
    put["value"] = Base64Encode(value);
    object txn;
    txn["compare"] = array{Compare(etcd_key, "CREATE", "EQUAL", 0)};
    txn["success"] = array{object{{"request_put", std::move(put)}}};
    DRAPLANE_ASSIGN_OR_RETURN(object response, client_->Call("/v3/kv/txn", txn));
    if (!Bool(response, "succeeded"))
      return AlreadyExistsError(KeyToString(key) + " already exists");
    const Revision revision = HeaderRevision(response);
    return std::make_shared<Object>(Object{key, std::move(value), revision, revision});
  }

  StatusOr<ObjectPtr> Update(const Key& key, std::string value,
                             const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    const std::string etcd_key = EtcdKey(key);
    object put = KeyRequest(etcd_key);
    put["value"] = Base64Encode(value);
    put["prev_kv"] = true;
    DRAPLANE_ASSIGN_OR_RETURN(
        object response,
        Conditional(key, etcd_key, preconditions, object{{"request_put", std::move(put)}}));
    const object* put_response = Response(response, "response_put");
    const object* prev = put_response != nullptr ? ObjectField(*put_response, "prev_kv") : nullptr;
    if (prev == nullptr)
      return InternalError("etcd put of " + KeyToString(key) + " has no prev_kv");
    const Revision revision = HeaderRevision(response);
    return std::make_shared<Object>(
        Object{key, std::move(value), revision, Int(*prev, "create_revision")});
  }

  StatusOr<ObjectPtr> Delete(const Key& key, const Preconditions& preconditions) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateKey(key));
    const std::string etcd_key = EtcdKey(key);
    object remove = KeyRequest(etcd_key);
    remove["prev_kv"] = true;
    DRAPLANE_ASSIGN_OR_RETURN(object response,
                              Conditional(key, etcd_key, preconditions,
                                          object{{"request_delete_range", std::move(remove)}}));
    const object* delete_response = Response(response, "response_delete_range");
    const array* prev =
        delete_response != nullptr ? ArrayField(*delete_response, "prev_kvs") : nullptr;
    if (prev == nullptr || prev->empty()) {
      return InternalError("etcd delete of " + KeyToString(key) + " has no prev_kvs");
    }
    return ToObject(key, prev->at(0).as_object(), HeaderRevision(response));
  }

  StatusOr<std::unique_ptr<Watcher>> Watch(std::string_view resource,
                                           WatchOptions options) override {
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateResource(resource));
    DRAPLANE_RETURN_IF_ERROR(internal::ValidateNamespace(options.ns));
    if (options.revision == 0) {
      // "From now" is etcd's revision now, which the local hub may not have reached yet.
      DRAPLANE_ASSIGN_OR_RETURN(options.revision, CurrentRevision());
    }
    return hub_.Subscribe(resource, options, nullptr);
  }

  StatusOr<Revision> CurrentRevision() override {
    object request = KeyRequest(prefix_);
    request["count_only"] = true;
    DRAPLANE_ASSIGN_OR_RETURN(object response, client_->Call("/v3/kv/range", request));
    return HeaderRevision(response);
  }

  Status Compact(Revision revision) override {
    object request;
    request["revision"] = std::to_string(revision);
    StatusOr<object> response = client_->Call("/v3/kv/compaction", request);
    if (!response.ok()) {
      if (response.status().code() == StatusCode::kDeadlineExceeded) {
        return InvalidArgumentError("cannot compact to revision " + std::to_string(revision) +
                                    ": it is in the future");
      }
      if (response.status().code() != StatusCode::kExpired) return response.status();
      // Already compacted at or beyond `revision`: nothing to do.
    }
    hub_.Compact(revision);
    return Status::Ok();
  }

 private:
  EtcdStore(std::unique_ptr<internal::EtcdClient> client, const StoreOptions& options)
      : client_(std::move(client)),
        prefix_(options.etcd.prefix),
        cache_events_(options.retained_revisions > 0 ? options.retained_revisions
                                                     : kDefaultWatchCacheEvents),
        hub_(internal::WatchHubOptions{.backend = "etcd",
                                       .ring_limit = static_cast<size_t>(cache_events_),
                                       // As SQLite's ring: resumes past it get 410 and relist.
                                       .ring_byte_limit = 64 * 1024 * 1024,
                                       .default_queue_limit = options.watch_queue_limit,
                                       .start_revision = 0}) {}

  std::string EtcdKey(const Key& key) const { return prefix_ + internal::EncodeKey(key); }

  // A transaction that applies `operation` when the key exists and matches `preconditions`,
  // else reads it to report NotFound or Conflict.
  StatusOr<object> Conditional(const Key& key, const std::string& etcd_key,
                               const Preconditions& preconditions, object operation) {
    object txn;
    txn["compare"] = array{preconditions.revision != 0
                               ? Compare(etcd_key, "MOD", "EQUAL", preconditions.revision)
                               : Compare(etcd_key, "CREATE", "GREATER", 0)};
    txn["success"] = array{std::move(operation)};
    txn["failure"] = array{object{{"request_range", KeyRequest(etcd_key)}}};
    DRAPLANE_ASSIGN_OR_RETURN(object response, client_->Call("/v3/kv/txn", txn));
    if (Bool(response, "succeeded")) return response;
    const object* range = Response(response, "response_range");
    const array* kvs = range != nullptr ? ArrayField(*range, "kvs") : nullptr;
    if (kvs == nullptr || kvs->empty()) return NotFoundError(KeyToString(key) + " not found");
    return ConflictError("precondition failed for " + KeyToString(key) + ": expected revision " +
                         std::to_string(preconditions.revision) + ", stored revision is " +
                         std::to_string(Int(kvs->at(0).as_object(), "mod_revision")));
  }

  // responses[0].<field> of a transaction.
  static const object* Response(const object& txn, std::string_view field) {
    const array* responses = ArrayField(txn, "responses");
    if (responses == nullptr || responses->empty() || !responses->at(0).is_object()) {
      return nullptr;
    }
    return ObjectField(responses->at(0).get_object(), field);
  }

  // Converts an etcd KeyValue; `revision` overrides its mod_revision when not 0.
  StatusOr<ObjectPtr> ToObject(const Key& key, const object& kv, Revision revision) const {
    DRAPLANE_ASSIGN_OR_RETURN(std::string value, Bytes(kv, "value"));
    return std::make_shared<Object>(Object{key, std::move(value),
                                           revision != 0 ? revision : Int(kv, "mod_revision"),
                                           Int(kv, "create_revision")});
  }

  StatusOr<ObjectPtr> ToObject(const object& kv, Revision revision) const {
    DRAPLANE_ASSIGN_OR_RETURN(Key key, KeyOf(kv));
    return ToObject(key, kv, revision);
  }

  StatusOr<Key> KeyOf(const object& kv) const {
    DRAPLANE_ASSIGN_OR_RETURN(std::string etcd_key, Bytes(kv, "key"));
    if (!std::string_view(etcd_key).starts_with(prefix_)) {
      return InvalidArgumentError("etcd key \"" + etcd_key + "\" is outside " + prefix_);
    }
    // InvalidArgument when the key is not one draplane wrote.
    return internal::DecodeKey(std::string_view(etcd_key).substr(prefix_.size()));
  }

  // ---- the prefix watch ------------------------------------------------------------------------

  using Stream = std::unique_ptr<internal::EtcdClient::WatchStream>;

  // Opens the prefix watch from `start_revision` (0: from etcd's current revision).
  StatusOr<Stream> OpenPrefixWatch(Revision start_revision) {
    object create;
    create["key"] = Base64Encode(prefix_);
    create["range_end"] = Base64Encode(internal::PrefixEnd(prefix_));
    if (start_revision > 0) create["start_revision"] = std::to_string(start_revision);
    create["prev_kv"] = true;
    create["progress_notify"] = true;
    return client_->OpenStream("/v3/watch", object{{"create_request", std::move(create)}});
  }

  // Opens the prefix watch from "now" and starts the history there. A watch created without a
  // start revision is in sync with etcd at once, so a compaction right after opening cannot
  // cancel it; its "created" response names the revision it starts after.
  Status StartWatching() {
    DRAPLANE_ASSIGN_OR_RETURN(Stream stream, OpenPrefixWatch(0));
    Revision start = 0;
    Status status = stream->Run([&](const object& message) {
      const object* result = ObjectField(message, "result");
      if (result != nullptr && Bool(*result, "created")) start = HeaderRevision(*result);
      return false;
    });
    if (!status.ok()) return status;
    if (start == 0) return UnavailableError("etcd did not confirm the store's watch");
    hub_.AdvanceTo(start);
    hub_.Compact(start);
    watch_thread_ = std::thread([this, start, first = std::move(stream)]() mutable {
      WatchLoop(std::move(first), start + 1);
    });
    return Status::Ok();
  }

  void WatchLoop(Stream first, Revision next) {
    Duration backoff = std::chrono::milliseconds(50);
    while (true) {
      {
        MutexLock lock(mu_);
        if (stopping_) return;
      }
      StatusOr<Stream> stream =
          first != nullptr ? StatusOr<Stream>(std::move(first)) : OpenPrefixWatch(next);
      first = nullptr;
      if (stream.ok()) {
        MutexLock lock(mu_);
        if (stopping_) return;
        stream_ = stream->get();
      }
      Status status =
          stream.ok()
              ? (*stream)->Run([&](const object& message) { return HandleMessage(message, &next); })
              : stream.status();
      MutexLock lock(mu_);
      stream_ = nullptr;
      if (stopping_) return;
      if (status.ok()) {
        backoff = std::chrono::milliseconds(50);
        continue;  // The handler asked to reconnect (compaction or cancel).
      }
      log::Warning("etcd store: watch stream lost ({}); resuming from revision {}",
                   status.ToString(), next);
      cv_.WaitFor(lock, backoff, [this]() DRAPLANE_REQUIRES(mu_) { return stopping_; });
      backoff = std::min<Duration>(backoff * 2, std::chrono::seconds(2));
    }
  }

  // Handles one watch response; false ends the stream so the loop reconnects from `*next`.
  bool HandleMessage(const object& message, Revision* next) {
    const object* result = ObjectField(message, "result");
    if (result == nullptr) {
      log::Warning("etcd store: watch stream error: {}", boost::json::serialize(message));
      return false;
    }
    if (Bool(*result, "canceled")) {
      const Revision compacted = Int(*result, "compact_revision");
      if (compacted > 0) {
        // Events from *next on are gone: every watcher must re-list.
        StatusOr<Revision> current = CurrentRevision();
        const Revision restart = current.ok() ? *current : compacted;
        internal::RunNotifies(hub_.TerminateAll(
            ExpiredError("the store's etcd watch fell behind a compaction at revision " +
                         std::to_string(compacted) + "; re-list"),
            restart));
        *next = restart + 1;
      }
      return false;
    }
    const array* events = ArrayField(*result, "events");
    if (events == nullptr || events->empty()) {
      if (!Bool(*result, "created")) {
        // A progress notification: every event up to this revision has been sent.
        const Revision revision = HeaderRevision(*result);
        hub_.AdvanceTo(revision);
        *next = std::max(*next, revision + 1);
      }
      return true;
    }
    std::vector<WatchEvent> converted;
    converted.reserve(events->size());
    for (const boost::json::value& value : *events) {
      const Revision revision =
          value.is_object() && ObjectField(value.get_object(), "kv") != nullptr
              ? Int(*ObjectField(value.get_object(), "kv"), "mod_revision")
              : 0;
      StatusOr<WatchEvent> event = ToEvent(value.as_object());
      if (event.ok()) {
        converted.push_back(std::move(*event));
      } else if (event.status().code() == StatusCode::kInvalidArgument) {
        // Not a draplane object (another client wrote under the prefix): not ours to deliver.
        log::Warning("etcd store: ignoring a foreign key: {}", event.status().ToString());
      } else {
        // An event the watchers need but cannot be given: they must re-list rather than miss it.
        internal::RunNotifies(hub_.Publish(converted));
        converted.clear();
        internal::RunNotifies(
            hub_.TerminateAll(ExpiredError("a watch event could not be delivered (" +
                                           std::string(event.status().message()) + "); re-list"),
                              revision));
      }
      *next = std::max(*next, revision + 1);
    }
    internal::RunNotifies(hub_.Publish(converted));
    return true;
  }

  StatusOr<WatchEvent> ToEvent(const object& event) const {
    const object* kv = ObjectField(event, "kv");
    if (kv == nullptr) return InternalError("watch event without kv");
    const object* prev_kv = ObjectField(event, "prev_kv");
    DRAPLANE_ASSIGN_OR_RETURN(Key key, KeyOf(*kv));
    WatchEvent out;
    out.revision = Int(*kv, "mod_revision");
    if (prev_kv != nullptr) {
      DRAPLANE_ASSIGN_OR_RETURN(out.prev_object, ToObject(key, *prev_kv, 0));
    }
    const boost::json::value* type = event.if_contains("type");
    if (type != nullptr && type->is_string() && type->get_string() == "DELETE") {
      out.type = WatchEvent::Type::kDeleted;
      if (out.prev_object == nullptr) {
        return InternalError("DELETE event for " + KeyToString(key) + " without prev_kv");
      }
      out.object = std::make_shared<Object>(
          Object{key, out.prev_object->value, out.revision, out.prev_object->create_revision});
      return out;
    }
    const Revision create_revision = Int(*kv, "create_revision");
    out.type =
        create_revision == out.revision ? WatchEvent::Type::kAdded : WatchEvent::Type::kModified;
    if (out.type == WatchEvent::Type::kAdded) out.prev_object = nullptr;
    DRAPLANE_ASSIGN_OR_RETURN(out.object, ToObject(key, *kv, 0));
    return out;
  }

  std::unique_ptr<internal::EtcdClient> client_;
  const std::string prefix_;
  const int64_t cache_events_;
  internal::WatchHub hub_;

  Mutex mu_;
  CondVar cv_;
  bool stopping_ DRAPLANE_GUARDED_BY(mu_) = false;
  internal::EtcdClient::WatchStream* stream_ DRAPLANE_GUARDED_BY(mu_) = nullptr;
  std::thread watch_thread_;
};

}  // namespace

StatusOr<std::unique_ptr<Store>> OpenEtcdStore(const std::string& endpoints,
                                               const StoreOptions& options) {
  return EtcdStore::Open(endpoints, options);
}

}  // namespace draplane::store
