// Early-return helpers for absl::Status and absl::StatusOr. Debian's abseil
// (20220623) has none.
#ifndef ACCELSCHED_CORE_BASE_STATUS_MACROS_H_
#define ACCELSCHED_CORE_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define ACCELSCHED_CONCAT_INNER_(a, b) a##b
#define ACCELSCHED_CONCAT_(a, b) ACCELSCHED_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define RETURN_IF_ERROR(expr)          \
  do {                                 \
    ::absl::Status _status = (expr);   \
    if (!_status.ok()) return _status; \
  } while (0)

// `lhs` = the value of the StatusOr `expr`, or returns its status when not OK.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(ACCELSCHED_CONCAT_(_statusor_, __LINE__), lhs, expr)

#define ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                           \
  if (!statusor.ok()) return statusor.status();     \
  lhs = std::move(statusor).value()

#endif  // ACCELSCHED_CORE_BASE_STATUS_MACROS_H_
