// A tiny HTTP(S) server for the client's unit tests: loopback, a free port, one thread per
// connection, scripted answers. Test-only (linked into test binaries, never into the library).
//
// Thread-safety: the handler runs on connection threads; Requests() is safe from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace draplane::client::internal {

struct TestRequest {
  std::string method;
  std::string target;
  std::string body;
  std::string content_type;
  std::string authorization;
  int connection_index = 0;  // which accepted connection carried it (0-based)
};

// Writes a streamed (chunked) body. Returned by the handler through TestResponse::stream.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  // Writes one chunk; false when the client went away.
  virtual bool Write(const std::string& chunk) = 0;
};

struct TestResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body{};
  // When set, the response is chunked and this function produces the chunks.
  std::function<void(ChunkWriter&)> stream{};
  // Close the connection after this response (announced with `Connection: close`).
  bool close = false;
  // Close the connection after this response without announcing it, as a server dropping an idle
  // keep-alive connection does.
  bool drop = false;
};

// Self-signed TLS material for 127.0.0.1 (a CA that signs a server and a client certificate).
struct TestPki {
  std::string ca_pem;
  std::string server_cert_pem;
  std::string server_key_pem;
  std::string client_cert_pem;  // CN "tester", O "testers"
  std::string client_key_pem;
};
TestPki MakeTestPki();

class TestServer {
 public:
  using Handler = std::function<TestResponse(const TestRequest&)>;

  // Plain HTTP when `pki` is null; HTTPS otherwise (client certificates are requested and, if
  // sent, must chain to the test CA).
  explicit TestServer(Handler handler, const TestPki* pki = nullptr);
  ~TestServer();

  // "http://127.0.0.1:PORT" or "https://127.0.0.1:PORT".
  std::string url() const;
  std::vector<TestRequest> Requests() const;
  // Number of connections accepted so far.
  int connections() const { return connections_.load(); }
  // The common name of the last verified client certificate ("" if none).
  std::string last_client_cn() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<int> connections_{0};
};

}  // namespace draplane::client::internal
