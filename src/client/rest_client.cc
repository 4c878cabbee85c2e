#include "client/rest_client.h"

#include <boost/json.hpp>
#include <vector>

#include "client/http_transport.h"

namespace draplane::client {
namespace {

std::string ContentTypeOf(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
  }
  return "application/merge-patch+json";
}

void AddParam(std::string* query, std::string_view key, std::string_view value) {
  query->push_back(query->empty() ? '?' : '&');
  query->append(key);
  query->push_back('=');
  query->append(EscapeQueryValue(value));
}

std::string ListQuery(const ListOptions& options, bool watch) {
  std::string query;
  if (watch) AddParam(&query, "watch", "true");
  if (!options.label_selector.empty()) AddParam(&query, "labelSelector", options.label_selector);
  if (!options.field_selector.empty()) AddParam(&query, "fieldSelector", options.field_selector);
  if (!options.resource_version.empty()) {
    AddParam(&query, "resourceVersion", options.resource_version);
  }
  if (!watch && options.limit > 0) AddParam(&query, "limit", std::to_string(options.limit));
  if (!watch && !options.continue_token.empty()) {
    AddParam(&query, "continue", options.continue_token);
  }
  if (watch && options.allow_watch_bookmarks) AddParam(&query, "allowWatchBookmarks", "true");
  if (watch && options.timeout_seconds > 0) {
    AddParam(&query, "timeoutSeconds", std::to_string(options.timeout_seconds));
  }
  return query;
}

boost::json::value DeleteBody(const DeleteOptions& options) {
  boost::json::object body;
  body["kind"] = "DeleteOptions";
  body["apiVersion"] = "v1";
  if (options.grace_period_seconds) body["gracePeriodSeconds"] = *options.grace_period_seconds;
  if (!options.precondition_uid.empty() || !options.precondition_resource_version.empty()) {
    boost::json::object pre;
    if (!options.precondition_uid.empty()) pre["uid"] = options.precondition_uid;
    if (!options.precondition_resource_version.empty()) {
      pre["resourceVersion"] = options.precondition_resource_version;
    }
    body["preconditions"] = std::move(pre);
  }
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  return body;
}

bool HasDeleteOptions(const DeleteOptions& options) {
  return options.grace_period_seconds.has_value() || !options.precondition_uid.empty() ||
         !options.precondition_resource_version.empty() || !options.propagation_policy.empty();
}

StatusOr<boost::json::value> ParseBody(const HttpResponse& response, const std::string& what) {
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(response.body, ec);
  if (ec) {
    return InternalError(what + ": undecodable response (HTTP " + std::to_string(response.status) +
                         "): " + ec.message());
  }
  return value;
}

class RestWatchStream final : public WatchStream {
 public:
  explicit RestWatchStream(std::unique_ptr<StreamingResponse> stream)
      : stream_(std::move(stream)) {}

  StatusOr<std::optional<WatchEvent>> Next() override {
    while (true) {
      // Decode what is buffered: one complete value at a time.
      while (offset_ < pending_.size()) {
        if (!started_) {
          // Each event's DOM lives in an arena of its own, released in one piece with the
          // event: informers decode the DOM into a typed object and drop it, and freeing it
          // node by node cost more than the parse.
          parser_.reset(
              boost::json::make_shared_resource<boost::json::monotonic_resource>(kEventArenaBytes));
          started_ = true;
        }
        boost::system::error_code ec;
        size_t used = parser_.write_some(pending_.data() + offset_, pending_.size() - offset_, ec);
        if (ec) return InvalidArgumentError("undecodable watch event: " + ec.message());
        offset_ += used;
        if (parser_.done()) {
          started_ = false;
          return ToEvent(parser_.release());
        }
      }
      pending_.clear();
      offset_ = 0;
      StatusOr<bool> more = stream_->Read(&pending_);
      if (!more.ok()) return more.status();
      if (!*more && pending_.empty()) return std::optional<WatchEvent>();
    }
  }

  StatusOr<std::optional<WatchEvent>> Poll() override {
    return UnimplementedError("a REST watch stream cannot be polled without blocking");
  }

  void Cancel() override { stream_->Cancel(); }

