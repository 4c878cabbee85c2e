// The ApiClient over HTTP: Kubernetes REST paths, query parameters and content types.
//
//   get     GET    <object path>
//   list    GET    <collection
//   path>?labelSelector=&fieldSelector=&resourceVersion=&limit=&continue= watch   GET <collection
//   path>?watch=true&resourceVersion=&allowWatchBookmarks=true&... create  POST   <collection path>
//   (or <object path>/<subresource>, e.g. pods/binding) update  PUT    <object path>[/status] patch
//   PATCH  <object path>[/status]      Content-Type by PatchType delete  DELETE <object path> body:
//   a DeleteOptions object when options are set
//
// Error responses become Status values (api_client.h): 400 InvalidArgument, 401 / 403
// FailedPrecondition, 404 NotFound, 409 AlreadyExists (reason AlreadyExists) or Conflict, 410
// Expired, 422 InvalidArgument with the metav1.Status causes, 429 ResourceExhausted, 503
// Unavailable, 504 DeadlineExceeded, anything else Internal. The message is the server's.
//
// Watch bodies are a stream of JSON objects `{"type": ..., "object": ...}` (newline-separated or
// not); each is decoded as soon as it is complete.
//
// Thread-safety: safe for concurrent use (the transport's connections are pooled).
#pragma once

#include <memory>

#include "client/api_client.h"
#include "client/kubeconfig.h"
#include "client/transport.h"

namespace draplane::client {

struct RestClientOptions {
  // Deadline of each non-watch request.
  Duration request_timeout = std::chrono::seconds(60);
};

// A client over `transport` (shared so several clients can share connections).
std::unique_ptr<ApiClient> NewRestClient(std::shared_ptr<Transport> transport,
                                         const RestClientOptions& options = {});

// A client for `config` over a new HTTP transport. Errors of CreateHttpTransport.
StatusOr<std::unique_ptr<ApiClient>> CreateRestClient(const RestConfig& config,
                                                      const RestClientOptions& options = {});

// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay as they are).
std::string EscapeQueryValue(std::string_view value);

}  // namespace draplane::client
