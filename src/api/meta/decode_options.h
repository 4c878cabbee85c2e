// Options of the generated `Decode` functions (src/api/gen/*_codec.h).
//
// Thread-safety: a plain value.
#pragma once

namespace draplane::api {

struct DecodeOptions {
  // Skip metadata.managedFields: the server's bookkeeping of who wrote which field, which no
  // client of this project reads. The informers' caches decode without it (as kube-scheduler's
  // informers strip it with a transform): it is a large part of every object a server with
  // server-side apply returns, and cached objects are copied whole. An object decoded this way
  // and written back by update or patch carries no managed fields, so the server keeps the ones
  // it holds.
  bool drop_managed_fields = false;
  // Quantities as kube-apiserver stores them (Quantity::ForgetWrittenForm): "0.5" becomes
  // "500m", the number 1 the string "1". The server decodes what it stores this way; tools that
  // round-trip manifests (lint, allocate) keep the written form.
  bool canonical_quantities = false;
};

}  // namespace draplane::api
