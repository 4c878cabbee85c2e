// Typed helpers over an ApiClient: get / list / create / update / updateStatus / patch / delete
// for any generated kind `T` with a `ResourceOf<T>()` (resource.h), plus pod binding.
//
// Objects are encoded and decoded with the generated codecs (api/gen/*_codec.h), so fields the
// model does not know survive a read-modify-write cycle. Errors are those of ApiClient::Do; a
// response that does not decode as `T` is Internal.
//
// Usage:
//   StatusOr<api::resourcev1::ResourceClaim> claim = Get<ResourceClaim>(api, "ns", "name");
//   claim->status.reserved_for.push_back(...);
//   StatusOr<ResourceClaim> updated = UpdateStatus(api, *claim);  // Conflict if it changed
//
// Thread-safety: as the ApiClient.
#pragma once

#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_error.h"
#include "api/gen/coordination_v1_codec.h"
#include "api/gen/core_v1_codec.h"
#include "api/gen/draplane_v1alpha1_codec.h"
#include "api/gen/events_v1_codec.h"
#include "api/gen/resource_v1_codec.h"
#include "client/api_client.h"
#include "client/resource.h"
#include "client/typed_kind.h"
#include "common/status.h"

namespace draplane::client {

// Decodes `json` as a `T`. Internal with the first field errors when it does not decode.
template <typename T>
StatusOr<T> DecodeAs(const boost::json::value& json) {
  T out;
  api::FieldErrorList errors;
  Decode(json, &out, &errors);  // the generated codec, found by argument-dependent lookup
  if (!errors.empty()) return DecodeError<T>(errors);
  return out;
}

// DecodeAs into a new shared object (no moves of the decoded object: the informers' cache entry).
template <typename T>
StatusOr<std::shared_ptr<T>> DecodeShared(const boost::json::value& json,
                                          const api::DecodeOptions& options = {}) {
  auto out = std::make_shared<T>();
  api::FieldErrorList errors;
  Decode(json, out.get(), &errors, options);
  if (!errors.empty()) return DecodeError<T>(errors);
  return out;
}

// Encodes `object` with its generated codec.
template <typename T>
boost::json::value ToJson(const T& object) {
  return Encode(object);
}

template <typename T>
struct ObjectList {
  std::vector<T> items;
  std::string resource_version;  // of the list
  std::string continue_token;    // non-empty when more pages follow
};

// Decodes a list response (any `*List` kind) into its items.
template <typename T>
StatusOr<ObjectList<T>> DecodeList(const boost::json::value& json) {
  ObjectList<T> out;
  if (!json.is_object()) return InternalError("list response is not an object");
  const boost::json::object& object = json.as_object();
  if (const boost::json::value* meta = object.if_contains("metadata");
      meta != nullptr && meta->is_object()) {
    if (const boost::json::value* rv = meta->as_object().if_contains("resourceVersion");
        rv != nullptr && rv->is_string()) {
      out.resource_version = std::string(rv->as_string());
    }
    if (const boost::json::value* token = meta->as_object().if_contains("continue");
        token != nullptr && token->is_string()) {
      out.continue_token = std::string(token->as_string());
    }
  }
  if (const boost::json::value* items = object.if_contains("items");
      items != nullptr && items->is_array()) {
    out.items.reserve(items->as_array().size());
    for (const boost::json::value& item : items->as_array()) {
      StatusOr<T> decoded = DecodeAs<T>(item);
      if (!decoded.ok()) return decoded.status();
      out.items.push_back(std::move(*decoded));
    }
  }
  return out;
}

// Sends `request` (given away: ApiClient::DoShared) and decodes the object it answers with.
template <typename T>
StatusOr<T> DoAndDecode(ApiClient& api, ApiRequest&& request) {
  StatusOr<std::shared_ptr<const boost::json::value>> json = api.DoShared(std::move(request));
  if (!json.ok()) return json.status();
  if (*json == nullptr) return InternalError("the API answered without an object");
  return DecodeAs<T>(**json);
}

// Sends `request` for a caller that reads only whether it succeeded: no object is answered.
inline Status DoWithoutAnswer(ApiClient& api, ApiRequest&& request) {
  request.discard_response = true;
  return api.DoShared(std::move(request)).status();
}

template <typename T>
StatusOr<T> Get(ApiClient& api, std::string_view namespace_, std::string_view name) {
  ApiRequest request;
  request.verb = Verb::kGet;
  request.resource = &ResourceOf<T>();
  request.namespace_ = std::string(namespace_);
  request.name = std::string(name);
  return DoAndDecode<T>(api, std::move(request));
}

// One page (or everything, when options.limit is 0) of the collection; `namespace_` empty lists
// every namespace.
template <typename T>
StatusOr<ObjectList<T>> List(ApiClient& api, std::string_view namespace_,
                             const ListOptions& options = {}) {
  ApiRequest request;
  request.verb = Verb::kList;
  request.resource = &ResourceOf<T>();
  request.namespace_ = std::string(namespace_);
  request.list = options;
  StatusOr<std::shared_ptr<const boost::json::value>> json = api.DoShared(std::move(request));
  if (!json.ok()) return json.status();
  if (*json == nullptr) return InternalError("the API answered without a list");
  return DecodeList<T>(**json);
}

template <typename T>
ApiRequest CreateRequest(const T& object, std::string_view field_manager) {
  ApiRequest request;
  request.verb = Verb::kCreate;
  request.resource = &ResourceOf<T>();
  request.namespace_ = object.metadata.namespace_;
  request.field_manager = std::string(field_manager);
  request.body = ToJson(object);
  return request;
}

namespace internal {

// Sends the create or update `request` with `object` as its body (ApiClient::DoTyped: the
// in-memory API keeps it typed, others encode it) and answers the stored object, or nothing for
// `discard_response`. `T` is named by the caller, so `object` is an rvalue reference: the helpers
// below hand the object on to the one move into its shared copy without moving it again at each
// step (a ResourceClaim's move is some 500 instructions); the request they take over, as the
// ApiClient does.
template <typename T>
StatusOr<std::shared_ptr<const T>> WriteMoved(ApiClient& api, ApiRequest&& request, T&& object) {
  StatusOr<std::shared_ptr<const void>> answer =
      api.DoTyped(std::move(request), std::make_shared<T>(std::move(object)), TypedKindOf<T>());
  if (!answer.ok()) return answer.status();
  return std::static_pointer_cast<const T>(std::move(*answer));
}

// WriteMoved for a caller that reads the stored object without changing it: the API's own
// version, shared (no copy).
template <typename T>
StatusOr<std::shared_ptr<const T>> ShareMoved(ApiClient& api, ApiRequest&& request, T&& object) {
  StatusOr<std::shared_ptr<const T>> answer =
      WriteMoved<T>(api, std::move(request), std::move(object));
  if (!answer.ok()) return answer.status();
  if (*answer == nullptr) return InternalError("the API answered without an object");
  return answer;
}

// WriteMoved for a caller that takes the stored object as its own (a copy).
template <typename T>
StatusOr<T> AnswerMoved(ApiClient& api, ApiRequest&& request, T&& object) {
  StatusOr<std::shared_ptr<const T>> answer =
      ShareMoved<T>(api, std::move(request), std::move(object));
  if (!answer.ok()) return answer.status();
  return **answer;
}

// WriteMoved for a caller that reads only whether the write succeeded.
template <typename T>
Status WriteOnlyMoved(ApiClient& api, ApiRequest&& request, T&& object) {
  request.discard_response = true;
  return WriteMoved<T>(api, std::move(request), std::move(object)).status();
}

}  // namespace internal

// The helpers below take the object by value: a caller that gives it away (std::move) spares a
// copy of it.

// Sends the create or update `request` with `object` as its body and answers the stored object,
// or nothing for `discard_response` (internal::WriteMoved).
template <typename T>
StatusOr<std::shared_ptr<const T>> WriteTyped(ApiClient& api, ApiRequest&& request, T object) {
  return internal::WriteMoved<T>(api, std::move(request), std::move(object));
}

// WriteTyped for a caller that reads the stored object without changing it: the API's own
// version, shared (no copy).
template <typename T>
StatusOr<std::shared_ptr<const T>> WriteAndShare(ApiClient& api, ApiRequest&& request, T object) {
  return internal::ShareMoved<T>(api, std::move(request), std::move(object));
}

template <typename T>
StatusOr<T> Create(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kCreate, object, "", field_manager);
  return internal::AnswerMoved<T>(api, std::move(request), std::move(object));
}

