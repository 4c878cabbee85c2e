#include "cli/in_process_transport.h"

#include <atomic>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "client/rest_client.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/mutex.h"
#include "common/status_macros.h"

namespace draplane::cli {
namespace {

namespace http = server::http;

// An absolute point on RealClock().MonotonicNow(); absent: wait forever.
using Deadline = std::optional<Duration>;

Deadline DeadlineAfter(Duration timeout) {
  if (timeout <= Duration::zero()) return std::nullopt;
  return RealClock().MonotonicNow() + timeout;
}

// Waits on `cv` until `done()` holds (true) or `deadline` passes (false). `done` runs with the
// lock held (mark it DRAPLANE_REQUIRES).
template <typename Predicate>
bool WaitUntil(MutexLock& lock, CondVar& cv, const Deadline& deadline, Predicate done) {
  if (!deadline) {
    cv.Wait(lock, std::move(done));
    return true;
  }
  Duration left = std::max(*deadline - RealClock().MonotonicNow(), Duration::zero());
  return cv.WaitFor(lock, left, std::move(done));
}

// The body of one streamed answer: the server writes chunks (http::ResponseStream), the client
// reads them. Shared by both sides; whichever ends it first (Close, backlog overflow, Cancel)
// takes the server's on_closed callback and runs it, outside the lock, exactly once.
class Pipe final : public http::ResponseStream {
 public:
  explicit Pipe(size_t max_backlog_bytes) : max_backlog_bytes_(max_backlog_bytes) {}

  // A pipe that already holds a whole body and has ended (an answer that was not streamed).
  static std::shared_ptr<Pipe> Finished(std::string body) {
    auto pipe = std::make_shared<Pipe>(body.size());
    if (!body.empty()) pipe->Write(std::make_shared<const std::string>(std::move(body)));
    pipe->Close();
    return pipe;
  }

  bool Write(http::Chunk chunk) override {
    if (chunk == nullptr || chunk->empty()) return false;
    std::function<void()> on_closed;
    {
      MutexLock lock(mu_);
      if (ended_) return false;
      size_t backlog = queued_bytes_ + chunk->size();
      if (backlog <= max_backlog_bytes_) {
        queued_bytes_ = backlog;
        chunks_.push_back(std::move(chunk));
        // Outside the lock: a reader woken while it is held would only block on it again.
        lock.Unlock();
        cv_.NotifyAll();
        return true;
      }
      log::Warning("in-process transport: ending a stream whose reader is {} bytes behind",
                   backlog);
      on_closed = EndLocked();
    }
    if (on_closed) on_closed();
    return false;
  }

  void Close() override {
    std::function<void()> on_closed;
    {
      MutexLock lock(mu_);
      if (ended_) return;
      on_closed = EndLocked();
    }
    if (on_closed) on_closed();
  }

  void SetOnClosed(std::function<void()> on_closed) override {
    {
      MutexLock lock(mu_);
      if (!ended_) {
        on_closed_ = std::move(on_closed);
        return;
      }
    }
    on_closed();
  }

  bool open() const override { return open_.load(std::memory_order_acquire); }
  bool in_process() const override { return true; }

  // The reader's side: moves every queued chunk into `*out` (true), false at the end, Cancelled
  // after Cancel, DeadlineExceeded when `deadline` passes first.
  StatusOr<bool> Read(std::string* out, const Deadline& deadline) {
    MutexLock lock(mu_);
    if (!WaitUntil(lock, cv_, deadline, [&]() DRAPLANE_REQUIRES(mu_) {
          return cancelled_ || ended_ || !chunks_.empty();
        })) {
      return DeadlineExceededError("reading stream: timed out");
    }
    if (cancelled_) return CancelledError("watch stream cancelled");
    if (chunks_.empty()) return false;
    out->reserve(out->size() + queued_bytes_);
    for (const http::Chunk& chunk : chunks_) out->append(*chunk);
    chunks_.clear();
    queued_bytes_ = 0;
    return true;
  }

  // The reader's side: ends the stream (what is queued is dropped). Idempotent.
  void Cancel() {
    std::function<void()> on_closed;
    {
      MutexLock lock(mu_);
      if (cancelled_) return;
      cancelled_ = true;
      chunks_.clear();
      queued_bytes_ = 0;
      if (!ended_) on_closed = EndLocked();
      cv_.NotifyAll();
    }
    if (on_closed) on_closed();
  }

 private:
  // Marks the stream ended and hands out the callback to run (empty when not installed yet:
  // SetOnClosed then runs it at once).
  std::function<void()> EndLocked() DRAPLANE_REQUIRES(mu_) {
    ended_ = true;
    open_.store(false, std::memory_order_release);
    cv_.NotifyAll();
    return std::exchange(on_closed_, nullptr);
  }

