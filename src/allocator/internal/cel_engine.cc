// The SelectorEngine over draplane's CEL (src/cel), and the default Snapshot constructor that
// uses it.
#include <array>
#include <memory>
#include <string>
#include <utility>

#include "allocator/internal/selector_engine.h"
#include "allocator/snapshot.h"
#include "cel/environment.h"
#include "cel/program.h"
#include "cel/runtime/device_input.h"
#include "cel/runtime/opaque_values.h"

namespace draplane::allocator {
namespace internal {
namespace {

namespace rv1 = api::resourcev1;

// Presence bits of DeviceAttribute's list fields (its plain fields, in declaration order): an
// explicitly empty list is a value (upstream: a non-nil slice), an absent one is not.
constexpr uint64_t kIntsPresent = uint64_t{1} << 0;
constexpr uint64_t kBoolsPresent = uint64_t{1} << 1;
constexpr uint64_t kStringsPresent = uint64_t{1} << 2;
constexpr uint64_t kVersionsPresent = uint64_t{1} << 3;

class CelSelector final : public CompiledSelector {
 public:
  explicit CelSelector(std::shared_ptr<const cel::Program> program) : program(std::move(program)) {}
  std::shared_ptr<const cel::Program> program;
};

class CelDevice final : public PreparedDevice {
 public:
  explicit CelDevice(std::shared_ptr<const cel::DeviceInput> input) : input(std::move(input)) {}
  std::shared_ptr<const cel::DeviceInput> input;
};

void AddFull(cel::DeviceInput::Builder& builder, const std::string& name,
             const rv1::DeviceAttribute& a) {
  if (!a.ints.empty() || (a.present & kIntsPresent) != 0) {
    builder.AddInts(name, a.ints);
  } else if (!a.bools.empty() || (a.present & kBoolsPresent) != 0) {
    builder.AddBools(name, a.bools);
  } else if (!a.strings.empty() || (a.present & kStringsPresent) != 0) {
    builder.AddStrings(name, a.strings);
  } else if (!a.versions.empty() || (a.present & kVersionsPresent) != 0) {
    builder.AddVersions(name, a.versions);
  } else if (a.int_value.has_value()) {
    builder.AddInt(name, *a.int_value);
  } else if (a.bool_value.has_value()) {
    builder.AddBool(name, *a.bool_value);
  } else if (a.string_value.has_value()) {
    builder.AddString(name, *a.string_value);
  } else if (a.version_value.has_value()) {
    builder.AddVersion(name, *a.version_value);
  } else {
    builder.AddUnsupported(name);
  }
}

// A derived attribute's result as a device attribute (KEP-6080: a string, int, bool or semver,
// or a list of one of them), or the reason it is none.
DerivedValue ToAttribute(const cel::Value& v) {
  DerivedValue out;
  rv1::DeviceAttribute& a = out.value;
  switch (v.kind()) {
    case cel::ValueKind::kInt:
      a.int_value = v.int_value();
      return out;
    case cel::ValueKind::kBool:
      a.bool_value = v.bool_value();
      return out;
    case cel::ValueKind::kString:
      a.string_value = std::string(v.string_value());
      return out;
    case cel::ValueKind::kSemver:
      a.version_value = cel::FormatSemver(v.semver());
      return out;
    case cel::ValueKind::kList: {
      const cel::ListValue& list = v.list();
      cel::ValueKind kind = list.size > 0 ? list.elems[0].kind() : cel::ValueKind::kNull;
      bool ok = list.size > 0;
      for (uint32_t i = 0; ok && i < list.size; ++i) {
        const cel::Value& e = list.elems[i];
        ok = e.kind() == kind;
        if (!ok) break;
        switch (kind) {
          case cel::ValueKind::kInt:
            a.ints.push_back(e.int_value());
            break;
          case cel::ValueKind::kBool:
            a.bools.push_back(e.bool_value());
            break;
          case cel::ValueKind::kString:
            a.strings.emplace_back(e.string_value());
            break;
          case cel::ValueKind::kSemver:
            a.versions.push_back(cel::FormatSemver(e.semver()));
            break;
          default:
            ok = false;
        }
      }
      if (ok) return out;
      break;
    }
    default:
      break;
  }
  const cel::TypeValue* type = cel::TypeOf(v);
  out = DerivedValue{};
  out.error = true;
  out.message = "derived attribute value of type " +
                std::string(type != nullptr ? type->name : "unknown") +
                " is neither a string, int, bool or semver nor a non-empty list of one of them";
  return out;
}

class CelEngine final : public SelectorEngine {
 public:
  // The scheduler compiles with StoredExpressions: every declaration regardless of gates,
  // including list attributes (upstream 5afedd9), and without cost estimation. One environment
  // per release reading of list attributes.
  CelEngine() = default;

