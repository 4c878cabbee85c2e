// The CEL function libraries: the standard library and the extensions Kubernetes enables for
// DRA device selectors (docs/shared cel.md §1.4, §1.6). Each Register* function adds checker
// declarations and runtime implementations to a registry; environments call them explicitly.
//
// Thread-safety: registration happens before an environment is shared.
#pragma once

#include <vector>

#include "cel/checker/decls.h"
#include "cel/runtime/function.h"

namespace draplane::cel {

// cel-go StdLib (common/stdlib/standard.go) with CrossTypeNumericComparisons: operators,
// size, conversions, contains/startsWith/endsWith/matches, timestamp and duration functions.
void RegisterStandardLibrary(FunctionRegistry& r);
// cel-go OptionalTypes (cel/library.go): optional.of/ofNonZeroValue/none, hasValue, value,
// or, orValue, optional field selection and indexing, first/last, optional.unwrap/unwrapOpt.
void RegisterOptionalLibrary(FunctionRegistry& r);
// cel-go ext.Strings version 2 (ext/strings.go) without `format`.
void RegisterStringsLibrary(FunctionRegistry& r);
// cel-go ext.Lists version 3 (ext/lists.go): slice, flatten, distinct, lists.range, reverse,
// sort, sortBy.
void RegisterListsLibrary(FunctionRegistry& r);
// cel-go ext.Sets (ext/sets.go): sets.contains, sets.equivalent, sets.intersects.
void RegisterSetsLibrary(FunctionRegistry& r);
// cel-go ext.TwoVarComprehensions: the declarations of the accumulator insertion the
// transformMap macros expand to (evaluated natively by the planner).
void RegisterTwoVarComprehensions(FunctionRegistry& r);
// Kubernetes library.Lists v0 (isSorted, sum, min, max, indexOf, lastIndexOf).
void RegisterKubernetesListsLibrary(FunctionRegistry& r);
// Kubernetes library.Regex (find, findAll).
void RegisterRegexLibrary(FunctionRegistry& r);
// Kubernetes library.Quantity.
void RegisterQuantityLibrary(FunctionRegistry& r);
// Kubernetes library.SemverLib version 1 (with the normalize overloads).
void RegisterSemverLibrary(FunctionRegistry& r);
// Kubernetes library.IP and library.CIDR.
void RegisterNetworkLibrary(FunctionRegistry& r);
// Kubernetes library.URLs.
void RegisterUrlLibrary(FunctionRegistry& r);
// The DRA `includes` member function (dynamic-resource-allocation cel/compile.go).
void RegisterDraIncludes(FunctionRegistry& r);
// The DRA `asList` member function of Kubernetes 1.37's list attributes (KEP-5491 alpha2): the
// whole list of a list attribute read as its first element, the list itself, or a scalar as a
// one-element list.
void RegisterDraAsList(FunctionRegistry& r);

// Everything Kubernetes' base CEL environment (1.34-1.36) enables, as used for DRA.
void RegisterKubernetesCelLibrary(FunctionRegistry& r);

// The type identifiers (`int`, `list`, `optional_type`, `google.protobuf.Timestamp`, ...) as
// variable declarations of type type(T); their runtime values come from types::FindType.
std::vector<VariableDecl> TypeIdentifiers();

}  // namespace draplane::cel
