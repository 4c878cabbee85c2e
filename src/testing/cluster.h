// Test helpers for the scheduler, the controllers and the node agent: the real API server
// in-process (test_api.h) with builders for the objects a scheduling scenario needs, and waiting
// on API state without sleeping.
//
// Test-only (linked into test binaries, never into draplane).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "api/gen/core_v1_types.h"
#include "api/gen/resource_v1_types.h"
#include "client/informer.h"
#include "client/typed.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "testing/test_api.h"

namespace draplane::testing {

namespace rv1 = api::resourcev1;

// A device for a slice: name plus string attributes in the slice's driver domain.
struct DeviceSpec {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string parent;  // MIG: counter set consumed (empty: none)
  int64_t memory_slices = 0;
};

class Cluster {
 public:
  Cluster();
  ~Cluster();

  TestApi& api() { return *api_; }
  ManualClock& clock() { return clock_; }

  void Namespace(const std::string& name);
  void Node(const std::string& name, std::map<std::string, std::string> labels = {},
            std::map<std::string, std::string> allocatable = {});
  void Class(const std::string& name, const std::string& expression,
             const std::string& extended_resource = "");
  void Slice(const std::string& node, const std::string& driver,
             const std::vector<DeviceSpec>& devices);
  // A claim asking for `count` devices of `device_class` (optional CEL selector).
  rv1::ResourceClaim ClaimSpec(const std::string& name, const std::string& device_class,
                               int64_t count = 1, const std::string& selector = "");
  void Claim(const rv1::ResourceClaim& claim);
  void Template(const std::string& name, const rv1::ResourceClaimSpec& spec);
  // A pod using the named claims (`resourceClaimName`) and templates (`tmpl:` prefix).
  api::corev1::Pod PodSpec(const std::string& name, const std::vector<std::string>& claims = {});
  void Pod(const api::corev1::Pod& pod);

  // Blocks until `done` holds for the API's pods and claims (re-evaluated on every change), or
  // fails after 60 s of real time (a guard against hangs, not a timing assertion).
  bool WaitUntil(const std::function<bool()>& done);

  StatusOr<api::corev1::Pod> GetPod(const std::string& name);
  StatusOr<rv1::ResourceClaim> GetClaim(const std::string& name);
  std::vector<rv1::ResourceClaim> Claims();
  std::vector<api::corev1::Pod> Pods();
  std::vector<api::corev1::Event> Events();

  std::string ns = "default";

 private:
  ManualClock clock_;
  std::unique_ptr<TestApi> api_;
  std::unique_ptr<client::Informer<api::corev1::Pod>> pod_watch_;
  std::unique_ptr<client::Informer<rv1::ResourceClaim>> claim_watch_;
  Mutex mu_;
  CondVar cv_;
  uint64_t changes_ DRAPLANE_GUARDED_BY(mu_) = 0;
};

}  // namespace draplane::testing
