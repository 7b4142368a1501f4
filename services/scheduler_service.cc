#include "services/scheduler_service.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/labels.h"
#include "core/node_validation.h"
#include "core/status_macros.h"
#include "services/grpc_status.h"
#include "services/proto_convert.h"

namespace accelsched {
namespace {

// Per-call wrapper: runs the handler body and converts its status once. The
// place where per-RPC metrics and logging hook in.
template <typename Body>
grpc::Status Handle(Body&& body) {
  return ToGrpcStatus(body());
}

}  // namespace

grpc::Status SchedulerService::RegisterNode(grpc::ServerContext*,
                                            const v1::RegisterNodeRequest* req,
                                            v1::Node* resp) {
  return Handle([&]() -> absl::Status {
    if (!req->has_node()) return absl::InvalidArgumentError("node is required");
    ASSIGN_OR_RETURN(Node node, NodeFromProto(req->node()));
    ASSIGN_OR_RETURN(Node stored, catalog_->RegisterNode(std::move(node)));
    NodeToProto(stored, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::GetNode(grpc::ServerContext*,
                                       const v1::GetNodeRequest* req,
                                       v1::Node* resp) {
  return Handle([&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    ASSIGN_OR_RETURN(Node node, catalog_->GetNode(req->name()));
    NodeToProto(node, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::ListNodes(grpc::ServerContext*,
                                         const v1::ListNodesRequest* req,
                                         v1::ListNodesResponse* resp) {
  return Handle([&]() -> absl::Status {
    ASSIGN_OR_RETURN(
        LabelSelector selector,
        LabelSelector::Parse(req->label_selector(), "label_selector"));
    ASSIGN_OR_RETURN(
        NodePage page,
        catalog_->ListNodes(selector, req->page_size(), req->page_token()));
    for (const Node& node : page.nodes) NodeToProto(node, resp->add_nodes());
    resp->set_next_page_token(page.next_page_token);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::RemoveNode(grpc::ServerContext*,
                                          const v1::RemoveNodeRequest* req,
                                          v1::RemoveNodeResponse*) {
  return Handle([&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    return catalog_->RemoveNode(req->name(), req->force());
  });
}

grpc::Status SchedulerService::SetNodeSchedulable(
    grpc::ServerContext*, const v1::SetNodeSchedulableRequest* req,
    v1::Node* resp) {
  return Handle([&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    ASSIGN_OR_RETURN(Node node, catalog_->SetNodeSchedulable(
                                    req->name(), req->schedulable()));
    NodeToProto(node, resp);
    return absl::OkStatus();
  });
}

grpc::Status SchedulerService::Heartbeat(grpc::ServerContext*,
                                         const v1::HeartbeatRequest* req,
                                         v1::HeartbeatResponse*) {
  return Handle([&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    std::vector<std::string> ids(req->unhealthy_device_ids().begin(),
                                 req->unhealthy_device_ids().end());
    for (size_t i = 0; i < ids.size() && i <= kMaxDevicesPerNode; ++i) {
      RETURN_IF_ERROR(
          ValidateId(ids[i], absl::StrCat("unhealthy_device_ids[", i, "]")));
    }
    return catalog_->Heartbeat(req->name(), ids);
  });
}

grpc::Status SchedulerService::GetCapacity(grpc::ServerContext*,
                                           const v1::GetCapacityRequest*,
                                           v1::GetCapacityResponse* resp) {
  return Handle([&]() -> absl::Status {
    for (const CapacityEntry& e : catalog_->GetCapacity()) {
      CapacityToProto(e, resp->add_entries());
    }
    return absl::OkStatus();
  });
}

}  // namespace accelsched
