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

#include "allocator/internal/device_data.h"
#include "api/gen/resource_v1_types.h"
#include "cel/list_attribute_mode.h"
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

// A device as the snapshot stores it: the API device without attributes and capacities, its
// compact attributes and capacities, the snapshot's name table, and the publishing driver.
struct DeviceSource {
  const api::resourcev1::Device* device = nullptr;
  const DeviceData* data = nullptr;
  const NameTable* names = nullptr;
  std::string_view driver;
};

struct SelectorVerdict {
  bool error = false;
  bool matches = false;
  std::string message;  // the runtime error text when `error`
  uint64_t cost = 0;    // the runtime cost the evaluation was charged (CEL cost units)
};

// What an expression is compiled as.
struct ExpressionSpec {
  // The release's reading of list-typed attributes.
  cel::ListAttributeMode list_attributes = cel::ListAttributeMode::kLists;
  // A derived attribute (KEP-6080): the result is a value to match on, not a selector's bool.
  bool derived = false;

  friend bool operator==(const ExpressionSpec&, const ExpressionSpec&) = default;
};

// The value of a derived attribute on one device, in the shape of a device attribute (scalar or
// list field set), or the runtime error that makes reaching it fatal.
struct DerivedValue {
  bool error = false;
  std::string message;  // the runtime error text when `error`
  api::resourcev1::DeviceAttribute value;
};

class SelectorEngine {
 public:
  virtual ~SelectorEngine() = default;
  // Compiles `expression` for the scheduler's environment (upstream StoredExpressions, every
  // option) of the release `spec` names, as a selector or a derived attribute. Returns the
  // program or InvalidArgument whose message is the compile error text.
  virtual StatusOr<std::shared_ptr<const CompiledSelector>> Compile(std::string_view expression,
                                                                    const ExpressionSpec& spec) = 0;
  // Builds the evaluation input of a device. The result owns what it needs: it must not refer
  // to the source, which the snapshot may replace while keeping the input.
  virtual std::unique_ptr<PreparedDevice> Prepare(const DeviceSource& device) = 0;
  // Evaluates a compiled selector on a prepared device.
  virtual SelectorVerdict Evaluate(const CompiledSelector& selector,
                                   const PreparedDevice& device) = 0;
  // Evaluates a compiled derived attribute on a prepared device: a string, int, bool or semver
  // becomes the matching scalar field, a non-empty list of one of them the matching list field;
  // any other result is an error.
  virtual DerivedValue EvaluateValue(const CompiledSelector& derived,
                                     const PreparedDevice& device) = 0;
};

// The engine over src/cel (cel_engine.cc).
std::unique_ptr<SelectorEngine> NewCelSelectorEngine();

}  // namespace draplane::allocator::internal
