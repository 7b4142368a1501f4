#include "core/base/page_token.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace accelsched {

std::string EncodePageToken(absl::string_view last_key) {
  return absl::WebSafeBase64Escape(last_key);
}

absl::StatusOr<std::string> DecodePageToken(absl::string_view token) {
  std::string key;
  if (token.size() > 1024 || !absl::WebSafeBase64Unescape(token, &key) ||
      key.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_token \"", token, "\" is not a token this server issued"));
  }
  return key;
}

absl::StatusOr<PageRequest> ParsePageRequest(int page_size,
                                             absl::string_view page_token) {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size ", page_size, " is out of range [0, ", kMaxPageSize, "]"));
  }
  PageRequest page;
  if (page_size > 0) page.size = page_size;
  if (!page_token.empty()) {
    absl::StatusOr<std::string> after = DecodePageToken(page_token);
    if (!after.ok()) return after.status();
    page.after = *std::move(after);
  }
  return page;
}

}  // namespace accelsched
