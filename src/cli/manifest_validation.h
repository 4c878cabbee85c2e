// Manifests the commands read from files (cluster dumps, claims to allocate, objects to lint)
// checked as the API server would check them on create: the namespace the server would store,
// then its validation, so that a command never computes an answer from an object no cluster
// could hold.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "api/object.h"
#include "api/validation/validation.h"
#include "common/status.h"

namespace draplane::cli {

// The namespace the API server would store: the object's own, else `ns`, for namespaced kinds;
// none for cluster-scoped ones, whose namespace the server clears
// (EnsureObjectNamespaceMatchesRequestNamespace), as Helm and kustomize output often carries one.
// Kinds the server does not serve are left as they are.
void DefaultNamespace(api::Object& object, const std::string& ns);

// Gives `object` its namespace (DefaultNamespace), drops the fields of gates that are off
// (api::validation::DropDisabledFields) and validates it as created
// (api::validation::ValidateObject; kinds draplane does not validate pass). InvalidArgument
// "WHERE: KIND/NAME: FIELD: REASON" for the first problem, with how many more there are.
Status ValidateAsCreated(api::Object& object, const std::string& where,
                         const std::string& default_namespace,
                         const api::validation::Features& features);

}  // namespace draplane::cli
