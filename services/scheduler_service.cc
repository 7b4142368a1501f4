#include "services/scheduler_service.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/labels.h"
#include "core/node_validation.h"
#include "core/status_macros.h"
#include "registry/accelerator_types_file.h"
#include "services/grpc_status.h"
#include "services/proto_convert.h"

namespace accelsched {

grpc::Status SchedulerService::Handle(const grpc::ServerContext* ctx,
                                      absl::string_view method,
                                      absl::FunctionRef<absl::Status()> body) {
  // The calls that change the catalog need an admin credential when one is
  // configured.
  static constexpr absl::string_view kAdminMethods[] = {
      "RegisterNode", "RemoveNode", "SetNodeSchedulable", "Heartbeat"};
  const bool admin =
      std::find(std::begin(kAdminMethods), std::end(kAdminMethods), method) !=
      std::end(kAdminMethods);
  const absl::Time start = absl::Now();
  absl::Status status = admin ? auth_->Check(*ctx, method) : absl::OkStatus();
  if (status.ok()) status = body();
  const absl::Duration latency = absl::Now() - start;
  metrics_->RecordRpc(method, status.code(), latency);
  if (method == "Allocate") metrics_->RecordAllocate(status.code(), latency);
  return ToGrpcStatus(status);
}

grpc::Status SchedulerService::RegisterNode(grpc::ServerContext* ctx,
                                            const v1::RegisterNodeRequest* req,
                                            v1::Node* resp) {
  return Handle(ctx, "RegisterNode", [&]() -> absl::Status {
    if (!req->has_node()) return absl::InvalidArgumentError("node is required");
    ASSIGN_OR_RETURN(Node node, NodeFromProto(req->node()));
    ASSIGN_OR_RETURN(Node stored, scheduler_->RegisterNode(std::move(node)));
    NodeToProto(stored, resp);
    AttachDeviceStats(stats_->Get(stored.name), resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::GetNode(grpc::ServerContext* ctx,
                                       const v1::GetNodeRequest* req,
                                       v1::Node* resp) {
  return Handle(ctx, "GetNode", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    ASSIGN_OR_RETURN(Node node, scheduler_->GetNode(req->name()));
    NodeToProto(node, resp);
    AttachDeviceStats(stats_->Get(node.name), resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::ListNodes(grpc::ServerContext* ctx,
                                         const v1::ListNodesRequest* req,
                                         v1::ListNodesResponse* resp) {
  return Handle(ctx, "ListNodes", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(
        LabelSelector selector,
        LabelSelector::Parse(req->label_selector(), "label_selector"));
    ASSIGN_OR_RETURN(
        NodePage page,
        scheduler_->ListNodes(selector, req->page_size(), req->page_token()));
    for (const Node& node : page.nodes) {
      v1::Node* proto = resp->add_nodes();
      NodeToProto(node, proto);
      AttachDeviceStats(stats_->Get(node.name), proto);
    }
    resp->set_next_page_token(page.next_page_token);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::RemoveNode(grpc::ServerContext* ctx,
                                          const v1::RemoveNodeRequest* req,
                                          v1::RemoveNodeResponse*) {
  return Handle(ctx, "RemoveNode", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    RETURN_IF_ERROR(scheduler_->RemoveNode(req->name(), req->force()));
    stats_->Erase(req->name());
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::SetNodeSchedulable(
    grpc::ServerContext* ctx, const v1::SetNodeSchedulableRequest* req,
    v1::Node* resp) {
  return Handle(ctx, "SetNodeSchedulable", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    ASSIGN_OR_RETURN(Node node, scheduler_->SetNodeSchedulable(
                                    req->name(), req->schedulable()));
    NodeToProto(node, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::Heartbeat(grpc::ServerContext* ctx,
                                         const v1::HeartbeatRequest* req,
                                         v1::HeartbeatResponse*) {
  return Handle(ctx, "Heartbeat", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    std::vector<std::string> ids(req->unhealthy_device_ids().begin(),
                                 req->unhealthy_device_ids().end());
    for (size_t i = 0; i < ids.size() && i <= kMaxDevicesPerNode; ++i) {
      RETURN_IF_ERROR(
          ValidateId(ids[i], absl::StrCat("unhealthy_device_ids[", i, "]")));
    }
    if (req->device_stats_size() > static_cast<int>(kMaxDeviceStatsPerNode)) {
      return absl::InvalidArgumentError(
          absl::StrCat("device_stats has ", req->device_stats_size(),
                       " entries; at most ", kMaxDeviceStatsPerNode));
    }
    // In id order, so that the first error named is the same every time.
    std::vector<std::string> reported;
    reported.reserve(req->device_stats_size());
    for (const auto& [id, unused] : req->device_stats()) reported.push_back(id);
    std::sort(reported.begin(), reported.end());
    for (const std::string& id : reported) {
      RETURN_IF_ERROR(ValidateId(
          id, absl::StrCat("device_stats[\"", absl::CHexEscape(id), "\"]")));
    }
    const absl::Time now = absl::Now();
    ASSIGN_OR_RETURN(DeviceStatsMap stats,
                     DeviceStatsFromProto(req->device_stats(), reported, now));
    // Stored under the scheduler's lock once the heartbeat is accepted, so
    // that a concurrent RemoveNode (which erases them after its own removal)
    // cannot be overtaken by a late report.
    return scheduler_->Heartbeat(req->name(), ids, reported, [&] {
      stats_->Put(req->name(), std::move(stats), now);
    });
  });
}

grpc::Status SchedulerService::GetCapacity(grpc::ServerContext* ctx,
                                           const v1::GetCapacityRequest*,
                                           v1::GetCapacityResponse* resp) {
  return Handle(ctx, "GetCapacity", [&]() -> absl::Status {
    for (const CapacityEntry& e : scheduler_->GetCapacity()) {
      CapacityToProto(e, resp->add_entries());
    }
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::ListAcceleratorTypes(
    grpc::ServerContext* ctx, const v1::ListAcceleratorTypesRequest* req,
    v1::ListAcceleratorTypesResponse* resp) {
  return Handle(ctx, "ListAcceleratorTypes", [&]() -> absl::Status {
    const std::shared_ptr<const AcceleratorRegistry> registry =
        scheduler_->registry();
    if (req->name().empty()) {
      for (const AcceleratorType& t : registry->types()) {
        ToProto(t, resp->add_types());
      }
      return absl::OkStatus();
    }
    if (req->name().size() > kMaxAliasLength) {
      return absl::InvalidArgumentError(
          absl::StrCat("name is ", req->name().size(),
                       " characters long; at most ", kMaxAliasLength));
    }
    const AcceleratorType* t = registry->Find(req->name());
    if (t == nullptr) {
      return absl::NotFoundError(absl::StrCat("name \"", req->name(),
                                              "\" is not a known accelerator"));
    }
    ToProto(*t, resp->add_types());
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::Allocate(grpc::ServerContext* ctx,
                                        const v1::AllocateRequest* req,
                                        v1::Allocation* resp) {
  return Handle(ctx, "Allocate", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(AllocationRequest request,
                     AllocationRequestFromProto(*req));
    ASSIGN_OR_RETURN(Allocation a, scheduler_->Allocate(request));
    AllocationToProto(a, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::Release(grpc::ServerContext* ctx,
                                       const v1::ReleaseRequest* req,
                                       v1::Allocation* resp) {
  return Handle(ctx, "Release", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(AllocationKey key, AllocationKeyFromProto(*req));
    ASSIGN_OR_RETURN(Allocation a, scheduler_->Release(key));
    AllocationToProto(a, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::RenewLease(grpc::ServerContext* ctx,
                                          const v1::RenewLeaseRequest* req,
                                          v1::Allocation* resp) {
  return Handle(ctx, "RenewLease", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateId(req->allocation_id(), "allocation_id"));
    const absl::Duration lease = absl::Seconds(req->lease().seconds()) +
                                 absl::Nanoseconds(req->lease().nanos());
    ASSIGN_OR_RETURN(Allocation a,
                     scheduler_->RenewLease(req->allocation_id(), lease));
    AllocationToProto(a, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::GetAllocation(
    grpc::ServerContext* ctx, const v1::GetAllocationRequest* req,
    v1::Allocation* resp) {
  return Handle(ctx, "GetAllocation", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(AllocationKey key, AllocationKeyFromProto(*req));
    ASSIGN_OR_RETURN(Allocation a, scheduler_->GetAllocation(key));
    AllocationToProto(a, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::ListAllocations(
    grpc::ServerContext* ctx, const v1::ListAllocationsRequest* req,
    v1::ListAllocationsResponse* resp) {
  return Handle(ctx, "ListAllocations", [&]() -> absl::Status {
    if (!v1::AllocationState_IsValid(req->state())) {
      return absl::InvalidArgumentError(
          absl::StrCat("state ", req->state(), " is not an AllocationState"));
    }
    if (!req->node().empty())
      RETURN_IF_ERROR(ValidateNodeName(req->node(), "node"));
    AllocationFilter filter{static_cast<AllocationState>(req->state()),
                            req->node(), req->tenant()};
    ASSIGN_OR_RETURN(AllocationPage page,
                     scheduler_->ListAllocations(filter, req->page_size(),
                                                 req->page_token()));
    for (const Allocation& a : page.allocations) {
      AllocationToProto(a, placement_, resp->add_allocations());
    }
    resp->set_next_page_token(page.next_page_token);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::Explain(grpc::ServerContext* ctx,
                                       const v1::AllocateRequest* req,
                                       v1::ExplainResponse* resp) {
  return Handle(ctx, "Explain", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(AllocationRequest request,
                     AllocationRequestFromProto(*req));
    ASSIGN_OR_RETURN(ExplainResult result, scheduler_->Explain(request));
    ExplainToProto(result, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::WatchEvents(
    grpc::ServerContext* ctx, const v1::WatchEventsRequest*,
    grpc::ServerWriter<v1::Event>* writer) {
  return Handle(ctx, "WatchEvents", [&]() -> absl::Status {
    EventHub& hub = scheduler_->events();
    std::shared_ptr<EventHub::Watcher> watcher = hub.Subscribe();
    absl::Cleanup unsubscribe = [&] { hub.Unsubscribe(watcher); };
    // Wake up now and then to notice a cancelled call or a server shutting
    // down.
    while (!ctx->IsCancelled()) {
      ASSIGN_OR_RETURN(std::optional<Event> event,
                       watcher->Next(absl::Milliseconds(250)));
      if (!event.has_value()) continue;
      v1::Event proto;
      EventToProto(*event, placement_, &proto);
      if (!writer->Write(proto)) break;  // the client went away
    }
    return absl::OkStatus();
  });
}

}  // namespace accelsched
