// Opaque page tokens: the last key of the previous page, base64-encoded, so
// clients do not come to depend on their form.
#ifndef ACCELSCHED_CORE_PAGE_TOKEN_H_
#define ACCELSCHED_CORE_PAGE_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

std::string EncodePageToken(absl::string_view last_key);
// INVALID_ARGUMENT naming page_token when it is not one EncodePageToken made.
absl::StatusOr<std::string> DecodePageToken(absl::string_view token);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PAGE_TOKEN_H_
