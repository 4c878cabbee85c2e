// The store conformance suite (tests/store/conformance.cc), run against every backend.
//
// A test binary instantiates the suite with INSTANTIATE_TEST_SUITE_P(..., StoreConformanceTest,
// ::testing::Values(Backend{...})). Each test opens a fresh, empty store through
// `Backend::open` and must not assume anything about revision numbers beyond the contract
// (etcd revisions are global to the cluster, so they are neither dense nor start at 1).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "store/store.h"

namespace draplane::store::testing {

struct Backend {
  std::string name;
  // Opens a fresh, empty store. Called once per test (and again for stores opened alongside).
  std::function<StatusOr<std::unique_ptr<Store>>(const StoreOptions& options)> open;
};

inline std::ostream& operator<<(std::ostream& out, const Backend& backend) {
  return out << backend.name;
}

inline std::string BackendName(const ::testing::TestParamInfo<Backend>& info) {
  return info.param.name;
}

class StoreConformanceTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override;
  std::unique_ptr<Store> Open(const StoreOptions& options = {});

  std::unique_ptr<Store> store_;
};

}  // namespace draplane::store::testing
