// The metadata fields the server's lifecycle workers read from a stored object (the garbage
// collector's index, lifecycle.h; decision retention, decision_retention.h), read without
// building a DOM: every write of every object passes through the first, so it reads only
// `metadata`, which stored objects write before their spec and status, and stops there.
//
// Non-string values where strings belong are skipped, as the DOM accessors (json_util.h) skip
// them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace draplane::server::lifecycle {

struct OwnerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  // Whether the owner's foreground deletion waits for this dependent.
  bool block_owner_deletion = false;
  bool operator==(const OwnerRef&) const = default;
};

struct StoredMetadata {
  std::string uid;
  std::string creation_timestamp;
  std::string deletion_timestamp;
  std::vector<std::string> finalizers;
  std::vector<OwnerRef> owners;
};

// Reads `value`'s metadata into `out`. False when `value` is not a JSON object, or is not valid
// JSON up to the end of its metadata.
bool ReadStoredMetadata(std::string_view value, StoredMetadata* out);

}  // namespace draplane::server::lifecycle
