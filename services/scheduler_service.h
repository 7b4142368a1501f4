// The accelsched.v1.AcceleratorScheduler gRPC service: validates each request,
// translates it into a core call, and converts the result. Thread-safe; holds
// non-owning pointers.
#ifndef ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
#define ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "core/device_stats.h"
#include "core/placement.h"
#include "core/scheduler.h"
#include "services/admin_auth.h"
#include "services/metrics.h"

namespace accelsched {

class SchedulerService final : public v1::AcceleratorScheduler::Service {
 public:
  // `scheduler`, `metrics`, `auth` and `stats` must outlive the service.
  SchedulerService(Scheduler* scheduler, Metrics* metrics,
                   const AdminAuth* auth, PlacementOptions placement,
                   DeviceStatsTable* stats)
      : scheduler_(scheduler),
        metrics_(metrics),
        auth_(auth),
        placement_(placement),
        stats_(stats) {}

  grpc::Status RegisterNode(grpc::ServerContext* ctx,
                            const v1::RegisterNodeRequest* req,
                            v1::Node* resp) override;
  grpc::Status GetNode(grpc::ServerContext* ctx, const v1::GetNodeRequest* req,
                       v1::Node* resp) override;
  grpc::Status ListNodes(grpc::ServerContext* ctx,
                         const v1::ListNodesRequest* req,
                         v1::ListNodesResponse* resp) override;
  grpc::Status RemoveNode(grpc::ServerContext* ctx,
                          const v1::RemoveNodeRequest* req,
                          v1::RemoveNodeResponse* resp) override;
  grpc::Status SetNodeSchedulable(grpc::ServerContext* ctx,
                                  const v1::SetNodeSchedulableRequest* req,
                                  v1::Node* resp) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const v1::HeartbeatRequest* req,
                         v1::HeartbeatResponse* resp) override;
  grpc::Status GetCapacity(grpc::ServerContext* ctx,
                           const v1::GetCapacityRequest* req,
                           v1::GetCapacityResponse* resp) override;
  grpc::Status Allocate(grpc::ServerContext* ctx,
                        const v1::AllocateRequest* req,
                        v1::Allocation* resp) override;
  grpc::Status Release(grpc::ServerContext* ctx, const v1::ReleaseRequest* req,
                       v1::Allocation* resp) override;
  grpc::Status RenewLease(grpc::ServerContext* ctx,
                          const v1::RenewLeaseRequest* req,
                          v1::Allocation* resp) override;
  grpc::Status GetAllocation(grpc::ServerContext* ctx,
                             const v1::GetAllocationRequest* req,
                             v1::Allocation* resp) override;
  grpc::Status ListAllocations(grpc::ServerContext* ctx,
                               const v1::ListAllocationsRequest* req,
                               v1::ListAllocationsResponse* resp) override;
  grpc::Status Explain(grpc::ServerContext* ctx, const v1::AllocateRequest* req,
                       v1::ExplainResponse* resp) override;
  grpc::Status WatchEvents(grpc::ServerContext* ctx,
                           const v1::WatchEventsRequest* req,
                           grpc::ServerWriter<v1::Event>* writer) override;
  grpc::Status ListAcceleratorTypes(
      grpc::ServerContext* ctx, const v1::ListAcceleratorTypesRequest* req,
      v1::ListAcceleratorTypesResponse* resp) override;

 private:
  // Per-call wrapper: runs `body`, converts its status once, records the call's
  // metrics.
  grpc::Status Handle(const grpc::ServerContext* ctx, absl::string_view method,
                      absl::FunctionRef<absl::Status()> body);

  Scheduler* const scheduler_;
  Metrics* const metrics_;
  const AdminAuth* const auth_;
  const PlacementOptions placement_;
  DeviceStatsTable* const stats_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
