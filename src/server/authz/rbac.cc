#include "server/authz/rbac.h"

#include <algorithm>
#include <boost/json.hpp>

#include "common/log.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace draplane::server::authz {
namespace {

const std::vector<std::string_view>& RbacResources() {
  static const std::vector<std::string_view> resources = {
      kRolesResource, kClusterRolesResource, kRoleBindingsResource, kClusterRoleBindingsResource};
  return resources;
}

bool Contains(const std::vector<std::string>& values, std::string_view v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

std::vector<std::string> StringList(const boost::json::object& o, std::string_view key) {
  std::vector<std::string> out;
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_array()) return out;
  for (const boost::json::value& v : it->value().get_array()) {
    if (v.is_string()) out.emplace_back(v.get_string());
  }
  return out;
}

std::string String(const boost::json::object& o, std::string_view key) {
  auto it = o.find(key);
  if (it == o.end() || !it->value().is_string()) return "";
  return std::string(it->value().get_string());
}

bool SubjectMatches(const Subject& s, const auth::UserInfo& user, std::string_view binding_ns) {
  if (s.kind == "User") return s.name == user.name;
  if (s.kind == "Group") return user.InGroup(s.name);
  if (s.kind == "ServiceAccount") {
    std::string ns = s.namespace_.empty() ? std::string(binding_ns) : s.namespace_;
    return user.name == "system:serviceaccount:" + ns + ":" + s.name;
  }
  return false;
}

bool AppliesTo(const Binding& b, const auth::UserInfo& user) {
  for (const Subject& s : b.subjects) {
    if (SubjectMatches(s, user, b.namespace_)) return true;
  }
  return false;
}

const std::vector<PolicyRule>* RulesOf(const RbacSnapshot& snap, const Binding& b) {
  if (b.role_kind == "ClusterRole") {
    auto it = snap.cluster_roles.find(b.role_name);
    return it == snap.cluster_roles.end() ? nullptr : &it->second;
  }
  if (b.role_kind == "Role" && !b.namespace_.empty()) {
    auto it = snap.roles.find({b.namespace_, b.role_name});
    return it == snap.roles.end() ? nullptr : &it->second;
  }
  return nullptr;
}

}  // namespace

bool RuleAllows(const Attributes& a, const PolicyRule& rule) {
  auto verb_matches = [&] { return Contains(rule.verbs, "*") || Contains(rule.verbs, a.verb); };
  if (!a.resource_request) {
    if (!verb_matches()) return false;
    for (const std::string& url : rule.non_resource_urls) {
      if (url == "*" || url == a.path) return true;
      if (!url.empty() && url.back() == '*' &&
          a.path.rfind(std::string_view(url).substr(0, url.size() - 1), 0) == 0) {
        return true;
      }
    }
    return false;
  }
  if (!verb_matches()) return false;
  if (!Contains(rule.api_groups, "*") && !Contains(rule.api_groups, a.api_group)) return false;
  // "resource" or "resource/subresource", compared in place (no string built per rule).
  auto is_combined = [&](std::string_view r) {
    if (a.subresource.empty()) return r == a.resource;
    return r.size() == a.resource.size() + 1 + a.subresource.size() && r.starts_with(a.resource) &&
           r[a.resource.size()] == '/' && r.ends_with(a.subresource);
  };
  bool resource_matches = false;
  for (const std::string& r : rule.resources) {
    if (r == "*" || is_combined(r)) {
      resource_matches = true;
      break;
    }
    if (!a.subresource.empty() && r.size() == a.subresource.size() + 2 && r.rfind("*/", 0) == 0 &&
        r.ends_with(a.subresource)) {
      resource_matches = true;
      break;
    }
  }
  if (!resource_matches) return false;
  return rule.resource_names.empty() || Contains(rule.resource_names, a.name);
}

