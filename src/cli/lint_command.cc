// `draplane lint`: decode Kubernetes manifests and validate every DRA object the way the API
// server would (api/validation), printing one line per problem.
//
// Steps, for each file in path order:
//   1. Parse the file into documents (api/codec/manifest.h); a malformed file is one problem.
//   2. Decode each object (api/object.h); wrong JSON types are problems, and an object with
//      decode problems is not validated further (its fields are incomplete).
//   3. Fill in what `kubectl apply` and the API server would before validating: the namespace of
//      namespaced kinds (-n, default "default") and upstream defaulting (api/validation).
//   4. Validate: on create, or on update when --old names an object of the same kind, namespace
//      and name. Claims and taint rules that carry a status also get the status rules.
//   5. Compile every CEL selector (cel/selector_lint.h): compile and cost errors at their paths.
// Unknown kinds are problems; modelled kinds draplane does not validate (Pod, Node, ...) are
// decoded and counted in the summary, and so are kinds of the other API groups Kubernetes
// reserves for itself (a DaemonSet, RBAC: the cluster's API server checks those);
// draplane's own node / cluster profiles are checked by the agent's profile parser.
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "agent/profile.h"
#include "allocator/features.h"
#include "api/codec/files.h"
#include "api/codec/json.h"
#include "api/codec/manifest.h"
#include "api/object.h"
#include "api/validation/object_validation.h"
#include "api/validation/validation.h"
#include "cel/selector_lint.h"
#include "cli/commands.h"
#include "cli/manifest_validation.h"
#include "cli/object_ref.h"
#include "sim/cluster.h"
#include "sim/trace.h"

namespace draplane::cli {
namespace {

namespace validation = api::validation;

struct LintOptions {
  std::vector<std::string> paths;
  std::vector<std::string> old_paths;
  std::string default_namespace = "default";
  std::string feature_gates;
  std::string kubernetes_version = "1.36";
};

constexpr char kLintFooter[] = R"(
Each PATH is a file, a directory (searched recursively for *.yaml, *.yml and *.json) or - for
standard input. Every object is decoded and the DRA kinds (DeviceClass, ResourceSlice,
ResourceClaim, ResourceClaimTemplate, DeviceTaintRule) are validated with the rules, limits and
messages of the Kubernetes API server (resource.k8s.io/v1, Kubernetes 1.36 feature gates unless
--feature-gates says otherwise). CEL selectors and derived attributes compile as the API server of
--kubernetes-version compiles them (1.37 knows asList() for list attributes). Claims and taint rules that carry a status (kubectl get -o yaml
dumps) are also checked against the status rules.

With --old, an object whose kind, namespace and name match an object in the --old files is
validated as an update of it (immutable fields, allocation set once, ...).

One line per problem on standard output:
  FILE:DOC: KIND/NAME: FIELD.PATH: REASON
DOC is the 1-based document number in the file (with :items[N] for an item of a List).
Exit code: 0 when every object is valid, 1 when there is a problem, 2 for usage errors and
unreadable files. A summary goes to standard error.)";

// Values longer than this are shortened in the output (a 10 MB string is not worth printing).
constexpr size_t kMaxPrintedValue = 512;

using ObjectKey = std::tuple<std::string, std::string, std::string>;  // kind, namespace, name

// A group Kubernetes keeps for its built-in APIs (core, dotless groups such as `apps`, `*.k8s.io`)
// other than resource.k8s.io, whose kinds draplane knows (a misspelled one is a problem).
bool IsOtherBuiltinGroup(std::string_view api_version) {
  const size_t slash = api_version.find('/');
  if (slash == std::string_view::npos) return true;  // the core group: "v1"
  const std::string_view group = api_version.substr(0, slash);
  if (group == "resource.k8s.io") return false;
  return group.find('.') == std::string_view::npos || group.ends_with(".k8s.io");
}

// An update without a resourceVersion is unconditional: the API server gives it the stored
// object's before validating it (genericregistry.Store.Update), so `kubectl replace` and
// `apply` of a hand-written manifest never fail for lacking one.
void CarryResourceVersion(api::Object& object, const api::Object& old) {
  const api::metav1::ObjectMeta* old_meta = api::ObjectMetadata(old);
  if (old_meta == nullptr) return;
  std::visit(
      [&](auto& o) {
        if constexpr (requires { o.metadata.resource_version; }) {
          if (o.metadata.resource_version.empty()) {
            o.metadata.resource_version = old_meta->resource_version;
          }
        }
      },
      object);
}

std::string DisplayKind(const api::Object& object) {
  std::string kind = api::ObjectKind(object);
  return kind.empty() ? "<no kind>" : kind;
}

std::string DisplayName(const api::Object& object) {
  std::string name = api::ObjectName(object);
  if (name.empty()) return "<unnamed>";
  // Names are at most 253 bytes when valid; an absurd one is shortened (and reported).
  if (name.size() > 253) name = name.substr(0, 253) + "...";
  return name;
}

class Linter {
 public:
  Linter(const LintOptions& options, validation::Features features,
         cel::ListAttributeMode list_attributes)
      : options_(options), features_(features), list_attributes_(list_attributes) {}

