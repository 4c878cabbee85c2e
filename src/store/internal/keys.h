// Key encoding shared by every backend (docs/design/store.md, "Keys").
//
// A Key (resource, ns, name) is stored as the byte string "<resource>/<ns>/<name>" — the
// namespace segment is empty for cluster-scoped objects ("core/nodes//node-1"). Because a
// resource has exactly one '/' and ns and name have none, the encoding is unambiguous, and every
// object of a resource (or of a resource in one namespace) shares the prefix "<resource>/"
// ("<resource>/<ns>/"). Byte order of encoded keys is the list order in every backend.
//
// Continue tokens are base64url(JSON {"v":1,"rev":R,"start":K}) where R is the snapshot
// revision of the list and K the encoded key the next page starts at (inclusive), in the spirit
// of kube-apiserver's storage/etcd3 continue tokens (apiserver/pkg/storage/continue.go).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "store/store.h"

namespace draplane::store::internal {

// InvalidArgument unless `resource` is "<group>/<plural>" as store.h describes.
Status ValidateResource(std::string_view resource);
// InvalidArgument unless the resource is valid, `ns` has no '/' or NUL, and `name` is non-empty
// with no '/' or NUL.
Status ValidateKey(const Key& key);
// InvalidArgument unless `ns` has no '/' or NUL.
Status ValidateNamespace(std::string_view ns);

// "<resource>/<ns>/<name>". Precondition: ValidateKey(key).ok().
std::string EncodeKey(const Key& key);
// The inverse of EncodeKey; InvalidArgument when `encoded` is not such a string.
StatusOr<Key> DecodeKey(std::string_view encoded);

// "<resource>/" when `ns` is empty, else "<resource>/<ns>/".
std::string ListPrefix(std::string_view resource, std::string_view ns);
// The smallest byte string greater than every string starting with `prefix` (etcd's
// GetPrefixRangeEnd). Precondition: `prefix` is non-empty and not all 0xff bytes.
std::string PrefixEnd(std::string_view prefix);

struct ContinuePosition {
  Revision revision = 0;  // 0: the newest (a token ContinueTokenAtNewest made)
  std::string start_key;  // encoded key, inclusive
};
std::string EncodeContinueToken(Revision revision, std::string_view start_key);
// InvalidArgument when the token is malformed or its start key is not under `prefix` (a token
// from another resource or namespace).
StatusOr<ContinuePosition> DecodeContinueToken(std::string_view token, std::string_view prefix);

// Standard (RFC 4648 §4) base64 with padding, as the etcd JSON gateway uses for bytes.
std::string Base64Encode(std::string_view bytes);
// InvalidArgument on malformed input.
StatusOr<std::string> Base64Decode(std::string_view text);

}  // namespace draplane::store::internal
