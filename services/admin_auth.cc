#include "services/admin_auth.h"

#include <fstream>
#include <iterator>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace accelsched {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  // Walk the longer length so that a short guess takes as long as a long one.
  const size_t n = std::max(a.size(), b.size());
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

absl::StatusOr<std::string> AdminAuth::ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read --admin_token_file \"", path, "\""));
  }
  std::string token(std::istreambuf_iterator<char>(in), {});
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--admin_token_file \"", path, "\" is empty"));
  }
  return token;
}

absl::Status AdminAuth::Check(const grpc::ServerContextBase& ctx,
                              absl::string_view method) const {
  if (token_.empty() && !client_cert_) return absl::OkStatus();
  if (client_cert_ && ctx.auth_context() != nullptr &&
      ctx.auth_context()->IsPeerAuthenticated()) {
    return absl::OkStatus();
  }
  const auto& metadata = ctx.client_metadata();
  auto it = metadata.find("authorization");
  if (!token_.empty() && it != metadata.end()) {
    absl::string_view value(it->second.data(), it->second.size());
    if (absl::ConsumePrefix(&value, "Bearer ") &&
        ConstantTimeEquals(value, token_)) {
      return absl::OkStatus();
    }
    return absl::PermissionDeniedError(
        absl::StrCat(method, " needs the admin token; the one given is wrong"));
  }
  return absl::UnauthenticatedError(absl::StrCat(
      method, " changes the catalog and needs an admin credential (",
      token_.empty() ? "" : "metadata \"authorization: Bearer <token>\"",
      !token_.empty() && client_cert_ ? " or " : "",
      client_cert_ ? "a client certificate signed by --tls_client_ca" : "",
      ")"));
}

}  // namespace accelsched
