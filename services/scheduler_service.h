// The accelsched.v1.AcceleratorScheduler gRPC service on gRPC's callback API:
// validates each request, translates it into a core call, and converts the
// result. No handler waits for a commit made on another thread: a call that
// writes queues its change and returns its thread, and is finished by
// whichever thread completes its commit (the handler that finds the committer
// idle commits, core/commit/group_committer.h). Thread-safe; holds non-owning
// pointers.
#ifndef ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
#define ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "core/catalog/device_stats.h"
#include "core/placement/placement.h"
#include "core/scheduler/scheduler.h"
#include "services/admin_auth.h"
#include "services/event_stream.h"
#include "services/leadership.h"
#include "services/metrics.h"

namespace accelsched {

class SchedulerService final
    : public v1::AcceleratorScheduler::CallbackService {
 public:
  // `scheduler`, `metrics`, `auth`, `stats` and `leadership` must outlive
  // the service. Every call is UNAVAILABLE, with Leadership::Check's reason,
  // on a server that is not the leader, and while the scheduler is not
  // Ready().
  SchedulerService(Scheduler* scheduler, Metrics* metrics,
                   const AdminAuth* auth, PlacementOptions placement,
                   DeviceStatsTable* stats, const Leadership* leadership)
      : scheduler_(scheduler),
        metrics_(metrics),
        auth_(auth),
        leadership_(leadership),
        placement_(placement),
        stats_(stats),
        event_messages_(placement) {}

  grpc::ServerUnaryReactor* RegisterNode(grpc::CallbackServerContext* ctx,
                                         const v1::RegisterNodeRequest* req,
                                         v1::Node* resp) override;
  grpc::ServerUnaryReactor* GetNode(grpc::CallbackServerContext* ctx,
                                    const v1::GetNodeRequest* req,
                                    v1::Node* resp) override;
  grpc::ServerUnaryReactor* ListNodes(grpc::CallbackServerContext* ctx,
                                      const v1::ListNodesRequest* req,
                                      v1::ListNodesResponse* resp) override;
  grpc::ServerUnaryReactor* RemoveNode(grpc::CallbackServerContext* ctx,
                                       const v1::RemoveNodeRequest* req,
                                       v1::RemoveNodeResponse* resp) override;
  grpc::ServerUnaryReactor* SetNodeSchedulable(
      grpc::CallbackServerContext* ctx,
      const v1::SetNodeSchedulableRequest* req, v1::Node* resp) override;
  grpc::ServerUnaryReactor* Heartbeat(grpc::CallbackServerContext* ctx,
                                      const v1::HeartbeatRequest* req,
                                      v1::HeartbeatResponse* resp) override;
  grpc::ServerUnaryReactor* GetCapacity(grpc::CallbackServerContext* ctx,
                                        const v1::GetCapacityRequest* req,
                                        v1::GetCapacityResponse* resp) override;
  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx,
                                     const v1::AllocateRequest* req,
                                     v1::Allocation* resp) override;
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx,
                                    const v1::ReleaseRequest* req,
                                    v1::Allocation* resp) override;
  grpc::ServerUnaryReactor* RenewLease(grpc::CallbackServerContext* ctx,
                                       const v1::RenewLeaseRequest* req,
                                       v1::Allocation* resp) override;
  grpc::ServerUnaryReactor* GetAllocation(grpc::CallbackServerContext* ctx,
                                          const v1::GetAllocationRequest* req,
                                          v1::Allocation* resp) override;
  grpc::ServerUnaryReactor* ListAllocations(
      grpc::CallbackServerContext* ctx, const v1::ListAllocationsRequest* req,
      v1::ListAllocationsResponse* resp) override;
  grpc::ServerUnaryReactor* GetQueue(grpc::CallbackServerContext* ctx,
                                     const v1::GetQueueRequest* req,
                                     v1::GetQueueResponse* resp) override;
  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* ctx,
                                    const v1::AllocateRequest* req,
                                    v1::ExplainResponse* resp) override;
  grpc::ServerWriteReactor<v1::Event>* WatchEvents(
      grpc::CallbackServerContext* ctx,
      const v1::WatchEventsRequest* req) override;
  grpc::ServerUnaryReactor* ListAcceleratorTypes(
      grpc::CallbackServerContext* ctx,
      const v1::ListAcceleratorTypesRequest* req,
      v1::ListAcceleratorTypesResponse* resp) override;

  // Blocks until no unary call of this service, and no stream that has
  // begun to finish, is in flight (gRPC is done with each: a write's reply is
  // sent once its commit is done) or `deadline` passes; false on the
  // deadline. For shutdown, once no new call can start. A stream still open,
  // or held by a client that does not read, is not waited for.
  bool AwaitIdle(absl::Time deadline);

 private:
  // One unary call's reactor: counted in flight until gRPC is done with it.
  class UnaryCall final : public grpc::ServerUnaryReactor {
   public:
    explicit UnaryCall(SchedulerService* service) : service_(service) {
      service_->CallStarted();
    }
    void OnDone() override {
      service_->CallFinished();
      delete this;
    }

   private:
    SchedulerService* const service_;
  };

  // Finishes one unary call, once: converts its status (the one place), and
  // records the call's metrics. Movable; whoever holds it last finishes.
  class Done {
   public:
    Done(SchedulerService* service, grpc::ServerUnaryReactor* reactor,
         absl::string_view method)
        : service_(service),
          reactor_(reactor),
          method_(method),
          start_(absl::Now()) {}
    Done(Done&& other) noexcept;
    Done(const Done&) = delete;
    Done& operator=(const Done&) = delete;
    void operator()(const absl::Status& status) &&;

   private:
    SchedulerService* service_;
    grpc::ServerUnaryReactor* reactor_;  // null once finished or moved from
    absl::string_view method_;           // a string literal
    absl::Time start_;
  };

  // A call answered on the handler's thread: checks the caller's credential,
  // runs `body`, finishes.
  grpc::ServerUnaryReactor* Answer(grpc::CallbackServerContext* ctx,
                                   absl::string_view method,
                                   absl::FunctionRef<absl::Status()> body);
  // A call that writes: checks the credential and runs `start`, which either
  // returns an error (the call finishes with it) or returns OK having handed
  // `done` to the scheduler, which finishes the call once the write is
  // durable: on the committing thread, or at once when the result already
  // was (a retry, a release of an ended allocation).
  grpc::ServerUnaryReactor* Begin(
      grpc::CallbackServerContext* ctx, absl::string_view method,
      absl::FunctionRef<absl::Status(Done& done)> start);
  // Converts a scheduler's allocation into `resp`, then finishes.
  Scheduler::Callback<Allocation> Reply(v1::Allocation* resp, Done done) const;
  // This server's leadership and readiness, then the caller's credential.
  absl::Status CheckCall(const grpc::CallbackServerContext& ctx,
                         absl::string_view method) const;

  void CallStarted();
  void CallFinished();

  Scheduler* const scheduler_;
  Metrics* const metrics_;
  absl::Mutex in_flight_mu_;
  int64_t in_flight_ ABSL_GUARDED_BY(in_flight_mu_) = 0;
  const AdminAuth* const auth_;
  const Leadership* const leadership_;
  const PlacementOptions placement_;
  DeviceStatsTable* const stats_;
  EventMessages event_messages_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
