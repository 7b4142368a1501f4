// Test certificates made by openssl at test time.
#ifndef ACCELSCHED_TESTS_SUPPORT_TEST_CERTIFICATES_H_
#define ACCELSCHED_TESTS_SUPPORT_TEST_CERTIFICATES_H_

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/support/temp_dir.h"

namespace accelsched {

// A CA, a server certificate for 127.0.0.1 and a client certificate, made with
// openssl.
// Call as ASSERT_NO_FATAL_FAILURE(...): it asserts.
inline void MakeCertificates(const TempDir& dir) {
  const std::string d = dir.File("");
  const std::string script = absl::StrCat(
      "set -e; cd ", d, ";",
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=test-ca "
      "-keyout ca.key -out ca.pem;",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout "
      "server.key "
      "-out server.csr;",
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext;",
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -days 1 "
      "-extfile san.ext -out server.pem;",
      "openssl req -newkey rsa:2048 -nodes -subj /CN=node-agent -keyout "
      "client.key "
      "-out client.csr;",
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
      "-CAcreateserial -days 1 "
      "-out client.pem");
  ASSERT_EQ(std::system(("(" + script + ") > /dev/null 2>&1").c_str()), 0);
}

// accelschedd's flags for TLS with the certificates above, where a client
// certificate signed by the same CA is the admin credential.
inline std::vector<std::string> MutualTlsServerFlags(const TempDir& dir) {
  return {"--tls_cert=" + dir.File("server.pem"),
          "--tls_key=" + dir.File("server.key"),
          "--tls_client_ca=" + dir.File("ca.pem")};
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_TEST_CERTIFICATES_H_
