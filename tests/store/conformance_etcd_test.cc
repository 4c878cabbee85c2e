// The conformance suite against a real etcd: one etcd for the whole program (started on free
// loopback ports in a temporary directory, stopped by PID at the end); each test gets its own
// key prefix, so tests see only their own keys.
#include <atomic>
#include <memory>
#include <string>

#include "conformance.h"
#include "etcd_launcher.h"
#include "temp_dir.h"

namespace draplane::store::testing {
namespace {

struct SharedEtcd {
  TempDir dir;
  std::unique_ptr<EtcdProcess> etcd;
};

SharedEtcd* shared = nullptr;

class EtcdEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    shared = new SharedEtcd();
    StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start(shared->dir.path());
    ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
    shared->etcd = std::move(*etcd);
  }
  void TearDown() override {
    delete shared;
    shared = nullptr;
  }
};
const ::testing::Environment* const kEtcd =
    ::testing::AddGlobalTestEnvironment(new EtcdEnvironment());

StatusOr<std::unique_ptr<Store>> OpenFresh(const StoreOptions& options) {
  if (shared == nullptr || shared->etcd == nullptr) return UnavailableError("etcd did not start");
  static std::atomic<int> counter{0};
  return OpenStore(
      "etcd://" + shared->etcd->endpoint() + "?prefix=/test-" + std::to_string(counter++) + "/",
      options);
}

INSTANTIATE_TEST_SUITE_P(Etcd, StoreConformanceTest, ::testing::Values(Backend{"etcd", OpenFresh}),
                         BackendName);

}  // namespace
}  // namespace draplane::store::testing
