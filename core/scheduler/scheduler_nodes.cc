// The scheduler's catalog calls: node registration, removal, cordon,
// heartbeats and replacement of the accelerator types, ordered and committed
// around Catalog.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_validation.h"
#include "core/scheduler/scheduler.h"

namespace accelsched {

void Scheduler::DropReleasedRemovedDevices(const std::string& node_name,
                                           Write& write) {
  std::optional<Node> changed = catalog_.DropReleasedRemovedDevices(node_name);
  if (changed.has_value()) {
    write.mutations.push_back(PutNodeMutation{*std::move(changed)});
  }
}

Node Scheduler::WithAvailable(Node node) const {
  const NodeAccount* account = catalog_.index().Account(node.name);
  if (node.allocatable.has_value()) {
    node.available =
        account == nullptr ? *node.allocatable : account->available();
  }
  return node;
}

void Scheduler::RegisterNode(Node node, Callback<Node> done) {
  Complete(QueueRegisterNode(std::move(node)), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Node>> Scheduler::QueueRegisterNode(
    Node node) {
  // As sent: normalisation fills fields in, and a second check must not see
  // them.
  const Node incoming = node;
  std::shared_ptr<const AcceleratorTypeSet> types = this->accelerator_types();
  RETURN_IF_ERROR(NormalizeAndValidateNode(*types, node));
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&mu_);
    if (std::shared_ptr<const AcceleratorTypeSet> now =
            this->accelerator_types();
        now != types) {
      // Replaced since the check (rare): check again against the one that
      // cannot change while mu_ is held.
      types = std::move(now);
      node = incoming;
      RETURN_IF_ERROR(NormalizeAndValidateNode(*types, node));
    }
    std::vector<MigPlanEnd> plan_ends;
    ASSIGN_OR_RETURN(
        node, catalog_.Put(*types, std::move(node), clock_->Now(), &plan_ends));
    Write write;
    write.mutations.push_back(PutNodeMutation{node});
    write.events.push_back(Event{Event::Type::kNodeRegistered,
                                 node.last_heartbeat,
                                 {},
                                 node.name,
                                 "",
                                 0});
    std::vector<std::string> relayouts_done;
    for (const MigPlanEnd& end : plan_ends) {
      if (end.applied) {  // the registration itself says so
        relayouts_done.push_back(end.plan.allocation_id);
        continue;
      }
      relayout_backoff_[end.device_id] =
          node.last_heartbeat + options_.mig_relayout_timeout;
      write.events.push_back(
          Event{Event::Type::kMigRelayoutDropped,
                node.last_heartbeat,
                {},
                node.name,
                absl::StrCat(end.device_id, ": plan of generation ",
                             end.plan.generation, " dropped: ", end.reason),
                0});
    }
    ticket = Commit(std::move(write));
    AdmitLocked(node.last_heartbeat, /*refresh_reservations=*/false,
                std::move(relayouts_done));
    node = WithAvailable(std::move(node));
  }
  return Queued<Node>{std::move(node), std::move(ticket)};
}

absl::StatusOr<Node> Scheduler::GetNode(absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const Node* node, catalog_.FindNode(name));
  return WithAvailable(*node);
}

absl::StatusOr<NodePage> Scheduler::ListNodes(
    const LabelSelector& selector, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  absl::ReaderMutexLock lock(&mu_);
  NodePage page = catalog_.ListNodes(selector, request.size, request.after);
  for (Node& node : page.nodes) node = WithAvailable(std::move(node));
  return page;
}

bool Scheduler::DropMigPlanLocked(const std::string& node,
                                  const std::string& device_id,
                                  uint64_t generation, absl::string_view why,
                                  absl::Time now, Write& write,
                                  absl::Time hold_until) {
  auto dropped = catalog_.DropMigPlan(node, device_id, generation, hold_until);
  if (!dropped.has_value()) return false;
  relayout_backoff_[device_id] = now + options_.mig_relayout_timeout;
  write.mutations.push_back(PutNodeMutation{std::move(dropped->first)});
  write.events.push_back(
      Event{Event::Type::kMigRelayoutDropped,
            now,
            {},
            node,
            absl::StrCat(device_id, ": plan of generation ",
                         dropped->second.generation, " for ",
                         dropped->second.allocation_id, " dropped: ", why),
            0});
  return true;
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::DropDueMigPlansLocked(
    absl::Time now) {
  std::vector<std::pair<std::string, std::string>> due;
  for (const auto& [node, device] : catalog_.mig_plans()) {
    const Device* d = FindDevice(catalog_.nodes().find(node)->second, device);
    if (d->mig_plan->deadline <= now) due.emplace_back(node, device);
  }
  // Forget backoffs that have run out, so that the map stays small.
  absl::erase_if(relayout_backoff_,
                 [&](const auto& entry) { return entry.second <= now; });
  catalog_.ReleaseLapsed(now);
  if (due.empty()) return nullptr;
  Write write;
  for (const auto& [node, device] : due) {
    // Its agent may have started just before the deadline: the slices it
    // planned away stay out of service for one more timeout, or until the
    // node registers what it has.
    DropMigPlanLocked(node, device, 0,
                      "the node did not report the layout by its deadline", now,
                      write, now + options_.mig_relayout_timeout);
  }
  return Commit(std::move(write));
}

void Scheduler::RemoveNode(absl::string_view name, bool force,
                           StatusCallback done) {
  Complete(QueueRemoveNode(name, force), std::move(done));
}

absl::StatusOr<Scheduler::Queued<bool>> Scheduler::QueueRemoveNode(
    absl::string_view name, bool force) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(catalog_.FindNode(name).status());
    const std::set<std::string> live = catalog_.HoldersOn(name);
    if (!live.empty() && !force) {
      return absl::FailedPreconditionError(absl::StrCat(
          "node \"", name, "\" holds ", live.size(), " live allocation",
          live.size() == 1 ? "" : "s", " (", absl::StrJoin(live, ", "),
          "); release them first or set force"));
    }
    const absl::Time now = clock_->Now();
    Write write;
    for (const std::string& id : live) {
      EndLocked(*book_.FindMutable(id), AllocationState::kReleased,
                kReasonNodeRemoved, now, write);
    }
    const std::string node_name(name);
    RETURN_IF_ERROR(catalog_.Remove(node_name));  // found above
    write.mutations.push_back(DeleteNodeMutation{node_name});
    write.events.push_back(
        Event{Event::Type::kNodeRemoved, now, {}, node_name, "", 0});
    ticket = Commit(std::move(write));
    if (!live.empty()) AdmitLocked(now);
    // What the allocations now show is durable with this write only.
    for (const std::string& id : live) book_.FindMutable(id)->ticket = ticket;
  }
  return Queued<bool>{true, std::move(ticket)};
}

