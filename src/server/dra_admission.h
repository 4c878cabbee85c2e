// What the API server admits of the DRA kinds, by Kubernetes release and feature gates
// (`draplane serve --kubernetes-version / --feature-gates`): which alpha fields it drops, which
// validation rules apply, and how it compiles new CEL selectors (a 1.37 server knows `asList()`).
//
// Thread-safety: a value type.
#pragma once

#include "api/validation/validation.h"
#include "cel/list_attribute_mode.h"

namespace draplane::server {

struct DraAdmission {
  // The gates (api/validation/validation.h): validation rules, fields dropped when off, and the
  // CEL environment of new expressions.
  api::validation::Features features;
  // The release's reading of list attributes: 1.37 declares `asList()` (with
  // DRAListTypeAttributes for new expressions, always for stored ones).
  cel::ListAttributeMode list_attributes = cel::ListAttributeMode::kLists;
  // DRAResourcePoolStatus (KEP-5677, alpha upstream): serve resource.k8s.io/v1alpha3
  // ResourcePoolStatusRequest. On by default in draplane, whose controller answers it.
  bool resource_pool_status = true;

  friend bool operator==(const DraAdmission&, const DraAdmission&) = default;
};

}  // namespace draplane::server
