// The status of a refused request or data field, one spelling everywhere:
// INVALID_ARGUMENT whose message begins with the field's name.
#ifndef ACCELSCHED_CORE_BASE_FIELD_ERROR_H_
#define ACCELSCHED_CORE_BASE_FIELD_ERROR_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace accelsched {

// INVALID_ARGUMENT "<field> <what>", e.g. "node.devices[2].index must not be
// negative".
inline absl::Status InvalidField(absl::string_view field,
                                 absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, " ", what));
}

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BASE_FIELD_ERROR_H_
