// The etcd backend (etcd://host:port[,host:port...]): a real etcd v3 cluster, for control planes
// with several API server replicas (docs/design/store.md, "etcd").
//
// Keys live under EtcdOptions::prefix as "<prefix><resource>/<ns>/<name>"; revisions are etcd's
// mod revisions; writes are transactions comparing the key's create or mod revision; snapshot
// lists are ranges at a revision. Watches are served from one etcd watch on the prefix per
// store, fanned out in-process (like kube-apiserver's watch cache), which holds the events since
// the store was opened up to `retained_revisions` events (default 10,000): a watch from an
// older revision gets Expired and the client re-lists, as with kube-apiserver. etcd compaction
// (Compact, or etcd's --auto-compaction-* flags) makes older snapshot lists Expired.
//
// Thread-safety: safe for concurrent use. One background thread reads the prefix watch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "store/store.h"

namespace draplane::store {

// Connects to `endpoints` ("host:port" each) and opens the store under options.etcd.prefix.
// Unavailable when no endpoint answers; InvalidArgument for a bad prefix or TLS file.
// Prefer OpenStore("etcd://..."), which also records metrics.
StatusOr<std::unique_ptr<Store>> OpenEtcdStore(const std::string& endpoints,
                                               const StoreOptions& options = {});

}  // namespace draplane::store
