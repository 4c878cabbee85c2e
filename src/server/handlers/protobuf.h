// Decoding of Kubernetes protobuf request bodies (Content-Type
// application/vnd.kubernetes.protobuf) into the JSON form of the same object.
//
// kubectl sends the objects it builds itself through client-go's typed clients in protobuf:
// `kubectl create namespace`, `create role|clusterrole|rolebinding|clusterrolebinding`, and the
// review objects of `kubectl auth can-i` / `auth whoami`. The wire format
// (k8s.io/apimachinery/pkg/runtime/serializer/protobuf) is the magic prefix "k8s\0" and a
// runtime.Unknown message {typeMeta{apiVersion, kind}, raw, contentEncoding, contentType} whose
// `raw` is the object's message as declared in the generated.proto files of k8s.io/api.
//
// Only those kinds are understood (their message layouts are tables here, field numbers from
// the upstream .proto files); every other kind is UnsupportedMediaType. Responses are always
// JSON, which those clients accept.
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "common/status.h"
#include "server/handlers/json_util.h"

namespace draplane::server::handlers {

inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// Decodes a protobuf body. InvalidArgument for malformed bytes; Unimplemented for a kind that
// has no table here (the caller answers 415).
StatusOr<JsonObject> DecodeKubernetesProtobuf(std::string_view body);

}  // namespace draplane::server::handlers
