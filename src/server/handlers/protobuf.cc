#include "server/handlers/protobuf.h"

#include <map>
#include <vector>

#include "api/meta/time.h"

namespace draplane::server::handlers {
namespace {

// kQuantityMap: map<string, resource.Quantity> (a Quantity is a message holding its string).
enum class FieldType {
  kString,
  kBytes,
  kInt64,
  kInt32,
  kBool,
  kMessage,
  kTime,
  kStringMap,
  kQuantityMap
};

struct Message;

// Go's generated marshallers write every scalar field, set or not, and the API server's JSON
// drops the zero values of `omitempty` fields: a zero scalar here is absent unless `kept` (the
// fields without omitempty, and pointers, whose presence is the value).
struct Field {
  int number;
  const char* json_name;
  FieldType type;
  bool repeated = false;
  const Message* message = nullptr;
  bool kept = false;
};

// A scalar written even when zero.
Field Kept(int number, const char* json_name, FieldType type) {
  return Field{number, json_name, type, false, nullptr, true};
}

struct Message {
  std::vector<Field> fields;
};

// Layouts from the generated.proto files of k8s.io/apimachinery (meta/v1) and k8s.io/api
// (core/v1, rbac/v1, authorization/v1, authentication/v1).
const Message kOwnerReference{
    {Kept(5, "apiVersion", FieldType::kString), Kept(1, "kind", FieldType::kString),
     Kept(3, "name", FieldType::kString), Kept(4, "uid", FieldType::kString),
     Kept(6, "controller", FieldType::kBool), Kept(7, "blockOwnerDeletion", FieldType::kBool)}};
const Message kObjectMeta{{{1, "name", FieldType::kString},
                           {2, "generateName", FieldType::kString},
                           {3, "namespace", FieldType::kString},
                           {4, "selfLink", FieldType::kString},
                           {5, "uid", FieldType::kString},
                           {6, "resourceVersion", FieldType::kString},
                           {7, "generation", FieldType::kInt64},
                           {8, "creationTimestamp", FieldType::kTime},
                           Kept(9, "deletionTimestamp", FieldType::kTime),
                           Kept(10, "deletionGracePeriodSeconds", FieldType::kInt64),
                           {11, "labels", FieldType::kStringMap},
                           {12, "annotations", FieldType::kStringMap},
                           {13, "ownerReferences", FieldType::kMessage, true, &kOwnerReference},
                           {14, "finalizers", FieldType::kString, true}}};
// core/v1
const Message kNamespaceSpec{{{1, "finalizers", FieldType::kString, true}}};
const Message kNamespaceStatus{{{1, "phase", FieldType::kString}}};
const Message kNamespace{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                          {2, "spec", FieldType::kMessage, false, &kNamespaceSpec},
                          {3, "status", FieldType::kMessage, false, &kNamespaceStatus}}};
const Message kScopedResourceSelectorRequirement{{Kept(1, "scopeName", FieldType::kString),
                                                  Kept(2, "operator", FieldType::kString),
                                                  {3, "values", FieldType::kString, true}}};
const Message kScopeSelector{
    {{1, "matchExpressions", FieldType::kMessage, true, &kScopedResourceSelectorRequirement}}};
const Message kResourceQuotaSpec{
    {{1, "hard", FieldType::kQuantityMap},
     {2, "scopes", FieldType::kString, true},
     {3, "scopeSelector", FieldType::kMessage, false, &kScopeSelector}}};
const Message kResourceQuotaStatus{
    {{1, "hard", FieldType::kQuantityMap}, {2, "used", FieldType::kQuantityMap}}};
const Message kResourceQuota{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                              {2, "spec", FieldType::kMessage, false, &kResourceQuotaSpec},
                              {3, "status", FieldType::kMessage, false, &kResourceQuotaStatus}}};
// rbac/v1
const Message kPolicyRule{{{1, "verbs", FieldType::kString, true},
                           {2, "apiGroups", FieldType::kString, true},
                           {3, "resources", FieldType::kString, true},
                           {4, "resourceNames", FieldType::kString, true},
                           {5, "nonResourceURLs", FieldType::kString, true}}};
const Message kSubject{{Kept(1, "kind", FieldType::kString),
                        {2, "apiGroup", FieldType::kString},
                        Kept(3, "name", FieldType::kString),
                        {4, "namespace", FieldType::kString}}};
