// The dashboard's files, embedded at build time (cmake/EmbedFiles.cmake writes the definitions).
#pragma once

#include <cstddef>

namespace draplane::server::dashboard::internal {

struct Asset {
  const char* path;  // relative to assets/, e.g. "index.html"
  const unsigned char* data;
  size_t size;
};

extern const Asset kAssets[];
extern const int kAssetCount;

}  // namespace draplane::server::dashboard::internal
