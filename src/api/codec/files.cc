#include "api/codec/files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <system_error>

namespace draplane::api::codec {
namespace {

bool IsManifestExtension(const std::filesystem::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

StatusOr<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgumentError(path.string() + ": cannot open file");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return InvalidArgumentError(path.string() + ": read error");
  return std::move(buf).str();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandManifestPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& arg : paths) {
    if (arg == "-") {
      out.push_back(arg);
      continue;
    }
    std::error_code ec;
    const std::filesystem::path path(arg);
    const std::filesystem::file_status status = std::filesystem::status(path, ec);
    if (ec || !std::filesystem::exists(status)) {
      return NotFoundError(arg + ": no such file or directory");
    }
    if (!std::filesystem::is_directory(status)) {
      out.push_back(arg);
      continue;
    }
    std::vector<std::filesystem::path> found;
    std::filesystem::recursive_directory_iterator it(
        path, std::filesystem::directory_options::follow_directory_symlink, ec);
    for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && IsManifestExtension(it->path())) found.push_back(it->path());
    }
    if (ec) return InvalidArgumentError(arg + ": " + ec.message());
    std::sort(found.begin(), found.end());
    for (const std::filesystem::path& file : found) out.push_back(file.string());
  }
  return out;
}

StatusOr<std::vector<ManifestFile>> CollectManifestFiles(const std::vector<std::string>& paths) {
  StatusOr<std::vector<std::string>> files = ExpandManifestPaths(paths);
  if (!files.ok()) return files.status();
  std::vector<ManifestFile> out;
  for (const std::string& file : *files) {
    if (file == "-") {
      std::string text((std::istreambuf_iterator<char>(std::cin)),
                       std::istreambuf_iterator<char>());
      out.push_back(ManifestFile{"<stdin>", std::move(text)});
      continue;
    }
    StatusOr<std::string> text = ReadFile(file);
    if (!text.ok()) return text.status();
    out.push_back(ManifestFile{file, std::move(text).value()});
  }
  return out;
}

}  // namespace draplane::api::codec
