#include "services/scheduler_service.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "config/accelerator_types_file.h"
#include "core/base/labels.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_validation.h"
#include "core/matching/allocation_request.h"
#include "services/event_stream.h"
#include "services/grpc_status.h"
#include "services/proto_convert.h"

namespace accelsched {
namespace {

// The longest error text an agent may report of a failed re-layout.
constexpr size_t kMaxRelayoutErrorBytes = 4096;

// A heartbeat's mig_relayout_failures, checked in device id order so that
// the first error named is the same every time.
absl::StatusOr<std::vector<Scheduler::RelayoutFailure>>
RelayoutFailuresFromProto(
    const google::protobuf::Map<std::string, v1::MigRelayoutFailure>& proto) {
  if (proto.size() > kMaxDevicesPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("mig_relayout_failures has ", proto.size(),
                     " entries; at most ", kMaxDevicesPerNode));
  }
  std::vector<Scheduler::RelayoutFailure> out;
  for (const auto& [id, failure] : proto) {
    out.push_back(
        Scheduler::RelayoutFailure{id, failure.generation(), failure.error()});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.device_id < b.device_id;
  });
  for (const Scheduler::RelayoutFailure& f : out) {
    const std::string field = absl::StrCat(
        "mig_relayout_failures[\"", absl::CHexEscape(f.device_id), "\"]");
    RETURN_IF_ERROR(ValidateId(f.device_id, field));
    if (f.generation == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".generation must be the failed plan's (1 or more)"));
    }
    if (f.error.size() > kMaxRelayoutErrorBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".error has ", f.error.size(), " bytes; at most ",
                       kMaxRelayoutErrorBytes));
    }
  }
  return out;
}

}  // namespace

SchedulerService::Done::Done(Done&& other) noexcept
    : service_(other.service_),
      reactor_(std::exchange(other.reactor_, nullptr)),
      method_(other.method_),
      start_(other.start_) {}

void SchedulerService::Done::operator()(const absl::Status& status) && {
  if (reactor_ == nullptr) return;
  const absl::Duration latency = absl::Now() - start_;
  service_->metrics_->RecordRpc(method_, status.code(), latency);
  if (method_ == "Allocate") {
    service_->metrics_->RecordAllocate(status.code(), latency);
  }
  std::exchange(reactor_, nullptr)->Finish(ToGrpcStatus(status));
}

void SchedulerService::CallStarted() {
  absl::MutexLock lock(&in_flight_mu_);
  ++in_flight_;
}

void SchedulerService::CallFinished() {
  absl::MutexLock lock(&in_flight_mu_);
  --in_flight_;
}

bool SchedulerService::AwaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&in_flight_mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(in_flight_mu_) {
    return in_flight_ == 0;
  };
  return in_flight_mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

Scheduler::Callback<Allocation> SchedulerService::Reply(v1::Allocation* resp,
                                                        Done done) const {
  return [placement = placement_, resp,
          done = std::move(done)](absl::StatusOr<Allocation> a) mutable {
    if (a.ok()) AllocationToProto(*a, placement, resp);
    std::move(done)(a.status());
  };
}

absl::Status SchedulerService::CheckCall(const grpc::CallbackServerContext& ctx,
                                         absl::string_view method) const {
  RETURN_IF_ERROR(leadership_->Check());
  RETURN_IF_ERROR(scheduler_->Ready());
  // The calls that change the catalog need an admin credential when one is
  // configured.
  static constexpr absl::string_view kAdminMethods[] = {
      "RegisterNode", "RemoveNode", "SetNodeSchedulable", "Heartbeat"};
  const bool admin =
      std::find(std::begin(kAdminMethods), std::end(kAdminMethods), method) !=
      std::end(kAdminMethods);
  return admin ? auth_->Check(ctx, method) : absl::OkStatus();
}

