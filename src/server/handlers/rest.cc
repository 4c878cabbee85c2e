#include "server/handlers/rest.h"

#include <algorithm>
#include <charconv>

#include "api/codec/json.h"
#include "api/codec/yaml.h"
#include "api/deletion.h"
#include "api/labels/field_selector.h"
#include "api/meta/omit_empty.h"
#include "api/meta/resource_version.h"
#include "api/patch/patch.h"
#include "api/pods.h"
#include "common/log.h"
#include "common/saturating.h"
#include "common/status_macros.h"
#include "server/fieldmanager/field_manager.h"
#include "server/handlers/output.h"
#include "server/handlers/protobuf.h"
#include "server/handlers/strategies_internal.h"
#include "server/handlers/strategy.h"
#include "server/openapi/openapi.h"
#include "server/quota/admission.h"
#include "store/object_meta.h"

namespace draplane::server::handlers {
namespace {

// Internal escape of an ApiError through the store's update function.
constexpr std::string_view kAbortMarker = "draplane:abort-update";

http::Response Answer(int status, std::string body, std::string content_type) {
  http::Response r;
  r.status = status;
  r.headers.push_back({"Content-Type", std::move(content_type)});
  r.headers.push_back({"Cache-Control", "no-cache, private"});
  r.body = std::move(body);
  return r;
}

store::Key KeyOf(const ResourceInfo& resource, const std::string& ns, const std::string& name) {
  return store::Key{resource.StoreResource(), resource.namespaced ? ns : "", name};
}

ErrorContext Context(const ResourceInfo& resource, std::string name) {
  return ErrorContext{resource.Gr(), std::move(name), resource.GroupKind()};
}

std::string ContentTypeOf(const http::Request& request) {
  const std::string raw(request.header("Content-Type"));
  std::string type = raw;
  size_t semi = type.find(';');
  if (semi != std::string::npos) type = type.substr(0, semi);
  while (!type.empty() && type.back() == ' ') type.pop_back();
  while (!type.empty() && type.front() == ' ') type.erase(type.begin());
  std::transform(type.begin(), type.end(), type.begin(), ::tolower);
  // A header that names no media type (";;;==/") is not one absent: upstream's
  // mime.ParseMediaType refuses it, 415, where an absent header means JSON.
  if (!raw.empty() && type.find('/') == std::string::npos) return raw;
  return type;
}

// dryRun: only "All" is valid (upstream ValidateCreateOptions / ValidateUpdateOptions /
// ValidatePatchOptions / ValidateDeleteOptions, each naming its options kind).
std::variant<bool, ApiError> DryRun(const Scope& scope) {
  bool dry = false;
  for (const auto& [k, v] : scope.query) {
    if (k != "dryRun") continue;
    if (v != "All") {
      api::FieldErrorList errors = {
          api::NotSupported(api::FieldPath("dryRun"), api::RenderValue(v), {"All"})};
      const std::string& verb = scope.info->verb;
      const char* options = verb == "update"   ? "UpdateOptions.meta.k8s.io"
                            : verb == "patch"  ? "PatchOptions.meta.k8s.io"
                            : verb == "create" ? "CreateOptions.meta.k8s.io"
                                               : "DeleteOptions.meta.k8s.io";
      return NewInvalid(options, "", errors);
    }
    dry = true;
  }
  return dry;
}

// Checks the apiVersion and kind of a request body against the endpoint; fills them when
// absent (as the decoder defaults them from the endpoint).
std::optional<ApiError> CheckTypeMeta(JsonObject& obj, const ResourceInfo& resource,
                                      std::string_view expected_kind) {
  std::string expected_version = resource.ApiVersion();
  std::string_view version = GetString(obj, "apiVersion");
  std::string_view kind = GetString(obj, "kind");
  if (obj.contains("apiVersion") && !obj.at("apiVersion").is_string()) {
    return NewBadRequest("apiVersion must be a string");
  }
  if (obj.contains("kind") && !obj.at("kind").is_string()) {
    return NewBadRequest("kind must be a string");
  }
  if (!version.empty() && version != expected_version) {
    return NewBadRequest("the API version in the data (" + std::string(version) +
                         ") does not match the expected API version (" + expected_version + ")");
  }
  if (!kind.empty() && kind != expected_kind) {
    return NewBadRequest(std::string(kind) + " in version \"" + resource.version +
                         "\" cannot be handled as a " + std::string(expected_kind) +
                         ": the kind in the data does not match the endpoint");
  }
  obj["apiVersion"] = expected_version;
  obj["kind"] = expected_kind;
  return std::nullopt;
}

std::optional<ApiError> FromCheck(const ResourceInfo& resource, const std::string& name,
                                  const CheckResult& result) {
  if (!result.decode_errors.empty()) {
    std::string message = resource.kind + " in version \"" + resource.version +
                          "\" cannot be handled as a " + resource.kind + ": ";
    for (size_t i = 0; i < result.decode_errors.size(); ++i) {
      if (i > 0) message += ", ";
      message += result.decode_errors[i].ToString();
    }
    return NewBadRequest(std::move(message));
  }
  if (!result.errors.empty()) return NewInvalid(resource.GroupKind(), name, result.errors);
  return std::nullopt;
}

// The body's metadata decoded as ObjectMeta: a member of the wrong JSON type (metadata a string,
// generation a string, creationTimestamp not a time) is a 400 as upstream's decoder answers it,
// checked before the server fills in the members it owns, which would hide the mistake.
std::optional<ApiError> CheckMetadataTypes(const ResourceInfo& resource, const JsonObject& obj) {
  CheckResult result;
  DecodeMeta(obj, &result.decode_errors);
  return FromCheck(resource, "", result);
}

// fieldValidation (Strict, Warn, Ignore; Warn when absent): unknown fields are an error, a
// warning, or silently dropped; in every case they are not stored (upstream's typed decoding).
std::optional<ApiError> CheckFieldValidation(const Scope& scope, const ResourceInfo& resource,
                                             JsonObject& obj, std::vector<std::string>* warnings) {
  std::string mode = scope.Param("fieldValidation");
  if (mode.empty()) mode = "Warn";
  if (mode != "Strict" && mode != "Warn" && mode != "Ignore") {
    return NewBadRequest("fieldValidation: Unsupported value: \"" + mode +
                         "\": supported values: \"Ignore\", \"Warn\", \"Strict\"");
  }
  std::vector<std::string> unknown =
      openapi::UnknownFields(resource.group, resource.version, resource.kind, obj, true);
  if (unknown.empty() || mode == "Ignore") return std::nullopt;
  if (mode == "Strict") {
    std::string message = resource.kind + " in version \"" + resource.version +
                          "\" cannot be handled as a " + resource.kind +
                          ": strict decoding error: ";
    for (size_t i = 0; i < unknown.size(); ++i) {
      if (i > 0) message += ", ";
      message += "unknown field \"" + unknown[i] + "\"";
    }
    return NewBadRequest(std::move(message));
  }
  for (const std::string& field : unknown) warnings->push_back("unknown field \"" + field + "\"");
  return std::nullopt;
}

// Adds `Warning: 299 - "..."` headers (RFC 7234 warn-code 299, as kube-apiserver sends them),
// bounded as upstream's warning recorder bounds them (apiserver filters/warning.go): once the
// warnings pass 4 Ki characters in all, each is cut to 256 and those past the total are dropped.
// Control characters become spaces (a field name may hold any character; a header may not).
void AddWarnings(http::Response& response, const std::vector<std::string>& warnings) {
  constexpr size_t kTotalLimit = 4 * 1024;
  constexpr size_t kItemLimit = 256;
  size_t total = 0;
  for (const std::string& w : warnings) total += w.size();
  bool truncate = total > kTotalLimit;
  total = 0;
  for (const std::string& w : warnings) {
    std::string_view text = w;
    if (truncate && text.size() > kItemLimit) {
      size_t cut = kItemLimit;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
      text = text.substr(0, cut);  // at a UTF-8 character boundary
    }
    if (truncate && total + text.size() > kTotalLimit) break;
    total += text.size();
    std::string escaped;
    for (char c : text) {
      if (c == '"' || c == '\\') escaped.push_back('\\');
      escaped.push_back(static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? ' ' : c);
    }
    response.headers.push_back({"Warning", "299 - \"" + escaped + "\""});
  }
}

// The metadata a client may not set on create (rest.BeforeCreate / FillObjectMetaSystemFields).
void StampCreate(JsonObject& obj, const ResourceInfo& resource, const Clock& clock) {
  JsonObject& meta = EnsureObject(obj, "metadata");
  meta["uid"] = SecureRandom().NewUuid();
  meta["creationTimestamp"] = FormatTime(clock.Now());
  meta.erase("resourceVersion");
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  meta.erase("selfLink");
  if (resource.tracks_generation) {
    meta["generation"] = 1;
  } else {
    meta.erase("generation");
  }
}

// Carries the system-owned metadata of `old` into `obj` on update (rest.BeforeUpdate).
void CarryMetadata(JsonObject& obj, const JsonObject& old) {
  JsonObject& meta = EnsureObject(obj, "metadata");
  const JsonObject* old_meta = FindObject(old, "metadata");
  if (old_meta == nullptr) return;
  for (std::string_view field : {"uid", "creationTimestamp", "deletionTimestamp",
                                 "deletionGracePeriodSeconds", "generation", "selfLink"}) {
    if (const boost::json::value* v = old_meta->if_contains(field)) {
      if (field == "uid" && meta.contains("uid") && !GetString(meta, "uid").empty()) continue;
      meta[field] = *v;
    } else if (field != "uid") {
      meta.erase(field);
    }
  }
}

constexpr std::string_view kApplyPatchContentType = "application/apply-patch+yaml";

// The manager a write is recorded under: `fieldManager`, else the client's User-Agent.
std::string ManagerOf(const Scope& scope) {
  if (scope.Has("fieldManager")) return scope.Param("fieldManager");
  return fieldmanager::ManagerFromUserAgent(scope.request->header("User-Agent"));
}

// The write options' fieldManager rules (ValidateFieldManager): at most 128 printable bytes;
// `options_kind` names the options in the error (CreateOptions, UpdateOptions, PatchOptions).
std::optional<ApiError> CheckFieldManager(const Scope& scope, std::string_view options_kind) {
  if (!scope.Has("fieldManager")) return std::nullopt;
  std::string manager = scope.Param("fieldManager");
  api::FieldPath path("fieldManager");
  api::FieldErrorList errors;
  if (manager.size() > 128) {
    errors.push_back(api::TooLong(path, 128));
  } else {
    for (size_t i = 0; i < manager.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(manager[i]);
      if (c < 0x20 || c == 0x7f) {
        char text[64];
        std::snprintf(text, sizeof text, "invalid character U+%04X (at position %zu)", c, i);
        errors.push_back(api::Invalid(path, manager, text));
        break;
      }
    }
  }
  if (errors.empty()) return std::nullopt;
  return NewInvalid(std::string(options_kind) + ".meta.k8s.io", "", errors);
}

// What the field manager needs to know about a write to `scope`'s resource.
fieldmanager::WriteContext WriteContextOf(const Scope& scope, const Clock& clock) {
  const ResourceInfo& r = *scope.resource;
  fieldmanager::WriteContext context;
  context.type.kind = r.kind;
  context.type.root = openapi::KindSchema(r.group, r.version, r.kind);
  context.api_version = r.ApiVersion();
  context.subresource = scope.info->subresource;
  context.reset_paths =
      fieldmanager::ResetPaths(context.subresource, r.FindSubresource("status") != nullptr);
  context.now = FormatTime(clock.Now());
  return context;
}

// Records the write in metadata.managedFields (an Update operation); `live` is nullptr for a
// create. The bookkeeping never fails a write: an object its list types cannot key keeps the
// managed fields it had.
void TrackWrite(const Scope& scope, const Clock& clock, const JsonObject* live, JsonObject& obj) {
  if (scope.resource->virtual_resource) return;
  fieldmanager::WriteContext context = WriteContextOf(scope, clock);
  if (context.type.root == nullptr) return;
  Status tracked = fieldmanager::TrackUpdate(live, obj, ManagerOf(scope), context);
  if (!tracked.ok()) {
    JsonObject& meta = EnsureObject(obj, "metadata");
    const JsonObject* live_meta = live != nullptr ? FindObject(*live, "metadata") : nullptr;
    const boost::json::value* kept =
        live_meta != nullptr ? live_meta->if_contains("managedFields") : nullptr;
    if (kept != nullptr) {
      meta["managedFields"] = *kept;
    } else {
      meta.erase("managedFields");
    }
  }
}

bool SameJson(const JsonObject& a, const JsonObject& b, std::string_view key) {
  const boost::json::value* va = a.if_contains(key);
  const boost::json::value* vb = b.if_contains(key);
  if (va == nullptr || vb == nullptr) return va == vb;
  return *va == *vb;
}

// Whether `a` and `b` are the same object but for metadata.managedFields.
bool SameButManagedFields(const JsonObject& a, const JsonObject& b) {
  if (a.size() != b.size()) return false;
  for (const auto& member : a) {
    const boost::json::value* other = b.if_contains(member.key());
    if (other == nullptr) return false;
    if (member.key() != "metadata" || !member.value().is_object() || !other->is_object()) {
      if (member.value() != *other) return false;
      continue;
    }
    const JsonObject& ma = member.value().get_object();
    const JsonObject& mb = other->get_object();
    if (ma.size() - ma.count("managedFields") != mb.size() - mb.count("managedFields")) {
      return false;
    }
    for (const auto& field : ma) {
      if (field.key() == "managedFields") continue;
      const boost::json::value* theirs = mb.if_contains(field.key());
      if (theirs == nullptr || *theirs != field.value()) return false;
    }
  }
  return true;
}

// Whether the managed-field entries of `a` and `b` are the same but for their times.
bool SameManagedFieldsButTimes(const JsonObject& a, const JsonObject& b) {
  auto entries = [](const JsonObject& obj) {
    boost::json::array out;
    const JsonObject* meta = FindObject(obj, "metadata");
    const boost::json::array* list = meta ? FindArray(*meta, "managedFields") : nullptr;
    if (list == nullptr) return out;
    for (const boost::json::value& e : *list) {
      boost::json::value copy = e;
      if (copy.is_object()) copy.get_object().erase("time");
      out.push_back(std::move(copy));
    }
    return out;
  };
  return entries(a) == entries(b);
}

int64_t GenerationOf(const JsonObject& obj) {
  const JsonObject* meta = FindObject(obj, "metadata");
  if (meta == nullptr) return 0;
  const boost::json::value* g = meta->if_contains("generation");
  return g != nullptr && g->is_int64() ? g->get_int64() : 0;
}

// A finalizer list after the deletion of `obj` wants no more of them.
bool HasFinalizers(const JsonObject& obj, const ResourceInfo& resource) {
  if (!Finalizers(obj).empty()) return true;
  if (resource.group.empty() && resource.resource == "namespaces") {
    const JsonObject* spec = FindObject(obj, "spec");
    const boost::json::array* f = spec ? FindArray(*spec, "finalizers") : nullptr;
    return f != nullptr && !f->empty();
  }
  return false;
}

std::string Served(const ResourceInfo& resource, const store::Object& object) {
  return resource.Served(object.value, object.revision);
}

}  // namespace

std::string GenerateNameSuffix(Random& random) {
  static constexpr char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string out;
  for (int i = 0; i < 5; ++i) out.push_back(kAlphabet[random.Uniform(sizeof(kAlphabet) - 1)]);
  return out;
}

std::string Scope::Param(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return v;
  }
  return "";
}