  StatusOr<std::shared_ptr<const CompiledSelector>> Compile(std::string_view expression,
                                                            const ExpressionSpec& spec) override {
    auto& env = envs_[static_cast<size_t>(spec.list_attributes)];
    if (env == nullptr) {
      env = cel::Environment::NewDra(
          {.env_type = cel::EnvType::kStoredExpressions, .list_attributes = spec.list_attributes});
    }
    StatusOr<std::shared_ptr<const cel::Program>> program =
        env->Compile(expression, cel::CompileOptions{.estimate_cost = false,
                                                     .cost_limit = cel::kSelectorMaxCost,
                                                     .require_bool_result = !spec.derived});
    if (!program.ok()) return program.status();
    return std::shared_ptr<const CompiledSelector>(
        std::make_shared<CelSelector>(*std::move(program)));
  }

  // upstream getAttributeValue with list attributes: lists first, then the scalars; an attribute
  // with none of them set cannot be converted.
  std::unique_ptr<PreparedDevice> Prepare(const DeviceSource& source) override {
    const rv1::Device& device = *source.device;
    cel::DeviceInput::Builder builder(source.driver);
    builder.SetAllowMultipleAllocations(device.allow_multiple_allocations.value_or(false));
    for (const Attribute& attr : source.data->attributes) {
      const std::string& name = source.names->Name(attr.name);
      switch (attr.kind) {
        case Attribute::Kind::kInt:
          builder.AddInt(name, attr.number);
          break;
        case Attribute::Kind::kBool:
          builder.AddBool(name, attr.number != 0);
          break;
        case Attribute::Kind::kString:
          builder.AddString(name, attr.text);
          break;
        case Attribute::Kind::kVersion:
          builder.AddVersion(name, attr.text);
          break;
        case Attribute::Kind::kNone:
          builder.AddUnsupported(name);
          break;
        case Attribute::Kind::kFull:
          AddFull(builder, name, *attr.full);
          break;
      }
    }
    for (const Capacity& capacity : source.data->capacity) {
      builder.AddCapacity(source.names->Name(capacity.name), capacity.value);
    }
    return std::make_unique<CelDevice>(std::move(builder).Build());
  }

  SelectorVerdict Evaluate(const CompiledSelector& selector,
                           const PreparedDevice& device) override {
    const auto& program = static_cast<const CelSelector&>(selector).program;
    const auto& input = static_cast<const CelDevice&>(device).input;
    cel::SelectorResult r = program->Match(*input);
    SelectorVerdict v;
    v.cost = r.cost();
    if (r.is_error()) {
      v.error = true;
      v.message = r.error();
    } else {
      v.matches = r.matches();
    }
    return v;
  }

  DerivedValue EvaluateValue(const CompiledSelector& derived,
                             const PreparedDevice& device) override {
    const auto& program = static_cast<const CelSelector&>(derived).program;
    const auto& input = static_cast<const CelDevice&>(device).input;
    cel::Activation none;
    cel::EvalResult r = program->Evaluate(none, *input);
    if (r.is_error()) {
      DerivedValue v;
      v.error = true;
      v.message = cel::EnhanceRuntimeError(cel::ErrorMessage(r.value()));
      return v;
    }
    return ToAttribute(r.value());
  }

 private:
  std::array<std::shared_ptr<const cel::Environment>, 3> envs_;
};

}  // namespace

std::unique_ptr<SelectorEngine> NewCelSelectorEngine() { return std::make_unique<CelEngine>(); }

}  // namespace internal

Snapshot::Snapshot() : Snapshot(internal::NewCelSelectorEngine()) {}

}  // namespace draplane::allocator