grpc::ServerUnaryReactor* SchedulerService::Answer(
    grpc::CallbackServerContext* ctx, absl::string_view method,
    absl::FunctionRef<absl::Status()> body) {
  return Begin(ctx, method, [&](Done& done) -> absl::Status {
    RETURN_IF_ERROR(body());
    std::move(done)(absl::OkStatus());
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::Begin(
    grpc::CallbackServerContext* ctx, absl::string_view method,
    absl::FunctionRef<absl::Status(Done& done)> start) {
  grpc::ServerUnaryReactor* reactor = new UnaryCall(this);
  Done done(this, reactor, method);
  absl::Status status = CheckCall(*ctx, method);
  if (status.ok()) status = start(done);
  // On error `done` is still here; on success the scheduler has it.
  if (!status.ok()) std::move(done)(status);
  return reactor;
}

grpc::ServerUnaryReactor* SchedulerService::RegisterNode(
    grpc::CallbackServerContext* ctx, const v1::RegisterNodeRequest* req,
    v1::Node* resp) {
  return Begin(ctx, "RegisterNode", [&](Done& done) -> absl::Status {
    if (!req->has_node()) return absl::InvalidArgumentError("node is required");
    ASSIGN_OR_RETURN(Node node, NodeFromProto(req->node()));
    scheduler_->nodes().RegisterNode(
        std::move(node), [this, resp, done = std::move(done)](
                             absl::StatusOr<Node> stored) mutable {
          if (stored.ok()) {
            NodeToProto(*stored, resp);
            AttachDeviceStats(stats_->Get(stored->name), resp);
          }
          std::move(done)(stored.status());
        });
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::GetNode(
    grpc::CallbackServerContext* ctx, const v1::GetNodeRequest* req,
    v1::Node* resp) {
  return Answer(ctx, "GetNode", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    ASSIGN_OR_RETURN(Node node, scheduler_->nodes().GetNode(req->name()));
    NodeToProto(node, resp);
    AttachDeviceStats(stats_->Get(node.name), resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::ListNodes(
    grpc::CallbackServerContext* ctx, const v1::ListNodesRequest* req,
    v1::ListNodesResponse* resp) {
  return Answer(ctx, "ListNodes", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(
        LabelSelector selector,
        LabelSelector::Parse(req->label_selector(), "label_selector"));
    ASSIGN_OR_RETURN(
        NodePage page,
        scheduler_->nodes().ListNodes(selector, req->page_size(), req->page_token()));
    for (const Node& node : page.nodes) {
      v1::Node* proto = resp->add_nodes();
      NodeToProto(node, proto);
      // Device.links stay out of pages (accelsched.proto says why).
      for (v1::Device& d : *proto->mutable_devices()) d.clear_links();
      AttachDeviceStats(stats_->Get(node.name), proto);
    }
    resp->set_next_page_token(page.next_page_token);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::RemoveNode(
    grpc::CallbackServerContext* ctx, const v1::RemoveNodeRequest* req,
    v1::RemoveNodeResponse*) {
  return Begin(ctx, "RemoveNode", [&](Done& done) -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    scheduler_->nodes().RemoveNode(
        req->name(), req->force(),
        [this, req, done = std::move(done)](absl::Status removed) mutable {
          if (removed.ok()) stats_->Erase(req->name());
          std::move(done)(removed);
        });
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::SetNodeSchedulable(
    grpc::CallbackServerContext* ctx, const v1::SetNodeSchedulableRequest* req,
    v1::Node* resp) {
  return Begin(ctx, "SetNodeSchedulable", [&](Done& done) -> absl::Status {
    RETURN_IF_ERROR(ValidateNodeName(req->name(), "name"));
    scheduler_->nodes().SetNodeSchedulable(
        req->name(), req->schedulable(),
        [resp, done = std::move(done)](absl::StatusOr<Node> node) mutable {
          if (node.ok()) NodeToProto(*node, resp);
          std::move(done)(node.status());
        });
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::Heartbeat(
    grpc::CallbackServerContext* ctx, const v1::HeartbeatRequest* req,
    v1::HeartbeatResponse* resp) {
  return Begin(ctx, "Heartbeat", [&](Done& done) -> absl::Status {
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
    Scheduler::HeartbeatReport report;
    report.unhealthy_device_ids = std::move(ids);
    report.reported_ids = std::move(reported);
    ASSIGN_OR_RETURN(report.relayout_failures,
                     RelayoutFailuresFromProto(req->mig_relayout_failures()));
    // The stats are stored under the scheduler's lock once the heartbeat is
    // accepted, so that a concurrent RemoveNode (which erases them after its
    // own removal) cannot be overtaken by a late report.
    scheduler_->nodes().Heartbeat(
        req->name(), report,
        [&] { stats_->Put(req->name(), std::move(stats), now); },
        [resp, done = std::move(done)](
            absl::StatusOr<Scheduler::MigPlans> plans) mutable {
          if (plans.ok()) {
            for (const auto& [gpu, plan] : *plans) {
              MigPlanToProto(plan, &(*resp->mutable_mig_plans())[gpu]);
            }
          }
          std::move(done)(plans.status());
        });
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::GetCapacity(
    grpc::CallbackServerContext* ctx, const v1::GetCapacityRequest*,
    v1::GetCapacityResponse* resp) {
  return Answer(ctx, "GetCapacity", [&]() -> absl::Status {
    for (const CapacityEntry& e : scheduler_->nodes().GetCapacity()) {
      CapacityToProto(e, resp->add_entries());
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::ListAcceleratorTypes(
    grpc::CallbackServerContext* ctx,
    const v1::ListAcceleratorTypesRequest* req,
    v1::ListAcceleratorTypesResponse* resp) {
  return Answer(ctx, "ListAcceleratorTypes", [&]() -> absl::Status {
    const std::shared_ptr<const AcceleratorTypeSet> registry =
        scheduler_->nodes().accelerator_types();
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

grpc::ServerUnaryReactor* SchedulerService::Allocate(
    grpc::CallbackServerContext* ctx, const v1::AllocateRequest* req,
    v1::Allocation* resp) {
  return Begin(ctx, "Allocate", [&](Done& done) -> absl::Status {
    ASSIGN_OR_RETURN(AllocationRequest request,
                     AllocationRequestFromProto(*req));
    scheduler_->allocations().Allocate(request, Reply(resp, std::move(done)));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::Release(
    grpc::CallbackServerContext* ctx, const v1::ReleaseRequest* req,
    v1::Allocation* resp) {
  return Begin(ctx, "Release", [&](Done& done) -> absl::Status {
    ASSIGN_OR_RETURN(AllocationKey key, AllocationKeyFromProto(*req));
    scheduler_->allocations().Release(key, Reply(resp, std::move(done)));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::RenewLease(
    grpc::CallbackServerContext* ctx, const v1::RenewLeaseRequest* req,
    v1::Allocation* resp) {
  return Begin(ctx, "RenewLease", [&](Done& done) -> absl::Status {
    RETURN_IF_ERROR(ValidateId(req->allocation_id(), "allocation_id"));
    const absl::Duration lease = absl::Seconds(req->lease().seconds()) +
                                 absl::Nanoseconds(req->lease().nanos());
    scheduler_->allocations().RenewLease(req->allocation_id(), lease,
                           Reply(resp, std::move(done)));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::GetAllocation(
    grpc::CallbackServerContext* ctx, const v1::GetAllocationRequest* req,
    v1::Allocation* resp) {
  return Begin(ctx, "GetAllocation", [&](Done& done) -> absl::Status {
    ASSIGN_OR_RETURN(AllocationKey key, AllocationKeyFromProto(*req));
    scheduler_->allocations().GetAllocation(key, Reply(resp, std::move(done)));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::ListAllocations(
    grpc::CallbackServerContext* ctx, const v1::ListAllocationsRequest* req,
    v1::ListAllocationsResponse* resp) {
  return Answer(ctx, "ListAllocations", [&]() -> absl::Status {
    if (!v1::AllocationState_IsValid(req->state())) {
      return absl::InvalidArgumentError(
          absl::StrCat("state ", req->state(), " is not an AllocationState"));
    }
    if (!req->node().empty())
      RETURN_IF_ERROR(ValidateNodeName(req->node(), "node"));
    AllocationFilter filter{static_cast<AllocationState>(req->state()),
                            req->node(), req->tenant()};
    ASSIGN_OR_RETURN(AllocationPage page,
                     scheduler_->allocations().ListAllocations(filter, req->page_size(),
                                                 req->page_token()));
    for (const Allocation& a : page.allocations) {
      AllocationToProto(a, placement_, resp->add_allocations());
    }
    resp->set_next_page_token(page.next_page_token);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::Explain(
    grpc::CallbackServerContext* ctx, const v1::AllocateRequest* req,
    v1::ExplainResponse* resp) {
  return Answer(ctx, "Explain", [&]() -> absl::Status {
    ASSIGN_OR_RETURN(AllocationRequest request,
                     AllocationRequestFromProto(*req));
    ASSIGN_OR_RETURN(ExplainResult result, scheduler_->allocations().Explain(request));
    ExplainToProto(result, placement_, resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SchedulerService::GetQueue(
    grpc::CallbackServerContext* ctx, const v1::GetQueueRequest* req,
    v1::GetQueueResponse* resp) {
  return Answer(ctx, "GetQueue", [&]() -> absl::Status {
    RETURN_IF_ERROR(ValidateTenant(req->tenant(), "tenant"));
    ASSIGN_OR_RETURN(QueuePage page,
                     scheduler_->queue().GetQueue(req->tenant(), req->page_size(),
                                          req->page_token()));
    for (const Allocation& a : page.pending) {
      AllocationToProto(a, placement_, resp->add_pending());
    }
    resp->set_next_page_token(page.next_page_token);
    for (const TenantStanding& t : scheduler_->queue().TenantStandings(req->tenant())) {
      TenantStandingToProto(t, resp->add_tenants());
    }
    return absl::OkStatus();
  });
}

grpc::ServerWriteReactor<v1::Event>* SchedulerService::WatchEvents(
    grpc::CallbackServerContext* ctx, const v1::WatchEventsRequest* req) {
  absl::Status status = CheckCall(*ctx, "WatchEvents");
  EventFilter filter{req->tenant(), req->request_id(), req->node()};
  if (status.ok()) status = ValidateTenant(filter.tenant, "tenant");
  if (status.ok() && !filter.request_id.empty()) {
    status = ValidateId(filter.request_id, "request_id");
  }
  if (status.ok() && !filter.node.empty()) {
    status = ValidateNodeName(filter.node, "node");
  }
  if (!status.ok()) {
    metrics_->RecordRpc("WatchEvents", status.code(), absl::ZeroDuration());
    // A reactor that only finishes, freed by gRPC when done.
    class Refused final : public grpc::ServerWriteReactor<v1::Event> {
     public:
      explicit Refused(const absl::Status& s) { Finish(ToGrpcStatus(s)); }
      void OnDone() override { delete this; }
    };
    return new Refused(status);
  }
  const absl::Time start = absl::Now();
  return EventStream::Start(
      &scheduler_->events(), std::move(filter), &event_messages_,
      [this, start](const absl::Status& ended) {
        metrics_->RecordRpc("WatchEvents", ended.code(), absl::Now() - start);
        CallStarted();  // its status is on its way: Shutdown waits for it
      },
      [this] { CallFinished(); });
}

}  // namespace accelsched
