// draplane.dev/v1alpha1 PodExplanations as `draplane serve` serves them (ServePodExplanations
// over the real API server, in-process): the explanation tree of a pending Pod, the viewer's
// authorization (the Pod's own get), that a device held by another namespace's claim is shown
// without its holder, the errors of a Pod that does not exist or a verb that is not served, and
// the limit on explanations in flight.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <thread>

#include "allocator/features.h"
#include "cli/commands.h"
#include "client/resource.h"
#include "common/check.h"
#include "common/mutex.h"
#include "testing/test_api.h"

namespace draplane::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const client::ResourceType kPodExplanations{.group = "draplane.dev",
                                            .version = "v1alpha1",
                                            .resource = "podexplanations",
                                            .kind = "PodExplanation",
                                            .namespaced = true};

const client::ResourceType kRoles{.group = "rbac.authorization.k8s.io",
                                  .version = "v1",
                                  .resource = "roles",
                                  .kind = "Role",
                                  .namespaced = true};
const client::ResourceType kRoleBindings{.group = "rbac.authorization.k8s.io",
                                         .version = "v1",
                                         .resource = "rolebindings",
                                         .kind = "RoleBinding",
                                         .namespaced = true};

// The client's known resources, and the RBAC ones it does not model.
const client::ResourceType& Resource(std::string_view group, std::string_view resource) {
  if (resource == "roles") return kRoles;
  if (resource == "rolebindings") return kRoleBindings;
  const client::ResourceType* r = client::FindResource(group, resource);
  DRAPLANE_CHECK(r != nullptr);
  return *r;
}

void Create(client::ApiClient& api, std::string_view group, std::string_view resource,
            const std::string& ns, std::string_view json) {
  client::ApiRequest request;
  request.verb = client::Verb::kCreate;
  request.resource = &Resource(group, resource);
  request.namespace_ = ns;
  request.body = boost::json::parse(json);
  StatusOr<boost::json::value> created = api.Do(request);
  ASSERT_TRUE(created.ok()) << created.status().ToString() << " " << json;
}

StatusOr<boost::json::value> Explain(client::ApiClient& api, const std::string& ns,
                                     const std::string& name,
                                     client::Verb verb = client::Verb::kGet) {
  client::ApiRequest request;
  request.verb = verb;
  request.resource = &kPodExplanations;
  request.namespace_ = ns;
  request.name = verb == client::Verb::kGet ? name : "";
  return api.Do(request);
}

// One node with one GPU, held by a claim of team-b; a Pod of team-a waits for a GPU.
class PodExplanationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Create(api_, "", "nodes", "",
           R"({"metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
               "status": {"allocatable": {"pods": "110", "cpu": "8", "memory": "32Gi"},
                          "capacity": {"pods": "110", "cpu": "8", "memory": "32Gi"}}})");
    Create(api_, "resource.k8s.io", "deviceclasses", "",
           R"({"metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression":
               "device.driver == 'gpu.example.com'"}}]}})");
    Create(api_, "resource.k8s.io", "resourceslices", "",
           R"({"metadata": {"name": "n1-gpu"}, "spec": {"driver": "gpu.example.com",
               "nodeName": "n1", "pool": {"name": "n1", "generation": 1,
               "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]}})");
    const std::string claim_spec =
        R"("spec": {"devices": {"requests": [{"name": "gpu", "exactly":
           {"deviceClassName": "gpu"}}]}})";
    Create(api_, "resource.k8s.io", "resourceclaims", "team-b",
           R"({"metadata": {"name": "secret-training-run"}, )" + claim_spec + "}");
    client::ApiRequest status;
    status.verb = client::Verb::kPatch;
    status.resource = &Resource("resource.k8s.io", "resourceclaims");
    status.namespace_ = "team-b";
    status.name = "secret-training-run";
    status.subresource = "status";
    status.body = boost::json::parse(
        R"({"status": {"allocation": {"devices": {"results": [{"request": "gpu",
            "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}}}})");
    StatusOr<boost::json::value> allocated = api_.Do(status);
    ASSERT_TRUE(allocated.ok()) << allocated.status().ToString();

    Create(api_, "resource.k8s.io", "resourceclaims", "team-a",
           R"({"metadata": {"name": "want-gpu"}, )" + claim_spec + "}");
    Create(api_, "", "pods", "team-a",
           R"({"metadata": {"name": "trainer"}, "spec": {"containers": [{"name": "c",
               "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
               "resourceClaims": [{"name": "gpu", "resourceClaimName": "want-gpu"}]}})");
    Create(api_, "", "pods", "team-b",
           R"({"metadata": {"name": "other"}, "spec": {"containers": [{"name": "c",
               "image": "busybox"}]}})");
    // alice is team-a's tenant (draplane:tenant bound in team-a only).
    Create(api_, "rbac.authorization.k8s.io", "rolebindings", "team-a",
           R"({"metadata": {"name": "alice"}, "roleRef": {"apiGroup":
               "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "draplane:tenant"},
               "subjects": [{"kind": "User", "name": "alice"}]})");
  }

  void Serve() {
    StatusOr<allocator::Features> features = allocator::DefaultFeatures("1.36");
    ASSERT_TRUE(features.ok());
    ASSERT_TRUE(ServePodExplanations(api_.server(), *features).ok());
  }

  draplane::testing::TestApi api_{{.namespaces = {"team-a", "team-b"}}};
};