// Create answering the stored object shared (WriteAndShare): for a caller that only reads it.
template <typename T>
StatusOr<std::shared_ptr<const T>> CreateShared(ApiClient& api, T object,
                                                std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kCreate, object, "", field_manager);
  return internal::ShareMoved<T>(api, std::move(request), std::move(object));
}

// Create for a caller that needs only success or failure: the stored object is not parsed.
template <typename T>
Status CreateOnly(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kCreate, object, "", field_manager);
  return internal::WriteOnlyMoved<T>(api, std::move(request), std::move(object));
}

// A create or update of `object` without its body (WriteTyped hands the object itself over).
template <typename T>
ApiRequest TypedRequest(Verb verb, const T& object, std::string_view subresource,
                        std::string_view field_manager) {
  ApiRequest request;
  request.verb = verb;
  request.resource = &ResourceOf<T>();
  request.namespace_ = object.metadata.namespace_;
  if (verb != Verb::kCreate) request.name = object.metadata.name;
  request.subresource = std::string(subresource);
  request.field_manager = std::string(field_manager);
  return request;
}

template <typename T>
ApiRequest UpdateRequest(const T& object, std::string_view subresource,
                         std::string_view field_manager) {
  ApiRequest request;
  request.verb = Verb::kUpdate;
  request.resource = &ResourceOf<T>();
  request.namespace_ = object.metadata.namespace_;
  request.name = object.metadata.name;
  request.subresource = std::string(subresource);
  request.field_manager = std::string(field_manager);
  request.body = ToJson(object);
  return request;
}

