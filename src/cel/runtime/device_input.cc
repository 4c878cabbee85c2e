#include "cel/runtime/device_input.h"

#include <map>
#include <utility>
#include <variant>

#include "cel/lib/quantity.h"
#include "cel/lib/semver.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::cel {
namespace {

uint64_t Fnv(uint64_t h, std::string_view s) {
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// dynamic-resource-allocation cel/compile.go parseQualifiedName: split at the first '/'; a
// name without a domain belongs to the driver's domain.
std::pair<std::string, std::string> SplitQualified(std::string_view name, std::string_view driver) {
  size_t slash = name.find('/');
  if (slash == std::string_view::npos) return {std::string(driver), std::string(name)};
  return {std::string(name.substr(0, slash)), std::string(name.substr(slash + 1))};
}

struct Unsupported {};
using AttrValue =
    std::variant<int64_t, bool, std::string, SemverValue, std::vector<int64_t>, std::vector<bool>,
                 std::vector<std::string>, std::vector<SemverValue>, Unsupported>;

struct Attr {
  std::string qualified;  // the name as given, for error messages
  AttrValue value;
  std::string version_error;  // set when a version failed to parse
  bool is_list = false;
};

}  // namespace

struct DeviceInput::Builder::State {
  std::string driver;
  bool allow_multi = false;
  // Ordered by (domain, id) so maps iterate deterministically; later additions replace.
  std::map<std::pair<std::string, std::string>, Attr> attrs;
  std::map<std::pair<std::string, std::string>, api::Quantity> caps;
};

DeviceInput::Builder::Builder(std::string_view driver) : state_(std::make_unique<State>()) {
  state_->driver = std::string(driver);
}
DeviceInput::Builder::Builder(Builder&&) noexcept = default;
DeviceInput::Builder& DeviceInput::Builder::operator=(Builder&&) noexcept = default;
DeviceInput::Builder::~Builder() = default;

DeviceInput::Builder& DeviceInput::Builder::SetAllowMultipleAllocations(bool value) {
  state_->allow_multi = value;
  return *this;
}

namespace {
template <typename T>
void Put(std::map<std::pair<std::string, std::string>, Attr>* attrs, std::string_view name,
         std::string_view driver, T value, bool is_list, std::string version_error = "") {
  Attr a;
  a.qualified = std::string(name);
  a.value = std::move(value);
  a.version_error = std::move(version_error);
  a.is_list = is_list;
  (*attrs)[SplitQualified(name, driver)] = std::move(a);
}
}  // namespace

DeviceInput::Builder& DeviceInput::Builder::AddInt(std::string_view name, int64_t value) {
  Put(&state_->attrs, name, state_->driver, value, false);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddBool(std::string_view name, bool value) {
  Put(&state_->attrs, name, state_->driver, value, false);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddString(std::string_view name,
                                                      std::string_view value) {
  Put(&state_->attrs, name, state_->driver, std::string(value), false);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddVersion(std::string_view name,
                                                       std::string_view value) {
  SemverValue v;
  std::string error;
  if (!internal::ParseSemver(value, &v, &error)) {
    Put(&state_->attrs, name, state_->driver, SemverValue{}, false, error);
  } else {
    Put(&state_->attrs, name, state_->driver, std::move(v), false);
  }
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddInts(std::string_view name,
                                                    const std::vector<int64_t>& values) {
  Put(&state_->attrs, name, state_->driver, values, true);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddBools(std::string_view name,
                                                     const std::vector<bool>& values) {
  Put(&state_->attrs, name, state_->driver, values, true);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddStrings(std::string_view name,
                                                       const std::vector<std::string>& values) {
  Put(&state_->attrs, name, state_->driver, values, true);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddVersions(std::string_view name,
                                                        const std::vector<std::string>& values) {
  std::vector<SemverValue> parsed;
  std::string error;
  for (const std::string& s : values) {
    SemverValue v;
    if (!internal::ParseSemver(s, &v, &error)) break;
    parsed.push_back(std::move(v));
  }
  Put(&state_->attrs, name, state_->driver, std::move(parsed), true, error);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddUnsupported(std::string_view name) {
  Put(&state_->attrs, name, state_->driver, Unsupported{}, false);
  return *this;
}
DeviceInput::Builder& DeviceInput::Builder::AddCapacity(std::string_view name,
                                                        const api::Quantity& value) {
  state_->caps[SplitQualified(name, state_->driver)] = value;
  return *this;
}

DeviceInput::DeviceInput() = default;
DeviceInput::~DeviceInput() = default;

uint64_t DeviceInput::HashQualifiedKey(std::string_view domain, std::string_view id) {
  uint64_t h = Fnv(0xcbf29ce484222325ULL, domain);
  h = Fnv(h ^ 0xff, id);
  h ^= h >> 29;
  return h;
}

namespace {

std::string_view Intern(Arena* arena, std::string_view s) {
  char* p = arena->CopyBytes(s.data(), s.size());
  return std::string_view(p, s.size());
}

// Builds a map value from entries; the arena of a DeviceInput has a 1 GiB budget, so failures
// are not expected for validated devices.
Value BuildMap(Arena* arena, std::vector<MapEntryValue>& entries, bool default_empty) {
  auto* storage = arena->NewArray<MapEntryValue>(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) storage[i] = entries[i];
  auto* m = arena->New<MapValue>();
  m->Init(storage, static_cast<uint32_t>(entries.size()), arena);
  m->set_default_empty(default_empty);
  return Value::Map(m);
}

}  // namespace

std::shared_ptr<const DeviceInput> DeviceInput::Builder::Build() && {
  std::shared_ptr<DeviceInput> d(new DeviceInput());
  Arena* arena = &d->arena_;
  State& s = *state_;
  d->driver_ = Intern(arena, s.driver);
  d->allow_multiple_allocations_ = s.allow_multi;

  auto semver = [arena](const SemverValue& v) { return Value::Semver(arena->New<SemverValue>(v)); };

  // Attributes, grouped by domain in (domain, id) order, once as lists (1.36) and, for a device
  // with list attributes, once with each list read as its first element (1.37).
  bool has_lists = false;
  for (const auto& [key, attr] : s.attrs) has_lists = has_lists || attr.is_list;
  struct Grouping {
    std::vector<MapEntryValue> domains;
    std::vector<MapEntryValue> current;
  };
  Grouping lists_group, first_group;
  std::string current_domain;
  bool have_domain = false;
  auto flush = [&](Grouping& g) {
    if (!have_domain) return;
    g.domains.push_back({Value::String(Intern(arena, current_domain)),
                         BuildMap(arena, g.current, /*default_empty=*/false)});
    g.current.clear();
  };
  if (has_lists) d->first_element_ = std::make_unique<AttributeView>();
  auto first_error = [](std::optional<std::string>& slot, const std::string& text) {
    if (!slot) slot = text;
  };
  for (const auto& [key, attr] : s.attrs) {
    const auto& [domain, id] = key;
    if (!have_domain || domain != current_domain) {
      flush(lists_group);
      if (has_lists) flush(first_group);
      current_domain = domain;
      have_domain = true;
    }
    // upstream getAttributeValue errors, by the first attribute that has one.
    const std::string unsupported = "attribute " + attr.qualified + ": unsupported attribute value";
    std::string general;
    if (std::holds_alternative<Unsupported>(attr.value)) {
      general = unsupported;
    } else if (!attr.version_error.empty()) {
      general = "attribute " + attr.qualified + ": parse semantic version: " + attr.version_error;
    }
    Value v;
    if (const auto* i = std::get_if<int64_t>(&attr.value)) {
      v = Value::Int(*i);
    } else if (const auto* b = std::get_if<bool>(&attr.value)) {
      v = Value::Bool(*b);
    } else if (const auto* str = std::get_if<std::string>(&attr.value)) {
      v = Value::String(Intern(arena, *str));
    } else if (const auto* ver = std::get_if<SemverValue>(&attr.value)) {
      v = semver(*ver);
    } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&attr.value)) {
      std::vector<Value> elems;
      for (int64_t x : *ints) elems.push_back(Value::Int(x));
      v = MakeList(arena, elems.data(), elems.size());
    } else if (const auto* bools = std::get_if<std::vector<bool>>(&attr.value)) {
      std::vector<Value> elems;
      for (bool x : *bools) elems.push_back(Value::Bool(x));
      v = MakeList(arena, elems.data(), elems.size());
    } else if (const auto* strs = std::get_if<std::vector<std::string>>(&attr.value)) {
      std::vector<Value> elems;
      for (const std::string& x : *strs) elems.push_back(Value::String(Intern(arena, x)));
      v = MakeList(arena, elems.data(), elems.size());
    } else if (const auto* vers = std::get_if<std::vector<SemverValue>>(&attr.value)) {
      std::vector<Value> elems;
      for (const SemverValue& x : *vers) elems.push_back(semver(x));
      v = MakeList(arena, elems.data(), elems.size());
    } else {
      v = Value::Null();
    }
    // The 1.37 reading: a list is its first element, marked with its origin for asList(); an
    // empty list has no first element and so no value.
    Value first = v;
    bool empty_list = false;
    if (attr.is_list && v.kind() == ValueKind::kList) {
      empty_list = v.list().size == 0;
      d->lists_.push_back(v);
      uint32_t origin = static_cast<uint32_t>(d->lists_.size());
      first = empty_list || origin > Value::kMaxListOrigin
                  ? Value::Null()
                  : v.list().elems[0].WithListOrigin(origin);
    }
    if (!general.empty()) {
      first_error(d->error_, general);
      first_error(d->unsupported_lists_error_, general);
      first_error(d->first_element_error_, general);
    }
    if (attr.is_list) first_error(d->unsupported_lists_error_, unsupported);
    if (empty_list) first_error(d->first_element_error_, unsupported);

    std::string_view dom = Intern(arena, domain);
    std::string_view idv = Intern(arena, id);
    lists_group.current.push_back({Value::String(idv), v});
    d->lists_view_.index.hashes.push_back(HashQualifiedKey(dom, idv));
    d->lists_view_.index.entries.push_back({dom, idv, v});
    if (has_lists) {
      first_group.current.push_back({Value::String(idv), first});
      d->first_element_->index.hashes.push_back(HashQualifiedKey(dom, idv));
      d->first_element_->index.entries.push_back({dom, idv, first});
    }
  }
  flush(lists_group);
  d->lists_view_.attributes = BuildMap(arena, lists_group.domains, /*default_empty=*/true);
  if (has_lists) {
    flush(first_group);
    d->first_element_->attributes = BuildMap(arena, first_group.domains, /*default_empty=*/true);
  }

  // Capacities.
  Grouping caps;
  have_domain = false;
  for (const auto& [key, q] : s.caps) {
    const auto& [domain, id] = key;
    if (!have_domain || domain != current_domain) {
      flush(caps);
      current_domain = domain;
      have_domain = true;
    }
    auto* qv = arena->New<QuantityValue>(internal::MakeQuantityValue(q));
    Value v = Value::Quantity(qv);
    std::string_view dom = Intern(arena, domain);
    std::string_view idv = Intern(arena, id);
    caps.current.push_back({Value::String(idv), v});
    d->cap_.hashes.push_back(HashQualifiedKey(dom, idv));
    d->cap_.entries.push_back({dom, idv, v});
  }
  flush(caps);
  d->capacity_ = BuildMap(arena, caps.domains, /*default_empty=*/true);

  auto root = [&](const AttributeView& view) {
    std::vector<MapEntryValue> fields = {
        {Value::String("driver"), Value::String(d->driver_)},
        {Value::String("attributes"), view.attributes},
        {Value::String("capacity"), d->capacity_},
        {Value::String("allowMultipleAllocations"), Value::Bool(d->allow_multiple_allocations_)},
    };
    return BuildMap(arena, fields, /*default_empty=*/false);
  };
  d->lists_view_.root = root(d->lists_view_);
  if (has_lists) d->first_element_->root = root(*d->first_element_);
  return d;
}

const Value* DeviceInput::FindAttributeDomain(ListAttributeMode mode,
                                              std::string_view domain) const {
  return View(mode).attributes.map().FindString(domain);
}

const Value* DeviceInput::FindCapacityDomain(std::string_view domain) const {
  return capacity_.map().FindString(domain);
}

}  // namespace draplane::cel
