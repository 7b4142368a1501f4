// Who may change the catalog (RegisterNode, RemoveNode, SetNodeSchedulable,
// Heartbeat): a bearer token from --admin_token_file, or a verified client
// certificate under mutual TLS. With neither configured, anyone may. Immutable
// after construction; thread-safe.
#ifndef ACCELSCHED_SERVICES_ADMIN_AUTH_H_
#define ACCELSCHED_SERVICES_ADMIN_AUTH_H_

#include <grpcpp/server_context.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

class AdminAuth {
 public:
  // `token`: empty for none. `client_cert`: a verified client certificate is a
  // credential.
  AdminAuth(std::string token, bool client_cert)
      : token_(std::move(token)), client_cert_(client_cert) {}

  // Reads a token file: its content without surrounding whitespace; an empty or
  // unreadable file is an error.
  static absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

  // OK when allowed; UNAUTHENTICATED when the call carries no credential;
  // PERMISSION_DENIED when it carries a wrong token.
  absl::Status Check(const grpc::ServerContextBase& ctx,
                     absl::string_view method) const;

 private:
  const std::string token_;
  const bool client_cert_;
};

// Compares in time that depends only on the lengths, not on where the bytes
// differ.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b);

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_ADMIN_AUTH_H_
