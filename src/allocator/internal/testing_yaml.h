// Test helpers: resource.k8s.io/v1 objects from YAML text, and resource lists as text.
//
// Thread-safety: pure functions.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "allocator/charges.h"
#include "api/codec/yaml.h"
#include "api/gen/resource_v1_codec.h"

namespace draplane::allocator::internal {

// The first document of `yaml` decoded as a `T` (test failures for malformed input).
template <typename T>
T DecodeYaml(std::string_view yaml) {
  StatusOr<std::vector<api::codec::YamlDocument>> docs = api::codec::ParseYaml(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  T out;
  if (!docs.ok() || docs->empty()) return out;
  api::FieldErrorList errors;
  api::resourcev1::Decode(docs->front().value, &out, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  return out;
}

// "key=quantity" lines in key order.
inline std::string RenderResources(const ResourceList& list) {
  std::string out;
  for (const auto& [key, q] : list) out += key + "=" + q.ToString() + "\n";
  return out;
}

}  // namespace draplane::allocator::internal
