#include "core/scheduler/lifecycle.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/framework/admission_pass.h"
#include "core/placement/placement.h"

namespace accelsched {

class Lifecycle::PassStatement final : public CycleStatement {
 public:
  PassStatement(Lifecycle& life, SchedulerMemory& memory, absl::Time now)
      : life_(life), memory_(memory), now_(now) {}

  void Place(const std::string& id, const Groups& groups) override {
    Record& r = *memory_.book.Find(id);
    Allocation a = r.allocation;
    life_.AssertHeld();  // the pass runs under the state's lock
    std::vector<std::string> keys = life_.Assign(a, groups);
    a.state = AllocationState::kActive;
    a.admitted_at = now_;
    a.expires_at =
        now_ + (a.lease == absl::ZeroDuration() ? life_.options_.default_lease
                                                : a.lease);
    // Written again whole: a stored allocation's devices never change in
    // place.
    write.mutations.push_back(DeleteAllocationMutation{id});
    write.mutations.push_back(PutAllocationMutation{a, keys, true});
    write.events.push_back(
        Event{Event::Type::kAdmitted, now_, a, a.node, "", 0});
    memory_.book.Admit(r, std::move(a), std::move(keys));
    memory_.leases.Admitted(r);
    written.push_back(&r);
  }

  void Preempt(const std::string& victim,
               const std::string& preemptor) override {
    Record& r = *memory_.book.Find(victim);
    // The grace never outlasts the victim's own lease.
    memory_.book.Preempt(r, preemptor,
                         std::min(r.allocation.expires_at,
                                  now_ + life_.options_.preemption_grace));
    write.mutations.push_back(PutAllocationMutation{r.allocation, r.units});
    write.events.push_back(Event{Event::Type::kPreempted, now_, r.allocation,
                                 r.allocation.node,
                                 absl::StrCat("preempted for ", preemptor), 0});
    written.push_back(&r);
  }

  void PlanMigRelayout(const std::string& id,
                       const RelayoutChoice& choice) override {
    memory_.mig.Plan(memory_.catalog, memory_.book.Find(id)->allocation, choice,
                     now_, write);
  }

  Write write;
  std::vector<Record*> written;