bool Scope::Has(std::string_view name) const {
  for (const auto& [k, v] : query) {
    if (k == name) return true;
  }
  return false;
}

std::variant<JsonObject, ApiError> Rest::DecodeBody(const http::Request& request) {
  std::string type = ContentTypeOf(request);
  StatusOr<boost::json::value> value = InvalidArgumentError("");
  if (type.empty() || type == "application/json" || type == "*/*") {
    value = api::codec::ParseJson(request.body);
  } else if (type == kProtobufContentType) {
    StatusOr<JsonObject> decoded = DecodeKubernetesProtobuf(request.body);
    if (!decoded.ok()) {
      if (decoded.status().code() == StatusCode::kUnimplemented) {
        ApiError e = NewUnsupportedMediaType({});
        e.message = std::string(decoded.status().message());
        return e;
      }
      return NewBadRequest(std::string(decoded.status().message()));
    }
    return std::move(decoded).value();
  } else if (type == "application/yaml" || type == "application/x-yaml" || type == "text/yaml") {
    StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(request.body);
    if (!docs.ok()) {
      value = docs.status();
    } else if (docs->size() != 1) {
      return NewBadRequest("the request body must hold exactly one YAML document");
    } else {
      value = std::move((*docs)[0].value);
    }
  } else {
    return NewUnsupportedMediaType(
        {"application/json", "application/yaml", std::string_view(kProtobufContentType)});
  }
  if (!value.ok()) {
    return NewBadRequest("the body of the request could not be decoded: " +
                         std::string(value.status().message()));
  }
  if (!value->is_object()) {
    return NewBadRequest("the body of the request must be a JSON object, not " +
                         std::string(value->is_array() ? "an array" : "a scalar"));
  }
  return std::move(value->get_object());
}

StatusOr<std::pair<api::labels::Selector, api::labels::FieldSelector>> Rest::ParseSelectors(
    const Scope& scope) {
  api::labels::Selector labels;
  if (scope.Has("labelSelector")) {
    StatusOr<api::labels::Selector> parsed = api::labels::Parse(scope.Param("labelSelector"));
    if (!parsed.ok()) return InvalidArgumentError(std::string(parsed.status().message()));
    labels = std::move(parsed).value();
  }
  api::labels::FieldSelector fields;
  if (scope.Has("fieldSelector")) {
    StatusOr<api::labels::FieldSelector> parsed =
        api::labels::FieldSelector::Parse(scope.Param("fieldSelector"));
    if (!parsed.ok()) return parsed.status();
    fields = std::move(parsed).value();
    DRAPLANE_RETURN_IF_ERROR(
        api::labels::CheckSelectableFields(fields, scope.resource->group, scope.resource->kind));
  }
  return std::make_pair(std::move(labels), std::move(fields));
}

void Rest::ObserveWrite(const ResourceInfo& resource, const store::Object& object, bool deleted) {
  if (deps_.rbac != nullptr && resource.group == "rbac.authorization.k8s.io") {
    deps_.rbac->Observe(resource.StoreResource(), object, deleted);
  }
}

http::Response Rest::Handle(const Scope& scope) {
  const std::string& verb = scope.info->verb;
  const std::string& sub = scope.info->subresource;
  const ResourceInfo& r = *scope.resource;
  if (!sub.empty()) {
    const SubresourceInfo* info = r.FindSubresource(sub);
    if (info == nullptr) return ToResponse(NewNotFoundPath());
    if (std::find(info->verbs.begin(), info->verbs.end(), verb) == info->verbs.end()) {
      return ToResponse(NewMethodNotSupported(r.Gr(), verb));
    }
    if (sub == "binding") return Bind(scope, scope.info->namespace_, scope.info->name);
    if (sub == "eviction") return Evict(scope);
  } else if (!r.HasVerb(verb)) {
    return ToResponse(NewMethodNotSupported(r.Gr(), verb));
  }
  if (r.group.empty() && r.resource == "bindings") {
    return Bind(scope, scope.info->namespace_, "");
  }
  // Verbs that name an object need a name; create names none (upstream: 405 on both).
  bool named = !scope.info->name.empty();
  if (((verb == "update" || verb == "patch") && !named) || (verb == "create" && named)) {
    return ToResponse(NewMethodNotSupported(r.Gr(), verb));
  }
  if (verb == "get") return Get(scope);
  if (verb == "list") return List(scope);
  if (verb == "create") return Create(scope);
  if (verb == "update") return Update(scope);
  if (verb == "patch") return Patch(scope);
  if (verb == "delete") return Delete(scope);
  if (verb == "deletecollection") return DeleteCollection(scope);
  return ToResponse(NewMethodNotSupported(r.Gr(), verb));
}

