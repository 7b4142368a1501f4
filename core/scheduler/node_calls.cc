#include "core/scheduler/node_calls.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_queries.h"
#include "core/catalog/node_validation.h"
#include "core/catalog/pool_queries.h"

namespace accelsched {

Node NodeCalls::WithAvailable(Node node) const {
  const NodeAccount* account = state_.view().catalog.index().Account(node.name);
  if (node.allocatable.has_value()) {
    node.available =
        account == nullptr ? *node.allocatable : account->available();
  }
  return node;
}

void NodeCalls::RegisterNode(Node node, SchedulerCallback<Node> done) {
  Complete(state_.committer(), QueueRegisterNode(std::move(node)),
           std::move(done));
}

absl::StatusOr<Queued<Node>> NodeCalls::QueueRegisterNode(Node node) {
  // As sent: normalisation fills fields in, and a second check must not see
  // them.
  const Node incoming = node;
  std::shared_ptr<const AcceleratorTypeSet> types = state_.types();
  RETURN_IF_ERROR(NormalizeAndValidateNode(*types, node));
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    if (std::shared_ptr<const AcceleratorTypeSet> now = state_.types();
        now != types) {
      // Replaced since the check (rare): check again against the one that
      // cannot change while the lock is held.
      types = std::move(now);
      node = incoming;
      RETURN_IF_ERROR(NormalizeAndValidateNode(*types, node));
    }
    std::vector<MigPlanEnd> plan_ends;
    ASSIGN_OR_RETURN(node, m.catalog.Put(*types, std::move(node),
                                         state_.clock().Now(), &plan_ends));
    Write write;
    write.mutations.push_back(PutNodeMutation{node});
    write.events.push_back(Event{Event::Type::kNodeRegistered,
                                 node.last_heartbeat,
                                 {},
                                 node.name,
                                 "",
                                 0});
    std::vector<std::string> relayouts_done =
        m.mig.Registered(node.name, plan_ends, node.last_heartbeat, write);
    ticket = state_.Commit(std::move(write));
    lifecycle_.Admit(node.last_heartbeat, /*refresh=*/false,
                     std::move(relayouts_done));
    node = WithAvailable(std::move(node));
  }
  return Queued<Node>{std::move(node), std::move(ticket)};
}

absl::StatusOr<Node> NodeCalls::GetNode(absl::string_view name) const {
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  ASSIGN_OR_RETURN(const Node* node,
                   FindNode(state_.view().catalog.nodes(), name));
  return WithAvailable(*node);
}

absl::StatusOr<NodePage> NodeCalls::ListNodes(
    const LabelSelector& selector, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  NodePage page = NodesPage(state_.view().catalog.nodes(), selector,
                            request.size, request.after);
  for (Node& node : page.nodes) node = WithAvailable(std::move(node));
  return page;
}

void NodeCalls::RemoveNode(absl::string_view name, bool force,
                           SchedulerStatusCallback done) {
  Complete(state_.committer(), QueueRemoveNode(name, force), std::move(done));
}

absl::StatusOr<Queued<bool>> NodeCalls::QueueRemoveNode(absl::string_view name,
                                                        bool force) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    RETURN_IF_ERROR(FindNode(m.catalog.nodes(), name).status());
    const std::set<std::string> live =
        HoldersOn(m.catalog.index(), m.book.holdings(), name);
    if (!live.empty() && !force) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node \"", name, "\" holds ", live.size(), " live allocation",
          live.size() == 1 ? "" : "s", " (", absl::StrJoin(live, ", "),
          "); release them first or set force"));
    }
    const absl::Time now = state_.clock().Now();
    Write write;
    for (const std::string& id : live) {
      lifecycle_.End(*m.book.Find(id), AllocationState::kReleased,
                     kReasonNodeRemoved, now, write);
    }
    const std::string node_name(name);
    RETURN_IF_ERROR(m.catalog.Remove(node_name));  // found above
    write.mutations.push_back(DeleteNodeMutation{node_name});
    write.events.push_back(
        Event{Event::Type::kNodeRemoved, now, {}, node_name, "", 0});
    ticket = state_.Commit(std::move(write));
    if (!live.empty()) lifecycle_.Admit(now);
    // What the allocations now show is durable with this write only.
    for (const std::string& id : live) m.book.Find(id)->ticket = ticket;
  }
  return Queued<bool>{true, std::move(ticket)};
}

