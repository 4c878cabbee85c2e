#include "etcd_launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace draplane::store::testing {
namespace {

// A port the kernel considers free right now on 127.0.0.1.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// True when GET /health on 127.0.0.1:port answers {"health":"true"}.
bool Healthy(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(port);
  bool healthy = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      std::string response;
      char buffer[1024];
      ssize_t n;
      while ((n = read(fd, buffer, sizeof(buffer))) > 0) response.append(buffer, n);
      healthy = response.find("\"health\":\"true\"") != std::string::npos;
    }
  }
  close(fd);
  return healthy;
}

}  // namespace

StatusOr<std::unique_ptr<EtcdProcess>> EtcdProcess::Start(const std::string& dir,
                                                          const EtcdTlsFiles* tls) {
  std::unique_ptr<EtcdProcess> process(new EtcdProcess());
  process->dir_ = dir;
  if (tls != nullptr) {
    process->tls_ = true;
    process->tls_files_ = *tls;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  Status last;
  // A port picked as free may be taken before etcd binds it; try a few sets.
  for (int attempt = 0; attempt < 3; ++attempt) {
    process->client_port_ = FreePort();
    process->peer_port_ = FreePort();
    process->metrics_port_ = FreePort();
    process->endpoint_ = "127.0.0.1:" + std::to_string(process->client_port_);
    last = process->Launch();
    if (last.ok()) return process;
    process->Kill();
  }
  return last;
}

Status EtcdProcess::Launch() {
  const char* override_path = getenv("DRAPLANE_ETCD");
  const std::string binary = override_path != nullptr ? override_path : "/usr/bin/etcd";
  const std::string scheme = tls_ ? "https://" : "http://";
  const std::string client_url = scheme + endpoint_;
  const std::string peer_url = "http://127.0.0.1:" + std::to_string(peer_port_);
  std::vector<std::string> args = {
      binary,
      "--name=draplane-test",
      "--data-dir=" + dir_ + "/data",
      "--listen-client-urls=" + client_url,
      "--advertise-client-urls=" + client_url,
      "--listen-peer-urls=" + peer_url,
      "--initial-advertise-peer-urls=" + peer_url,
      "--initial-cluster=draplane-test=" + peer_url,
      "--listen-metrics-urls=http://127.0.0.1:" + std::to_string(metrics_port_),
  };
  if (tls_) {
    args.push_back("--cert-file=" + tls_files_.cert_file);
    args.push_back("--key-file=" + tls_files_.key_file);
    args.push_back("--trusted-ca-file=" + tls_files_.ca_file);
    args.push_back("--client-cert-auth=true");
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string log_path = dir_ + "/etcd.log";
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return UnavailableError("cannot open " + log_path);
  pid_ = fork();
  if (pid_ == 0) {
    // Child: only async-signal-safe calls until exec.
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(log_fd);
  if (pid_ < 0) return UnavailableError("fork failed");
  return WaitHealthy();
}

Status EtcdProcess::WaitHealthy() {
  // Readiness poll (not synchronisation by sleeping): ask /health until etcd answers, it
  // exits, or 60 seconds pass.
  for (int i = 0; i < 3000; ++i) {
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return UnavailableError("etcd exited during start-up; see " + dir_ + "/etcd.log");
    }
    if (Healthy(metrics_port_)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return UnavailableError("etcd did not become healthy; see " + dir_ + "/etcd.log");
}

void EtcdProcess::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

Status EtcdProcess::Restart() {
  Kill();
  return Launch();
}

EtcdProcess::~EtcdProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
}

}  // namespace draplane::store::testing