http::Response Rest::Get(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format) return ToResponse(NewNotAcceptable(scope.request->header("Accept")));
  StatusOr<store::ObjectPtr> obj =
      deps_.store->Get(KeyOf(r, scope.info->namespace_, scope.info->name));
  if (!obj.ok()) return ToResponse(FromStatus(obj.status(), Context(r, scope.info->name)));
  StatusOr<std::string> body = RenderObject(r, Served(r, **obj), *format, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  return Answer(200, std::move(body).value(), format->ContentType());
}

http::Response Rest::List(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format) return ToResponse(NewNotAcceptable(scope.request->header("Accept")));
  auto selectors = ParseSelectors(scope);
  if (!selectors.ok()) return ToResponse(NewBadRequest(std::string(selectors.status().message())));
  // Named references, not a structured binding: the filter lambda below captures them, which
  // clang accepts only from version 16.
  const auto& labels = selectors->first;
  const auto& fields = selectors->second;

  store::ListOptions options;
  options.ns = r.namespaced ? scope.info->namespace_ : "";
  std::string rv_text = scope.Param("resourceVersion");
  std::string match = scope.Param("resourceVersionMatch");
  std::string continue_token = scope.Param("continue");
  int64_t limit = 0;
  if (scope.Has("limit")) {
    try {
      limit = std::stoll(scope.Param("limit"));
    } catch (...) {
      return ToResponse(NewBadRequest("invalid limit: " + scope.Param("limit")));
    }
    if (limit < 0) limit = 0;
  }
  StatusOr<store::Revision> rv = api::ParseResourceVersion(rv_text);
  if (!rv.ok()) {
    return ToResponse(NewBadRequest("invalid resourceVersion: " + rv_text));
  }
  {
    // upstream ValidateListOptions for a list (422 ListOptions, upstream's texts).
    const api::FieldPath path("resourceVersionMatch");
    api::FieldErrorList errors;
    if (!match.empty()) {
      if (rv_text.empty()) {
        errors.push_back(api::Forbidden(
            path, "resourceVersionMatch is forbidden unless resourceVersion is provided"));
      }
      if (!continue_token.empty()) {
        errors.push_back(
            api::Forbidden(path, "resourceVersionMatch is forbidden when continue is provided"));
      }
      if (match != "Exact" && match != "NotOlderThan") {
        errors.push_back(
            api::NotSupported(path, api::RenderValue(match), {"Exact", "NotOlderThan", ""}));
      }
      if (match == "Exact" && rv_text == "0") {
        errors.push_back(api::Forbidden(
            path, "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\""));
      }
    }
    if (scope.Has("sendInitialEvents")) {
      errors.push_back(api::Forbidden(api::FieldPath("sendInitialEvents"),
                                      "sendInitialEvents is forbidden for list"));
    }
    if (!errors.empty()) return ToResponse(NewInvalid("ListOptions.meta.k8s.io", "", errors));
  }
  // A paginated list at a resourceVersion without a match reads exactly that revision (the
  // storage's legacy rule: a client resuming a paged list where it began).
  if (match.empty() && limit > 0 && *rv > 0 && continue_token.empty()) match = "Exact";
  if (!continue_token.empty()) {
    if (!rv_text.empty() && rv_text != "0") {
      return ToResponse(
          NewBadRequest("specifying resource version is not allowed when using "
                        "continue"));
    }
    options.continue_token = continue_token;
  } else if (match == "Exact") {
    options.revision = *rv;
  } else if (*rv > 0) {
    // NotOlderThan (or no match): any state at least as new as `rv`; the latest is.
    StatusOr<store::Revision> current = deps_.store->CurrentRevision();
    if (!current.ok()) return ToResponse(FromStatus(current.status(), Context(r, "")));
    if (*current < *rv) return ToResponse(NewTooLargeResourceVersion(*rv, *current));
  }

  ListPage page;
  std::optional<std::string> exact_name = fields.RequiresExactMatch("metadata.name");
  bool filter = !labels.Empty() || !fields.empty();
  auto accept = [&](const store::Object& obj, std::string served) {
    if (filter) {
      StatusOr<JsonObject> parsed = ParseObject(served);
      if (!parsed.ok()) return;
      WatchSpec spec;
      spec.resource = &r;
      spec.labels = labels;
      spec.fields = fields;
      if (!WatchManager::Matches(spec, *parsed)) return;
    }
    (void)obj;
    page.items.push_back(std::move(served));
  };
  if (exact_name && continue_token.empty() && options.revision == 0) {
    // A single object: read it directly; the list's revision is the store's current one.
    StatusOr<store::Revision> current = deps_.store->CurrentRevision();
    if (!current.ok()) return ToResponse(FromStatus(current.status(), Context(r, "")));
    page.resource_version = std::to_string(*current);
    StatusOr<store::ObjectPtr> obj = deps_.store->Get(KeyOf(r, options.ns, *exact_name));
    if (obj.ok()) {
      if (!r.namespaced || options.ns.empty() || (*obj)->key.ns == options.ns) {
        accept(**obj, Served(r, **obj));
      }
    } else if (obj.status().code() != StatusCode::kNotFound) {
      return ToResponse(FromStatus(obj.status(), Context(r, "")));
    }
    if (r.namespaced && options.ns.empty()) {
      // Without a namespace, every namespace may hold the name: list to find them all.
      page.items.clear();
      exact_name.reset();
    }
  }
  if (!exact_name || !continue_token.empty() || options.revision != 0) {
    // Pages of `limit - have` objects, so that the continue token resumes right after the last
    // object returned even when selectors drop some.
    while (true) {
      if (limit > 0) options.limit = limit - static_cast<int64_t>(page.items.size());
      StatusOr<store::ListResult> result = deps_.store->List(r.StoreResource(), options);
      if (!result.ok()) {
        if (result.status().code() == StatusCode::kExpired && !options.continue_token.empty()) {
          ApiError expired = NewResourceExpired(
              "The provided continue parameter is too old to display a consistent list result. "
              "You can start a new list without the continue parameter, or use the continue "
              "token in this response to retrieve the remainder of the results. Continuing with "
              "the provided token results in an inconsistent list - objects that were created, "
              "modified, or deleted between the time the first chunk was returned and now may "
              "show up in the list.");
          expired.continue_token = store::ContinueTokenAtNewest(options.continue_token);
          return ToResponse(expired);
        }
        if (result.status().code() == StatusCode::kExpired) {
          return ToResponse(NewResourceExpired("too old resource version: " + rv_text));
        }
        if (result.status().code() == StatusCode::kDeadlineExceeded) {
          StatusOr<store::Revision> current = deps_.store->CurrentRevision();
          return ToResponse(NewTooLargeResourceVersion(*rv, current.ok() ? *current : 0));
        }
        if (result.status().code() == StatusCode::kInvalidArgument) {
          return ToResponse(NewBadRequest(std::string(result.status().message())));
        }
        return ToResponse(FromStatus(result.status(), Context(r, "")));
      }
      page.resource_version = std::to_string(result->revision);
      for (const store::ObjectPtr& obj : result->objects) {
        if (exact_name && obj->key.name != *exact_name) continue;
        accept(*obj, Served(r, *obj));
      }
      page.continue_token = result->continue_token;
      if (result->continue_token.empty()) break;
      if (limit > 0 && static_cast<int64_t>(page.items.size()) >= limit) break;
      options.continue_token = result->continue_token;
    }
  }
  StatusOr<std::string> body = RenderList(r, page, *format, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  return Answer(200, std::move(body).value(), format->ContentType());
}

