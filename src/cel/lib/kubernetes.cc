// The library set of Kubernetes' base CEL environment (apiserver pkg/cel/environment/base.go,
// 1.34-1.36), as DRA device selectors see it.
#include "cel/lib/library.h"

namespace draplane::cel {

void RegisterKubernetesCelLibrary(FunctionRegistry& r) {
  RegisterStandardLibrary(r);
  RegisterOptionalLibrary(r);
  RegisterStringsLibrary(r);
  RegisterListsLibrary(r);
  RegisterSetsLibrary(r);
  RegisterTwoVarComprehensions(r);
  RegisterKubernetesListsLibrary(r);
  RegisterRegexLibrary(r);
  RegisterQuantityLibrary(r);
  RegisterSemverLibrary(r);
  RegisterNetworkLibrary(r);
  RegisterUrlLibrary(r);
}

}  // namespace draplane::cel