  // Reads the --old files into `old_`. Problems in them are reported like any other.
  void LoadOld(const std::vector<api::codec::ManifestFile>& files) {
    for (const api::codec::ManifestFile& file : files) {
      ForEachObject(file, [&](const std::string&, api::Object object) {
        DefaultNamespace(object, options_.default_namespace);
        old_[Key(object)] = std::move(object);
      });
    }
  }

  void Lint(const std::vector<api::codec::ManifestFile>& files) {
    for (const api::codec::ManifestFile& file : files) {
      ++files_;
      ForEachObject(file, [&](const std::string& where, api::Object object) {
        ++objects_;
        DefaultNamespace(object, options_.default_namespace);
        auto it = old_.find(Key(object));
        if (it != old_.end()) CarryResourceVersion(object, it->second);
        api::FieldErrorList errors;
        if (!validation::ValidateObject(object, it == old_.end() ? nullptr : &it->second, features_,
                                        &errors)) {
          ++not_validated_[api::ObjectKind(object)];
          return;
        }
        // CEL selectors: compile and cost errors at their field paths.
        cel::SelectorLintOptions cel_options;
        cel_options.consumable_capacity = features_.consumable_capacity;
        cel_options.list_type_attributes = features_.list_type_attributes;
        cel_options.list_attributes = list_attributes_;
        for (api::FieldError& e :
             cel::LintCelSelectors(object, it == old_.end() ? nullptr : &it->second, cel_options)) {
          errors.push_back(std::move(e));
        }
        Report(where, errors);
      });
    }
  }

  int problems() const { return problems_; }

  // Input without a single document is a mistake (an empty file, the wrong stdin), as
  // `kubectl apply` says: "no objects passed to apply". An empty List is a document (a dump of a
  // cluster without such objects).
  void CheckSomethingWasRead() {
    if (documents_ == 0 && problems_ == 0) Print("no objects passed to lint");
  }

  void PrintSummary() const {
    std::string summary = "draplane lint: " + std::to_string(objects_) + " object" +
                          (objects_ == 1 ? "" : "s") + " in " + std::to_string(files_) + " file" +
                          (files_ == 1 ? "" : "s") + ", " + std::to_string(problems_) + " problem" +
                          (problems_ == 1 ? "" : "s");
    if (!not_validated_.empty()) {
      summary += " (decoded but not validated:";
      for (const auto& [kind, count] : not_validated_) {
        summary += " " + std::to_string(count) + " " + kind;
      }
      summary += ")";
    }
    std::fprintf(stderr, "%s\n", summary.c_str());
  }

 private:
  // Whether `text` has a line other than blanks, comments and document markers.
  static bool HasContent(std::string_view text) {
    while (!text.empty()) {
      const size_t end = text.find('\n');
      std::string_view line = text.substr(0, end);
      while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t')) {
        line.remove_suffix(1);
      }
      if (!line.empty() && line.front() != '#' && line != "---" && line != "...") return true;
      if (end == std::string_view::npos) break;
      text.remove_prefix(end + 1);
    }
    return false;
  }

  static ObjectKey Key(const api::Object& object) {
    return {api::ObjectKind(object), api::ObjectNamespace(object), api::ObjectName(object)};
  }

  // Parses and decodes every object of `file`, reporting parse and decode problems, and calls
  // `fn(where, object)` for each object that decoded cleanly. `where` is "FILE:DOC: KIND/NAME: ".
  template <typename Fn>
  void ForEachObject(const api::codec::ManifestFile& file, Fn fn) {
    StatusOr<std::vector<api::codec::ManifestObject>> objects =
        api::codec::ParseManifest(file.text);
    if (!objects.ok()) {
      Print(file.name + ":" + std::string(objects.status().message()));
      return;
    }
    // An empty List (a dump of nothing) is a document; a file of comments and separators is not.
    if (objects->empty() && HasContent(file.text)) ++documents_;
    for (const api::codec::ManifestObject& manifest : *objects) {
      ++documents_;
      api::FieldErrorList errors;
      api::Object object = api::DecodeObject(manifest.value, &errors);
      std::string where = file.name + ":" + manifest.position.Label() + ": " + DisplayKind(object) +
                          "/" + DisplayName(object) + ": ";
      if (std::holds_alternative<api::Unstructured>(object) && errors.empty() &&
          api::ObjectApiVersion(object) == agent::kProfileApiVersion) {
        // draplane's own documents, each checked by the parser of the command that reads it:
        // the simulator's WorkloadTrace and ClusterChange (examples/sim), else a NodeProfile /
        // ClusterProfile (examples/cluster-demo.yaml).
        const std::string kind = api::ObjectKind(object);
        Status s =
            kind == sim::kTraceKind ? sim::ParseTrace(api::codec::WriteJson(manifest.value), "",
                                                      {.unknown_fields = UnknownFieldsOf})
                                          .status()
            : kind == sim::kClusterChangeKind ? sim::ParseClusterChange(manifest.value, "").status()
                                              : agent::ParseProfileJson(manifest.value).status();
        if (!s.ok()) Print(where + std::string(s.message()));
        continue;
      }
      if (std::holds_alternative<api::Unstructured>(object) && errors.empty() &&
          IsOtherBuiltinGroup(api::ObjectApiVersion(object))) {
        ++objects_;
        ++not_validated_[api::ObjectKind(object)];
        continue;
      }
      if (std::holds_alternative<api::Unstructured>(object) && errors.empty()) {
        const std::string kind = api::ObjectKind(object);
        // The API server's wording for a kind its scheme does not know.
        errors.push_back(api::Invalid(api::FieldPath("kind"), api::RenderValue(kind),
                                      "no kind " + api::RenderValue(kind) +
                                          " is registered for version " +
                                          api::RenderValue(api::ObjectApiVersion(object))));
      }
      if (!errors.empty()) {
        Report(where, errors);
        continue;
      }
      // A field the kind does not have: what the API server's strict field validation (kubectl's
      // default) refuses, `unknown field "spec.tenants[0].weigth"`. Decoding alone drops it, and
      // a misspelled setting would silently fall back to its default.
      if (manifest.value.is_object()) {
        for (const std::string& field : UnknownFieldsOf(manifest.value.as_object())) {
          Print(where + "unknown field \"" + field + "\"");
        }
      }
      fn(where, std::move(object));
    }
  }

