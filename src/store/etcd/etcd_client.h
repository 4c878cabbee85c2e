// A client for etcd v3's JSON gateway (the grpc-gateway every etcd 3.4 server serves on its
// client port): unary POSTs such as /v3/kv/range and /v3/kv/txn, and the streaming /v3/watch.
// docs/design/store.md explains why the store speaks JSON over HTTP/1.1 instead of gRPC.
//
// The client keeps a pool of keep-alive connections, fails over to the next endpoint when one
// cannot be reached, and speaks TLS when given a CA file. Boost.Beast stays inside
// etcd_client.cc.
//
// Thread-safety: Call() is safe for concurrent use (each call borrows its own connection).
// A WatchStream is driven by one thread (Run) and may be closed from any other (Close).
#pragma once

#include <boost/json/object.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace draplane::store::internal {

struct EtcdEndpoint {
  std::string host;
  std::string port;
};

// Parses "host:port[,host:port...]"; InvalidArgument when an entry has no host or port.
StatusOr<std::vector<EtcdEndpoint>> ParseEtcdEndpoints(std::string_view list);

struct EtcdClientOptions {
  std::vector<EtcdEndpoint> endpoints;
  // TLS when non-empty: the CA that signed the servers' certificates.
  std::string ca_file;
  // An optional client certificate and its key (PEM).
  std::string cert_file;
  std::string key_file;
  Duration request_timeout = std::chrono::seconds(30);
};

class EtcdConnectionPool;

class EtcdClient {
 public:
  // InvalidArgument for unreadable TLS files or no endpoints. Does not connect yet.
  static StatusOr<std::unique_ptr<EtcdClient>> Create(const EtcdClientOptions& options);
  ~EtcdClient();

  // POSTs `body` to `path` and returns the response object. Errors: Unavailable when no
  // endpoint answers or the call timed out (for a write, its outcome is then unknown);
  // otherwise the gateway's gRPC error, mapped: "revision has been compacted" → Expired,
  // "future revision" → DeadlineExceeded, INVALID_ARGUMENT → InvalidArgument,
  // RESOURCE_EXHAUSTED (e.g. the database quota) → ResourceExhausted, UNAVAILABLE and
  // DEADLINE_EXCEEDED → Unavailable, anything else → Internal. Messages keep etcd's text.
  StatusOr<boost::json::object> Call(std::string_view path, const boost::json::object& body);

  // A streaming call (/v3/watch): Run() delivers each JSON message until `on_message` returns
  // false, the server ends the stream, or Close() is called. After `on_message` returned false,
  // Run() may be called again and continues with the next message.
  class WatchStream {
   public:
    virtual ~WatchStream() = default;
    // Returns OK when `on_message` stopped it or Close() was called, Unavailable when the
    // connection failed or the server ended the stream.
    virtual Status Run(const std::function<bool(const boost::json::object&)>& on_message) = 0;
    // Makes Run() return soon; safe from any thread, idempotent.
    virtual void Close() = 0;
  };
  // Connects and sends the request; Unavailable when no endpoint answers.
  StatusOr<std::unique_ptr<WatchStream>> OpenStream(std::string_view path,
                                                    const boost::json::object& body);

 private:
  explicit EtcdClient(std::unique_ptr<EtcdConnectionPool> pool);
  std::unique_ptr<EtcdConnectionPool> pool_;
};

}  // namespace draplane::store::internal
