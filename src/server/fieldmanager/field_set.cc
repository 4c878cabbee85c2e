#include "server/fieldmanager/field_set.h"

#include <boost/json.hpp>

namespace draplane::server::fieldmanager {

void FieldSet::Insert(const std::vector<std::string>& path) {
  FieldSet* node = this;
  for (const std::string& element : path) node = &node->children_[element];
  node->member_ = true;
}

const FieldSet* FieldSet::Child(std::string_view element) const {
  auto it = children_.find(element);
  return it == children_.end() ? nullptr : &it->second;
}

void FieldSet::Prune() {
  for (auto it = children_.begin(); it != children_.end();) {
    if (it->second.Empty()) {
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
}

FieldSet FieldSet::Union(const FieldSet& other) const {
  FieldSet out = *this;
  out.member_ = member_ || other.member_;
  for (const auto& [element, child] : other.children_) {
    auto it = out.children_.find(element);
    if (it == out.children_.end()) {
      out.children_.emplace(element, child);
    } else {
      it->second = it->second.Union(child);
    }
  }
  return out;
}

void FieldSet::Add(const FieldSet& other) {
  member_ = member_ || other.member_;
  for (const auto& [element, child] : other.children_) {
    auto it = children_.find(element);
    if (it == children_.end()) {
      children_.emplace(element, child);
    } else {
      it->second.Add(child);
    }
  }
}

bool FieldSet::Subtract(const FieldSet& other) {
  bool removed = false;
  if (member_ && other.member_) {
    member_ = false;
    removed = true;
  }
  for (auto it = children_.begin(); it != children_.end();) {
    const FieldSet* theirs = other.Child(it->first);
    if (theirs != nullptr && it->second.Subtract(*theirs)) removed = true;
    if (it->second.Empty()) {
      it = children_.erase(it);
    } else {
      ++it;
    }
  }
  return removed;
}

bool FieldSet::Intersects(const FieldSet& other) const {
  if (member_ && other.member_) return true;
  // Walk the smaller side's children.
  const FieldSet& small = children_.size() <= other.children_.size() ? *this : other;
  const FieldSet& large = &small == this ? other : *this;
  for (const auto& [element, child] : small.children_) {
    const FieldSet* theirs = large.Child(element);
    if (theirs != nullptr && child.Intersects(*theirs)) return true;
  }
  return false;
}

FieldSet FieldSet::Intersection(const FieldSet& other) const {
  FieldSet out;
  out.member_ = member_ && other.member_;
  for (const auto& [element, child] : children_) {
    if (const FieldSet* theirs = other.Child(element)) {
      FieldSet both = child.Intersection(*theirs);
      if (!both.Empty()) out.children_.emplace(element, std::move(both));
    }
  }
  return out;
}

FieldSet FieldSet::Difference(const FieldSet& other) const {
  FieldSet out;
  out.member_ = member_ && !other.member_;
  for (const auto& [element, child] : children_) {
    const FieldSet* theirs = other.Child(element);
    FieldSet rest = theirs == nullptr ? child : child.Difference(*theirs);
    if (!rest.Empty()) out.children_.emplace(element, std::move(rest));
  }
  return out;
}

void FieldSet::Erase(const std::vector<std::string>& path) {
  std::vector<FieldSet*> nodes{this};
  for (const std::string& element : path) {
    auto it = nodes.back()->children_.find(element);
    if (it == nodes.back()->children_.end()) return;
    nodes.push_back(&it->second);
  }
  nodes.back()->member_ = false;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) (*it)->Prune();
}

void FieldSet::RemoveSubtree(const std::vector<std::string>& path) {
  if (path.empty()) {
    *this = FieldSet();
    return;
  }
  std::vector<FieldSet*> nodes{this};
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    auto it = nodes.back()->children_.find(path[i]);
    if (it == nodes.back()->children_.end()) return;
    nodes.push_back(&it->second);
  }
  nodes.back()->children_.erase(path.back());
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) (*it)->Prune();
}

void FieldSet::ForEachPathFrom(
    std::vector<std::string>& prefix,
    const std::function<void(const std::vector<std::string>&)>& fn) const {
  if (member_) fn(prefix);
  for (const auto& [element, child] : children_) {
    prefix.push_back(element);
    child.ForEachPathFrom(prefix, fn);
    prefix.pop_back();
  }
}

void FieldSet::ForEachPath(const std::function<void(const std::vector<std::string>&)>& fn) const {
  std::vector<std::string> prefix;
  ForEachPathFrom(prefix, fn);
}

boost::json::value FieldSet::ToFieldsV1() const {
  boost::json::object out;
  if (member_ && !children_.empty()) out.emplace(".", boost::json::object());
  for (const auto& [element, child] : children_) out.emplace(element, child.ToFieldsV1());
  return out;
}

StatusOr<FieldSet> FieldSet::FromFieldsV1(const boost::json::value& v) {
  return FromFieldsV1At(v, /*root=*/true);
}

StatusOr<FieldSet> FieldSet::FromFieldsV1At(const boost::json::value& v, bool root) {
  if (!v.is_object()) return InvalidArgumentError("expected an object");
  FieldSet out;
  const boost::json::object& o = v.get_object();
  if (o.empty()) {
    // A leaf: the path is a member (the root's {} is the empty set).
    out.member_ = !root;
    return out;
  }
  for (const auto& member : o) {
    std::string_view key = member.key();
    if (key == ".") {
      if (!member.value().is_object() || !member.value().get_object().empty()) {
        return InvalidArgumentError("expected {} for \".\"");
      }
      out.member_ = true;
      continue;
    }
    if (key.size() < 2 || key[1] != ':' ||
        (key[0] != 'f' && key[0] != 'k' && key[0] != 'v' && key[0] != 'i')) {
      return InvalidArgumentError("unknown path element \"" + std::string(key) +
                                  "\" (expected f:, k:, v: or i:)");
    }
    if (key[0] != 'f') {
      boost::system::error_code ec;
      boost::json::value parsed = boost::json::parse(key.substr(2), ec);
      if (ec || (key[0] == 'k' && !parsed.is_object()) ||
          (key[0] == 'i' && !parsed.is_int64() && !parsed.is_uint64())) {
        return InvalidArgumentError("malformed path element \"" + std::string(key) + "\"");
      }
    }
    StatusOr<FieldSet> child = FromFieldsV1At(member.value(), /*root=*/false);
    if (!child.ok()) return child.status();
    if (!child->Empty()) out.children_.emplace(std::string(key), std::move(child).value());
  }
  return out;
}

std::string PathString(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& element : path) {
    std::string_view body = std::string_view(element).substr(2);
    switch (element[0]) {
      case 'f':
        out += ".";
        out += body;
        break;
      case 'k': {
        boost::system::error_code ec;
        boost::json::value key = boost::json::parse(body, ec);
        out += "[";
        bool first = true;
        if (!ec && key.is_object()) {
          for (const auto& member : key.get_object()) {
            if (!first) out += ",";
            first = false;
            out += std::string(member.key()) + "=" + boost::json::serialize(member.value());
          }
        }
        out += "]";
        break;
      }
      case 'v':
        out += "[=" + std::string(body) + "]";
        break;
      default:
        out += "[" + std::string(body) + "]";
        break;
    }
  }
  return out;
}

}  // namespace draplane::server::fieldmanager
