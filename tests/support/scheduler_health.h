// Whether a server serves the scheduler now, by the health service: only the
// leader reports SERVING for accelsched.v1.AcceleratorScheduler
// (docs/operations/ha-postgresql.md). For the end-to-end HA tests.
#ifndef ACCELSCHED_TESTS_SUPPORT_SCHEDULER_HEALTH_H_
#define ACCELSCHED_TESTS_SUPPORT_SCHEDULER_HEALTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace accelsched {

// True when the server behind `channel` answers SERVING within `timeout`; a
// follower, a frozen server or one gone answers otherwise or not in time.
inline bool ServesScheduler(const std::shared_ptr<grpc::Channel>& channel,
                            absl::Duration timeout) {
  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::health::v1::HealthCheckRequest req;
  req.set_service("accelsched.v1.AcceleratorScheduler");
  grpc::health::v1::HealthCheckResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  return health->Check(&ctx, req, &resp).ok() &&
         resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_SCHEDULER_HEALTH_H_