void NodeCalls::SetNodeSchedulable(absl::string_view name, bool schedulable,
                                   SchedulerCallback<Node> done) {
  Complete(state_.committer(), QueueSetNodeSchedulable(name, schedulable),
           std::move(done));
}

absl::StatusOr<Queued<Node>> NodeCalls::QueueSetNodeSchedulable(
    absl::string_view name, bool schedulable) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Node updated;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    ASSIGN_OR_RETURN(updated, m.catalog.SetSchedulable(name, schedulable));
    Write write;
    write.mutations.push_back(PutNodeStatusMutation{updated});
    write.events.push_back(Event{Event::Type::kNodeSchedulableChanged,
                                 state_.clock().Now(),
                                 {},
                                 updated.name,
                                 schedulable ? "schedulable" : "cordoned",
                                 0});
    ticket = state_.Commit(std::move(write));
    if (schedulable) lifecycle_.Admit(state_.clock().Now());
    updated = WithAvailable(std::move(updated));
  }
  return Queued<Node>{std::move(updated), std::move(ticket)};
}

void NodeCalls::Heartbeat(absl::string_view name, const HeartbeatReport& report,
                          absl::FunctionRef<void()> accepted,
                          SchedulerCallback<MigPlans> done) {
  Complete(state_.committer(), QueueHeartbeat(name, report, accepted),
           std::move(done));
}

absl::StatusOr<Queued<NodeCalls::MigPlans>> NodeCalls::QueueHeartbeat(
    absl::string_view name, const HeartbeatReport& report,
    absl::FunctionRef<void()> accepted) {
  if (report.unhealthy_device_ids.size() > kMaxDevicesPerNode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unhealthy_device_ids has ", report.unhealthy_device_ids.size(),
        " entries; at most ", kMaxDevicesPerNode));
  }
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  MigPlans plans;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    const absl::Time now = state_.clock().Now();
    // A node heard from again after going stale may take pending requests.
    bool was_stale = false;
    if (auto node = FindNode(m.catalog.nodes(), name);
        node.ok() && options_.heartbeat_timeout > absl::ZeroDuration()) {
      was_stale = now - (*node)->last_heartbeat > options_.heartbeat_timeout;
    }
    ASSIGN_OR_RETURN(const std::vector<HealthChange> changes,
                     m.catalog.Heartbeat(name, report.unhealthy_device_ids,
                                         report.reported_ids, now));
    Write write;
    for (const HealthChange& change : changes) {
      write.events.push_back(
          Event{Event::Type::kDeviceHealthChanged,
                now,
                {},
                std::string(name),
                absl::StrCat(change.device_id,
                             change.healthy ? " healthy" : " unhealthy"),
                0});
    }
    const std::string node_name(name);
    // Whether slices came back into service.
    bool freed = false;
    for (const RelayoutFailure& f : report.relayout_failures) {
      if (f.generation == 0) continue;  // names no plan
      freed = m.mig.Failed(m.catalog, node_name, f.device_id, f.generation,
                           f.error, now, write) ||
              freed;
    }
    // After the drops, which write the node whole.
    const Node& node = **FindNode(m.catalog.nodes(), name);  // found above
    write.mutations.push_back(PutNodeStatusMutation{node});
    // Every plan standing now was queued before this write (plans are made
    // under the lock), so it is durable when this write is.
    for (const Device& d : node.devices) {
      if (d.mig_plan.has_value()) plans.emplace(d.id, *d.mig_plan);
    }
    ticket = state_.Commit(std::move(write));
    if (was_stale || !changes.empty() || freed) lifecycle_.Admit(now);
    accepted();
  }
  return Queued<MigPlans>{std::move(plans), std::move(ticket)};
}

std::vector<CapacityEntry> NodeCalls::GetCapacity() const {
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  return CapacityOf(state_.view().catalog.index());
}

std::shared_ptr<const AcceleratorTypeSet> NodeCalls::accelerator_types() const {
  return state_.types();
}

absl::Status NodeCalls::ReplaceAcceleratorTypes(
    std::shared_ptr<const AcceleratorTypeSet> next) {
  absl::MutexLock lock(&state_.mu());
  lifecycle_.AssertHeld();
  const std::shared_ptr<const AcceleratorTypeSet> current = state_.types();
  RETURN_IF_ERROR(
      CheckAcceleratorTypes(state_.memory().catalog.nodes(), *current, *next));
  state_.ReplaceTypes(std::move(next));
  return absl::OkStatus();
}

}  // namespace accelsched