std::vector<PolicyRule> UncoveredRules(const std::vector<PolicyRule>& owner,
                                       const std::vector<PolicyRule>& granted) {
  std::vector<PolicyRule> out;
  auto covered = [&](const Attributes& a) {
    return std::any_of(owner.begin(), owner.end(),
                       [&](const PolicyRule& rule) { return RuleAllows(a, rule); });
  };
  for (const PolicyRule& rule : granted) {
    for (const std::string& verb : rule.verbs) {
      for (const std::string& url : rule.non_resource_urls) {
        Attributes a;
        a.verb = verb;
        a.path = url;
        if (!covered(a)) out.push_back(PolicyRule{{verb}, {}, {}, {}, {url}});
      }
      for (const std::string& group : rule.api_groups) {
        for (const std::string& resource : rule.resources) {
          Attributes a;
          a.resource_request = true;
          a.verb = verb;
          a.api_group = group;
          size_t slash = resource.find('/');
          a.resource = resource.substr(0, slash);
          if (slash != std::string::npos) a.subresource = resource.substr(slash + 1);
          if (rule.resource_names.empty()) {
            if (!covered(a)) out.push_back(PolicyRule{{verb}, {group}, {resource}, {}, {}});
            continue;
          }
          for (const std::string& name : rule.resource_names) {
            a.name = name;
            if (!covered(a)) out.push_back(PolicyRule{{verb}, {group}, {resource}, {name}, {}});
          }
        }
      }
    }
  }
  return out;
}

std::string DescribeRule(const PolicyRule& rule) {
  auto list = [](const std::vector<std::string>& items) {
    std::string out = "[";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? " \"" : "\"") + items[i] + "\"";
    return out + "]";
  };
  std::vector<std::string> parts;
  if (!rule.api_groups.empty()) parts.push_back("APIGroups:" + list(rule.api_groups));
  if (!rule.resources.empty()) parts.push_back("Resources:" + list(rule.resources));
  if (!rule.resource_names.empty()) parts.push_back("ResourceNames:" + list(rule.resource_names));
  if (!rule.non_resource_urls.empty()) {
    parts.push_back("NonResourceURLs:" + list(rule.non_resource_urls));
  }
  parts.push_back("Verbs:" + list(rule.verbs));
  std::string out = "{";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out + "}";
}

std::vector<PolicyRule> ParseRules(std::string_view json) {
  std::vector<PolicyRule> out;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return out;
  auto it = v.get_object().find("rules");
  if (it == v.get_object().end() || !it->value().is_array()) return out;
  for (const boost::json::value& r : it->value().get_array()) {
    if (!r.is_object()) continue;
    const boost::json::object& o = r.get_object();
    out.push_back(PolicyRule{StringList(o, "verbs"), StringList(o, "apiGroups"),
                             StringList(o, "resources"), StringList(o, "resourceNames"),
                             StringList(o, "nonResourceURLs")});
  }
  return out;
}

Binding ParseBinding(std::string_view json) {
  Binding b;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return b;
  const boost::json::object& o = v.get_object();
  if (auto meta = o.find("metadata"); meta != o.end() && meta->value().is_object()) {
    b.namespace_ = String(meta->value().get_object(), "namespace");
    b.name = String(meta->value().get_object(), "name");
  }
  if (auto ref = o.find("roleRef"); ref != o.end() && ref->value().is_object()) {
    b.role_kind = String(ref->value().get_object(), "kind");
    b.role_name = String(ref->value().get_object(), "name");
  }
  if (auto subjects = o.find("subjects"); subjects != o.end() && subjects->value().is_array()) {
    for (const boost::json::value& s : subjects->value().get_array()) {
      if (!s.is_object()) continue;
      b.subjects.push_back(Subject{String(s.get_object(), "kind"), String(s.get_object(), "name"),
                                   String(s.get_object(), "namespace")});
    }
  }
  return b;
}

RbacCache::RbacCache(store::Store* store) : store_(store) {
  snapshot_ = std::make_shared<const RbacSnapshot>();
}

RbacCache::~RbacCache() { Stop(); }

