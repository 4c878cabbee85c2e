// Building an Explanation from a search (docs/design/allocator.md §10).
//
// Thread-safety: one recorder per Allocate call.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "allocator/explanation.h"
#include "allocator/internal/problem.h"
#include "allocator/internal/search.h"
#include "allocator/internal/snapshot_state.h"

namespace draplane::allocator::internal {

// Remembers, per (key, device), the first reason the search gave and whether the device was
// ever chosen.
class ExplainRecorder : public SearchObserver {
 public:
  ExplainRecorder(size_t num_keys, size_t num_devices);
  void Rejected(uint32_t key, DeviceIndex device, Reason reason,
                const std::string& detail) override;
  void Chosen(uint32_t key, DeviceIndex device) override;
  void PolicyRejected(uint32_t key, DeviceIndex device, const PolicyRejection& rejection) override;

  const std::pair<Reason, std::string>& First(uint32_t key, DeviceIndex device) const {
    return first_[key][device];
  }
  // The policy code of a first rejection by a policy ("" otherwise).
  std::string_view PolicyCode(uint32_t key, DeviceIndex device) const;
  // Whether the search chose `device` for `key` at some point (kept or given up again).
  bool WasChosen(uint32_t key, DeviceIndex device) const { return chosen_[key][device]; }

 private:
  std::vector<std::vector<std::pair<Reason, std::string>>> first_;
  std::map<std::pair<uint32_t, DeviceIndex>, std::string> policy_codes_;
  std::vector<std::vector<bool>> chosen_;
};

// Static information about a request key that the problem does not carry.
struct KeyInfo {
  std::string allocation_mode;
  int64_t count = 0;
};

struct ExplainInputs {
  const Problem* problem = nullptr;
  const std::vector<GatheredPool>* pools = nullptr;
  std::string node;
  std::vector<KeyInfo> keys;                  // aligned with problem->keys
  const ExplainRecorder* recorder = nullptr;  // null when the search did not run
  const SearchResult* result = nullptr;       // null when the search did not run
  // "allocated", "unsatisfiable" or "node-error" (with its message).
  std::string outcome;
  std::string error;
};

Explanation BuildExplanation(const ExplainInputs& inputs);

// Gives an explanation built for other claims of the same specs (the per-node cache) the names
// of `claims` ("namespace/name", in claim order), and its summary the same words.
void RenameClaims(Explanation& explanation, const std::vector<std::string>& claims);

// The explanation status of a search reason.
CandidateStatus StatusOf(Reason reason);

}  // namespace draplane::allocator::internal
