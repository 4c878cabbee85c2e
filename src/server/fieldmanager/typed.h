// Server-side apply's operations on objects of a served kind (structured-merge-diff's typed
// package, re-derived): the field set of an applied configuration, the comparison of two
// versions, the merge of a configuration into the live object and the removal of fields.
//
// The shape of every value comes from the kind's OpenAPI schema (openapi::KindSchema): a schema
// with properties is a struct, one with additionalProperties a granular map (each key a field),
// one with items a list whose type is upstream's list type for that field (`ListTypeOf`: atomic
// unless the field is an associative list keyed by some of its items' fields, or a set of
// primitives); atomic lists and scalars are leaves. Fields the model keeps without a schema
// (x-kubernetes-preserve-unknown-fields) are deduced from the value, as upstream deduces untyped
// values: objects are granular maps, lists atomic.
//
// Errors: InvalidArgument naming the path (an associative list item without any of its key
// fields; duplicate keys in an applied configuration).
//
// Thread-safety: pure functions.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "server/fieldmanager/field_set.h"
#include "server/openapi/openapi.h"

namespace draplane::server::fieldmanager {

// How a list field is merged by server-side apply (+listType).
struct ListType {
  enum class Kind { kAtomic, kSet, kMap };
  Kind kind = Kind::kAtomic;
  std::vector<std::string> keys;  // kMap: +listMapKey, in declaration order
  // kMap: key fields with a schema default, used for an item that omits them (a port's
  // protocol is TCP).
  std::vector<std::pair<std::string, std::string>> key_defaults;
};

// The list type of the list at `path` (field names joined by '.', list items as "[]", as
// api::patch::MergeKeyFor takes them) in objects of `kind`.
ListType ListTypeOf(std::string_view kind, std::string_view path);

// The schema of one kind, with the kind's name for list types.
struct KindType {
  std::string kind;
  const openapi::SchemaNode* root = nullptr;
};

// The paths an applied configuration sets (ToFieldSet).
StatusOr<FieldSet> FieldsOf(const boost::json::value& object, const KindType& type);

// What changed between two versions (Compare): leaves added, removed or changed, and structs,
// maps and list items added or removed (their own path and everything below).
struct Comparison {
  FieldSet added, modified, removed;
};
StatusOr<Comparison> Compare(const boost::json::value& old_object,
                             const boost::json::value& new_object, const KindType& type);
// The same for two objects, without copying them into values, leaving out the top-level members
// named by the one-element paths of `ignore` (`{"f:status"}`).
StatusOr<Comparison> Compare(const boost::json::object& old_object,
                             const boost::json::object& new_object, const KindType& type,
                             const std::vector<std::vector<std::string>>& ignore = {});

// `config` merged into `live` (Merge): the configuration's leaves win, maps and structs merge
// member by member, associative and set lists item by item (configured items in the
// configuration's order, the others where they stood).
StatusOr<boost::json::value> Merge(const boost::json::value& live, const boost::json::value& config,
                                   const KindType& type);

// Removes from `object` the values at the paths of `remove` that no path of `keep` lies at or
// below (what an applier stops configuring and nobody else owns).
void RemoveUnowned(boost::json::value& object, const FieldSet& remove, const FieldSet& keep,
                   const KindType& type);

}  // namespace draplane::server::fieldmanager