  const size_t max_backlog_bytes_;
  std::atomic<bool> open_{true};
  mutable Mutex mu_;
  CondVar cv_;
  std::deque<http::Chunk> chunks_ DRAPLANE_GUARDED_BY(mu_);
  size_t queued_bytes_ DRAPLANE_GUARDED_BY(mu_) = 0;
  bool ended_ DRAPLANE_GUARDED_BY(mu_) = false;      // no more writes
  bool cancelled_ DRAPLANE_GUARDED_BY(mu_) = false;  // the reader is gone
  std::function<void()> on_closed_ DRAPLANE_GUARDED_BY(mu_);
};

// What one request is waiting for, shared by the caller and the Exchange the server holds.
struct Call {
  enum class State { kWaiting, kAnswered, kStreaming, kDropped };

  Mutex mu;
  CondVar cv;
  State state DRAPLANE_GUARDED_BY(mu) = State::kWaiting;
  bool abandoned DRAPLANE_GUARDED_BY(mu) = false;      // the caller stopped waiting (deadline)
  http::Response response DRAPLANE_GUARDED_BY(mu);     // kAnswered
  int stream_status DRAPLANE_GUARDED_BY(mu) = 0;       // kStreaming
  std::string content_type DRAPLANE_GUARDED_BY(mu);    // kStreaming
  std::shared_ptr<Pipe> pipe DRAPLANE_GUARDED_BY(mu);  // kStreaming
};

class CallExchange final : public http::Exchange {
 public:
  CallExchange(std::shared_ptr<Call> call, size_t max_backlog_bytes)
      : call_(std::move(call)), max_backlog_bytes_(max_backlog_bytes) {}

  // Unanswered (the server dropped the request, e.g. at shutdown): the caller gets Unavailable.
  ~CallExchange() override {
    if (answered_.exchange(true)) return;
    {
      MutexLock lock(call_->mu);
      call_->state = Call::State::kDropped;
    }
    call_->cv.NotifyAll();
  }

  void Respond(http::Response response) override {
    if (answered_.exchange(true)) return;
    {
      MutexLock lock(call_->mu);
      call_->state = Call::State::kAnswered;
      call_->response = std::move(response);
    }
    call_->cv.NotifyAll();
  }

  std::shared_ptr<http::ResponseStream> StartStream(int status,
                                                    std::vector<http::Header> headers) override {
    auto pipe = std::make_shared<Pipe>(max_backlog_bytes_);
    if (answered_.exchange(true)) {
      pipe->Close();
      return pipe;
    }
    bool abandoned;
    {
      MutexLock lock(call_->mu);
      abandoned = call_->abandoned;
      if (!abandoned) {
        call_->state = Call::State::kStreaming;
        call_->stream_status = status;
        call_->content_type = std::string(http::FindHeader(headers, "Content-Type"));
        call_->pipe = pipe;
      }
    }
    if (abandoned) {
      // Nobody will read: the stream ends at once and the server's on_closed runs when it is
      // installed.
      pipe->Cancel();
    } else {
      call_->cv.NotifyAll();
    }
    return pipe;
  }

 private:
  std::shared_ptr<Call> call_;
  const size_t max_backlog_bytes_;
  std::atomic<bool> answered_{false};
};

class InProcessStream final : public client::StreamingResponse {
 public:
  InProcessStream(int status, std::shared_ptr<Pipe> pipe)
      : status_(status), pipe_(std::move(pipe)) {}
  ~InProcessStream() override { pipe_->Cancel(); }

  int status() const override { return status_; }
  StatusOr<bool> Read(std::string* out) override { return pipe_->Read(out, std::nullopt); }
  void Cancel() override { pipe_->Cancel(); }

 private:
  const int status_;
  const std::shared_ptr<Pipe> pipe_;
};

class InProcessTransport final : public client::Transport {
 public:
  InProcessTransport(http::Handler dispatch, InProcessTransportOptions options)
      : dispatch_(std::move(dispatch)), options_(std::move(options)) {}

  StatusOr<client::HttpResponse> RoundTrip(const client::HttpRequest& request) override {
    Deadline deadline = DeadlineAfter(request.timeout);
    // `call` before `lock`, which must unlock the call's mutex first.
    DRAPLANE_ASSIGN_OR_RETURN(std::shared_ptr<Call> call, Send(request));
    MutexLock lock(call->mu);
    DRAPLANE_RETURN_IF_ERROR(AwaitAnswer(lock, *call, deadline, request));
    client::HttpResponse response;
    if (call->state == Call::State::kAnswered) {
      response.status = call->response.status;
      response.content_type = std::string(http::FindHeader(call->response.headers, "Content-Type"));
      response.body = std::move(call->response.body);
      return response;
    }
    // A streamed answer, read to its end as an HTTP client reads a chunked body.
    response.status = call->stream_status;
    response.content_type = call->content_type;
    std::shared_ptr<Pipe> pipe = call->pipe;
    lock.Unlock();
    while (true) {
      StatusOr<bool> more = pipe->Read(&response.body, deadline);
      if (!more.ok()) {
        pipe->Cancel();
        return DeadlineExceededError(request.method + " " + request.target + ": timed out");
      }
      if (!*more) return response;
    }
  }