void Scheduler::SetNodeSchedulable(absl::string_view name, bool schedulable,
                                   Callback<Node> done) {
  Complete(QueueSetNodeSchedulable(name, schedulable), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Node>> Scheduler::QueueSetNodeSchedulable(
    absl::string_view name, bool schedulable) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Node updated;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(updated, catalog_.SetSchedulable(name, schedulable));
    Write write;
    write.mutations.push_back(PutNodeStatusMutation{updated});
    write.events.push_back(Event{Event::Type::kNodeSchedulableChanged,
                                 clock_->Now(),
                                 {},
                                 updated.name,
                                 schedulable ? "schedulable" : "cordoned",
                                 0});
    ticket = Commit(std::move(write));
    if (schedulable) AdmitLocked(clock_->Now());
    updated = WithAvailable(std::move(updated));
  }
  return Queued<Node>{std::move(updated), std::move(ticket)};
}

void Scheduler::Heartbeat(absl::string_view name, const HeartbeatReport& report,
                          absl::FunctionRef<void()> accepted,
                          Callback<MigPlans> done) {
  Complete(QueueHeartbeat(name, report, accepted), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Scheduler::MigPlans>>
Scheduler::QueueHeartbeat(absl::string_view name, const HeartbeatReport& report,
                          absl::FunctionRef<void()> accepted) {
  if (report.unhealthy_device_ids.size() > kMaxDevicesPerNode) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unhealthy_device_ids has ", report.unhealthy_device_ids.size(),
        " entries; at most ", kMaxDevicesPerNode));
  }
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  MigPlans plans;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    // A node heard from again after going stale may take pending requests.
    bool was_stale = false;
    if (auto node = catalog_.FindNode(name);
        node.ok() && options_.heartbeat_timeout > absl::ZeroDuration()) {
      was_stale = now - (*node)->last_heartbeat > options_.heartbeat_timeout;
    }
    ASSIGN_OR_RETURN(const std::vector<HealthChange> changes,
                     catalog_.Heartbeat(name, report.unhealthy_device_ids,
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
      if (DropMigPlanLocked(
              node_name, f.device_id, f.generation,
              absl::StrCat("the node's agent could not apply it: ", f.error),
              now, write)) {
        freed = true;
      } else if (catalog_.EndLapsed(node_name, f.device_id, f.generation)) {
        // Dropped at its deadline already, its slices held for an agent
        // that might still be under way: it has now said it stopped.
        freed = true;
      }
    }
    // After the drops, which write the node whole.
    const Node& node = **catalog_.FindNode(name);  // found above
    write.mutations.push_back(PutNodeStatusMutation{node});
    // Every plan standing now was queued before this write (plans are made
    // under mu_), so it is durable when this write is.
    for (const Device& d : node.devices) {
      if (d.mig_plan.has_value()) plans.emplace(d.id, *d.mig_plan);
    }
    ticket = Commit(std::move(write));
    if (was_stale || !changes.empty() || freed) AdmitLocked(now);
    accepted();
  }
  return Queued<MigPlans>{std::move(plans), std::move(ticket)};
}

std::vector<CapacityEntry> Scheduler::GetCapacity() const {
  absl::ReaderMutexLock lock(&mu_);
  return catalog_.index().Capacity();
}

std::shared_ptr<const AcceleratorTypeSet> Scheduler::accelerator_types() const {
  absl::ReaderMutexLock lock(&types_mu_);
  return types_;
}

absl::Status Scheduler::ReplaceAcceleratorTypes(
    std::shared_ptr<const AcceleratorTypeSet> next) {
  absl::MutexLock lock(&mu_);
  const std::shared_ptr<const AcceleratorTypeSet> current = accelerator_types();
  RETURN_IF_ERROR(catalog_.CheckAcceleratorTypes(*current, *next));
  absl::MutexLock types_lock(&types_mu_);
  types_ = std::move(next);
  return absl::OkStatus();
}

}  // namespace accelsched
