// Kubernetes resource quantities ("8", "7910m", "0.5", "64Gi", "129e6"), read
// as k8s.io/apimachinery's resource.ParseQuantity reads them and counted as
// Quantity.Value and Quantity.MilliValue count them: exactly, rounded up.
#ifndef ACCELSCHED_AGENT_KUBE_QUANTITY_H_
#define ACCELSCHED_AGENT_KUBE_QUANTITY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched::agent {

// What a quantity is counted in: whole units (Quantity.Value: bytes, pods) or
// thousandths (Quantity.MilliValue: cpu_milli).
enum class QuantityScale { kUnits, kMilli };

// `text` as a Kubernetes quantity, times 1000 for kMilli, rounded up to an
// integer (Value and MilliValue round away from zero: "0.1m" is 1 milli,
// "1.5Ki" 1536 units, "1n" 1 unit). INVALID_ARGUMENT naming `field` and the
// text when it does not follow the quantity grammar (no digits, a suffix other
// than n u m k M G T P E Ki Mi Gi Ti Pi Ei or e/E and a signed integer
// exponent), when it is negative, or when it counts more than `max`.
absl::StatusOr<int64_t> ParseQuantity(absl::string_view field,
                                      absl::string_view text,
                                      QuantityScale scale, int64_t max);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_KUBE_QUANTITY_H_
