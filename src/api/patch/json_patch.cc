// RFC 6902 JSON patch with evanphx/json-patch's semantics and messages (the library
// kube-apiserver applies application/json-patch+json with).
#include <algorithm>
#include <boost/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "api/patch/json_pointer.h"
#include "api/patch/patch.h"

namespace draplane::api::patch {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

Status DoesNotApply(std::string_view op, std::string_view path) {
  return FailedPreconditionError("jsonpatch " + std::string(op) +
                                 " operation does not apply: doc is missing path: \"" +
                                 std::string(path) + "\"");
}

value* Parent(value& root, const std::vector<std::string>& tokens) {
  return ResolveJsonPointer(root, std::vector<std::string>(tokens.begin(), tokens.end() - 1));
}

Status Add(value& root, const std::vector<std::string>& tokens, value v, std::string_view path) {
  if (tokens.empty()) {
    root = std::move(v);
    return Status::Ok();
  }
  value* parent = Parent(root, tokens);
  if (parent == nullptr) return DoesNotApply("add", path);
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    parent->get_object()[last] = std::move(v);
    return Status::Ok();
  }
  if (parent->is_array()) {
    array& a = parent->get_array();
    if (last == "-") {
      a.push_back(std::move(v));
      return Status::Ok();
    }
    std::optional<size_t> i = ParseArrayIndex(last, a.size());
    if (!i) return DoesNotApply("add", path);
    a.insert(a.begin() + static_cast<std::ptrdiff_t>(*i), std::move(v));
    return Status::Ok();
  }
  return DoesNotApply("add", path);
}

StatusOr<value> Remove(value& root, const std::vector<std::string>& tokens, std::string_view op,
                       std::string_view path) {
  if (tokens.empty()) return DoesNotApply(op, path);
  value* parent = Parent(root, tokens);
  if (parent == nullptr) return DoesNotApply(op, path);
  const std::string& last = tokens.back();
  if (parent->is_object()) {
    object& o = parent->get_object();
    auto it = o.find(last);
    if (it == o.end()) return DoesNotApply(op, path);
    value removed = std::move(it->value());
    o.erase(it);
    return removed;
  }
  if (parent->is_array()) {
    array& a = parent->get_array();
    if (a.empty()) return DoesNotApply(op, path);
    std::optional<size_t> i = ParseArrayIndex(last, a.size() - 1);
    if (!i) return DoesNotApply(op, path);
    value removed = std::move(a[*i]);
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(*i));
    return removed;
  }
  return DoesNotApply(op, path);
}

// The length of `v` serialized as compact JSON (strings counted without escapes), or some
// number over `limit` as soon as it is known to exceed it: the walk stops there, so measuring a
// huge value costs no more than `limit` allows.
size_t EncodedSizeUpTo(const value& v, size_t limit) {
  size_t size = 0;
  std::vector<const value*> pending{&v};
  while (!pending.empty() && size <= limit) {
    const value* current = pending.back();
    pending.pop_back();
    switch (current->kind()) {
      case boost::json::kind::object:
        size += 2;
        for (const auto& member : current->get_object()) {
          size += member.key().size() + 4;  // "key": and the separating comma
          pending.push_back(&member.value());
        }
        break;
      case boost::json::kind::array:
        size += 2 + current->get_array().size();
        for (const value& item : current->get_array()) pending.push_back(&item);
        break;
      case boost::json::kind::string:
        size += current->get_string().size() + 2;
        break;
      default:
        size += 8;  // numbers, booleans, null: a typical width
        break;
    }
  }
  return size;
}

}  // namespace

Status CheckJsonPatchOperations(const value& patch, const JsonPatchLimits& limits) {
  if (!patch.is_array() || patch.get_array().size() <= limits.max_operations) return Status::Ok();
  return ResourceExhaustedError("The allowed maximum operations in a JSON patch is " +
                                std::to_string(limits.max_operations) + ", got " +
                                std::to_string(patch.get_array().size()));
}

StatusOr<value> ApplyJsonPatch(const value& document, const value& patch,
                               const JsonPatchLimits& limits) {
  if (!patch.is_array()) {
    return InvalidArgumentError("json: cannot unmarshal " +
                                std::string(patch.is_object() ? "object" : "value") +
                                " into Go value of type jsonpatch.Patch");
  }
  if (Status s = CheckJsonPatchOperations(patch, limits); !s.ok()) return s;
  size_t copied = 0;
  value doc = document;
  for (const value& op_value : patch.get_array()) {
    if (!op_value.is_object()) return InvalidArgumentError("a JSON patch operation must be a map");
    const object& op = op_value.get_object();
    const value* op_name = op.if_contains("op");
    const value* path_value = op.if_contains("path");
    if (op_name == nullptr || !op_name->is_string()) {
      return InvalidArgumentError("Unexpected kind: missing or invalid \"op\"");
    }
    if (path_value == nullptr || !path_value->is_string()) {
      return InvalidArgumentError("operation missing path field");
    }
    std::string name(op_name->get_string());
    std::string path(path_value->get_string());
    StatusOr<std::vector<std::string>> tokens = ParseJsonPointer(path);
    if (!tokens.ok()) return tokens.status();
    const value* v = op.if_contains("value");
    if (name == "add") {
      if (v == nullptr) return InvalidArgumentError("add operation missing value");
      if (Status s = Add(doc, *tokens, *v, path); !s.ok()) return s;
    } else if (name == "remove") {
      if (auto r = Remove(doc, *tokens, "remove", path); !r.ok()) return r.status();
    } else if (name == "replace") {
      if (v == nullptr) return InvalidArgumentError("replace operation missing value");
      value* target = ResolveJsonPointer(doc, *tokens);
      if (target == nullptr) return DoesNotApply("replace", path);
      *target = *v;
    } else if (name == "move" || name == "copy") {
      const value* from_value = op.if_contains("from");
      if (from_value == nullptr || !from_value->is_string()) {
        return InvalidArgumentError(name + " operation missing from field");
      }
      std::string from(from_value->get_string());
      StatusOr<std::vector<std::string>> from_tokens = ParseJsonPointer(from);
      if (!from_tokens.ok()) return from_tokens.status();
      value moved;
      if (name == "move") {
        auto removed = Remove(doc, *from_tokens, "move", from);
        if (!removed.ok()) return removed.status();
        moved = std::move(*removed);
      } else {
        value* source = ResolveJsonPointer(doc, *from_tokens);
        if (source == nullptr) return DoesNotApply("copy", from);
        copied += EncodedSizeUpTo(*source,
                                  limits.max_copy_bytes - std::min(copied, limits.max_copy_bytes));
        if (copied > limits.max_copy_bytes) {
          return ResourceExhaustedError(
              "Unable to complete the copy, the accumulated size increase of copy is " +
              std::to_string(copied) + ", exceeding the limit " +
              std::to_string(limits.max_copy_bytes));
        }
        moved = *source;
      }
      if (Status s = Add(doc, *tokens, std::move(moved), path); !s.ok()) return s;
    } else if (name == "test") {
      value* target = ResolveJsonPointer(doc, *tokens);
      if (v == nullptr) return InvalidArgumentError("test operation missing value");
      if (target == nullptr || !(*target == *v)) {
        return FailedPreconditionError("testing value " + path + " failed: test failed");
      }
    } else {
      return InvalidArgumentError("Unexpected kind: " + name);
    }
  }
  return doc;
}

}  // namespace draplane::api::patch