  void Report(const std::string& where, api::FieldErrorList& errors) {
    // Identical errors are reported once, as upstream's ErrorList.ToAggregate does.
    std::set<std::string> seen;
    for (api::FieldError& e : errors) {
      if (e.bad_value.size() > kMaxPrintedValue) {
        const size_t size = e.bad_value.size();
        e.bad_value =
            e.bad_value.substr(0, kMaxPrintedValue) + "...(" + std::to_string(size) + " bytes)";
      }
      std::string line = e.ToString();
      if (!seen.insert(line).second) continue;
      Print(where + line);
    }
  }

  void Print(const std::string& line) {
    ++problems_;
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
  }

  const LintOptions& options_;
  validation::Features features_;
  cel::ListAttributeMode list_attributes_;
  std::map<ObjectKey, api::Object> old_;
  std::map<std::string, int> not_validated_;
  int problems_ = 0;
  int documents_ = 0;  // every document read, valid or not, draplane's own kinds included
  int objects_ = 0;
  int files_ = 0;
};

int RunLint(const LintOptions& options) {
  validation::Features features;
  if (Status s = validation::ParseFeatureGates(options.feature_gates, &features); !s.ok()) {
    std::fprintf(stderr, "draplane lint: --feature-gates: %s\n", std::string(s.message()).c_str());
    return 2;
  }
  StatusOr<cel::ListAttributeMode> list_attributes =
      allocator::ListAttributeModeOf(options.kubernetes_version);
  if (!list_attributes.ok()) {
    std::fprintf(stderr, "draplane lint: --kubernetes-version: %s\n",
                 std::string(list_attributes.status().message()).c_str());
    return 2;
  }
  Linter linter(options, features, *list_attributes);
  if (!options.old_paths.empty()) {
    StatusOr<std::vector<api::codec::ManifestFile>> old =
        api::codec::CollectManifestFiles(options.old_paths);
    if (!old.ok()) {
      std::fprintf(stderr, "draplane lint: --old: %s\n",
                   std::string(old.status().message()).c_str());
      return 2;
    }
    linter.LoadOld(*old);
  }
  StatusOr<std::vector<api::codec::ManifestFile>> files =
      api::codec::CollectManifestFiles(options.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "draplane lint: %s\n", std::string(files.status().message()).c_str());
    return 2;
  }
  linter.Lint(*files);
  linter.CheckSomethingWasRead();
  // Problems first, then the summary, also when both streams go to one terminal or file.
  if (std::fflush(stdout) != 0) return 2;
  linter.PrintSummary();
  return linter.problems() > 0 ? 1 : 0;
}

}  // namespace

void AddLintCommand(CLI::App& app) {
  auto options = std::make_shared<LintOptions>();
  CLI::App* cmd =
      app.add_subcommand("lint", "Validate Kubernetes DRA manifests as the API server would");
  cmd->add_option("--old", options->old_paths,
                  "Files or directories with the current objects; matching objects in PATH are "
                  "validated as updates of them");
  cmd->add_option("-n,--namespace", options->default_namespace,
                  "Namespace for namespaced objects that do not name one")
      ->capture_default_str()
      ->check(NamespaceNameCheck("--namespace"));
  cmd->add_option("--feature-gates", options->feature_gates,
                  "Feature gates the validation depends on, e.g. "
                  "DRAConsumableCapacity=false,DRAFractionalCapacityRange=true");
  cmd->add_option("--kubernetes-version", options->kubernetes_version,
                  "Release whose API server compiles the CEL expressions (1.34 ... 1.37)")
      ->capture_default_str();
  cmd->add_option("paths", options->paths, "Files, directories, or - for standard input")
      ->required();
  cmd->footer(kLintFooter);
  cmd->callback([options] {
    const int code = RunLint(*options);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