const Message kRoleRef{{Kept(1, "apiGroup", FieldType::kString),
                        Kept(2, "kind", FieldType::kString), Kept(3, "name", FieldType::kString)}};
const Message kRole{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                     {2, "rules", FieldType::kMessage, true, &kPolicyRule}}};
const Message kRoleBinding{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                            {2, "subjects", FieldType::kMessage, true, &kSubject},
                            {3, "roleRef", FieldType::kMessage, false, &kRoleRef}}};
// authorization/v1
const Message kResourceAttributes{{{1, "namespace", FieldType::kString},
                                   {2, "verb", FieldType::kString},
                                   {3, "group", FieldType::kString},
                                   {4, "version", FieldType::kString},
                                   {5, "resource", FieldType::kString},
                                   {6, "subresource", FieldType::kString},
                                   {7, "name", FieldType::kString}}};
const Message kNonResourceAttributes{
    {{1, "path", FieldType::kString}, {2, "verb", FieldType::kString}}};
const Message kSelfSubjectAccessReviewSpec{
    {{1, "resourceAttributes", FieldType::kMessage, false, &kResourceAttributes},
     {2, "nonResourceAttributes", FieldType::kMessage, false, &kNonResourceAttributes}}};
const Message kSubjectAccessReviewSpec{
    {{1, "resourceAttributes", FieldType::kMessage, false, &kResourceAttributes},
     {2, "nonResourceAttributes", FieldType::kMessage, false, &kNonResourceAttributes},
     {3, "user", FieldType::kString},
     {4, "groups", FieldType::kString, true},
     {6, "uid", FieldType::kString}}};
const Message kSelfSubjectRulesReviewSpec{{{1, "namespace", FieldType::kString}}};
const Message kSelfSubjectAccessReview{
    {{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
     {2, "spec", FieldType::kMessage, false, &kSelfSubjectAccessReviewSpec}}};
const Message kSubjectAccessReview{
    {{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
     {2, "spec", FieldType::kMessage, false, &kSubjectAccessReviewSpec}}};
const Message kSelfSubjectRulesReview{
    {{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
     {2, "spec", FieldType::kMessage, false, &kSelfSubjectRulesReviewSpec}}};
// authentication/v1
const Message kTokenReviewSpec{
    {{1, "token", FieldType::kString}, {2, "audiences", FieldType::kString, true}}};
const Message kTokenReview{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                            {2, "spec", FieldType::kMessage, false, &kTokenReviewSpec}}};
const Message kSelfSubjectReview{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta}}};

// k8s.io/api/scheduling/v1 generated.proto (`kubectl create priorityclass` sends protobuf).
const Message kPriorityClass{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                              Kept(2, "value", FieldType::kInt32),
                              {3, "globalDefault", FieldType::kBool},
                              {4, "description", FieldType::kString},
                              Kept(5, "preemptionPolicy", FieldType::kString)}};

// meta/v1 DeleteOptions (client-go sends it in protobuf with a DELETE, under the apiVersion of
// the client's group) and policy/v1 Eviction (`kubectl drain`).
const Message kPreconditions{
    {Kept(1, "uid", FieldType::kString), Kept(2, "resourceVersion", FieldType::kString)}};
const Message kDeleteOptions{{Kept(1, "gracePeriodSeconds", FieldType::kInt64),
                              {2, "preconditions", FieldType::kMessage, false, &kPreconditions},
                              Kept(3, "orphanDependents", FieldType::kBool),
                              Kept(4, "propagationPolicy", FieldType::kString),
                              {5, "dryRun", FieldType::kString, true}}};
const Message kEviction{{{1, "metadata", FieldType::kMessage, false, &kObjectMeta},
                         {2, "deleteOptions", FieldType::kMessage, false, &kDeleteOptions}}};

