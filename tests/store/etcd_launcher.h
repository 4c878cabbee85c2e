// Starts a real etcd (the Debian etcd-server package, /usr/bin/etcd; $DRAPLANE_ETCD overrides)
// for tests: one member on free loopback ports with its data in a given directory. The process
// is stopped by its PID when the launcher is destroyed.
//
// Readiness is polled on etcd's plain-HTTP /health endpoint (--listen-metrics-urls), so the
// same check works when the client port speaks TLS.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace draplane::store::testing {

struct EtcdTlsFiles {
  std::string ca_file;    // CA that signed the server and client certificates
  std::string cert_file;  // server certificate (SAN 127.0.0.1)
  std::string key_file;   // server key
};

class EtcdProcess {
 public:
  // Starts etcd with its data under `dir` (created if needed) and waits until it is healthy.
  // With `tls`, clients must connect over TLS and present a certificate signed by its CA.
  static StatusOr<std::unique_ptr<EtcdProcess>> Start(const std::string& dir,
                                                      const EtcdTlsFiles* tls = nullptr);
  // Stops etcd (SIGTERM, then waits for it).
  ~EtcdProcess();
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  // "127.0.0.1:PORT", for etcd:// URLs.
  const std::string& endpoint() const { return endpoint_; }

  // SIGKILLs etcd and reaps it.
  void Kill();
  // Starts etcd again on the same ports and data; waits until it is healthy.
  Status Restart();

 private:
  EtcdProcess() = default;
  Status Launch();
  Status WaitHealthy();

  std::string dir_;
  bool tls_ = false;
  EtcdTlsFiles tls_files_;
  int client_port_ = 0;
  int peer_port_ = 0;
  int metrics_port_ = 0;
  std::string endpoint_;
  pid_t pid_ = -1;
};

}  // namespace draplane::store::testing