void Rest::Watch(const Scope& scope, std::shared_ptr<http::Exchange> exchange) {
  const ResourceInfo& r = *scope.resource;
  if (!r.HasVerb("watch")) {
    exchange->Respond(ToResponse(NewMethodNotSupported(r.Gr(), "watch")));
    return;
  }
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format || format->kind == OutputKind::kYaml) {
    exchange->Respond(ToResponse(NewNotAcceptable(scope.request->header("Accept"))));
    return;
  }
  auto selectors = ParseSelectors(scope);
  if (!selectors.ok()) {
    exchange->Respond(ToResponse(NewBadRequest(std::string(selectors.status().message()))));
    return;
  }
  std::string rv_text = scope.Param("resourceVersion");
  StatusOr<store::Revision> rv = api::ParseResourceVersion(rv_text);
  if (!rv.ok()) {
    exchange->Respond(ToResponse(NewBadRequest("invalid resourceVersion: " + rv_text)));
    return;
  }
  WatchSpec spec;
  spec.resource = &r;
  spec.namespace_ = r.namespaced ? scope.info->namespace_ : "";
  spec.labels = std::move(selectors->first);
  spec.fields = std::move(selectors->second);
  if (std::optional<std::string> name = spec.fields.RequiresExactMatch("metadata.name")) {
    spec.name = *name;
  }
  // The legacy path /watch/.../NAME watches that object alone (upstream's ListResource turns the
  // name into a metadata.name field selector, and refuses a selector naming another).
  if (!scope.info->name.empty()) {
    if (!spec.name.empty() && spec.name != scope.info->name) {
      exchange->Respond(
          ToResponse(NewBadRequest("fieldSelector metadata.name doesn't match requested name")));
      return;
    }
    spec.name = scope.info->name;
  }
  spec.format = *format;
  std::string bookmarks = scope.Param("allowWatchBookmarks");
  spec.bookmarks = scope.Has("allowWatchBookmarks") && QueryFlag(bookmarks);
  // ValidateListOptions for a watch (422, upstream's texts): sendInitialEvents needs
  // resourceVersionMatch=NotOlderThan, which is allowed only with it and never with continue.
  const bool send_initial_set = scope.Has("sendInitialEvents");
  const std::string match = scope.Param("resourceVersionMatch");
  {
    const api::FieldPath path("resourceVersionMatch");
    api::FieldErrorList errors;
    if (send_initial_set && match != "NotOlderThan") {
      errors.push_back(api::Forbidden(
          path, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
    }
    if (!match.empty()) {
      if (!send_initial_set) {
        errors.push_back(api::Forbidden(
            path,
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
      }
      if (match != "NotOlderThan") {
        errors.push_back(api::NotSupported(path, api::RenderValue(match), {"NotOlderThan"}));
      }
      if (!scope.Param("continue").empty()) {
        errors.push_back(
            api::Forbidden(path, "resourceVersionMatch is forbidden when continue is provided"));
      }
    }
    if (!errors.empty()) {
      exchange->Respond(ToResponse(NewInvalid("ListOptions.meta.k8s.io", "", errors)));
      return;
    }
  }
  if (send_initial_set && QueryFlag(scope.Param("sendInitialEvents"))) {
    // The end of the initial events is a bookmark, which the client must accept.
    if (!spec.bookmarks) {
      exchange->Respond(
          ToResponse(NewBadRequest("sendInitialEvents requires allowWatchBookmarks=true")));
      return;
    }
    spec.initial_events = true;
    spec.initial_events_end_bookmark = true;
  } else if (send_initial_set) {
    // sendInitialEvents=false: the watch starts now, without the current state (KEP-3157).
    spec.initial_events = false;
  } else {
    spec.initial_events = rv_text.empty() || rv_text == "0";
  }
  spec.start_revision = *rv;
  if (scope.Has("timeoutSeconds")) {
    // Upstream reads it with strconv.ParseInt; a negative value ends the stream at once.
    std::string text = scope.Param("timeoutSeconds");
    int64_t seconds = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error != std::errc() || end != text.data() + text.size() || text.empty() ||
        seconds > 100LL * 365 * 24 * 3600 || seconds < -100LL * 365 * 24 * 3600) {
      exchange->Respond(ToResponse(NewBadRequest("invalid timeoutSeconds: \"" + text + "\"")));
      return;
    }
    spec.timeout = std::chrono::seconds(seconds);
  }
  spec.user = scope.user->name;
  spec.user_exempt = scope.user->InGroup(auth::kMastersGroup);
  deps_.watches->Serve(std::move(spec), std::move(exchange));
}

StatusOr<store::ObjectPtr> Rest::CreateInternal(const ResourceInfo& resource, JsonObject obj) {
  StampCreate(obj, resource, *deps_.clock);
  resource.strategy->DefaultWithTime(obj, deps_.clock->Now());
  resource.strategy->PrepareForCreate(obj);
  CheckResult check = resource.strategy->Check(obj);
  if (!check.ok()) {
    return InvalidArgumentError("invalid built-in object " + resource.kind + " " +
                                std::string(MetaString(obj, "name")));
  }
  store::Key key = KeyOf(resource, std::string(MetaString(obj, "namespace")),
                         std::string(MetaString(obj, "name")));
  StatusOr<store::ObjectPtr> created = deps_.store->Create(key, resource.ToStored(std::move(obj)));
  if (created.ok()) ObserveWrite(resource, **created, false);
  return created;
}

http::Response Rest::Create(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  auto dry = DryRun(scope);
  if (auto* e = std::get_if<ApiError>(&dry)) return ToResponse(*e);
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format) return ToResponse(NewNotAcceptable(scope.request->header("Accept")));
  if (auto e = CheckFieldManager(scope, "CreateOptions")) return ToResponse(*e);
  auto decoded = DecodeBody(*scope.request);
  if (auto* e = std::get_if<ApiError>(&decoded)) return ToResponse(*e);
  JsonObject obj = std::move(std::get<JsonObject>(decoded));
  if (auto e = CheckTypeMeta(obj, r, r.kind)) return ToResponse(*e);
  if (auto e = CheckMetadataTypes(r, obj)) return ToResponse(*e);
  std::vector<std::string> warnings;
  if (auto e = CheckFieldValidation(scope, r, obj, &warnings)) return ToResponse(*e);
  JsonObject& meta = EnsureObject(obj, "metadata");
  std::string ns(GetString(meta, "namespace"));
  if (r.namespaced) {
    if (ns.empty()) {
      meta["namespace"] = scope.info->namespace_;
      ns = scope.info->namespace_;
    } else if (ns != scope.info->namespace_) {
      return ToResponse(NewBadRequest(
          "the namespace of the provided object does not match the namespace sent on the "
          "request"));
    }
  } else {
    meta.erase("namespace");
    ns.clear();
  }
  std::string name(GetString(meta, "name"));
  if (name.empty() && !GetString(meta, "generateName").empty()) {
    name = std::string(GetString(meta, "generateName")) + GenerateNameSuffix(SecureRandom());
    meta["name"] = name;
  }
  StampCreate(obj, r, *deps_.clock);
  r.strategy->DefaultWithTime(obj, deps_.clock->Now());
  // The creator owns what it wrote, defaults included, before the strategy and admission change
  // anything (as kube-apiserver's create handler runs its field manager).
  if (!r.virtual_resource) {
    api::OmitEmptyFields(obj);  // what typed decoding drops is nobody's field
    TrackWrite(scope, *deps_.clock, nullptr, obj);
  }
  r.strategy->PrepareForCreate(obj);
  // Admission first (kube-apiserver's admission plugins such as NamespaceLifecycle and
  // NodeRestriction refuse before the object is validated), then the kind's validation.
  admission::Attributes attributes;
  attributes.resource = &r;
  attributes.operation = admission::Operation::kCreate;
  attributes.user = scope.user;
  attributes.namespace_ = ns;
  attributes.name = name;
  attributes.object = &obj;
  if (auto e = deps_.admission->Mutate(attributes, obj)) return ToResponse(*e);
  if (auto e = deps_.admission->Admit(attributes)) return ToResponse(*e);
  if (auto e = FromCheck(r, name, r.strategy->Check(obj))) return ToResponse(*e);
  api::OmitEmptyFields(obj);
  // ResourceQuota admission last, as upstream's validating plugin: it charges the quotas, so
  // nothing after it may refuse but the store itself.
  quota::QuotaAdmission::Charge charge;
  if (deps_.quota != nullptr) {
    auto admitted = deps_.quota->Admit(r, ns, name, obj, std::get<bool>(dry));
    if (auto* e = std::get_if<ApiError>(&admitted)) return ToResponse(*e);
    charge = std::get<quota::QuotaAdmission::Charge>(admitted);
  }
  struct FinishCharge {
    quota::QuotaAdmission* quota;
    quota::QuotaAdmission::Charge charge;
    ~FinishCharge() {
      if (quota != nullptr) quota->Finish(charge);
    }
  } finish_charge{deps_.quota, charge};
  std::string stored = r.ToStored(std::move(obj));
  if (std::get<bool>(dry)) {
    // A dry run answers what the create would: AlreadyExists for a name in use.
    StatusOr<store::ObjectPtr> existing = deps_.store->Get(KeyOf(r, ns, name));
    if (existing.ok()) return ToResponse(NewAlreadyExists(r.Gr(), name));
    StatusOr<std::string> body = RenderObject(r, r.Served(stored, 0), *format, deps_.clock->Now());
    if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
    http::Response response = Answer(201, std::move(body).value(), format->ContentType());
    AddWarnings(response, warnings);
    return response;
  }
  StatusOr<store::ObjectPtr> created = deps_.store->Create(KeyOf(r, ns, name), std::move(stored));
  if (!created.ok()) return ToResponse(FromStatus(created.status(), Context(r, name)));
  ObserveWrite(r, **created, false);
  StatusOr<std::string> body = RenderObject(r, Served(r, **created), *format, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  http::Response response = Answer(201, std::move(body).value(), format->ContentType());
  AddWarnings(response, warnings);
  return response;
}

http::Response Rest::Update(const Scope& scope) {
  if (auto e = CheckFieldManager(scope, "UpdateOptions")) return ToResponse(*e);
  auto decoded = DecodeBody(*scope.request);
  if (auto* e = std::get_if<ApiError>(&decoded)) return ToResponse(*e);
  JsonObject body = std::move(std::get<JsonObject>(decoded));
  // The body is moved into the first attempt; a retry (the store's GuaranteedUpdate calls again
  // when the object changed meanwhile) decodes it again instead of every attempt copying it.
  bool first = true;
  return UpdateWith(
      scope,
      [&](const JsonObject&) -> std::variant<JsonObject, ApiError> {
        if (first) {
          first = false;
          return std::move(body);
        }
        return DecodeBody(*scope.request);
      },
      WriteKind::kUpdate);
}

http::Response Rest::Patch(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  std::string type = ContentTypeOf(*scope.request);
  if (type == kApplyPatchContentType) return Apply(scope);
  if (auto e = CheckFieldManager(scope, "PatchOptions")) return ToResponse(*e);
  if (scope.Has("force")) {
    return ToResponse(NewInvalid(
        "PatchOptions.meta.k8s.io", "",
        {api::Forbidden(api::FieldPath("force"), "may not be specified for non-apply patch")}));
  }
  std::optional<api::patch::PatchFormat> format = api::patch::PatchFormatOf(type);
  if (!format) {
    return ToResponse(NewUnsupportedMediaType(
        {"application/json-patch+json", "application/merge-patch+json",
         "application/strategic-merge-patch+json", kApplyPatchContentType}));
  }
  StatusOr<boost::json::value> patch = api::codec::ParseJson(scope.request->body);
  if (!patch.ok()) {
    return ToResponse(NewBadRequest("the body of the request could not be decoded: " +
                                    std::string(patch.status().message())));
  }
  if (Status shape = api::patch::CheckPatchShape(*patch, *format); !shape.ok()) {
    return ToResponse(NewBadRequest(std::string(shape.message())));
  }
  if (Status s = api::patch::CheckJsonPatchOperations(*patch, api::patch::JsonPatchLimits{});
      !s.ok()) {
    return ToResponse(NewRequestEntityTooLarge(std::string(s.message())));
  }
  const boost::json::value& patch_value = *patch;
  return UpdateWith(
      scope,
      [&](const JsonObject& current) -> std::variant<JsonObject, ApiError> {
        StatusOr<boost::json::value> result =
            api::patch::ApplyPatch(current, patch_value, *format, r.kind);
        if (!result.ok()) {
          // A patch that does not apply, or whose copies grow the object past the limit: 422 as
          // upstream answers any error of jsonpatch's Apply.
          if (result.status().code() == StatusCode::kFailedPrecondition ||
              result.status().code() == StatusCode::kResourceExhausted) {
            ApiError e;
            e.code = 422;
            e.reason = "Invalid";
            e.message = std::string(result.status().message());
            return e;
          }
          return NewBadRequest(std::string(result.status().message()));
        }
        if (!result->is_object()) return NewBadRequest("the patched object must be a map");
        return std::move(result->get_object());
      },
      WriteKind::kPatch);
}

http::Response Rest::Apply(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  std::string manager = scope.Param("fieldManager");
  if (manager.empty()) {
    return ToResponse(
        NewInvalid("PatchOptions.meta.k8s.io", "",
                   {api::Required(api::FieldPath("fieldManager"), "is required for apply patch")}));
  }
  if (auto e = CheckFieldManager(scope, "PatchOptions")) return ToResponse(*e);
  const bool force = scope.Has("force") && QueryFlag(scope.Param("force"));
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(scope.request->body);
  if (!docs.ok()) {
    return ToResponse(
        NewBadRequest("error decoding YAML: " + std::string(docs.status().message())));
  }
  if (docs->size() != 1 || !(*docs)[0].value.is_object()) {
    return ToResponse(NewBadRequest("error decoding YAML: the apply patch must be one object"));
  }
  const JsonObject config = std::move((*docs)[0].value.get_object());
  std::string api_version(GetString(config, "apiVersion"));
  std::string kind(GetString(config, "kind"));
  size_t slash = api_version.find('/');
  std::string group = slash == std::string::npos ? "" : api_version.substr(0, slash);
  if (group != r.group || kind != r.kind) {
    // upstream's versionCheck, printing the GroupVersionKind as Go does.
    return ToResponse(NewBadRequest(
        "invalid object type: " + (slash == std::string::npos ? "/" + api_version : api_version) +
        ", Kind=" + kind));
  }
  if (api_version != r.ApiVersion()) {
    return ToResponse(
        NewBadRequest("Incorrect version specified in apply patch. Specified patch "
                      "version: " +
                      api_version + ", expected: " + r.ApiVersion()));
  }
  const std::string typed_patch_error = "failed to create typed patch object (" + r.group + "/" +
                                        r.version + ", Kind=" + r.kind + "): ";
  {
    // A configuration is typed by the kind's schema: a field it does not declare cannot be
    // owned, whatever fieldValidation says.
    JsonObject probe = config;
    std::vector<std::string> unknown = openapi::UnknownFields(r.group, r.version, r.kind, probe,
                                                              /*prune=*/false);
    if (!unknown.empty()) {
      return ToResponse(NewBadRequest(typed_patch_error + "." + unknown.front() +
                                      ": field not declared in schema"));
    }
  }
  if (const JsonObject* meta = FindObject(config, "metadata");
      meta != nullptr && meta->contains("managedFields")) {
    return ToResponse(NewBadRequest("metadata.managedFields must be nil"));
  }
  fieldmanager::WriteContext context = WriteContextOf(scope, *deps_.clock);
  if (context.type.root == nullptr) {
    return ToResponse(
        NewUnsupportedMediaType({"application/json-patch+json", "application/merge-patch+json",
                                 "application/strategic-merge-patch+json"}));
  }
  return UpdateWith(
      scope,
      [&](const JsonObject& current) -> std::variant<JsonObject, ApiError> {
        const JsonObject* live = current.empty() ? nullptr : &current;
        StatusOr<fieldmanager::ApplyResult> applied =
            fieldmanager::Apply(live, config, manager, force, context);
        if (!applied.ok()) {
          return NewBadRequest(typed_patch_error + std::string(applied.status().message()));
        }
        if (!applied->conflicts.empty()) {
          ApiError e;
          e.code = 409;
          e.reason = "Conflict";
          e.message = fieldmanager::ConflictMessage(applied->conflicts);
          for (const fieldmanager::Conflict& c : applied->conflicts) {
            for (const std::string& path : c.paths) {
              e.causes.push_back(
                  StatusCause{"FieldManagerConflict", "conflict with " + c.manager, path});
            }
          }
          return e;
        }
        return std::move(applied->object);
      },
      WriteKind::kApply);
}

std::optional<ApiError> Rest::AuthorizeCreate(const Scope& scope) const {
  if (deps_.authorizer == nullptr) return std::nullopt;
  authz::Attributes attributes = AttributesOf(*scope.user, *scope.info, scope.query);
  attributes.verb = "create";
  authz::Result decision = deps_.authorizer->Authorize(attributes);
  if (decision.decision == authz::Decision::kAllow) return std::nullopt;
  std::string reason = authz::ForbiddenMessage(attributes);
  if (!decision.reason.empty()) reason += ": " + decision.reason;
  return NewForbidden(scope.resource->Gr(), scope.info->name, reason);
}

http::Response Rest::UpdateWith(
    const Scope& scope,
    const std::function<std::variant<JsonObject, ApiError>(const JsonObject& current)>& mutate,
    WriteKind kind) {
  const bool from_patch = kind == WriteKind::kPatch;
  const bool apply = kind == WriteKind::kApply;
  const ResourceInfo& r = *scope.resource;
  const std::string& name = scope.info->name;
  const std::string ns = r.namespaced ? scope.info->namespace_ : "";
  const bool status_update = scope.info->subresource == "status";
  const bool finalize = scope.info->subresource == "finalize";
  auto dry = DryRun(scope);
  if (auto* e = std::get_if<ApiError>(&dry)) return ToResponse(*e);
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format) return ToResponse(NewNotAcceptable(scope.request->header("Accept")));

  std::optional<ApiError> failure;
  bool created = false;
  bool delete_after = false;
  std::string dry_result;
  std::vector<std::string> warnings;
  auto fn = [&](const store::Object* current) -> StatusOr<std::string> {
    failure.reset();
    created = false;
    delete_after = false;
    dry_result.clear();
    warnings.clear();
    auto fail = [&](ApiError e) -> StatusOr<std::string> {
      failure = std::move(e);
      return InternalError(std::string(kAbortMarker));
    };
    JsonObject old;
    if (current != nullptr) {
      StatusOr<JsonObject> parsed = ParseObject(Served(r, *current));
      if (!parsed.ok()) return fail(NewInternalError(parsed.status().message()));
      old = std::move(parsed).value();
    } else if (from_patch) {
      return fail(NewNotFound(r.Gr(), name));
    }
    auto mutated = mutate(old);
    if (auto* e = std::get_if<ApiError>(&mutated)) return fail(*e);
    JsonObject obj = std::move(std::get<JsonObject>(mutated));
    if (auto e = CheckTypeMeta(obj, r, r.kind)) return fail(*e);
    if (auto e = CheckMetadataTypes(r, obj)) return fail(*e);
    if (auto e = CheckFieldValidation(scope, r, obj, &warnings)) return fail(*e);
    JsonObject& meta = EnsureObject(obj, "metadata");
    if (GetString(meta, "name") != name) {
      return fail(NewBadRequest("the name of the object (" + std::string(GetString(meta, "name")) +
                                ") does not match the name on the URL (" + name + ")"));
    }
    if (r.namespaced) {
      std::string_view obj_ns = GetString(meta, "namespace");
      if (obj_ns.empty()) {
        meta["namespace"] = ns;
      } else if (obj_ns != ns) {
        return fail(NewBadRequest(
            "the namespace of the provided object does not match the namespace sent on the "
            "request"));
      }
    } else {
      meta.erase("namespace");
    }
    std::string rv_text(GetString(meta, "resourceVersion"));
    StatusOr<store::Revision> rv = api::ParseResourceVersion(rv_text);
    if (!rv.ok()) {
      return fail(NewBadRequest("invalid resourceVersion: " + rv_text));
    }
    if (current == nullptr) {
      // Create on update (leases, events) and by server-side apply (any kind, never through a
      // subresource).
      if ((!r.allow_create_on_update && !apply) || status_update || finalize) {
        return fail(NewNotFound(r.Gr(), name));
      }
      if (auto e = AuthorizeCreate(scope)) return fail(*e);
      if (*rv != 0) return fail(NewNotFound(r.Gr(), name));
      StampCreate(obj, r, *deps_.clock);
      r.strategy->DefaultWithTime(obj, deps_.clock->Now());
      if (!apply) {
        api::OmitEmptyFields(obj);
        TrackWrite(scope, *deps_.clock, nullptr, obj);
      }
      r.strategy->PrepareForCreate(obj);
      admission::Attributes attributes;
      attributes.resource = &r;
      attributes.operation = admission::Operation::kCreate;
      attributes.user = scope.user;
      attributes.namespace_ = ns;
      attributes.name = name;
      attributes.object = &obj;
      if (auto e = deps_.admission->Mutate(attributes, obj)) return fail(*e);
      if (auto e = deps_.admission->Admit(attributes)) return fail(*e);
      if (auto e = FromCheck(r, name, r.strategy->Check(obj))) return fail(*e);
      api::OmitEmptyFields(obj);
      created = true;
      std::string stored = r.ToStored(std::move(obj));
      if (std::get<bool>(dry)) {
        dry_result = r.Served(stored, 0);
        return InternalError(std::string(kAbortMarker));  // nothing is written
      }
      return stored;
    }
    if (*rv != 0 && *rv != current->revision) return fail(NewModifiedConflict(r.Gr(), name));
    // An update without a resourceVersion is unconditional: it applies to the current object
    // (the generic registry's AllowUnconditionalUpdate).
    if (*rv == 0)
      EnsureObject(obj, "metadata")["resourceVersion"] = std::to_string(current->revision);
    CarryMetadata(obj, old);
    // An apply's managed fields are its result: the strategies' preparation (a status write
    // keeps the old metadata) must not undo them.
    std::optional<boost::json::value> applied_fields;
    if (apply) {
      if (const boost::json::value* v =
              EnsureObject(obj, "metadata").if_contains("managedFields")) {
        applied_fields = *v;
      }
    }
    if (status_update) {
      r.strategy->PrepareForStatusUpdate(obj, old);
    } else if (finalize) {
      // namespaces/finalize: only spec.finalizers may change.
      JsonObject result = old;
      JsonObject& spec = EnsureObject(result, "spec");
      const JsonObject* new_spec = FindObject(obj, "spec");
      if (new_spec != nullptr && new_spec->contains("finalizers")) {
        spec["finalizers"] = new_spec->at("finalizers");
      } else {
        spec.erase("finalizers");
      }
      obj = std::move(result);
    } else {
      r.strategy->DefaultWithTime(obj, deps_.clock->Now());
      r.strategy->PrepareForUpdate(obj, old);
      r.strategy->PrepareForUpdateWithTime(obj, old, deps_.clock->Now());
      if (r.tracks_generation) {
        // The old generation for now; bumped below once the spec is final.
        const int64_t generation = GenerationOf(old);
        EnsureObject(obj, "metadata")["generation"] = generation == 0 ? 1 : generation;
      }
    }
    if (!apply) {
      api::OmitEmptyFields(obj);
      TrackWrite(scope, *deps_.clock, &old, obj);
    } else if (applied_fields) {
      EnsureObject(obj, "metadata")["managedFields"] = std::move(*applied_fields);
    } else {
      EnsureObject(obj, "metadata").erase("managedFields");
    }
    admission::Attributes attributes;
    attributes.resource = &r;
    attributes.subresource = scope.info->subresource;
    attributes.operation = admission::Operation::kUpdate;
    attributes.user = scope.user;
    attributes.namespace_ = ns;
    attributes.name = name;
    attributes.object = &obj;
    attributes.old_object = &old;
    if (auto e = deps_.admission->Mutate(attributes, obj)) return fail(*e);
    if (auto e = deps_.admission->Admit(attributes)) return fail(*e);
    CheckResult check =
        status_update ? r.strategy->CheckStatusUpdate(obj, old) : r.strategy->CheckUpdate(obj, old);
    if (auto e = FromCheck(r, name, check)) return fail(*e);
    if (r.tracks_generation && !status_update && !finalize) {
      // The spec compared as it will be stored: after mutating admission (a Pod's default
      // tolerations restored) and the strategy's defaults and canonical quantities, as upstream's
      // PrepareForUpdate sees the decoded, defaulted and admitted object.
      if (!SameJson(obj, old, "spec")) {
        EnsureObject(obj, "metadata")["generation"] = std::max<int64_t>(GenerationOf(old), 0) + 1;
      }
    }
    api::OmitEmptyFields(obj);
    // Upstream's field manager sees the decoded object (defaults applied, quantities in canonical
    // form), so an update whose result is the stored object changes nobody's fields, and its
    // IgnoreManagedFieldsTimestampsTransformer drops a write that would change only their times.
    // Fields are tracked here on the request as sent (`0.5` where `500m` is stored, defaults left
    // out): an update that leaves the object as stored keeps its managed fields, and so does an
    // apply that would change only their times; neither is then written.
    if (SameButManagedFields(obj, old) && (!apply || SameManagedFieldsButTimes(obj, old))) {
      JsonObject& meta = EnsureObject(obj, "metadata");
      const JsonObject* old_meta = FindObject(old, "metadata");
      const boost::json::value* kept = old_meta ? old_meta->if_contains("managedFields") : nullptr;
      if (kept != nullptr) {
        meta["managedFields"] = *kept;
      } else {
        meta.erase("managedFields");
      }
    }
    delete_after = api::DeletesDuringUpdate(old, HasFinalizers(obj, r));
    // The same content as stored, whatever the member order (a client may send the members in
    // another order than the store has them): keep the stored bytes, so that the store skips
    // the write and no MODIFIED event goes out. Upstream's encoding never depends on member
    // order, so its byte comparison (etcd3 GuaranteedUpdate) has the same effect.
    if (!delete_after && obj == old) {
      if (std::get<bool>(dry)) {
        dry_result = Served(r, *current);
        return InternalError(std::string(kAbortMarker));
      }
      return current->value;
    }
    std::string stored = r.ToStored(std::move(obj));
    if (std::get<bool>(dry)) {
      dry_result = r.Served(stored, current->revision);
      return InternalError(std::string(kAbortMarker));  // nothing is written
    }
    return stored;
  };
  store::GuaranteedUpdateOptions options;
  options.allow_create =
      (r.allow_create_on_update || apply) && !status_update && !finalize && !from_patch;
  StatusOr<store::ObjectPtr> result =
      deps_.store->GuaranteedUpdate(KeyOf(r, ns, name), fn, options);
  if (!result.ok()) {
    if (!failure && !dry_result.empty()) {
      StatusOr<std::string> body = RenderObject(r, dry_result, *format, deps_.clock->Now());
      if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
      http::Response response =
          Answer(created ? 201 : 200, std::move(body).value(), format->ContentType());
      AddWarnings(response, warnings);
      return response;
    }
    if (failure) return ToResponse(*failure);
    return ToResponse(FromStatus(result.status(), Context(r, name)));
  }
  ObserveWrite(r, **result, false);
  if (delete_after) {
    // The last finalizer is gone from an object being deleted: remove it now (the generic
    // registry's ShouldDeleteDuringUpdate).
    StatusOr<store::ObjectPtr> deleted =
        deps_.store->Delete((*result)->key, store::Preconditions{(*result)->revision});
    if (deleted.ok()) {
      ObserveWrite(r, **deleted, true);
      result = deleted;
    }
  }
  StatusOr<std::string> body = RenderObject(r, Served(r, **result), *format, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  http::Response response =
      Answer(created ? 201 : 200, std::move(body).value(), format->ContentType());
  AddWarnings(response, warnings);
  return response;
}

namespace {

using DeleteOptions = Rest::DeleteOptions;

// The members of a DeleteOptions object (a DELETE's body, an Eviction's deleteOptions).
std::variant<DeleteOptions, ApiError> ReadDeleteOptions(const JsonObject& body) {
  DeleteOptions options;
  if (const boost::json::value* dry = body.if_contains("dryRun"); dry && !dry->is_null()) {
    // Only "All" is valid (upstream ValidateDeleteOptions); anything else is refused rather
    // than read as a real delete.
    api::FieldErrorList errors;
    if (!dry->is_array()) {
      errors.push_back(api::Invalid(api::FieldPath("dryRun"), boost::json::serialize(*dry),
                                    "must be a list of strings"));
    } else {
      for (const boost::json::value& v : dry->get_array()) {
        if (v.is_string() && v.get_string() == "All") {
          options.dry_run = true;
          continue;
        }
        errors.push_back(api::NotSupported(
            api::FieldPath("dryRun"),
            v.is_string() ? api::RenderValue(v.get_string()) : boost::json::serialize(v), {"All"}));
      }
    }
    if (!errors.empty()) return NewInvalid("DeleteOptions.meta.k8s.io", "", errors);
  }
  if (const boost::json::value* g = body.if_contains("gracePeriodSeconds"); g && g->is_int64()) {
    options.grace_period_seconds = g->get_int64();
  }
  if (const boost::json::value* p = body.if_contains("propagationPolicy"); p && p->is_string()) {
    options.propagation_policy = std::string(p->get_string());
    options.propagation_policy_given = true;
  }
  if (const boost::json::value* o = body.if_contains("orphanDependents"); o && o->is_bool()) {
    options.orphan_dependents_given = true;
    if (!options.propagation_policy_given) {
      options.propagation_policy = o->get_bool() ? "Orphan" : "Background";
    }
  }
  if (const JsonObject* pre = FindObject(body, "preconditions")) {
    options.precondition_uid = std::string(GetString(*pre, "uid"));
    options.precondition_rv = std::string(GetString(*pre, "resourceVersion"));
  }
  return options;
}

// The storage's preconditions of a delete, an eviction and a binding (upstream
// storage.Preconditions.Check): the uid and resourceVersion the caller names must be the
// object's, else a Conflict on the object.
std::optional<ApiError> CheckPreconditions(const GroupResource& gr, std::string_view name,
                                           std::string_view want_uid, std::string_view want_rv,
                                           std::string_view uid, int64_t revision) {
  if (!want_uid.empty() && want_uid != uid) {
    return NewConflict(gr, name,
                       "Precondition failed: UID in precondition: " + std::string(want_uid) +
                           ", UID in object meta: " + std::string(uid));
  }
  if (!want_rv.empty() && want_rv != std::to_string(revision)) {
    return NewConflict(
        gr, name,
        "Precondition failed: ResourceVersion in precondition: " + std::string(want_rv) +
            ", ResourceVersion in object meta: " + std::to_string(revision));
  }
  return std::nullopt;
}

// upstream ValidateDeleteOptions: the propagation policy, if given, is one upstream knows, and
// does not come with the deprecated orphanDependents.
std::optional<ApiError> CheckPropagationPolicy(const DeleteOptions& options) {
  const std::string& p = options.propagation_policy;
  if (options.orphan_dependents_given && options.propagation_policy_given) {
    return NewInvalid(
        "DeleteOptions.meta.k8s.io", "",
        {api::Invalid(api::FieldPath("propagationPolicy"), api::RenderValue(p),
                      "orphanDependents and deletionPropagation cannot be both set")});
  }
  if (!p.empty() && p != "Orphan" && p != "Background" && p != "Foreground") {
    api::FieldErrorList errors = {api::NotSupported(api::FieldPath("propagationPolicy"),
                                                    api::RenderValue(p),
                                                    {"Foreground", "Background", "Orphan"})};
    return NewInvalid("DeleteOptions.meta.k8s.io", "", errors);
  }
  return std::nullopt;
}

std::variant<DeleteOptions, ApiError> ParseDeleteOptions(const Scope& scope) {
  DeleteOptions options;
  if (!scope.request->body.empty()) {
    auto decoded = Rest::DecodeBody(*scope.request);
    if (auto* e = std::get_if<ApiError>(&decoded)) return *e;
    auto read = ReadDeleteOptions(std::get<JsonObject>(decoded));
    if (auto* e = std::get_if<ApiError>(&read)) return *e;
    options = std::move(std::get<DeleteOptions>(read));
  }
  if (scope.Has("gracePeriodSeconds")) {
    try {
      options.grace_period_seconds = std::stoll(scope.Param("gracePeriodSeconds"));
    } catch (...) {
      return NewBadRequest("invalid gracePeriodSeconds");
    }
  }
  if (scope.Has("propagationPolicy")) {
    options.propagation_policy = scope.Param("propagationPolicy");
    options.propagation_policy_given = true;
  }
  if (scope.Has("orphanDependents")) {
    options.orphan_dependents_given = true;
    if (!options.propagation_policy_given) {
      options.propagation_policy =
          QueryFlag(scope.Param("orphanDependents")) ? "Orphan" : "Background";
    }
  }
  if (auto e = CheckPropagationPolicy(options)) return *e;
  return options;
}

}  // namespace

std::variant<std::string, ApiError> Rest::DeleteOne(const Scope& scope, const std::string& ns,
                                                    const std::string& name, bool* deleted_now) {
  auto parsed_options = ParseDeleteOptions(scope);
  if (auto* e = std::get_if<ApiError>(&parsed_options)) return *e;
  return DeleteOne(scope, ns, name, std::get<DeleteOptions>(parsed_options), deleted_now);
}

std::variant<std::string, ApiError> Rest::DeleteOne(const Scope& scope, const std::string& ns,
                                                    const std::string& name,
                                                    const DeleteOptions& options,
                                                    bool* deleted_now) {
  const ResourceInfo& r = *scope.resource;
  *deleted_now = false;
  // Upstream's rest.BeforeDelete: a negative grace period is one second.
  std::optional<int64_t> requested_grace = options.grace_period_seconds;
  if (requested_grace && *requested_grace < 0) requested_grace = 1;
  auto dry = DryRun(scope);
  if (auto* e = std::get_if<ApiError>(&dry)) return *e;
  if (options.dry_run) dry = true;
  store::Key key = KeyOf(r, ns, name);
  for (int attempt = 0; attempt < 16; ++attempt) {
    StatusOr<store::ObjectPtr> current = deps_.store->Get(key);
    if (!current.ok()) return FromStatus(current.status(), Context(r, name));
    StatusOr<JsonObject> parsed = ParseObject(Served(r, **current));
    if (!parsed.ok()) return NewInternalError(parsed.status().message());
    JsonObject obj = std::move(parsed).value();
    std::string uid(MetaString(obj, "uid"));
    if (auto e = CheckPreconditions(r.Gr(), name, options.precondition_uid, options.precondition_rv,
                                    uid, (*current)->revision)) {
      return *e;
    }
    admission::Attributes attributes;
    attributes.resource = &r;
    attributes.operation = admission::Operation::kDelete;
    attributes.user = scope.user;
    attributes.namespace_ = ns;
    attributes.name = name;
    attributes.old_object = &obj;
    if (auto e = deps_.admission->Admit(attributes)) return *e;

    // Decide between an immediate delete and a graceful one (deletionTimestamp set, object
    // kept until its finalizers are gone or its grace period ends).
    std::vector<std::string> finalizers = Finalizers(obj);
    auto add_finalizer = [&](const std::string& f) {
      if (std::find(finalizers.begin(), finalizers.end(), f) == finalizers.end()) {
        finalizers.push_back(f);
      }
    };
    if (options.propagation_policy == "Orphan") add_finalizer("orphan");
    if (options.propagation_policy == "Foreground") add_finalizer("foregroundDeletion");
    int64_t grace = 0;
    bool is_pod = r.group.empty() && r.resource == "pods";
    bool is_namespace = r.group.empty() && r.resource == "namespaces";
    if (is_pod && !GetPathString(obj, {"spec", "nodeName"}).empty()) {
      // Pods bound to a node end gracefully (the kubelet, or the server's reaper, removes them).
      grace = PodDeletionGracePeriod(obj);
      std::string_view phase = GetPathString(obj, {"status", "phase"});
      if (requested_grace && phase != "Succeeded" && phase != "Failed") {
        grace = *requested_grace;
      }
    }
    JsonObject with_finalizers = obj;
    SetFinalizers(with_finalizers, finalizers);
    bool keep = HasFinalizers(with_finalizers, r) || grace > 0;
    if (!keep) {
      if (std::get<bool>(dry)) {
        *deleted_now = true;
        return Served(r, **current);
      }
      StatusOr<store::ObjectPtr> deleted =
          deps_.store->Delete(key, store::Preconditions{(*current)->revision});
      if (!deleted.ok()) {
        if (deleted.status().code() == StatusCode::kConflict) continue;
        return FromStatus(deleted.status(), Context(r, name));
      }
      ObserveWrite(r, **deleted, true);
      *deleted_now = true;
      return Served(r, **deleted);
    }
    JsonObject& meta = EnsureObject(with_finalizers, "metadata");
    bool already = meta.contains("deletionTimestamp");
    const Timestamp now = deps_.clock->Now();
    if (!already) {
      api::MarkDeleting(meta, FormatTime(AddSeconds(now, std::max<int64_t>(grace, 0))), grace);
    } else if (is_pod && grace == 0) {
      // A Pod a finalizer keeps, deleted again at once (its kubelet done with it): the deletion
      // moves to now unless it is earlier already, never later (upstream markAsDeleting).
      std::optional<Timestamp> at = ParseTime(GetString(meta, "deletionTimestamp"));
      if (!at || *at > now) meta["deletionTimestamp"] = FormatTime(now);
      meta["deletionGracePeriodSeconds"] = 0;
    } else if (const boost::json::value* period = meta.if_contains("deletionGracePeriodSeconds");
               requested_grace && period != nullptr && period->is_int64() &&
               *requested_grace < period->get_int64()) {
      // Deleted again with a shorter grace period: the deletion moves earlier by the
      // difference (upstream rest.BeforeDelete); a longer one changes nothing.
      std::optional<Timestamp> at = ParseTime(GetString(meta, "deletionTimestamp"));
      if (at) {
        // When the deletion began; for a period too long to date (its deadline saturated at
        // the clock's end), now.
        Timestamp began = AddSeconds(*at, SaturatingSub(0, period->get_int64()));
        if (began == Timestamp::min()) began = now;
        meta["deletionTimestamp"] =
            FormatTime(AddSeconds(began, std::max<int64_t>(*requested_grace, 0)));
        meta["deletionGracePeriodSeconds"] = *requested_grace;
      }
    }
    if (is_namespace) EnsureObject(with_finalizers, "status")["phase"] = "Terminating";
    // Deleting what is being deleted already, the same way, writes nothing: a kubelet or
    // controller repeating its delete must not bump the object and wake every watcher (a kubelet
    // player and its own watch would do so in a loop).
    if (already && with_finalizers == obj) return Served(r, **current);
    std::string stored = r.ToStored(JsonObject(with_finalizers));
    if (std::get<bool>(dry)) return r.Served(stored, (*current)->revision);
    StatusOr<store::ObjectPtr> updated =
        deps_.store->Update(key, std::move(stored), store::Preconditions{(*current)->revision});
    if (!updated.ok()) {
      if (updated.status().code() == StatusCode::kConflict) continue;
      return FromStatus(updated.status(), Context(r, name));
    }
    ObserveWrite(r, **updated, false);
    return Served(r, **updated);
  }
  return NewModifiedConflict(r.Gr(), name);
}

http::Response Rest::Delete(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  std::optional<OutputFormat> format =
      NegotiateOutput(scope.request->header("Accept"), scope.Param("includeObject"));
  if (!format) return ToResponse(NewNotAcceptable(scope.request->header("Accept")));
  bool deleted_now = false;
  auto result =
      DeleteOne(scope, r.namespaced ? scope.info->namespace_ : "", scope.info->name, &deleted_now);
  if (auto* e = std::get_if<ApiError>(&result)) return ToResponse(*e);
  const std::string& served = std::get<std::string>(result);
  bool return_object = !deleted_now || (r.group.empty() && r.resource == "pods");
  if (!return_object) {
    StatusOr<JsonObject> parsed = ParseObject(served);
    std::string uid = parsed.ok() ? std::string(MetaString(*parsed, "uid")) : "";
    return Answer(200, SuccessStatusJson(r.Gr(), scope.info->name, uid), "application/json");
  }
  StatusOr<std::string> body = RenderObject(r, served, *format, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  return Answer(200, std::move(body).value(), format->ContentType());
}

http::Response Rest::DeleteCollection(const Scope& scope) {
  const ResourceInfo& r = *scope.resource;
  auto selectors = ParseSelectors(scope);
  if (!selectors.ok()) return ToResponse(NewBadRequest(std::string(selectors.status().message())));
  WatchSpec filter;
  filter.resource = &r;
  filter.labels = selectors->first;
  filter.fields = selectors->second;
  store::ListOptions options;
  options.ns = r.namespaced ? scope.info->namespace_ : "";
  ListPage page;
  while (true) {
    StatusOr<store::ListResult> result = deps_.store->List(r.StoreResource(), options);
    if (!result.ok()) return ToResponse(FromStatus(result.status(), Context(r, "")));
    page.resource_version = std::to_string(result->revision);
    for (const store::ObjectPtr& obj : result->objects) {
      StatusOr<JsonObject> parsed = ParseObject(Served(r, *obj));
      if (!parsed.ok() || !WatchManager::Matches(filter, *parsed)) continue;
      bool deleted_now = false;
      auto deleted = DeleteOne(scope, obj->key.ns, obj->key.name, &deleted_now);
      if (auto* e = std::get_if<ApiError>(&deleted)) {
        if (e->code == 404) continue;
        return ToResponse(*e);
      }
      page.items.push_back(std::get<std::string>(deleted));
    }
    if (result->continue_token.empty()) break;
    options.continue_token = result->continue_token;
  }
  OutputFormat json;
  StatusOr<std::string> body = RenderList(r, page, json, deps_.clock->Now());
  if (!body.ok()) return ToResponse(NewInternalError(body.status().message()));
  return Answer(200, std::move(body).value(), "application/json");
}

// pkg/registry/core/pod/storage EvictionREST.Create, for a server that serves no
// PodDisruptionBudgets (so none refuses an eviction): the Pod is deleted with the eviction's
// deleteOptions, gracefully as any delete of a Pod bound to a node; `kubectl drain` evicts this
// way.
http::Response Rest::Evict(const Scope& scope) {
  auto decoded = DecodeBody(*scope.request);
  if (auto* e = std::get_if<ApiError>(&decoded)) return ToResponse(*e);
  const JsonObject& eviction = std::get<JsonObject>(decoded);
  // The body must be an Eviction (upstream decodes it into one): anything else, a Pod posted by
  // mistake included, is refused rather than taken as "evict".
  const std::string_view api_version = GetString(eviction, "apiVersion");
  const std::string_view kind = GetString(eviction, "kind");
  if ((!api_version.empty() && api_version != "policy/v1" && api_version != "policy/v1beta1") ||
      (!kind.empty() && kind != "Eviction")) {
    return ToResponse(NewBadRequest("the body of an eviction must be a policy/v1 Eviction, not " +
                                    std::string(api_version) + " " + std::string(kind)));
  }
  if (const boost::json::value* options = eviction.if_contains("deleteOptions");
      options != nullptr && !options->is_object() && !options->is_null()) {
    return ToResponse(NewBadRequest(
        "Eviction in version \"v1\" cannot be handled as a Eviction: json: cannot unmarshal " +
        std::string(options->is_string()  ? "string"
                    : options->is_bool()  ? "bool"
                    : options->is_array() ? "array"
                                          : "number") +
        " into Go struct field Eviction.deleteOptions of type v1.DeleteOptions"));
  }
  std::string_view name = MetaString(eviction, "name");
  if (!name.empty() && name != scope.info->name) {
    return ToResponse(NewBadRequest("name in URL does not match name in Eviction object"));
  }
  DeleteOptions options;
  if (const JsonObject* body = FindObject(eviction, "deleteOptions")) {
    auto read = ReadDeleteOptions(*body);
    if (auto* e = std::get_if<ApiError>(&read)) return ToResponse(*e);
    options = std::move(std::get<DeleteOptions>(read));
    if (auto e = CheckPropagationPolicy(options)) return ToResponse(*e);
  }
  auto dry = DryRun(scope);
  if (auto* e = std::get_if<ApiError>(&dry)) return ToResponse(*e);
  if (!std::get<bool>(dry) && !options.dry_run) {
    if (auto e = MarkEvicted(scope, options)) return ToResponse(*e);
  }
  bool deleted_now = false;
  auto result = DeleteOne(scope, scope.info->namespace_, scope.info->name, options, &deleted_now);
  if (auto* e = std::get_if<ApiError>(&result)) return ToResponse(*e);
  boost::json::object status{{"kind", "Status"},
                             {"apiVersion", "v1"},
                             {"metadata", boost::json::object()},
                             {"status", "Success"},
                             {"code", 201}};
  return Answer(201, boost::json::serialize(status), "application/json");
}

// Upstream's addConditionAndDeletePod (PodDisruptionConditions, GA in 1.31): before the delete,
// the Pod gets DisruptionTarget=True (EvictionByEvictionAPI), which Job podFailurePolicy rules
// and operators read, under the eviction's uid and resourceVersion preconditions; a
// resourceVersion precondition then names the version written, as upstream's.
std::optional<ApiError> Rest::MarkEvicted(const Scope& scope, DeleteOptions& options) {
  const ResourceInfo& pods = *scope.resource;
  const std::string& name = scope.info->name;
  const std::string now = FormatTime(deps_.clock->Now());
  std::optional<ApiError> failure;
  auto fn = [&](const store::Object* current) -> StatusOr<std::string> {
    StatusOr<JsonObject> parsed = ParseObject(current->value);
    if (!parsed.ok()) return parsed.status();
    JsonObject pod = std::move(parsed).value();
    failure = CheckPreconditions(pods.Gr(), name, options.precondition_uid, options.precondition_rv,
                                 MetaString(pod, "uid"), current->revision);
    if (failure) return InternalError(std::string(kAbortMarker));
    if (!api::SetPodConditionJson(EnsureObject(pod, "status"), "DisruptionTarget", "True",
                                  "EvictionByEvictionAPI", "Eviction API: evicting", now)) {
      return current->value;  // nothing to write
    }
    return ToStoredJson(std::move(pod));
  };
  StatusOr<store::ObjectPtr> result =
      deps_.store->GuaranteedUpdate(KeyOf(pods, scope.info->namespace_, name), fn, {});
  if (result.ok()) {
    if (!options.precondition_rv.empty()) {
      options.precondition_rv = std::to_string((*result)->revision);
    }
    return std::nullopt;
  }
  if (failure) return failure;
  return FromStatus(result.status(), Context(pods, name));
}

// pkg/registry/core/pod/storage BindingREST.Create / assignPod.
http::Response Rest::Bind(const Scope& scope, const std::string& ns, const std::string& pod_name) {
  const ResourceInfo* pods = Registry::Default().Find("", "v1", "pods");
  auto decoded = DecodeBody(*scope.request);
  if (auto* e = std::get_if<ApiError>(&decoded)) return ToResponse(*e);
  JsonObject binding = std::move(std::get<JsonObject>(decoded));
  std::string name(MetaString(binding, "name"));
  if (!pod_name.empty() && name != pod_name) {
    return ToResponse(NewBadRequest("the name of the binding (" + name +
                                    ") does not match the name of the pod (" + pod_name + ")"));
  }
  const JsonObject* target = FindObject(binding, "target");
  std::string node = target ? std::string(GetString(*target, "name")) : "";
  std::string target_kind = target ? std::string(GetString(*target, "kind")) : "";
  api::FieldErrorList errors;
  if (node.empty()) errors.push_back(api::Required(api::FieldPath("target").Child("name"), ""));
  if (!target_kind.empty() && target_kind != "Node") {
    errors.push_back(api::Invalid(api::FieldPath("target").Child("kind"),
                                  api::RenderValue(target_kind), "must be empty or 'Node'"));
  }
  if (!errors.empty()) return ToResponse(NewInvalid("Binding", name, errors));
  auto dry = DryRun(scope);
  if (auto* e = std::get_if<ApiError>(&dry)) return ToResponse(*e);
  std::optional<ApiError> failure;
  std::string now = FormatTime(deps_.clock->Now());
  auto fn = [&](const store::Object* current) -> StatusOr<std::string> {
    StatusOr<JsonObject> parsed = ParseObject(current->value);
    if (!parsed.ok()) return parsed.status();
    JsonObject pod = std::move(parsed).value();
    // The Binding's uid and resourceVersion are preconditions (a Pod deleted and created again
    // under the same name is not the one the scheduler chose), checked by the storage before the
    // update: conflicts on pods. The update's own refusals are conflicts on pods/binding.
    failure = CheckPreconditions(pods->Gr(), name, MetaString(binding, "uid"),
                                 MetaString(binding, "resourceVersion"), MetaString(pod, "uid"),
                                 current->revision);
    if (failure) return InternalError(std::string(kAbortMarker));
    const GroupResource binding_gr{"", "pods/binding"};
    if (!MetaString(pod, "deletionTimestamp").empty()) {
      failure = NewConflict(binding_gr, name,
                            "pod " + name + " is being deleted, cannot be assigned to a host");
      return InternalError(std::string(kAbortMarker));
    }
    JsonObject& spec = EnsureObject(pod, "spec");
    if (!GetString(spec, "nodeName").empty()) {
      failure = NewConflict(binding_gr, name,
                            "pod " + name + " is already assigned to node \"" +
                                std::string(GetString(spec, "nodeName")) + "\"");
      return InternalError(std::string(kAbortMarker));
    }
    spec["nodeName"] = node;
    for (const auto& [key, value] : MetaStringMap(binding, "annotations")) {
      EnsureObject(EnsureObject(pod, "metadata"), "annotations")[key] = value;
    }
    api::SetPodScheduledByBinding(EnsureObject(pod, "status"), now);
    if (std::get<bool>(dry)) return current->value;
    return ToStoredJson(std::move(pod));
  };
  StatusOr<store::ObjectPtr> result = deps_.store->GuaranteedUpdate(KeyOf(*pods, ns, name), fn, {});
  if (!result.ok()) {
    if (failure) return ToResponse(*failure);
    return ToResponse(FromStatus(result.status(), Context(*pods, name)));
  }
  boost::json::object status;
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = boost::json::object();
  status["status"] = "Success";
  status["code"] = 201;
  return Answer(201, boost::json::serialize(status), "application/json");
}

}  // namespace draplane::server::handlers
