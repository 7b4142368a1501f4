// A stand-in for accelschedd in the agent's tests: records every
// RegisterNode and Heartbeat it is sent and answers heartbeats with the MIG
// plans a test sets; every other method is UNIMPLEMENTED (the generated
// base). Thread-safe: gRPC calls it from its own threads.
#ifndef ACCELSCHED_TESTS_SUPPORT_RECORDING_SCHEDULER_H_
#define ACCELSCHED_TESTS_SUPPORT_RECORDING_SCHEDULER_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "accelsched/v1/accelsched.grpc.pb.h"

namespace accelsched {

class RecordingScheduler final : public v1::AcceleratorScheduler::Service {
 public:
  grpc::Status RegisterNode(grpc::ServerContext*,
                            const v1::RegisterNodeRequest* request,
                            v1::Node* reply) override {
    absl::MutexLock lock(&mu_);
    registered_.push_back(request->node());
    *reply = request->node();
    return grpc::Status::OK;
  }
  grpc::Status Heartbeat(grpc::ServerContext*,
                         const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* reply) override {
    absl::MutexLock lock(&mu_);
    heartbeats_.push_back(*request);
    *reply->mutable_mig_plans() = plans_;
    return grpc::Status::OK;
  }

  void SetPlan(const std::string& gpu, const v1::MigLayout& plan) {
    absl::MutexLock lock(&mu_);
    plans_[gpu] = plan;
  }
  std::vector<v1::Node> registered() const {
    absl::MutexLock lock(&mu_);
    return registered_;
  }
  std::vector<v1::HeartbeatRequest> heartbeats() const {
    absl::MutexLock lock(&mu_);
    return heartbeats_;
  }
  // Waits up to 20 s for `done`; false then.
  template <typename Pred>
  bool WaitFor(Pred done) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (done(*this)) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

 private:
  mutable absl::Mutex mu_;
  google::protobuf::Map<std::string, v1::MigLayout> plans_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::Node> registered_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::HeartbeatRequest> heartbeats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_RECORDING_SCHEDULER_H_