const Message* MessageFor(std::string_view api_version, std::string_view kind) {
  if (kind == "DeleteOptions") return &kDeleteOptions;
  static const std::map<std::pair<std::string, std::string>, const Message*> kinds = {
      {{"v1", "Namespace"}, &kNamespace},
      {{"v1", "ResourceQuota"}, &kResourceQuota},
      {{"scheduling.k8s.io/v1", "PriorityClass"}, &kPriorityClass},
      {{"policy/v1", "Eviction"}, &kEviction},
      {{"rbac.authorization.k8s.io/v1", "Role"}, &kRole},
      {{"rbac.authorization.k8s.io/v1", "ClusterRole"}, &kRole},
      {{"rbac.authorization.k8s.io/v1", "RoleBinding"}, &kRoleBinding},
      {{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding"}, &kRoleBinding},
      {{"authorization.k8s.io/v1", "SelfSubjectAccessReview"}, &kSelfSubjectAccessReview},
      {{"authorization.k8s.io/v1", "SubjectAccessReview"}, &kSubjectAccessReview},
      {{"authorization.k8s.io/v1", "LocalSubjectAccessReview"}, &kSubjectAccessReview},
      {{"authorization.k8s.io/v1", "SelfSubjectRulesReview"}, &kSelfSubjectRulesReview},
      {{"authentication.k8s.io/v1", "TokenReview"}, &kTokenReview},
      {{"authentication.k8s.io/v1", "SelfSubjectReview"}, &kSelfSubjectReview},
  };
  auto it = kinds.find({std::string(api_version), std::string(kind)});
  return it == kinds.end() ? nullptr : it->second;
}

// A cursor over protobuf wire data.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  bool Varint(uint64_t* out) {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return false;
      uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) {
        *out = value;
        return true;
      }
    }
    return false;
  }
  bool Bytes(std::string_view* out) {
    uint64_t length;
    if (!Varint(&length) || length > data_.size() - pos_) return false;
    *out = data_.substr(pos_, length);
    pos_ += length;
    return true;
  }
  bool Skip(int wire_type) {
    uint64_t ignored;
    std::string_view bytes;
    switch (wire_type) {
      case 0:
        return Varint(&ignored);
      case 1:
        if (data_.size() - pos_ < 8) return false;
        pos_ += 8;
        return true;
      case 2:
        return Bytes(&bytes);
      case 5:
        if (data_.size() - pos_ < 4) return false;
        pos_ += 4;
        return true;
      default:
        return false;
    }
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Status Malformed() { return InvalidArgumentError("malformed protobuf body"); }

StatusOr<JsonObject> DecodeMessage(std::string_view data, const Message& message, int depth);

StatusOr<boost::json::value> DecodeValue(Reader& reader, int wire_type, const Field& field,
                                         int depth) {
  switch (field.type) {
    case FieldType::kString:
    case FieldType::kBytes: {
      std::string_view s;
      if (wire_type != 2 || !reader.Bytes(&s)) return Malformed();
      return boost::json::value(boost::json::string(s));
    }
    case FieldType::kInt64:
    case FieldType::kInt32: {
      uint64_t v;
      if (wire_type != 0 || !reader.Varint(&v)) return Malformed();
      return boost::json::value(static_cast<int64_t>(v));
    }
    case FieldType::kBool: {
      uint64_t v;
      if (wire_type != 0 || !reader.Varint(&v)) return Malformed();
      return boost::json::value(v != 0);
    }
    case FieldType::kMessage: {
      std::string_view s;
      if (wire_type != 2 || !reader.Bytes(&s)) return Malformed();
      StatusOr<JsonObject> inner = DecodeMessage(s, *field.message, depth + 1);
      if (!inner.ok()) return inner.status();
      return boost::json::value(std::move(inner).value());
    }
    case FieldType::kTime: {
      std::string_view s;
      if (wire_type != 2 || !reader.Bytes(&s)) return Malformed();
      Reader inner(s);
      int64_t seconds = 0;
      while (!inner.done()) {
        uint64_t key;
        if (!inner.Varint(&key)) return Malformed();
        if ((key >> 3) == 1 && (key & 7) == 0) {
          uint64_t v;
          if (!inner.Varint(&v)) return Malformed();
          seconds = static_cast<int64_t>(v);
        } else if (!inner.Skip(static_cast<int>(key & 7))) {
          return Malformed();
        }
      }
      if (seconds == 0) return boost::json::value(nullptr);  // metav1.Time{} is JSON null
      return boost::json::value(api::Time::FromUnixSeconds(seconds).text());
    }
    case FieldType::kStringMap:
    case FieldType::kQuantityMap:
      break;
  }
  return Malformed();
}

bool IsZeroScalar(const boost::json::value& v) {
  return v.is_null() || (v.is_string() && v.get_string().empty()) ||
         (v.is_int64() && v.get_int64() == 0) || (v.is_bool() && !v.get_bool());
}

StatusOr<JsonObject> DecodeMessage(std::string_view data, const Message& message, int depth) {
  if (depth > 32) return Malformed();
  JsonObject out;
  Reader reader(data);
  while (!reader.done()) {
    uint64_t key;
    if (!reader.Varint(&key)) return Malformed();
    int number = static_cast<int>(key >> 3);
    int wire_type = static_cast<int>(key & 7);
    const Field* field = nullptr;
    for (const Field& f : message.fields) {
      if (f.number == number) field = &f;
    }
    if (field == nullptr) {
      if (!reader.Skip(wire_type)) return Malformed();
      continue;
    }
    if (field->type == FieldType::kStringMap || field->type == FieldType::kQuantityMap) {
      std::string_view entry;
      if (wire_type != 2 || !reader.Bytes(&entry)) return Malformed();
      Reader inner(entry);
      std::string k, v;
      while (!inner.done()) {
        uint64_t entry_key;
        std::string_view s;
        if (!inner.Varint(&entry_key) || (entry_key & 7) != 2 || !inner.Bytes(&s)) {
          return Malformed();
        }
        if ((entry_key >> 3) == 1) k = std::string(s);
        if ((entry_key >> 3) != 2) continue;
        if (field->type == FieldType::kStringMap) {
          v = std::string(s);
          continue;
        }
        // resource.Quantity {string = 1}
        Reader quantity(s);
        while (!quantity.done()) {
          uint64_t q_key;
          std::string_view q;
          if (!quantity.Varint(&q_key) || (q_key & 7) != 2 || !quantity.Bytes(&q)) {
            return Malformed();
          }
          if ((q_key >> 3) == 1) v = std::string(q);
        }
      }
      EnsureObject(out, field->json_name)[k] = v;
      continue;
    }
    StatusOr<boost::json::value> value = DecodeValue(reader, wire_type, *field, depth);
    if (!value.ok()) return value.status();
    if (field->repeated) {
      boost::json::value& list = out[field->json_name];
      if (!list.is_array()) list = boost::json::array();
      list.get_array().push_back(std::move(value).value());
    } else if (field->kept || field->type == FieldType::kMessage || !IsZeroScalar(*value)) {
      out[field->json_name] = std::move(value).value();
    } else {
      out.erase(field->json_name);  // a later zero overrides an earlier value, as in Go
    }
  }
  return out;
}

}  // namespace

