#include "server/testing/test_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

namespace draplane::server::testing {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

StatusOr<int> Dial(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int e = errno;
    ::close(fd);
    return UnavailableError(std::string("connect: ") + std::strerror(e));
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

Status SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return UnavailableError(std::string("send: ") + std::strerror(errno));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string BuildRequest(const std::string& method, const std::string& target,
                         const std::vector<std::pair<std::string, std::string>>& headers,
                         const std::string& body) {
  std::string out = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  out += "\r\n";
  out += body;
  return out;
}

// Reads until `buffer` holds a full header block; returns its end offset.
StatusOr<size_t> ReadHeaders(int fd, std::string& buffer) {
  while (true) {
    size_t end = buffer.find("\r\n\r\n");
    if (end != std::string::npos) return end + 4;
    char chunk[8192];
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return UnavailableError("connection closed before the response headers");
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

void ParseHeaders(std::string_view block, int* status,
                  std::vector<std::pair<std::string, std::string>>* headers) {
  size_t line_end = block.find("\r\n");
  std::string_view status_line = block.substr(0, line_end);
  size_t space = status_line.find(' ');
  *status = std::atoi(std::string(status_line.substr(space + 1, 3)).c_str());
  block.remove_prefix(line_end + 2);
  while (!block.empty()) {
    line_end = block.find("\r\n");
    std::string_view line = block.substr(0, line_end);
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      headers->emplace_back(std::string(line.substr(0, colon)), std::string(value));
    }
    if (line_end == std::string_view::npos) break;
    block.remove_prefix(line_end + 2);
  }
}

// Decodes complete chunks from `raw` into `out`; returns true when the final chunk was seen.
bool DecodeChunks(std::string& raw, std::string& out) {
  while (true) {
    size_t line_end = raw.find("\r\n");
    if (line_end == std::string::npos) return false;
    size_t size = std::strtoul(raw.substr(0, line_end).c_str(), nullptr, 16);
    if (size == 0) {
      raw.clear();
      return true;
    }
    if (raw.size() < line_end + 2 + size + 2) return false;
    out.append(raw, line_end + 2, size);
    raw.erase(0, line_end + 2 + size + 2);
  }
}

}  // namespace

std::string TestResponse::Header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

StatusOr<std::unique_ptr<TestConnection>> TestConnection::Connect(uint16_t port) {
  StatusOr<int> fd = Dial(port);
  if (!fd.ok()) return fd.status();
  return std::unique_ptr<TestConnection>(new TestConnection(*fd));
}

TestConnection::~TestConnection() { ::close(fd_); }

StatusOr<TestResponse> TestConnection::Do(
    const std::string& method, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body) {
  // Sends while watching for an early answer (a server refusing a large body answers before
  // reading it), as curl and Go's client do.
  std::string request = BuildRequest(method, target, headers, body);
  std::string_view pending = request;
  while (!pending.empty()) {
    pollfd p{fd_, POLLIN | POLLOUT, 0};
    if (::poll(&p, 1, 30'000) <= 0) return DeadlineExceededError("send timed out");
    if (p.revents & POLLIN) break;
    ssize_t n = ::send(fd_, pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      break;  // the server closed its side; read what it answered
    }
    pending.remove_prefix(static_cast<size_t>(n));
  }
  StatusOr<size_t> header_end = ReadHeaders(fd_, buffer_);
  if (!header_end.ok()) return header_end.status();
  TestResponse response;
  ParseHeaders(std::string_view(buffer_).substr(0, *header_end), &response.status,
               &response.headers);
  buffer_.erase(0, *header_end);
  auto read_more = [&]() -> Status {
    char chunk[65536];
    ssize_t n;
    do {
      n = ::recv(fd_, chunk, sizeof(chunk), 0);
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return UnavailableError("connection closed inside the response body");
    buffer_.append(chunk, static_cast<size_t>(n));
    return Status::Ok();
  };
  if (EqualsIgnoreCase(response.Header("Transfer-Encoding"), "chunked")) {
    while (!DecodeChunks(buffer_, response.body)) {
      if (Status s = read_more(); !s.ok()) return s;
    }
  } else {
    size_t length = std::strtoul(response.Header("Content-Length").c_str(), nullptr, 10);
    while (buffer_.size() < length) {
      if (Status s = read_more(); !s.ok()) return s;
    }
    response.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
  }
  return response;
}

StatusOr<std::unique_ptr<WatchStream>> WatchStream::Open(
    uint16_t port, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers) {
  StatusOr<int> fd = Dial(port);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<WatchStream> stream(new WatchStream(*fd));
  if (Status s = SendAll(*fd, BuildRequest("GET", target, headers, "")); !s.ok()) return s;
  std::string buffer;
  StatusOr<size_t> header_end = ReadHeaders(*fd, buffer);
  if (!header_end.ok()) return header_end.status();
  std::vector<std::pair<std::string, std::string>> response_headers;
  ParseHeaders(std::string_view(buffer).substr(0, *header_end), &stream->status_,
               &response_headers);
  stream->raw_ = buffer.substr(*header_end);
  if (stream->status_ != 200) {
    stream->error_body_ = stream->raw_;
    stream->ended_ = true;
  } else {
    stream->Decode(&stream->ready_);  // body bytes that came with the headers
  }
  ::fcntl(*fd, F_SETFL, ::fcntl(*fd, F_GETFL) | O_NONBLOCK);
  return stream;
}

WatchStream::~WatchStream() { Close(); }

void WatchStream::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ended_ = true;
}

void WatchStream::Decode(std::vector<std::string>* lines) {
  if (DecodeChunks(raw_, pending_)) ended_ = true;
  size_t start = 0;
  while (true) {
    size_t newline = pending_.find('\n', start);
    if (newline == std::string::npos) break;
    lines->push_back(pending_.substr(start, newline - start));
    start = newline + 1;
  }
  pending_.erase(0, start);
}

bool WatchStream::Pump(std::vector<std::string>* lines) {
  for (std::string& line : ready_) lines->push_back(std::move(line));
  ready_.clear();
  if (fd_ < 0) return false;
  while (!ended_) {
    char chunk[65536];
    ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      Decode(lines);
      ended_ = true;
      break;
    }
    raw_.append(chunk, static_cast<size_t>(n));
  }
  Decode(lines);
  return !ended_;
}

bool WatchStream::WaitLines(std::vector<std::string>* lines, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t before = lines->size();
  Pump(lines);
  while (lines->size() == before && !ended_) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
    Pump(lines);
  }
  return !ended_;
}

void PollStreams(const std::vector<WatchStream*>& streams, std::chrono::milliseconds timeout,
                 const std::function<void(size_t, std::vector<std::string>&)>& on_lines) {
  std::vector<pollfd> fds;
  std::vector<size_t> index;
  bool buffered = false;
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i] == nullptr) continue;
    if (streams[i]->has_buffered_lines()) {
      std::vector<std::string> lines;
      streams[i]->Pump(&lines);
      if (!lines.empty()) on_lines(i, lines);
      buffered = true;
    }
    if (streams[i]->ended() || streams[i]->fd() < 0) continue;
    fds.push_back(pollfd{streams[i]->fd(), POLLIN, 0});
    index.push_back(i);
  }
  if (fds.empty()) return;
  int ready = ::poll(fds.data(), fds.size(), buffered ? 0 : static_cast<int>(timeout.count()));
  if (ready <= 0) return;
  for (size_t k = 0; k < fds.size(); ++k) {
    if (fds[k].revents == 0) continue;
    std::vector<std::string> lines;
    streams[index[k]]->Pump(&lines);
    if (!lines.empty()) on_lines(index[k], lines);
  }
}

void RaiseFileLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

bool Eventually(const std::function<bool()>& done) {
  for (int i = 0; i < 3000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace draplane::server::testing
