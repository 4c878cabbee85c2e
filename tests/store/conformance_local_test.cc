// The conformance suite against the in-process backends: memory:// and sqlite://.
#include <atomic>
#include <memory>
#include <string>

#include "conformance.h"
#include "testing/temp_dir.h"

namespace draplane::store::testing {

using ::draplane::testing::TempDir;

namespace {

TempDir& Dir() {
  static TempDir* dir = new TempDir();
  return *dir;
}

// Removes the shared temporary directory when the test program ends.
class TempDirCleanup : public ::testing::Environment {
 public:
  void TearDown() override { delete &Dir(); }
};
const ::testing::Environment* const kCleanup =
    ::testing::AddGlobalTestEnvironment(new TempDirCleanup());

INSTANTIATE_TEST_SUITE_P(
    Local, StoreConformanceTest,
    ::testing::Values(
        Backend{"memory",
                [](const StoreOptions& options) { return OpenStore("memory://", options); }},
        Backend{"sqlite",
                [](const StoreOptions& options) {
                  static std::atomic<int> counter{0};
                  return OpenStore(
                      "sqlite://" + Dir().File("store-" + std::to_string(counter++) + ".db"),
                      options);
                }}),
    BackendName);

}  // namespace
}  // namespace draplane::store::testing
