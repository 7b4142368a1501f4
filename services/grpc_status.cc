#include "services/grpc_status.h"

#include <string>

namespace accelsched {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  constexpr size_t kMaxMessage = 1024;
  std::string message(status.message().substr(0, kMaxMessage));
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::move(message));
}

}  // namespace accelsched