 private:
  Lifecycle& life_;
  SchedulerMemory& memory_;
  const absl::Time now_;
};

Snapshot Lifecycle::SnapshotAt(absl::Time now) const {
  const SchedulerMemory& m = state_.view();
  Snapshot snap;
  snap.index = &m.catalog.index();
  snap.nodes = &m.catalog.nodes();
  snap.catalog = &m.catalog;
  snap.book = &m.book;
  snap.tenants = m.tenants.get();
  // Under the lock the types cannot be replaced: the set outlives the
  // snapshot.
  snap.types = state_.types().get();
  snap.mix = &m.mix;
  snap.leases = &m.leases;
  snap.durations = &m.leases.learned();
  snap.now = now;
  snap.heartbeat_timeout = options_.heartbeat_timeout;
  snap.default_lease = options_.default_lease;
  snap.preemption_grace = options_.preemption_grace;
  snap.relayout_backoff = &m.mig.backoff();
  snap.relayout_ahead = options_.mig_relayout_ahead;
  return snap;
}

void Lifecycle::End(Record& record, AllocationState end_state,
                    absl::string_view reason, absl::Time now, Write& write) {
  SchedulerMemory& m = state_.memory();
  const bool held = record.allocation.live();
  m.queue.Remove(record.allocation.id);
  m.book.End(record, end_state, reason, now);
  m.leases.Ended(record);
  const Allocation& a = record.allocation;
  std::set<std::string> nodes;
  if (held) {
    for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
  }
  write.mutations.push_back(PutAllocationMutation{a, record.units});
  for (const std::string& node : nodes) DropReleasedRemovedDevices(node, write);
  write.events.push_back(Event{end_state == AllocationState::kExpired
                                   ? Event::Type::kExpired
                                   : Event::Type::kReleased,
                               now, a, a.node, a.end_reason, 0});
}

void Lifecycle::DropReleasedRemovedDevices(const std::string& node,
                                           Write& write) {
  std::optional<Node> changed =
      state_.memory().catalog.DropReleasedRemovedDevices(node);
  if (changed.has_value()) {
    write.mutations.push_back(PutNodeMutation{*std::move(changed)});
  }
}

Lifecycle::Ticket Lifecycle::ExpireDue(absl::Time now, int* expired) {
  Write write;
  std::vector<Record*> ended = state_.memory().book.Due(now);
  for (Record* record : ended) {
    // A preempted allocation's grace is over; anything else's lease.
    if (record->allocation.state == AllocationState::kPreempted) {
      End(*record, AllocationState::kPreempted, kReasonPreempted, now, write);
    } else {
      End(*record, AllocationState::kExpired,
          record->allocation.pending() ? kReasonPendingExpired : kReasonExpired,
          now, write);
    }
  }
  if (expired != nullptr) *expired = static_cast<int>(ended.size());
  if (ended.empty()) return nullptr;
  auto ticket = state_.Commit(std::move(write));
  for (Record* record : ended) record->ticket = ticket;
  if (auto admitted = Admit(now)) return admitted;
  return ticket;
}

std::vector<std::string> Lifecycle::Assign(Allocation& a,
                                           const Groups& groups) const {
  const SchedulerMemory& m = state_.view();
  std::set<std::string> hosts;
  a.devices.clear();
  a.targets.clear();
  for (const auto& group : groups) {
    for (const Unit* u : group) {
      a.devices.insert(a.devices.end(), u->devices.begin(), u->devices.end());
      for (const AllocatedDevice& d : u->devices) hosts.insert(d.node);
    }
  }
  const Unit& first = *groups.front().front();
  a.node = groups.size() == 1 ? first.home : *hosts.begin();
  a.model = first.pool.model;
  // Under the lock the accelerator types know every model in the catalog
  // (ReplaceAcceleratorTypes checks that under it).
  const std::shared_ptr<const AcceleratorTypeSet> types = state_.types();
  const AcceleratorType& type = *types->Find(a.model);
  a.resource_name.clear();
  if (type.resource_name != DefaultResourceName(type.device_class)) {
    a.resource_name = type.resource_name;
  }
  const std::string requested_label =
      RequestedDeviceLabel(*types, a.device_spellings, type);
  for (const std::string& host : hosts) {
    a.targets.push_back(PlacementTargetOf(m.catalog.nodes().find(host)->second,
                                          type, requested_label));
  }
  std::vector<std::string> held;
  if (a.share.has_value()) {
    // A share holds no unit whole: its GPU keeps taking shares.
    a.devices.front().share =
        GpuShare{a.share->compute_milli,
                 ShareMemory(*a.share, first.memory_bytes), a.share->group};
    a.devices.front().sharing = first.sharing;
    return held;
  }
  for (const auto& group : groups) {
    for (const Unit* u : group) held.push_back(u->key);
  }
  return held;
}

Lifecycle::Ticket Lifecycle::Admit(absl::Time now, bool refresh,
                                   std::vector<std::string> relayouts_done) {
  SchedulerMemory& m = state_.memory();
  if (m.queue.size() == 0) {
    if (!m.reservations.empty()) m.reservations = ReservationState();
    return nullptr;
  }
  Snapshot snap = SnapshotAt(now);
  snap.previous = &m.reservations;
  snap.refresh = refresh;
  snap.reservation_walk_limit = kReservationWalkLimit;
  snap.plan_relayouts = refresh;
  snap.relayouts_done = std::move(relayouts_done);
  PassStatement statement(*this, m, now);
  ReservationState next;
  {
    Holds holds(&m.book, &m.reservations, refresh,
                [&m](absl::string_view id) { return m.queue.contains(id); });
    Session session(framework_, snap, holds, statement);
    next = RunAdmissionPass(framework_, session, m.queue);
  }
  m.reservations = std::move(next);
  // Taken out after the walk, which must not see the queue change.
  for (Record* r : statement.written) {
    if (r->allocation.live()) m.queue.Remove(r->allocation.id);
  }
  // Emptied: nothing of this pass is for the requests that come next.
  if (m.queue.size() == 0) m.reservations = ReservationState();
  ++m.version;
  if (statement.write.mutations.empty()) return nullptr;
  auto ticket = state_.Commit(std::move(statement.write));
  for (Record* r : statement.written) r->ticket = ticket;
  return ticket;
}

Lifecycle::Ticket Lifecycle::Enqueue(Allocation a, absl::Time now) {
  SchedulerMemory& m = state_.memory();
  a.state = AllocationState::kPending;
  a.expires_at = now + options_.pending_lease;
  Write write;
  write.mutations.push_back(PutAllocationMutation{a, {}, true});
  auto ticket = state_.Commit(std::move(write));
  m.queue.Add(a);
  m.book.Add(Record{std::move(a), {}, ticket});
  if (auto admitted = Admit(now)) return admitted;
  return ticket;
}

std::shared_ptr<const std::vector<std::string>> Lifecycle::PendingOrder(
    bool fresh) const {
  const SchedulerMemory& m = state_.view();
  return order_.Get(m.version, fresh, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    // (Under the state's lock, which the caller holds.)
    const Snapshot snap = SnapshotAt(state_.clock().Now());
    Holds holds(&m.book, &m.reservations, Holds::Standing::kReadOnly);
    DryStatement none;
    Session session(framework_, snap, holds, none);
    const QueueSortPlugin* sort = framework_.plugins().queue_sort();
    return m.queue.Order(
        [&](const std::string& tenant) {
          return sort == nullptr ? 0 : sort->TenantRank(session, tenant);
        },
        [&](const std::string& id) {
          // What admitting it would add to its tenant's rank.
          return sort == nullptr
                     ? 0
                     : sort->RankAdded(snap, m.book.Find(id)->allocation);
        });
  });
}

Allocation Lifecycle::WithQueueFields(Allocation a, bool may_compute) const {
  if (!a.pending()) return a;
  const SchedulerMemory& m = state_.view();
  if (may_compute) PendingOrder(/*fresh=*/false);
  // Queued since the order was last computed: last, for now.
  a.queue_position =
      order_.PositionOf(a.id).value_or(static_cast<int>(m.queue.size()));
  a.pending_reason = m.queue.Reason(a.id);
  if (a.pending_reason.empty()) a.pending_reason = "waiting for a pass";
  // One overdue (a hold's lease end passed without the release, and no pass
  // since) is expected at any moment, not in the past.
  if (auto start = m.reservations.starts.find(a.id);
      start != m.reservations.starts.end()) {
    a.estimated_start = std::max(start->second, state_.clock().Now());
  }
  return a;
}

}  // namespace accelsched
