// `draplane cel`: evaluate CEL expressions and try device selectors against real ResourceSlices.
//
//   draplane cel eval 'EXPR' [--var NAME=JSON]... [--device-json JSON] [--kubernetes-version V]
//     Evaluates EXPR and prints the result in CEL literal syntax, or `error: ...` (exit 1).
//     With --device-json the expression is compiled in the DRA selector environment of the
//     release (StoredExpressions) and `device` is the given device (a ResourceSlice `devices[]`
//     entry, plus an optional "driver" key, default "example.com"); otherwise in a generic
//     environment where each --var declares a dyn variable bound to the JSON value (numbers
//     without a fraction are ints).
//
//   draplane cel select --slices PATH... 'EXPR' [--kubernetes-version V]
//     Compiles the selector like the scheduler of the release (StoredExpressions) and evaluates
//     it against every device of every ResourceSlice in PATH (files, directories, `kubectl get
//     resourceslices -o yaml` dumps, or - for stdin), printing one line per device:
//       DRIVER/POOL/DEVICE  match | no | error: <message>
//     Exit code 0 when the selector compiles and no device errs, 1 otherwise, 2 for usage errors
//     and unreadable files.
//
// The release (default 1.36) decides how list-typed attributes read (KEP-5491): lists in 1.36,
// the first element with `asList()` for the list in 1.37, no value at all before 1.36. The
// DRAListTypeAttributes gate does not matter here: it governs what the API server accepts, not
// what the scheduler's CEL reads.
#include <boost/json.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "allocator/features.h"
#include "api/codec/files.h"
#include "api/codec/json.h"
#include "api/codec/manifest.h"
#include "api/gen/resource_v1_codec.h"
#include "api/object.h"
#include "cel/cel.h"
#include "cli/commands.h"

