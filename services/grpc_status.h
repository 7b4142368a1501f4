// The one place where absl::Status becomes grpc::Status.
#ifndef ACCELSCHED_SERVICES_GRPC_STATUS_H_
#define ACCELSCHED_SERVICES_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace accelsched {

// Same code (the enums share numbering); the message capped at 1 KiB.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_GRPC_STATUS_H_