  StatusOr<std::unique_ptr<client::StreamingResponse>> Stream(
      const client::HttpRequest& request) override {
    Deadline deadline = DeadlineAfter(request.timeout);
    // `call` before `lock`, which must unlock the call's mutex first.
    DRAPLANE_ASSIGN_OR_RETURN(std::shared_ptr<Call> call, Send(request));
    MutexLock lock(call->mu);
    DRAPLANE_RETURN_IF_ERROR(AwaitAnswer(lock, *call, deadline, request));
    if (call->state == Call::State::kAnswered) {
      return std::unique_ptr<client::StreamingResponse>(std::make_unique<InProcessStream>(
          call->response.status, Pipe::Finished(std::move(call->response.body))));
    }
    return std::unique_ptr<client::StreamingResponse>(
        std::make_unique<InProcessStream>(call->stream_status, call->pipe));
  }

 private:
  // Builds the server's Request from `request` and dispatches it.
  StatusOr<std::shared_ptr<Call>> Send(const client::HttpRequest& request) {
    http::Request out;
    out.method = request.method;
    out.target = request.target;
    std::string_view target = out.target;
    size_t question = target.find('?');
    std::optional<std::string> path = http::PercentDecode(target.substr(0, question), false);
    if (!path) {
      return InvalidArgumentError("malformed percent-encoding in the path of " + request.target);
    }
    out.path = std::move(*path);
    if (question != std::string_view::npos) out.query = std::string(target.substr(question + 1));
    out.headers.reserve(request.headers.size() + 4);
    out.headers.push_back({"User-Agent", options_.user_agent});
    out.headers.push_back({"Accept", "application/json"});
    if (!options_.bearer_token.empty()) {
      out.headers.push_back({"Authorization", "Bearer " + options_.bearer_token});
    }
    // Like the HTTP transport, the request's own headers replace the defaults of the same name.
    for (const auto& [name, value] : request.headers) SetHeader(&out.headers, name, value);
    if (!request.body.empty() || request.method == "POST" || request.method == "PUT" ||
        request.method == "PATCH") {
      if (!request.content_type.empty()) {
        SetHeader(&out.headers, "Content-Type", request.content_type);
      }
      out.body = request.body;
    }
    out.remote_address = options_.remote_address;

    auto call = std::make_shared<Call>();
    dispatch_(std::move(out),
              std::make_shared<CallExchange>(call, options_.max_stream_backlog_bytes));
    return call;
  }

  static void SetHeader(std::vector<http::Header>* headers, const std::string& name,
                        const std::string& value) {
    for (http::Header& header : *headers) {
      if (EqualsIgnoringCase(header.name, name)) {
        header.value = value;
        return;
      }
    }
    headers->push_back({name, value});
  }

  static bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      char x = a[i] >= 'A' && a[i] <= 'Z' ? static_cast<char>(a[i] - 'A' + 'a') : a[i];
      char y = b[i] >= 'A' && b[i] <= 'Z' ? static_cast<char>(b[i] - 'A' + 'a') : b[i];
      if (x != y) return false;
    }
    return true;
  }

  // Waits for the server's answer (whole or streamed). On the deadline the call is abandoned:
  // a stream the server starts later is ended at once.
  static Status AwaitAnswer(MutexLock& lock, Call& call, const Deadline& deadline,
                            const client::HttpRequest& request) DRAPLANE_REQUIRES(call.mu) {
    if (!WaitUntil(lock, call.cv, deadline, [&]() DRAPLANE_REQUIRES(call.mu) {
          return call.state != Call::State::kWaiting;
        })) {
      call.abandoned = true;
      return DeadlineExceededError(request.method + " " + request.target + ": timed out");
    }
    if (call.state == Call::State::kDropped) {
      return UnavailableError(request.method + " " + request.target +
                              ": the server dropped the request unanswered");
    }
    return Status::Ok();
  }

  const http::Handler dispatch_;
  const InProcessTransportOptions options_;
};

}  // namespace

StatusOr<std::unique_ptr<client::Transport>> NewInProcessTransport(
    server::http::Handler dispatch, InProcessTransportOptions options) {
  if (!dispatch) return InvalidArgumentError("in-process transport: no dispatcher");
  return std::unique_ptr<client::Transport>(
      std::make_unique<InProcessTransport>(std::move(dispatch), std::move(options)));
}

StatusOr<std::unique_ptr<client::ApiClient>> NewEmbeddedClient(
    const server::ClientCredentials& credentials, const std::string& user_agent) {
  if (credentials.dispatch) {
    StatusOr<std::unique_ptr<client::Transport>> transport = NewInProcessTransport(
        credentials.dispatch, {.bearer_token = credentials.token, .user_agent = user_agent});
    if (!transport.ok()) return transport.status();
    return client::NewRestClient(std::shared_ptr<client::Transport>(std::move(*transport)));
  }
  client::RestConfig config;
  config.server = credentials.server_url;
  config.ca_pem = credentials.ca_pem;
  config.bearer_token = credentials.token;
  config.user_agent = user_agent;
  return client::CreateRestClient(config);
}

}  // namespace draplane::cli
