// The accelsched.v1.AcceleratorScheduler gRPC service: validates each request,
// translates it into a core call, and converts the result. Thread-safe; holds
// non-owning pointers.
#ifndef ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
#define ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_

#include "accelsched/v1/accelsched.grpc.pb.h"
#include "core/catalog.h"

namespace accelsched {

class SchedulerService final : public v1::AcceleratorScheduler::Service {
 public:
  // `catalog` must outlive the service.
  explicit SchedulerService(Catalog* catalog) : catalog_(catalog) {}

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

 private:
  Catalog* const catalog_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_SCHEDULER_SERVICE_H_
