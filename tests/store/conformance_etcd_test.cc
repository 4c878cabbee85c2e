// The conformance suite against a real etcd: one etcd for the whole program (started on free
// loopback ports in a temporary directory, stopped by PID at the end); each test gets its own
// key prefix, so tests see only their own keys. Plus the etcd-only TLS test, with its own etcd.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "conformance.h"
#include "etcd_launcher.h"
#include "testing/temp_dir.h"

namespace draplane::store::testing {

using ::draplane::testing::TempDir;

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

namespace draplane::store::testing {
namespace {

// Runs a command (no shell); true when it exits with 0. Its output goes to `log`.
bool Run(std::vector<std::string> args, const std::string& log) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl(1).
bool MakeCertificates(const TempDir& dir, const std::string& ca_name) {
  const std::string openssl = "/usr/bin/openssl";
  const std::string log = dir.File("openssl.log");
  auto file = [&](const std::string& name) { return dir.File(name); };
  {
    std::ofstream server_ext(file("server.ext"));
    // etcd's JSON gateway dials etcd's own gRPC server with the server certificate as its
    // client certificate, so with --client-cert-auth that certificate needs clientAuth too.
    server_ext << "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n";
    std::ofstream client_ext(file("client.ext"));
    client_ext << "extendedKeyUsage=clientAuth\n";
  }
  const std::vector<std::string> ec_key = {"-newkey", "ec", "-pkeyopt",
                                           "ec_paramgen_curve:prime256v1", "-nodes"};
  auto with = [](std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  if (!Run(with({openssl, "req", "-x509", "-days", "1", "-subj", "/CN=" + ca_name, "-keyout",
                 file(ca_name + ".key"), "-out", file(ca_name + ".crt")},
                ec_key),
           log)) {
    return false;
  }
  for (const std::string name : {"server", "client"}) {
    if (!Run(with({openssl, "req", "-subj", "/CN=" + name, "-keyout", file(name + ".key"), "-out",
                   file(name + ".csr")},
                  ec_key),
             log) ||
        !Run({openssl, "x509", "-req", "-days", "1", "-in", file(name + ".csr"), "-CA",
              file(ca_name + ".crt"), "-CAkey", file(ca_name + ".key"), "-CAcreateserial", "-out",
              file(name + ".crt"), "-extfile", file(name + ".ext")},
             log)) {
      return false;
    }
  }
  return true;
}

TEST(EtcdTlsTest, TheStoreSpeaksMutualTlsAndRefusesUntrustedPeers) {
  TempDir dir;
  ASSERT_TRUE(MakeCertificates(dir, "ca")) << "openssl failed; see " << dir.File("openssl.log");
  const EtcdTlsFiles files{dir.File("ca.crt"), dir.File("server.crt"), dir.File("server.key")};
  StatusOr<std::unique_ptr<EtcdProcess>> etcd = EtcdProcess::Start(dir.File("etcd"), &files);
  ASSERT_TRUE(etcd.ok()) << etcd.status().ToString();
  const std::string base =
      "etcd://" + (*etcd)->endpoint() + "?prefix=/tls/&cacert=" + dir.File("ca.crt");

  StatusOr<std::unique_ptr<Store>> store =
      OpenStore(base + "&cert=" + dir.File("client.crt") + "&key=" + dir.File("client.key"));
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  StatusOr<std::unique_ptr<Watcher>> watcher = (*store)->Watch("core/pods", {});
  ASSERT_TRUE(watcher.ok()) << watcher.status().ToString();
  StatusOr<ObjectPtr> created = (*store)->Create(Key{"core/pods", "ns", "a"}, "over tls");
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ((*(*store)->Get(Key{"core/pods", "ns", "a"}))->value, "over tls");
  StatusOr<WatchEvent> event = (*watcher)->Next();
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  EXPECT_EQ(event->revision, (*created)->revision);

  // Without a client certificate etcd refuses the handshake.
  EXPECT_EQ(OpenStore(base).status().code(), StatusCode::kUnavailable);
  // A server whose certificate another CA signed is not trusted.
  TempDir other;
  ASSERT_TRUE(MakeCertificates(other, "other-ca"));
  EXPECT_EQ(OpenStore("etcd://" + (*etcd)->endpoint() + "?cacert=" + other.File("other-ca.crt") +
                      "&cert=" + other.File("client.crt") + "&key=" + other.File("client.key"))
                .status()
                .code(),
            StatusCode::kUnavailable);
}

}  // namespace
}  // namespace draplane::store::testing

namespace draplane::store::testing {
namespace {

// Several API servers on one etcd (issue 6): each has its own store on the same prefix.
TEST(EtcdSharedPrefixTest, TwoStoresOnOnePrefixActAsOne) {
  ASSERT_NE(shared, nullptr);
  const std::string url = "etcd://" + shared->etcd->endpoint() + "?prefix=/shared/";
  StatusOr<std::unique_ptr<Store>> a = OpenStore(url);
  StatusOr<std::unique_ptr<Store>> b = OpenStore(url);
  ASSERT_TRUE(a.ok() && b.ok());
  StatusOr<std::unique_ptr<Watcher>> watch_b = (*b)->Watch("core/pods", {});
  ASSERT_TRUE(watch_b.ok());

  StatusOr<ObjectPtr> created = (*a)->Create(Key{"core/pods", "ns", "x"}, "from a");
  ASSERT_TRUE(created.ok());
  StatusOr<WatchEvent> seen = (*watch_b)->Next();
  ASSERT_TRUE(seen.ok());
  EXPECT_EQ(seen->object->value, "from a");
  EXPECT_EQ(seen->revision, (*created)->revision);

  // Compare-and-swap holds across the two: a stale writer loses.
  ASSERT_TRUE((*b)->Update(Key{"core/pods", "ns", "x"}, "from b", {(*created)->revision}).ok());
  EXPECT_EQ(
      (*a)->Update(Key{"core/pods", "ns", "x"}, "stale", {(*created)->revision}).status().code(),
      StatusCode::kConflict);
  EXPECT_EQ((*(*a)->Get(Key{"core/pods", "ns", "x"}))->value, "from b");
  EXPECT_EQ((*b)->Create(Key{"core/pods", "ns", "x"}, "again").status().code(),
            StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace draplane::store::testing
