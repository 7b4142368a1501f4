// Opaque page tokens: the last key of the previous page, base64-encoded, so
// clients do not come to depend on their form.
#ifndef ACCELSCHED_CORE_BASE_PAGE_TOKEN_H_
#define ACCELSCHED_CORE_BASE_PAGE_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;

std::string EncodePageToken(absl::string_view last_key);
// INVALID_ARGUMENT naming page_token when it is not one EncodePageToken made.
absl::StatusOr<std::string> DecodePageToken(absl::string_view token);

// A List call's paging fields, checked: `size` 0 becomes kDefaultPageSize;
// `after` is the key the page starts after ("" for the first page).
struct PageRequest {
  int size = kDefaultPageSize;
  std::string after;
};
absl::StatusOr<PageRequest> ParsePageRequest(int page_size,
                                             absl::string_view page_token);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BASE_PAGE_TOKEN_H_
