// How DRA selectors read list-typed device attributes (KEP-5491), which depends on the Kubernetes
// release and not on the DRAListTypeAttributes gate: the gate governs what the API server accepts
// and drops, while the scheduler's CEL layer reads what is stored (upstream evaluates every
// selector test that does not pin the gate with the gate both off and on).
//
// Thread-safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string_view>

namespace draplane::cel {

enum class ListAttributeMode : uint8_t {
  // Kubernetes 1.34 and 1.35 have no list attributes: an attribute holding only a list has no
  // value they know, so every evaluation on the device fails with "unsupported attribute value".
  kUnsupported,
  // Kubernetes 1.36 (alpha): a list attribute is a CEL list; `includes()` searches it; macros
  // iterate it.
  kLists,
  // Kubernetes 1.37 (alpha2): a list attribute reads as its first element; `asList()` yields the
  // whole list (and a scalar as a one-element list); `x.includes(v)` compares the first element
  // while `x.asList().includes(v)` searches the list; macros over `x` fail with "expected
  // iterable type" unless it is turned into a list with `asList()`.
  kFirstElement,
};

// "1.34-1.35", "1.36", "1.37": the releases whose semantics a mode is.
std::string_view ListAttributeModeName(ListAttributeMode mode);

}  // namespace draplane::cel