StatusOr<JsonObject> DecodeKubernetesProtobuf(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) return Malformed();
  Reader reader(body.substr(4));
  std::string api_version, kind;
  std::string_view raw;
  while (!reader.done()) {
    uint64_t key;
    if (!reader.Varint(&key)) return Malformed();
    int number = static_cast<int>(key >> 3);
    std::string_view s;
    if ((key & 7) != 2 || !reader.Bytes(&s)) return Malformed();
    if (number == 1) {  // runtime.TypeMeta {apiVersion = 1, kind = 2}
      Reader type_meta(s);
      while (!type_meta.done()) {
        uint64_t tk;
        std::string_view tv;
        if (!type_meta.Varint(&tk) || (tk & 7) != 2 || !type_meta.Bytes(&tv)) return Malformed();
        if ((tk >> 3) == 1) api_version = std::string(tv);
        if ((tk >> 3) == 2) kind = std::string(tv);
      }
    } else if (number == 2) {
      raw = s;
    }
  }
  const Message* message = MessageFor(api_version, kind);
  if (message == nullptr) {
    return UnimplementedError("protobuf bodies of " + api_version + " " + kind +
                              " are not supported; send application/json");
  }
  StatusOr<JsonObject> obj = DecodeMessage(raw, *message, 0);
  if (!obj.ok()) return obj.status();
  JsonObject out;
  out["apiVersion"] = api_version;
  out["kind"] = kind;
  for (auto& member : *obj) out[member.key()] = std::move(member.value());
  return out;
}

}  // namespace draplane::server::handlers
