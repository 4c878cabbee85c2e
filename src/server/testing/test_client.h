// A small plain-HTTP/1.1 client over POSIX sockets for the server's tests (test-only library
// draplane_server_testing). It speaks just enough HTTP for the API server: requests with a body
// and Content-Length, responses with Content-Length or chunked bodies, and watch streams read
// line by line (`WatchStream`), many of them driven by one thread through `PollStreams`.
//
// Thread-safety: a TestConnection or WatchStream belongs to one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace draplane::server::testing {

struct TestResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // The first header named `name` (case-insensitive), or empty.
  std::string Header(std::string_view name) const;
};

// One keep-alive connection to 127.0.0.1:port.
class TestConnection {
 public:
  static StatusOr<std::unique_ptr<TestConnection>> Connect(uint16_t port);
  ~TestConnection();

  // Sends a request and reads the whole response. `headers` are sent as given (Host and
  // Content-Length are added).
  StatusOr<TestResponse> Do(const std::string& method, const std::string& target,
                            const std::vector<std::pair<std::string, std::string>>& headers,
                            const std::string& body = "");

 private:
  explicit TestConnection(int fd) : fd_(fd) {}
  int fd_;
  std::string buffer_;
};

// A streamed response (a watch) read as lines.
class WatchStream {
 public:
  // Sends a GET and reads the status line and headers. The status of a non-200 answer is in
  // `status()` with its body in `error_body()`.
  static StatusOr<std::unique_ptr<WatchStream>> Open(
      uint16_t port, const std::string& target,
      const std::vector<std::pair<std::string, std::string>>& headers);
  ~WatchStream();

  int status() const { return status_; }
  const std::string& error_body() const { return error_body_; }
  int fd() const { return fd_; }

  // Reads what the socket has now (non-blocking) and moves complete lines to `lines`. Returns
  // false once the stream has ended (final chunk or connection closed).
  bool Pump(std::vector<std::string>* lines);
  // Blocks until at least one line is available or `timeout` passes; appends lines. Returns
  // false when the stream ended.
  bool WaitLines(std::vector<std::string>* lines, std::chrono::milliseconds timeout);
  bool ended() const { return ended_; }
  // Lines already received (with the response headers) but not yet handed out.
  bool has_buffered_lines() const { return !ready_.empty(); }
  void Close();

 private:
  explicit WatchStream(int fd) : fd_(fd) {}
  void Decode(std::vector<std::string>* lines);

  int fd_;
  int status_ = 0;
  std::string error_body_;
  std::string raw_;                 // undecoded chunked bytes
  std::string pending_;             // decoded body bytes not yet a full line
  std::vector<std::string> ready_;  // lines decoded before anyone asked
  bool ended_ = false;
};

// Waits until any of `streams` is readable (or `timeout`), then pumps the readable ones.
// `on_lines(index, lines)` is called for each stream that produced lines.
void PollStreams(const std::vector<WatchStream*>& streams, std::chrono::milliseconds timeout,
                 const std::function<void(size_t, std::vector<std::string>&)>& on_lines);

// Raises the soft open-file limit to the hard limit (many watch connections in one process).
void RaiseFileLimit();

// Polls `done` until it holds, for the work of a server's background threads; false after 30 s
// of real time (a guard against hangs, not a timed assertion).
bool Eventually(const std::function<bool()>& done);

}  // namespace draplane::server::testing
