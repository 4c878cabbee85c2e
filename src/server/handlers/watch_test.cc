// Unit tests of the watch manager's delivery paths: which thread forwards a store event to a
// watch stream (server/handlers/watch.h).
#include "server/handlers/watch.h"

#include <gtest/gtest.h>

#include <chrono>

#include "common/clock.h"
#include "common/mutex.h"
#include "store/memory/memory_store.h"

namespace draplane::server::handlers {
namespace {

// A stream that records what it is sent; `in_process` as the embedded components' streams.
class RecordingStream final : public http::ResponseStream {
 public:
  explicit RecordingStream(bool in_process) : in_process_(in_process) {}
  bool Write(http::Chunk chunk) override {
    MutexLock lock(mu_);
    text_ += *chunk;
    cv_.NotifyAll();
    return true;
  }
  void Close() override {}
  void SetOnClosed(std::function<void()>) override {}
  bool open() const override { return true; }
  bool in_process() const override { return in_process_; }

  std::string text() {
    MutexLock lock(mu_);
    return text_;
  }
  // Waits (real time, at most 10 s) until the text holds `needle`.
  bool WaitFor(std::string_view needle) {
    MutexLock lock(mu_);
    return cv_.WaitFor(lock, std::chrono::seconds(10), [&]() DRAPLANE_REQUIRES(mu_) {
      return text_.find(needle) != std::string::npos;
    });
  }

 private:
  const bool in_process_;
  Mutex mu_;
  CondVar cv_;
  std::string text_ DRAPLANE_GUARDED_BY(mu_);
};

class StreamExchange final : public http::Exchange {
 public:
  explicit StreamExchange(std::shared_ptr<RecordingStream> stream) : stream_(std::move(stream)) {}
  void Respond(http::Response) override { ADD_FAILURE() << "a watch answered without a stream"; }
  std::shared_ptr<http::ResponseStream> StartStream(int, std::vector<http::Header>) override {
    return stream_;
  }

 private:
  std::shared_ptr<RecordingStream> stream_;
};

// Holds the pool's only worker from construction until released (at the latest when destroyed,
// which waits for the worker to let go).
class BusyWorker {
 public:
  explicit BusyWorker(internal::ThreadPool& pool) {
    pool.Post([this] {
      MutexLock lock(mu_);
      state_ = State::kHeld;
      cv_.NotifyAll();
      cv_.Wait(lock, [this]() DRAPLANE_REQUIRES(mu_) { return state_ == State::kReleased; });
      state_ = State::kDone;
      cv_.NotifyAll();
    });
    MutexLock lock(mu_);
    cv_.Wait(lock, [this]() DRAPLANE_REQUIRES(mu_) { return state_ == State::kHeld; });
  }
  ~BusyWorker() {
    Release();
    MutexLock lock(mu_);
    cv_.Wait(lock, [this]() DRAPLANE_REQUIRES(mu_) { return state_ == State::kDone; });
  }
  void Release() {
    MutexLock lock(mu_);
    if (state_ == State::kHeld) state_ = State::kReleased;
    cv_.NotifyAll();
  }

 private:
  enum class State { kQueued, kHeld, kReleased, kDone };
  Mutex mu_;
  CondVar cv_;
  State state_ DRAPLANE_GUARDED_BY(mu_) = State::kQueued;
};

class WatchDeliveryTest : public ::testing::Test {
 protected:
  WatchDeliveryTest()
      : store_(store::NewMemoryStore()),
        pool_(1),
        manager_(store_.get(), &pool_, RealClock(), {}),
        pods_(Registry::Default().Find("", "v1", "pods")) {}
  ~WatchDeliveryTest() override {
    manager_.Shutdown();
    pool_.Shutdown();
  }

  std::shared_ptr<RecordingStream> Watch(bool in_process, std::string_view label_selector = "") {
    WatchSpec spec;
    spec.resource = pods_;
    spec.namespace_ = "default";
    if (!label_selector.empty()) spec.labels = api::labels::Parse(label_selector).value();
    auto stream = std::make_shared<RecordingStream>(in_process);
    manager_.Serve(std::move(spec), std::make_shared<StreamExchange>(stream));
    return stream;
  }

  void CreatePod(const std::string& name) {
    std::string pod = R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
                      R"(","namespace":"default","labels":{"app":"a"}}})";
    ASSERT_TRUE(store_->Create(store::Key{pods_->StoreResource(), "default", name}, pod).ok());
  }

  std::unique_ptr<store::Store> store_;
  internal::ThreadPool pool_;
  WatchManager manager_;
  const ResourceInfo* pods_;
};

TEST_F(WatchDeliveryTest, InProcessStreamsGetEventsOnTheWritingThreadEvenWhenWorkersAreBusy) {
  ASSERT_NE(pods_, nullptr);
  std::shared_ptr<RecordingStream> stream = Watch(/*in_process=*/true);
  BusyWorker busy(pool_);
  CreatePod("p1");
  // The memory store notifies on the writing thread: the line is there when Create returns.
  EXPECT_NE(stream->text().find(R"({"type":"ADDED","object":{"kind":"Pod")"), std::string::npos)
      << stream->text();
  EXPECT_NE(stream->text().find(R"("name":"p1")"), std::string::npos);
}

TEST_F(WatchDeliveryTest, NetworkAndSelectedStreamsGetEventsFromAWorker) {
  ASSERT_NE(pods_, nullptr);
  std::shared_ptr<RecordingStream> network = Watch(/*in_process=*/false);
  // Judging a selector parses the object: too much for the writing thread.
  std::shared_ptr<RecordingStream> selected = Watch(/*in_process=*/true, "app=a");
  BusyWorker busy(pool_);
  CreatePod("p1");
  EXPECT_EQ(network->text().find("p1"), std::string::npos);
  EXPECT_EQ(selected->text().find("p1"), std::string::npos);
  busy.Release();
  EXPECT_TRUE(network->WaitFor(R"("name":"p1")")) << network->text();
  EXPECT_TRUE(selected->WaitFor(R"("name":"p1")")) << selected->text();
}

}  // namespace
}  // namespace draplane::server::handlers
