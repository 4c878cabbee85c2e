#include "cel/checker/decls.h"

#include <algorithm>

namespace draplane::cel {
namespace {

void CollectParams(const Type& t, std::vector<std::string>* out) {
  if (t.kind() == TypeKind::kTypeParam) {
    if (std::find(out->begin(), out->end(), t.name()) == out->end()) out->push_back(t.name());
    return;
  }
  for (const Type& p : t.params()) CollectParams(p, out);
}

}  // namespace

OverloadDecl::OverloadDecl(std::string id, bool member, std::vector<Type> params, Type result)
    : id(std::move(id)), member(member), params(std::move(params)), result(std::move(result)) {
  for (const Type& p : this->params) CollectParams(p, &type_params);
  CollectParams(this->result, &type_params);
}

}  // namespace draplane::cel
