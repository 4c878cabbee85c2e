// `draplane convert`: decode Kubernetes manifests through the object model and write them back
// as JSON or YAML (the lossless round trip of api/object.h, usable on real kubectl dumps).
#include <boost/json.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "api/codec/files.h"
#include "api/codec/json.h"
#include "api/codec/manifest.h"
#include "api/codec/stream.h"
#include "api/codec/yaml.h"
#include "api/object.h"
#include "cli/commands.h"

namespace draplane::cli {
namespace {

struct ConvertOptions {
  std::string output = "yaml";
  bool multi = false;
  std::vector<std::string> paths;
};

constexpr char kConvertFooter[] = R"(
Each PATH is a file, a directory (searched recursively for *.yaml, *.yml and *.json) or - for
standard input. Documents may be YAML (several separated by ---) or JSON; a List or *List
document stands for its items. Every object is decoded through the draplane object model and
encoded again; fields draplane does not model are kept verbatim.

One object in gives that object out. Several give a List (apiVersion: v1, kind: List, items),
or with --multi one YAML document per object (JSON: one value after another).

Problems are reported as FILE:DOC: KIND/NAME: FIELD: REASON (DOC is the document number,
with :items[N] for an item of a List); the exit code is 1 if there was any, 2 for usage or
unreadable files, and nothing is written to standard output then.)";

int RunConvert(const ConvertOptions& options) {
  StatusOr<std::vector<std::string>> files = api::codec::ExpandManifestPaths(options.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "draplane convert: %s\n", std::string(files.status().message()).c_str());
    return 2;
  }
  std::vector<boost::json::value> outputs;
  bool failed = false;
  for (const std::string& file : *files) {
    const std::string name = file == "-" ? "<stdin>" : file;
    // Streamed, so a large JSON dump is never held as text or as one document.
    Status status =
        api::codec::StreamManifestFile(file, {}, [&](api::codec::ManifestObject& manifest) {
          api::FieldErrorList errors;
          api::Object object = api::DecodeObject(manifest.value, &errors);
          if (!errors.empty()) {
            const std::string where = name + ":" + manifest.position.Label() + ": " +
                                      api::ObjectKind(object) + "/" + api::ObjectName(object) +
                                      ": ";
            for (const api::FieldError& error : errors) {
              std::fprintf(stderr, "%s%s\n", where.c_str(), error.ToString().c_str());
            }
            failed = true;
            return Status::Ok();
          }
          outputs.push_back(api::EncodeObject(object));
          return Status::Ok();
        });
    if (status.code() == StatusCode::kNotFound) {
      std::fprintf(stderr, "draplane convert: %s\n", std::string(status.message()).c_str());
      return 2;
    }
    if (!status.ok()) {
      std::fprintf(stderr, "%s:%s\n", name.c_str(), std::string(status.message()).c_str());
      failed = true;
    }
  }
  if (failed) return 1;

  const bool json = options.output == "json";
  std::string out;
  if (options.multi) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (json) {
        api::codec::AppendJson(outputs[i], {}, &out);
        out.push_back('\n');
      } else {
        if (i > 0) out += "---\n";
        api::codec::AppendYaml(outputs[i], &out);
      }
    }
  } else {
    boost::json::value result;
    if (outputs.size() == 1) {
      result = std::move(outputs[0]);
    } else {
      boost::json::array items;
      items.reserve(outputs.size());
      for (boost::json::value& v : outputs) items.push_back(std::move(v));
      result =
          boost::json::object{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
    }
    out = json ? api::codec::WriteJson(result) : api::codec::WriteYaml(result);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 2;
}

}  // namespace

void AddConvertCommand(CLI::App& app) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* cmd = app.add_subcommand(
      "convert", "Decode Kubernetes manifests and write them back as JSON or YAML");
  cmd->add_option("-o,--output", options->output, "Output format: json or yaml")
      ->check(CLI::IsMember({"json", "yaml"}))
      ->capture_default_str();
  cmd->add_flag("--multi", options->multi,
                "Write several objects as a stream of documents instead of one List");
  cmd->add_option("paths", options->paths, "Files, directories, or - for standard input")
      ->required();
  cmd->footer(kConvertFooter);
  cmd->callback([options] {
    const int code = RunConvert(*options);
    if (code != 0) throw CommandExit{code};
  });
}

}  // namespace draplane::cli