namespace draplane::cli {
namespace {

namespace json = boost::json;

struct EvalOptions {
  std::string expression;
  std::vector<std::string> vars;
  std::string device_json;
  std::string kubernetes_version = "1.36";
};

struct SelectOptions {
  std::string expression;
  std::vector<std::string> slices;
  std::string kubernetes_version = "1.36";
};

// The scheduler's DRA environment (StoredExpressions) of a release, or a usage error.
std::shared_ptr<const cel::Environment> ReleaseEnvironment(std::string_view command,
                                                           std::string_view version) {
  StatusOr<cel::ListAttributeMode> mode = allocator::ListAttributeModeOf(version);
  if (!mode.ok()) {
    std::fprintf(stderr, "draplane cel %.*s: --kubernetes-version: %s\n",
                 static_cast<int>(command.size()), command.data(),
                 std::string(mode.status().message()).c_str());
    return nullptr;
  }
  return cel::Environment::NewDra(
      {.env_type = cel::EnvType::kStoredExpressions, .list_attributes = *mode});
}

void PrintError(std::string_view message) {
  std::printf("error: %.*s\n", static_cast<int>(message.size()), message.data());
}

// A JSON value as a CEL value in `arena`: null, bool, int (or uint above int64), double, string,
// list, map with string keys.
cel::Value JsonToCel(const json::value& v, cel::Arena* arena) {
  switch (v.kind()) {
    case json::kind::null:
      return cel::Value::Null();
    case json::kind::bool_:
      return cel::Value::Bool(v.get_bool());
    case json::kind::int64:
      return cel::Value::Int(v.get_int64());
    case json::kind::uint64:
      if (v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
        return cel::Value::Int(static_cast<int64_t>(v.get_uint64()));
      }
      return cel::Value::Uint(v.get_uint64());
    case json::kind::double_:
      return cel::Value::Double(v.get_double());
    case json::kind::string:
      return cel::MakeString(arena, v.get_string());
    case json::kind::array: {
      std::vector<cel::Value> elems;
      for (const json::value& e : v.get_array()) elems.push_back(JsonToCel(e, arena));
      return cel::MakeList(arena, elems.data(), elems.size());
    }
    case json::kind::object: {
      std::vector<cel::MapEntryValue> entries;
      for (const json::key_value_pair& kv : v.get_object()) {
        entries.push_back({cel::MakeString(arena, kv.key()), JsonToCel(kv.value(), arena)});
      }
      return cel::MakeMap(arena, entries.data(), entries.size());
    }
  }
  return cel::Value::Null();
}

int RunEval(const EvalOptions& options) {
  cel::Activation activation;
  std::shared_ptr<const cel::DeviceInput> device;
  std::shared_ptr<const cel::Environment> env;
  if (!options.device_json.empty()) {
    if (!options.vars.empty()) {
      std::fprintf(stderr,
                   "draplane cel eval: --var cannot be combined with --device-json (the "
                   "DRA environment declares only `device`)\n");
      return 2;
    }
    StatusOr<json::value> parsed = api::codec::ParseJson(options.device_json);
    if (!parsed.ok() || !parsed->is_object()) {
      std::fprintf(
          stderr, "draplane cel eval: --device-json: %s\n",
          parsed.ok() ? "not a JSON object" : std::string(parsed.status().message()).c_str());
      return 2;
    }
    std::string driver = "example.com";
    json::object object = parsed->as_object();
    if (const json::value* d = object.if_contains("driver")) {
      if (!d->is_string()) {
        std::fprintf(stderr, "draplane cel eval: --device-json: driver must be a string\n");
        return 2;
      }
      driver = std::string(d->as_string());
      object.erase("driver");
    }
    api::resourcev1::Device api_device;
    api::FieldErrorList errors;
    api::resourcev1::Decode(object, &api_device, &errors);
    if (!errors.empty()) {
      std::fprintf(stderr, "draplane cel eval: --device-json: %s\n",
                   errors.front().ToString().c_str());
      return 2;
    }
    device = cel::DeviceInputFromApi(api_device, driver);
    env = ReleaseEnvironment("eval", options.kubernetes_version);
    if (env == nullptr) return 2;
  } else {
    cel::GenericEnvironmentOptions env_options;
    env_options.homogeneous_aggregate_literals = true;
    for (const std::string& var : options.vars) {
      size_t eq = var.find('=');
      if (eq == std::string::npos || eq == 0) {
        std::fprintf(stderr, "draplane cel eval: --var %s: want NAME=JSON\n", var.c_str());
        return 2;
      }
      std::string name = var.substr(0, eq);
      StatusOr<json::value> value = api::codec::ParseJson(var.substr(eq + 1));
      if (!value.ok()) {
        std::fprintf(stderr, "draplane cel eval: --var %s: %s\n", name.c_str(),
                     std::string(value.status().message()).c_str());
        return 2;
      }
      activation.Bind(name, JsonToCel(*value, &activation.arena()));
      env_options.variables.push_back({name, cel::Type::Dyn()});
    }
    env = cel::Environment::NewGeneric(std::move(env_options));
  }
  cel::CompileOptions compile;
  compile.require_bool_result = false;  // print whatever the expression yields
  auto program = env->Compile(options.expression, compile);
  if (!program.ok()) {
    PrintError(program.status().message());
    return 1;
  }
  cel::EvalResult result =
      device ? (*program)->Evaluate(activation, *device) : (*program)->Evaluate(activation);
  if (result.is_error()) {
    // Against a device, the error reads as the scheduler reports it (upstream's hint about
    // optional chaining on "no such key"), as `cel select` prints it.
    const std::string message(cel::ErrorMessage(result.value()));
    PrintError(device ? cel::EnhanceRuntimeError(message) : message);
    return 1;
  }
  std::printf("%s\n", cel::FormatValue(result.value()).c_str());
  return 0;
}

int RunSelect(const SelectOptions& options) {
  // The scheduler compiles with StoredExpressions (every declaration, regardless of gates).
  auto env = ReleaseEnvironment("select", options.kubernetes_version);
  if (env == nullptr) return 2;
  StatusOr<std::vector<api::codec::ManifestFile>> files =
      api::codec::CollectManifestFiles(options.slices);
  if (!files.ok()) {
    std::fprintf(stderr, "draplane cel select: %s\n",
                 std::string(files.status().message()).c_str());
    return 2;
  }
  auto program = env->Compile(options.expression);
  if (!program.ok()) {
    PrintError(program.status().message());
    return 1;
  }
  int matches = 0, misses = 0, errors = 0, unreadable = 0;
  auto evaluate = [&](const api::resourcev1::ResourceSlice& slice) {
    for (const api::resourcev1::Device& d : slice.spec.devices) {
      auto input = cel::DeviceInputFromApi(d, slice.spec.driver);
      cel::SelectorResult r = (*program)->Match(*input);
      std::string id = slice.spec.driver + "/" + slice.spec.pool.name + "/" + d.name;
      if (r.is_error()) {
        ++errors;
        std::printf("%s  error: %s\n", id.c_str(), r.error().c_str());
      } else if (r.matches()) {
        ++matches;
        std::printf("%s  match\n", id.c_str());
      } else {
        ++misses;
        std::printf("%s  no\n", id.c_str());
      }
    }
  };
  for (const api::codec::ManifestFile& file : *files) {
    StatusOr<std::vector<api::codec::ManifestObject>> objects =
        api::codec::ParseManifest(file.text);
    if (!objects.ok()) {
      std::fprintf(stderr, "draplane cel select: %s:%s\n", file.name.c_str(),
                   std::string(objects.status().message()).c_str());
      ++unreadable;
      continue;
    }
    for (const api::codec::ManifestObject& manifest : *objects) {
      api::FieldErrorList decode_errors;
      api::Object object = api::DecodeObject(manifest.value, &decode_errors);
      if (!decode_errors.empty()) {
        std::fprintf(stderr, "draplane cel select: %s:%s: %s\n", file.name.c_str(),
                     manifest.position.Label().c_str(), decode_errors.front().ToString().c_str());
        ++unreadable;
        continue;
      }
      if (auto* slice = std::get_if<api::resourcev1::ResourceSlice>(&object)) evaluate(*slice);
      if (auto* list = std::get_if<api::resourcev1::ResourceSliceList>(&object)) {
        for (const api::resourcev1::ResourceSlice& slice : list->items) evaluate(slice);
      }
    }
  }
  std::fflush(stdout);
  std::fprintf(stderr, "draplane cel select: %d devices: %d match, %d no, %d error\n",
               matches + misses + errors, matches, misses, errors);
  if (unreadable > 0) return 2;
  return errors > 0 ? 1 : 0;
}

}  // namespace

void AddCelCommand(CLI::App& app) {
  CLI::App* cel = app.add_subcommand("cel", "Evaluate CEL expressions and device selectors");
  cel->require_subcommand(1);

  auto eval = std::make_shared<EvalOptions>();
  CLI::App* eval_cmd = cel->add_subcommand(
      "eval", "Evaluate an expression; prints the value in CEL syntax or `error: ...`");
  eval_cmd->add_option("expression", eval->expression, "The CEL expression")->required();
  eval_cmd->add_option("--var", eval->vars, "NAME=JSON: bind a variable (repeatable)");
  eval_cmd->add_option("--device-json", eval->device_json,
                       "A device as JSON (a ResourceSlice devices[] entry, plus an optional "
                       "\"driver\"); compiles in the DRA selector environment");
  eval_cmd
      ->add_option("--kubernetes-version", eval->kubernetes_version,
                   "Release whose selector semantics apply (1.34 ... 1.37)")
      ->capture_default_str();
  eval_cmd->callback([eval] {
    const int code = RunEval(*eval);
    if (code != 0) throw CommandExit{code};
  });

  auto select = std::make_shared<SelectOptions>();
  CLI::App* select_cmd = cel->add_subcommand(
      "select", "Evaluate a device selector against every device of ResourceSlice manifests");
  select_cmd
      ->add_option("--slices", select->slices,
                   "Files, directories or - with ResourceSlices (e.g. kubectl get "
                   "resourceslices -o yaml)")
      ->required();
  select_cmd
      ->add_option("--kubernetes-version", select->kubernetes_version,
                   "Release whose scheduler semantics apply (1.34 ... 1.37)")
      ->capture_default_str();
  select_cmd->add_option("expression", select->expression, "The CEL selector")->required();
  select_cmd->callback([select] {
    const int code = RunSelect(*select);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