 private:
  static StatusOr<std::optional<WatchEvent>> ToEvent(boost::json::value value) {
    if (!value.is_object()) return InvalidArgumentError("watch event is not an object");
    boost::json::object& object = value.as_object();
    const boost::json::value* type = object.if_contains("type");
    if (type == nullptr || !type->is_string()) {
      return InvalidArgumentError("watch event without a type");
    }
    boost::json::value* obj = object.if_contains("object");
    // Move-constructed, so that the object keeps the arena rather than being copied out of it.
    return std::optional<WatchEvent>(WatchEvent{
        .type = std::string(type->as_string()),
        .object = std::make_shared<const boost::json::value>(
            obj != nullptr ? boost::json::value(std::move(*obj)) : boost::json::value())});
  }

  // The first block of an event's arena: most objects' events fit (it grows when not).
  static constexpr size_t kEventArenaBytes = 8 * 1024;

  std::unique_ptr<StreamingResponse> stream_;
  boost::json::stream_parser parser_;
  bool started_ = false;  // parser_ holds part of a value
  std::string pending_;
  size_t offset_ = 0;
};

class RestClient final : public ApiClient {
 public:
  RestClient(std::shared_ptr<Transport> transport, RestClientOptions options)
      : transport_(std::move(transport)), options_(options) {}

  StatusOr<boost::json::value> Do(const ApiRequest& request) override {
    if (request.resource == nullptr) return InvalidArgumentError("request without a resource");
    const ResourceType& type = *request.resource;
    HttpRequest http;
    http.timeout = options_.request_timeout;
    switch (request.verb) {
      case Verb::kGet:
        http.method = "GET";
        http.target = type.ObjectPath(request.namespace_, request.name, request.subresource);
        break;
      case Verb::kList:
        http.method = "GET";
        http.target = type.CollectionPath(request.namespace_) + ListQuery(request.list, false);
        break;
      case Verb::kCreate:
        http.method = "POST";
        http.target = request.subresource.empty()
                          ? type.CollectionPath(request.namespace_)
                          : type.ObjectPath(request.namespace_, request.name, request.subresource);
        http.content_type = "application/json";
        http.body = boost::json::serialize(request.body);
        break;
      case Verb::kUpdate:
        http.method = "PUT";
        http.target = type.ObjectPath(request.namespace_, request.name, request.subresource);
        http.content_type = "application/json";
        http.body = boost::json::serialize(request.body);
        break;
      case Verb::kPatch:
        http.method = "PATCH";
        http.target = type.ObjectPath(request.namespace_, request.name, request.subresource);
        http.content_type = ContentTypeOf(request.patch_type);
        http.body = boost::json::serialize(request.body);
        break;
      case Verb::kDelete:
        http.method = "DELETE";
        http.target = type.ObjectPath(request.namespace_, request.name, request.subresource);
        if (HasDeleteOptions(request.delete_options)) {
          http.content_type = "application/json";
          http.body = boost::json::serialize(DeleteBody(request.delete_options));
        }
        break;
    }
    if (!request.field_manager.empty() && request.verb != Verb::kGet &&
        request.verb != Verb::kList) {
      http.target += (http.target.find('?') == std::string::npos ? "?" : "&");
      http.target += "fieldManager=" + EscapeQueryValue(request.field_manager);
    }
    StatusOr<HttpResponse> response = transport_->RoundTrip(http);
    if (!response.ok()) return response.status();
    if (response->status < 200 || response->status >= 300) {
      boost::system::error_code ec;
      boost::json::value body = boost::json::parse(response->body, ec);
      if (ec) body = boost::json::string(response->body);
      return StatusFromApiError(response->status, body);
    }
    if (request.discard_response) return boost::json::value();
    return ParseBody(*response, http.method + " " + http.target);
  }

  StatusOr<std::unique_ptr<WatchStream>> Watch(const ApiRequest& request) override {
    if (request.resource == nullptr) return InvalidArgumentError("request without a resource");
    HttpRequest http;
    http.method = "GET";
    http.target =
        request.resource->CollectionPath(request.namespace_) + ListQuery(request.list, true);
    http.timeout = options_.request_timeout;
    StatusOr<std::unique_ptr<StreamingResponse>> stream = transport_->Stream(http);
    if (!stream.ok()) return stream.status();
    int status = (*stream)->status();
    if (status < 200 || status >= 300) {
      std::string body;
      while (true) {
        StatusOr<bool> more = (*stream)->Read(&body);
        if (!more.ok() || !*more) break;
      }
      boost::system::error_code ec;
      boost::json::value value = boost::json::parse(body, ec);
      if (ec) value = boost::json::string(body);
      return StatusFromApiError(status, value);
    }
    return std::unique_ptr<WatchStream>(std::make_unique<RestWatchStream>(std::move(*stream)));
  }

