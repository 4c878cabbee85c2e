// Sets of field paths, as server-side apply tracks them (structured-merge-diff's fieldpath.Set),
// and their `FieldsV1` form in metadata.managedFields.
//
// A path is a sequence of elements, each already in its FieldsV1 spelling: `f:<name>` (a field
// or a map key), `k:<json object>` (an item of an associative list, its key fields sorted by
// name), `v:<json>` (an item of a set list), `i:<n>` (an item of a list known by position).
// The set is a tree keyed by those spellings; a node is a member when its own path is in the set
// (FieldsV1 writes that as the child "."), and children hold the longer paths.
//
// Thread-safety: values; no shared state.
#pragma once

#include <boost/json/value.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace draplane::server::fieldmanager {

class FieldSet {
 public:
  bool Empty() const { return !member_ && children_.empty(); }
  bool Member() const { return member_; }

  // Adds `path` (an empty path is the root).
  void Insert(const std::vector<std::string>& path);
  // The subtree below one element, or nullptr.
  const FieldSet* Child(std::string_view element) const;

  FieldSet Union(const FieldSet& other) const;
  // In place: adds every path of `other`.
  void Add(const FieldSet& other);
  // In place: this set without the members of `other` (a non-recursive difference); whether
  // anything was removed.
  bool Subtract(const FieldSet& other);
  // Whether the two sets share a member.
  bool Intersects(const FieldSet& other) const;
  FieldSet Intersection(const FieldSet& other) const;
  FieldSet Difference(const FieldSet& other) const;
  // Makes `path` not a member (paths below it stay).
  void Erase(const std::vector<std::string>& path);
  // This set without `path` and every path below it.
  void RemoveSubtree(const std::vector<std::string>& path);

  // Every member path, in order (for messages).
  void ForEachPath(const std::function<void(const std::vector<std::string>&)>& fn) const;

  // The FieldsV1 object ({"f:spec":{"f:replicas":{}}, ...}).
  boost::json::value ToFieldsV1() const;
  // Reads a FieldsV1 object; InvalidArgument naming what is wrong.
  static StatusOr<FieldSet> FromFieldsV1(const boost::json::value& v);

  bool operator==(const FieldSet& other) const = default;

  const std::map<std::string, FieldSet, std::less<>>& Children() const { return children_; }

 private:
  void ForEachPathFrom(std::vector<std::string>& prefix,
                       const std::function<void(const std::vector<std::string>&)>& fn) const;
  static StatusOr<FieldSet> FromFieldsV1At(const boost::json::value& v, bool root);
  void Prune();  // drops empty children

  bool member_ = false;
  std::map<std::string, FieldSet, std::less<>> children_;
};

// A path as upstream prints it in conflicts: `.spec.containers[name="nginx"].image`,
// `.metadata.finalizers[="a"]`, `.spec.items[3]`.
std::string PathString(const std::vector<std::string>& path);

}  // namespace draplane::server::fieldmanager
