// A minimal HTTP/1.0 GET over loopback for tests (scraping /metrics,
// Prometheus's API).
#ifndef ACCELSCHED_TESTS_SUPPORT_HTTP_CLIENT_H_
#define ACCELSCHED_TESTS_SUPPORT_HTTP_CLIENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

// The body of GET http://127.0.0.1:<port><target>; an error unless the status
// is 200.
absl::StatusOr<std::string> HttpGet(int port, const std::string& target);

// The value of the sample `series` (name and labels exactly as exposed, e.g.
// `accelsched_grpc_requests_total{code="OK",method="Heartbeat"}`) in
// Prometheus text `metrics`; 0 when it is absent.
double SampleValue(absl::string_view metrics, absl::string_view series);

// Percent-encodes `s` for a URL query value.
std::string UrlEncode(const std::string& s);

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreePort();

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_HTTP_CLIENT_H_