Status RbacCache::Load() {
  StatusOr<store::Revision> current = store_->CurrentRevision();
  if (!current.ok()) return current.status();
  std::map<std::string, std::map<store::Key, Entry>> objects;
  for (std::string_view resource : RbacResources()) {
    store::ListOptions options;
    options.revision = *current;
    auto& bucket = objects[std::string(resource)];
    while (true) {
      StatusOr<store::ListResult> page = store_->List(resource, options);
      if (!page.ok()) return page.status();
      for (const store::ObjectPtr& obj : page->objects) {
        bucket[obj->key] = Entry{obj->revision, obj->value};
      }
      if (page->continue_token.empty()) break;
      options.continue_token = page->continue_token;
    }
  }
  {
    MutexLock lock(mu_);
    objects_ = std::move(objects);
    loaded_revision_ = *current;
  }
  Rebuild();
  return Status::Ok();
}

Status RbacCache::Start() {
  if (Status s = Load(); !s.ok()) return s;
  thread_ = std::thread([this] {
    SetCurrentThreadName("rbac-watch");
    WatchLoop();
  });
  return Status::Ok();
}

void RbacCache::Stop() {
  {
    MutexLock lock(watch_mu_);
    stopping_ = true;
  }
  watch_cv_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void RbacCache::WatchLoop() {
  while (true) {
    std::vector<std::unique_ptr<store::Watcher>> watchers;
    store::Revision from;
    {
      MutexLock lock(mu_);
      from = loaded_revision_;
    }
    bool failed = false;
    for (std::string_view resource : RbacResources()) {
      store::WatchOptions options;
      options.revision = from;
      options.notify = [this] {
        {
          MutexLock lock(watch_mu_);
          watch_pending_ = true;
        }
        watch_cv_.NotifyAll();
      };
      StatusOr<std::unique_ptr<store::Watcher>> w = store_->Watch(resource, std::move(options));
      if (!w.ok()) {
        failed = true;
        break;
      }
      watchers.push_back(std::move(w).value());
    }
    while (!failed) {
      {
        MutexLock lock(watch_mu_);
        watch_cv_.Wait(lock,
                       [&]() DRAPLANE_REQUIRES(watch_mu_) { return watch_pending_ || stopping_; });
        if (stopping_) return;
        watch_pending_ = false;
      }
      bool changed = false;
      for (size_t i = 0; i < watchers.size() && !failed; ++i) {
        while (true) {
          std::vector<store::WatchEvent> events;
          Status s = watchers[i]->Poll(&events, 256);
          if (!s.ok()) {
            failed = true;
            break;
          }
          if (events.empty()) break;
          for (const store::WatchEvent& e : events) {
            if (e.type == store::WatchEvent::Type::kBookmark || e.object == nullptr) continue;
            bool deleted = e.type == store::WatchEvent::Type::kDeleted;
            Apply(RbacResources()[i], e.object->key, e.revision,
                  deleted ? nullptr : &e.object->value);
            changed = true;
          }
        }
      }
      if (changed) Rebuild();
    }
    {
      MutexLock lock(watch_mu_);
      if (stopping_) return;
    }
    log::Warning("rbac: watch ended; reloading RBAC objects");
    watchers.clear();
    while (true) {
      Status s = Load();
      if (s.ok()) break;
      log::Warning("rbac: reload failed: {}", s.ToString());
      MutexLock lock(watch_mu_);
      watch_cv_.WaitFor(lock, std::chrono::seconds(1),
                        [&]() DRAPLANE_REQUIRES(watch_mu_) { return stopping_; });
      if (stopping_) return;
    }
  }
}

void RbacCache::Apply(std::string_view resource, const store::Key& key, store::Revision revision,
                      const std::string* value) {
  MutexLock lock(mu_);
  Entry& entry = objects_[std::string(resource)][key];
  if (entry.revision > revision) return;
  entry.revision = revision;
  entry.value = value == nullptr ? std::string() : *value;
}

void RbacCache::Observe(std::string_view store_resource, const store::Object& object,
                        bool deleted) {
  if (std::find(RbacResources().begin(), RbacResources().end(), store_resource) ==
      RbacResources().end()) {
    return;
  }
  Apply(store_resource, object.key, object.revision, deleted ? nullptr : &object.value);
  Rebuild();
}

void RbacCache::Rebuild() {
  MutexLock lock(mu_);
  auto snap = std::make_shared<RbacSnapshot>();
  for (const auto& [key, entry] : objects_[std::string(kClusterRolesResource)]) {
    if (!entry.value.empty()) snap->cluster_roles[key.name] = ParseRules(entry.value);
  }
  for (const auto& [key, entry] : objects_[std::string(kRolesResource)]) {
    if (!entry.value.empty()) snap->roles[{key.ns, key.name}] = ParseRules(entry.value);
  }
  for (const auto& [key, entry] : objects_[std::string(kClusterRoleBindingsResource)]) {
    if (entry.value.empty()) continue;
    Binding b = ParseBinding(entry.value);
    b.namespace_.clear();
    snap->cluster_role_bindings.push_back(std::move(b));
  }
  for (const auto& [key, entry] : objects_[std::string(kRoleBindingsResource)]) {
    if (entry.value.empty()) continue;
    Binding b = ParseBinding(entry.value);
    b.namespace_ = key.ns;
    snap->role_bindings[key.ns].push_back(std::move(b));
  }
  snapshot_ = std::move(snap);
}

std::shared_ptr<const RbacSnapshot> RbacCache::snapshot() const {
  MutexLock lock(mu_);
  return snapshot_;
}

Result RbacAuthorizer::Authorize(const Attributes& a) const {
  if (a.user.InGroup(auth::kMastersGroup)) return {Decision::kAllow, ""};
  std::shared_ptr<const RbacSnapshot> snap = cache_->snapshot();
  for (const Binding& b : snap->cluster_role_bindings) {
    if (!AppliesTo(b, a.user)) continue;
    const std::vector<PolicyRule>* rules = RulesOf(*snap, b);
    if (rules == nullptr) continue;
    for (const PolicyRule& rule : *rules) {
      if (RuleAllows(a, rule)) return {Decision::kAllow, ""};
    }
  }
  if (!a.namespace_.empty()) {
    auto it = snap->role_bindings.find(a.namespace_);
    if (it != snap->role_bindings.end()) {
      for (const Binding& b : it->second) {
        if (!AppliesTo(b, a.user)) continue;
        const std::vector<PolicyRule>* rules = RulesOf(*snap, b);
        if (rules == nullptr) continue;
        for (const PolicyRule& rule : *rules) {
          if (RuleAllows(a, rule)) return {Decision::kAllow, ""};
        }
      }
    }
  }
  return {Decision::kNoOpinion, ""};
}

std::vector<PolicyRule> RbacAuthorizer::RulesFor(const auth::UserInfo& user,
                                                 const std::string& namespace_) const {
  std::vector<PolicyRule> out;
  if (user.InGroup(auth::kMastersGroup)) {
    out.push_back(PolicyRule{{"*"}, {"*"}, {"*"}, {}, {}});
    out.push_back(PolicyRule{{"*"}, {}, {}, {}, {"*"}});
    return out;
  }
  std::shared_ptr<const RbacSnapshot> snap = cache_->snapshot();
  auto add = [&](const Binding& b) {
    if (!AppliesTo(b, user)) return;
    if (const std::vector<PolicyRule>* rules = RulesOf(*snap, b)) {
      out.insert(out.end(), rules->begin(), rules->end());
    }
  };
  for (const Binding& b : snap->cluster_role_bindings) add(b);
  if (auto it = snap->role_bindings.find(namespace_); it != snap->role_bindings.end()) {
    for (const Binding& b : it->second) add(b);
  }
  return out;
}

std::optional<std::vector<PolicyRule>> RbacAuthorizer::RoleRules(
    std::string_view kind, std::string_view name, const std::string& namespace_) const {
  std::shared_ptr<const RbacSnapshot> snap = cache_->snapshot();
  Binding ref;
  ref.namespace_ = namespace_;
  ref.role_kind = std::string(kind);
  ref.role_name = std::string(name);
  const std::vector<PolicyRule>* rules = RulesOf(*snap, ref);
  if (rules == nullptr) return std::nullopt;
  return *rules;
}

}  // namespace draplane::server::authz
