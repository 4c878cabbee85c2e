// The seam between the allocator and CEL: compile a selector expression once, prepare a device's
// evaluation input once, evaluate without allocating. `cel_engine.cc` implements it over
// `src/cel`; tests use a small fake (`testing_engine.h`).
//
// Error texts are what upstream wraps: a compile error is the text after "CEL compile error: ",
// a runtime error the text after "CEL runtime error: " (already passed through upstream's
// `EnhanceRuntimeError`).
//
// Thread-safety: an engine is used by one snapshot, on one thread.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "api/gen/resource_v1_types.h"
#include "common/status.h"

namespace draplane::allocator::internal {

class CompiledSelector {
 public:
  virtual ~CompiledSelector() = default;
};

class PreparedDevice {
 public:
  virtual ~PreparedDevice() = default;
};

struct SelectorVerdict {
  bool error = false;
  bool matches = false;
  std::string message;  // the runtime error text when `error`
};

class SelectorEngine {
 public:
  virtual ~SelectorEngine() = default;
  // Compiles `expression` for the scheduler's environment (upstream StoredExpressions, every
  // option). Returns the program or InvalidArgument whose message is the compile error text.
  virtual StatusOr<std::shared_ptr<const CompiledSelector>> Compile(
      std::string_view expression) = 0;
  // Builds the evaluation input of `device` published by `driver`. The device must outlive the
  // result.
  virtual std::unique_ptr<PreparedDevice> Prepare(const api::resourcev1::Device& device,
                                                  std::string_view driver) = 0;
  // Evaluates a compiled selector on a prepared device.
  virtual SelectorVerdict Evaluate(const CompiledSelector& selector,
                                   const PreparedDevice& device) = 0;
};

// The engine over src/cel (cel_engine.cc).
std::unique_ptr<SelectorEngine> NewCelSelectorEngine();

}  // namespace draplane::allocator::internal