TEST_F(PodExplanationsTest, ExplainsAPendingPodToItsTenant) {
  Serve();
  std::unique_ptr<client::ApiClient> alice = api_.ClientAs("alice", {"system:authenticated"});
  StatusOr<boost::json::value> got = Explain(*alice, "team-a", "trainer");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const boost::json::object& o = got->as_object();
  EXPECT_EQ(o.at("apiVersion"), "draplane.dev/v1alpha1");
  EXPECT_EQ(o.at("kind"), "PodExplanation");
  EXPECT_EQ(o.at("metadata").at("namespace"), "team-a");
  EXPECT_EQ(o.at("metadata").at("name"), "trainer");
  const boost::json::object& e = o.at("status").as_object();
  EXPECT_EQ(e.at("pod"), "team-a/trainer");
  EXPECT_EQ(e.at("phase"), "Pending");
  ASSERT_EQ(e.at("claims").as_array().size(), 1u);
  EXPECT_EQ(e.at("claims").at(0).at("claim"), "want-gpu");
  EXPECT_EQ(e.at("claims").at(0).at("state"), "not allocated");
  ASSERT_EQ(e.at("nodes").as_array().size(), 1u);
  const boost::json::value& n1 = e.at("nodes").at(0);
  EXPECT_EQ(n1.at("node"), "n1");
  EXPECT_EQ(n1.at("fits"), false);
  // The tree: node -> claim -> request -> candidate device and why it was passed over.
  const boost::json::value& request = n1.at("devices").at("claims").at(0).at("requests").at(0);
  EXPECT_EQ(request.at("name"), "gpu");
  const boost::json::value& candidate = request.at("candidates").at(0);
  EXPECT_EQ(candidate.at("device"), "gpu-0");
  EXPECT_EQ(candidate.at("status"), "already-allocated");
  // Held, but not by whom: nothing of team-b's claim reaches team-a's tenant.
  std::string body = boost::json::serialize(*got);
  EXPECT_THAT(body, Not(HasSubstr("team-b")));
  EXPECT_THAT(body, Not(HasSubstr("secret-training-run")));
  EXPECT_THAT(std::string(e.at("summary").as_string()), HasSubstr("0/1 nodes are available"));
}

TEST_F(PodExplanationsTest, NeedsThePodItselfAndAnswersUpstreamsErrors) {
  Serve();
  std::unique_ptr<client::ApiClient> alice = api_.ClientAs("alice", {"system:authenticated"});
  // team-b is not alice's: RBAC refuses the explanation there (403, which the client reads as
  // FailedPrecondition).
  StatusOr<boost::json::value> other = Explain(*alice, "team-b", "other");
  ASSERT_EQ(other.status().code(), StatusCode::kFailedPrecondition) << other.status().ToString();
  EXPECT_THAT(std::string(other.status().message()),
              HasSubstr(R"(User "alice" cannot get resource "podexplanations")"));

  // bob may get explanations but not Pods: the explanation says no more than the Pod would.
  Create(api_, "rbac.authorization.k8s.io", "roles", "team-a",
         R"({"metadata": {"name": "explanations-only"}, "rules": [{"apiGroups":
             ["draplane.dev"], "resources": ["podexplanations"], "verbs": ["get"]}]})");
  Create(api_, "rbac.authorization.k8s.io", "rolebindings", "team-a",
         R"({"metadata": {"name": "bob"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
             "kind": "Role", "name": "explanations-only"},
             "subjects": [{"kind": "User", "name": "bob"}]})");
  std::unique_ptr<client::ApiClient> bob = api_.ClientAs("bob", {"system:authenticated"});
  StatusOr<boost::json::value> refused = Explain(*bob, "team-a", "trainer");
  ASSERT_EQ(refused.status().code(), StatusCode::kFailedPrecondition)
      << refused.status().ToString();
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr(R"(User "bob" cannot get resource "pods")"));

  StatusOr<boost::json::value> missing = Explain(*alice, "team-a", "nobody");
  ASSERT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr(R"(pods "nobody" not found)"));

  // Get only: a list is 405.
  StatusOr<boost::json::value> list = Explain(api_, "team-a", "", client::Verb::kList);
  EXPECT_FALSE(list.ok());
  EXPECT_THAT(list.status().ToString(), HasSubstr("not supported"));
}

TEST_F(PodExplanationsTest, UnavailableUntilServed) {
  StatusOr<boost::json::value> got = Explain(api_, "team-a", "trainer");
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable) << got.status().ToString();
}

// Two explanations at once (ServingLimits::max_pod_explanations_in_flight); a third is 429.
TEST_F(PodExplanationsTest, RefusesMoreThanTheLimitInFlight) {
  Mutex mu;
  CondVar changed;
  int running = 0;
  bool release = false;
  api_.server().ServePodExplanations(
      [&](const std::string&, const std::string&) -> StatusOr<std::string> {
        MutexLock lock(mu);
        ++running;
        changed.NotifyAll();
        changed.Wait(lock, [&] { return release; });
        return std::string(R"({"pod": "team-a/trainer"})");
      });
  std::vector<std::thread> threads;
  std::vector<StatusOr<boost::json::value>> answers(2, InternalError("not answered"));
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] { answers[i] = Explain(api_, "team-a", "trainer"); });
  }
  {
    MutexLock lock(mu);
    changed.Wait(lock, [&] { return running == 2; });
  }
  StatusOr<boost::json::value> third = Explain(api_, "team-a", "trainer");
  EXPECT_EQ(third.status().code(), StatusCode::kResourceExhausted) << third.status().ToString();
  EXPECT_THAT(std::string(third.status().message()), HasSubstr("too many pod explanations"));
  {
    MutexLock lock(mu);
    release = true;
    changed.NotifyAll();
  }
  for (std::thread& t : threads) t.join();
  for (const auto& a : answers) {
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->at("status").at("pod"), "team-a/trainer");
  }
}

}  // namespace
}  // namespace draplane::cli
