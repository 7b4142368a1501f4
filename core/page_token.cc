#include "core/page_token.h"

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

}  // namespace accelsched
