// The child of the store crash tests (crash_test.cc): writes to a store as fast as it can from
// several threads and logs every acknowledged write on stdout, until it is killed.
//
// Usage: store_crash_writer STORE_URL THREADS RUN
// Thread t creates "core/pods crash/r<RUN>-t<t>-<i>" for i = 1, 2, ... with value "v<i>", and
// after every create also updates "crash/r<RUN>-t<t>-0" (created first with "u0") to "u<i>". Each
// acknowledged write is logged as one line:
//   C <revision> <name>        a create
//   U <revision> <name> <i>    an update of t-0 to "u<i>"
// A line is written (one write(2), atomic on a pipe) only after the store acknowledged the write.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "store/store.h"

namespace {

std::mutex log_mu;

void Log(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mu);
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(STDOUT_FILENO, line.data() + done, line.size() - done);
    if (n <= 0) _exit(3);  // The parent is gone.
    done += n;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace draplane;
  using namespace draplane::store;
  if (argc != 4) {
    fprintf(stderr, "usage: %s STORE_URL THREADS RUN\n", argv[0]);
    return 2;
  }
  StatusOr<std::unique_ptr<Store>> opened = OpenStore(argv[1]);
  if (!opened.ok()) {
    fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  Store& store = **opened;
  const int threads = std::atoi(argv[2]);
  const std::string run = argv[3];
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&store, &run, t] {
      const std::string base = "r" + run + "-t" + std::to_string(t) + "-";
      const Key counter{"core/pods", "crash", base + "0"};
      StatusOr<ObjectPtr> started = store.Create(counter, "u0");
      if (!started.ok()) {
        fprintf(stderr, "create counter: %s\n", started.status().ToString().c_str());
        _exit(1);
      }
      for (int i = 1;; ++i) {
        const std::string name = base + std::to_string(i);
        StatusOr<ObjectPtr> created =
            store.Create(Key{"core/pods", "crash", name}, "v" + std::to_string(i));
        if (!created.ok()) {
          fprintf(stderr, "create: %s\n", created.status().ToString().c_str());
          _exit(1);
        }
        Log("C " + std::to_string((*created)->revision) + " " + name + "\n");
        StatusOr<ObjectPtr> updated = store.Update(counter, "u" + std::to_string(i));
        if (!updated.ok()) {
          fprintf(stderr, "update: %s\n", updated.status().ToString().c_str());
          _exit(1);
        }
        Log("U " + std::to_string((*updated)->revision) + " " + counter.name + " " +
            std::to_string(i) + "\n");
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  return 0;
}