 private:
  std::shared_ptr<Transport> transport_;
  RestClientOptions options_;
};

std::string StringAt(const boost::json::object& object, std::string_view key) {
  const boost::json::value* v = object.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace

StatusOr<std::shared_ptr<const boost::json::value>> ApiClient::DoShared(ApiRequest&& request) {
  StatusOr<boost::json::value> answer = Do(request);
  if (!answer.ok()) return answer.status();
  if (request.discard_response) return std::shared_ptr<const boost::json::value>();
  return std::make_shared<const boost::json::value>(std::move(*answer));
}

StatusOr<std::shared_ptr<const void>> ApiClient::DoTyped(ApiRequest&& request,
                                                         std::shared_ptr<void> object,
                                                         const TypedKind& kind) {
  request.body = kind.encode(object.get());
  object.reset();
  StatusOr<std::shared_ptr<const boost::json::value>> answer = DoShared(std::move(request));
  if (!answer.ok()) return answer.status();
  if (*answer == nullptr) return std::shared_ptr<const void>();
  StatusOr<std::shared_ptr<void>> decoded = kind.decode(**answer);
  if (!decoded.ok()) return decoded.status();
  return std::shared_ptr<const void>(std::move(*decoded));
}

Status StatusFromApiError(int http_code, const boost::json::value& body) {
  std::string message;
  std::string reason;
  std::vector<StatusCause> causes;
  if (body.is_object()) {
    const boost::json::object& object = body.as_object();
    message = StringAt(object, "message");
    reason = StringAt(object, "reason");
    if (const boost::json::value* code = object.if_contains("code");
        code != nullptr && code->is_int64() && http_code == 0) {
      http_code = static_cast<int>(code->as_int64());
    }
    if (const boost::json::value* details = object.if_contains("details");
        details != nullptr && details->is_object()) {
      if (const boost::json::value* list = details->as_object().if_contains("causes");
          list != nullptr && list->is_array()) {
        for (const boost::json::value& c : list->as_array()) {
          if (!c.is_object()) continue;
          causes.push_back(StatusCause{StringAt(c.as_object(), "reason"),
                                       StringAt(c.as_object(), "message"),
                                       StringAt(c.as_object(), "field")});
        }
      }
    }
  } else if (body.is_string()) {
    message = std::string(body.as_string());
  }
  if (message.empty()) message = "HTTP " + std::to_string(http_code);
  switch (http_code) {
    case 400:
    case 405:
    case 406:
    case 413:
    case 415:
      return Status(StatusCode::kInvalidArgument, message, std::move(causes));
    case 401:
    case 403:
      return Status(StatusCode::kFailedPrecondition, message, std::move(causes));
    case 404:
      return Status(StatusCode::kNotFound, message, std::move(causes));
    case 409:
      return Status(reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kConflict,
                    message, std::move(causes));
    case 410:
      return Status(StatusCode::kExpired, message, std::move(causes));
    case 422:
      return Status(StatusCode::kInvalidArgument, message, std::move(causes));
    case 429:
      return Status(StatusCode::kResourceExhausted, message, std::move(causes));
    case 503:
      return Status(StatusCode::kUnavailable, message, std::move(causes));
    case 504:
      return Status(StatusCode::kDeadlineExceeded, message, std::move(causes));
    default:
      return Status(StatusCode::kInternal, message, std::move(causes));
  }
}

Status StatusFromWatchError(const boost::json::value& object) {
  return StatusFromApiError(0, object);
}

std::unique_ptr<ApiClient> NewRestClient(std::shared_ptr<Transport> transport,
                                         const RestClientOptions& options) {
  return std::make_unique<RestClient>(std::move(transport), options);
}

StatusOr<std::unique_ptr<ApiClient>> CreateRestClient(const RestConfig& config,
                                                      const RestClientOptions& options) {
  StatusOr<std::unique_ptr<Transport>> transport = CreateHttpTransport(config);
  if (!transport.ok()) return transport.status();
  return NewRestClient(std::shared_ptr<Transport>(std::move(*transport)), options);
}

std::string EscapeQueryValue(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace draplane::client