// Replaces the object (its `metadata.resourceVersion` must be current: Conflict otherwise).
template <typename T>
StatusOr<T> Update(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kUpdate, object, "", field_manager);
  return internal::AnswerMoved<T>(api, std::move(request), std::move(object));
}

// Update for a caller that needs only success or failure: the stored object is not parsed.
template <typename T>
Status UpdateOnly(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kUpdate, object, "", field_manager);
  return internal::WriteOnlyMoved<T>(api, std::move(request), std::move(object));
}

// Replaces the object's status through the `status` subresource.
template <typename T>
StatusOr<T> UpdateStatus(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kUpdate, object, "status", field_manager);
  return internal::AnswerMoved<T>(api, std::move(request), std::move(object));
}

// UpdateStatus answering the stored object shared (WriteAndShare).
template <typename T>
StatusOr<std::shared_ptr<const T>> UpdateStatusShared(ApiClient& api, T object,
                                                      std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kUpdate, object, "status", field_manager);
  return internal::ShareMoved<T>(api, std::move(request), std::move(object));
}

// UpdateStatus for a caller that needs only success or failure.
template <typename T>
Status UpdateStatusOnly(ApiClient& api, T object, std::string_view field_manager = "") {
  ApiRequest request = TypedRequest(Verb::kUpdate, object, "status", field_manager);
  return internal::WriteOnlyMoved<T>(api, std::move(request), std::move(object));
}

template <typename T>
ApiRequest PatchRequest(std::string_view namespace_, std::string_view name, PatchType type,
                        boost::json::value patch, std::string_view subresource,
                        std::string_view field_manager) {
  ApiRequest request;
  request.verb = Verb::kPatch;
  request.resource = &ResourceOf<T>();
  request.namespace_ = std::string(namespace_);
  request.name = std::string(name);
  request.subresource = std::string(subresource);
  request.patch_type = type;
  request.field_manager = std::string(field_manager);
  request.body = std::move(patch);
  return request;
}

template <typename T>
StatusOr<T> Patch(ApiClient& api, std::string_view namespace_, std::string_view name,
                  PatchType type, boost::json::value patch, std::string_view subresource = "",
                  std::string_view field_manager = "") {
  return DoAndDecode<T>(
      api, PatchRequest<T>(namespace_, name, type, std::move(patch), subresource, field_manager));
}

// Patch for a caller that needs only success or failure: the patched object is not parsed.
template <typename T>
Status PatchOnly(ApiClient& api, std::string_view namespace_, std::string_view name, PatchType type,
                 boost::json::value patch, std::string_view subresource = "",
                 std::string_view field_manager = "") {
  return DoWithoutAnswer(
      api, PatchRequest<T>(namespace_, name, type, std::move(patch), subresource, field_manager));
}

template <typename T>
Status Delete(ApiClient& api, std::string_view namespace_, std::string_view name,
              const DeleteOptions& options = {}) {
  ApiRequest request;
  request.verb = Verb::kDelete;
  request.resource = &ResourceOf<T>();
  request.namespace_ = std::string(namespace_);
  request.name = std::string(name);
  request.delete_options = options;
  return DoWithoutAnswer(api, std::move(request));  // the deleted object is not returned
}

// Binds a pod to a node (POST pods/<name>/binding). `uid` (optional) guards against binding a
// pod that was replaced. Conflict when the pod is already bound.
Status BindPod(ApiClient& api, std::string_view namespace_, std::string_view name,
               std::string_view uid, std::string_view node);

}  // namespace draplane::client
