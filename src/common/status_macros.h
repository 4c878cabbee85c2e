// Early-return helpers for Status / StatusOr (STYLE.md, "Errors").
#pragma once

#include "common/status.h"

#define DRAPLANE_STATUS_CONCAT_INNER(a, b) a##b
#define DRAPLANE_STATUS_CONCAT(a, b) DRAPLANE_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (a Status); returns it from the enclosing function if it is not OK.
#define DRAPLANE_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::draplane::Status draplane_status_ = (expr);        \
    if (!draplane_status_.ok()) return draplane_status_; \
  } while (false)

// Evaluates `rexpr` (a StatusOr<T>); on failure returns its status, otherwise moves the value
// into `lhs`, which may be a declaration (`auto x`) or an existing variable.
#define DRAPLANE_ASSIGN_OR_RETURN(lhs, rexpr) \
  DRAPLANE_ASSIGN_OR_RETURN_IMPL(DRAPLANE_STATUS_CONCAT(draplane_statusor_, __LINE__), lhs, rexpr)

#define DRAPLANE_ASSIGN_OR_RETURN_IMPL(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();   \
  lhs = std::move(statusor).value()
