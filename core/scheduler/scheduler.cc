// The scheduler's allocation half, and its load and commit plumbing.
#include "core/scheduler/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_validation.h"
#include "core/matching/allocation_request.h"
#include "core/placement/placement.h"
#include "core/plugins/fragmentation/fragmentation.h"
#include "core/plugins/registry.h"

namespace accelsched {
namespace {

absl::string_view StateName(AllocationState s) {
  switch (s) {
    case AllocationState::kActive:
      return "ACTIVE";
    case AllocationState::kReleased:
      return "RELEASED";
    case AllocationState::kExpired:
      return "EXPIRED";
    case AllocationState::kPending:
      return "PENDING";
    case AllocationState::kPreempted:
      return "PREEMPTED";
    case AllocationState::kUnspecified:
      break;
  }
  return "UNSPECIFIED";
}

// GetAllocation's answer when the allocation's last write failed.
absl::Status NotWritten(const std::string& id) {
  return absl::UnavailableError(
      absl::StrCat("allocation ", id, " was not written; retry"));
}

absl::Status AllocationNotFound(const AllocationKey& key) {
  return absl::NotFoundError(
      key.allocation_id.empty()
          ? absl::StrCat("no allocation has request_id \"", key.request_id,
                         "\"")
          : absl::StrCat("allocation \"", key.allocation_id, "\" not found"));
}

// The framework of the options' profile: the plugins are the registry's
// own, so a failure is a bug.
std::unique_ptr<const Framework> MakeFramework(
    const Scheduler::Options& options) {
  absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
      PluginRegistry(),
      DefaultProfile(ProfileOptions{options.packing, options.preemption}));
  if (!fw.ok()) {
    std::fprintf(stderr, "accelsched: the default profile: %s\n",
                 std::string(fw.status().ToString()).c_str());
    std::abort();
  }
  return *std::move(fw);
}

}  // namespace

Scheduler::Scheduler(Store* store, const Clock* clock,
                     std::shared_ptr<const AcceleratorTypeSet> types,
                     Options options)
    : framework_(MakeFramework(options)),
      store_(store),
      clock_(clock),
      options_(options),
      events_(options.watch_buffer),
      types_(std::move(types)),
      committer_(std::make_unique<GroupCommitter>(
          &store_, &events_,
          [this](const absl::Status& s) { OnCommitFailure(s); },
          GroupCommitter::Options{options.commit_mode,
                                  options.max_commit_batch})) {}

Scheduler::~Scheduler() { committer_.reset(); }

absl::Status Scheduler::Load() {
  absl::MutexLock lock(&mu_);
  return LoadLocked();
}

absl::Status Scheduler::LoadLocked() {
  // The numbering too: a commit reported failed may have committed (its
  // connection lost at COMMIT), and its events' numbers with it.
  ASSIGN_OR_RETURN(StoredState state, store_.Load());
  committer_->set_last_event_sequence(state.event_sequence);
  // Every plan is written with its MIG_RELAYOUT_PLANNED event, and a
  // generation is drawn only for a plan made: none written is above the
  // last event's number, or above a generation stored. Plans of a failed
  // commit reached no agent (a heartbeat's reply and a watch wait for their
  // write), so their generations may be drawn again.
  last_mig_generation_ = state.event_sequence;
  for (const Node& node : state.nodes) {
    for (const Device& d : node.devices) {
      last_mig_generation_ = std::max(last_mig_generation_, d.mig_generation);
    }
  }
  // The book first: the catalog asks it who holds each unit.
  book_.Load(std::move(state.allocations));
  queue_.Clear();
  for (const Record* r : book_.Pending()) queue_.Add(r->allocation);
  reservations_ = ReservationState();
  ++generation_;
  RETURN_IF_ERROR(catalog_.Load(std::move(state.nodes), *accelerator_types()));
  book_.MarkHeldResources();
  stale_reason_ = absl::OkStatus();
  stale_.store(false);
  return absl::OkStatus();
}

absl::Status Scheduler::Ready() const {
  if (!stale_.load()) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  if (stale_reason_.ok()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "the scheduler lost track of the store after a failed commit and "
      "retries loading it every sweep: ",
      stale_reason_.message()));
}

void Scheduler::OnCommitFailure(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  // Queued writes were applied in memory on top of the failed ones: fail them
  // too, and rebuild memory from what the store holds, the only state anyone
  // was told of.
  committer_->FailQueued(status);
  absl::Status reload = LoadLocked();
  if (!reload.ok()) {
    std::fprintf(stderr,
                 "accelsched: reloading state after a failed commit: %s\n",
                 std::string(reload.ToString()).c_str());
    stale_reason_ = reload;
    stale_.store(true);
  }
}

absl::Status Scheduler::StaleError() const {
  return absl::UnavailableError(
      absl::StrCat("the scheduler lost track of the store after a failed "
                   "commit: ",
                   stale_reason_.message()));
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::Commit(Write write) {
  ++generation_;
  // After a reload that failed, memory is not what the store holds (it may
  // show plans never written): nothing built on it is written or answered,
  // a heartbeat's plans included, until a sweep has reloaded. A call that
  // passed Ready() just before gets here.
  if (stale_.load()) return GroupCommitter::Refused(StaleError());
  return committer_->Enqueue(std::move(write.mutations),
                             std::move(write.events));
}

void Scheduler::Complete(absl::StatusOr<Queued<bool>> queued,
                         StatusCallback done) const {
  Complete<bool>(std::move(queued),
                 [done = std::move(done)](absl::StatusOr<bool> r) mutable {
                   std::move(done)(r.status());
                 });
}

Snapshot Scheduler::SnapshotAt(absl::Time now) const {
  Snapshot snap;
  snap.index = &catalog_.index();
  snap.nodes = &catalog_.nodes();
  snap.catalog = &catalog_;
  snap.book = &book_;
  snap.tenants = tenants_.get();
  // Under mu_ the types cannot be replaced: the set outlives the snapshot.
  snap.types = accelerator_types().get();
  snap.mix = &mix_;
  snap.leases = &book_;
  snap.now = now;
  snap.heartbeat_timeout = options_.heartbeat_timeout;
  snap.default_lease = options_.default_lease;
  snap.preemption_grace = options_.preemption_grace;
  snap.relayout_backoff = &relayout_backoff_;
  snap.relayout_ahead = options_.mig_relayout_ahead;
  return snap;
}

void Scheduler::EndLocked(Record& record, AllocationState state,
                          absl::string_view reason, absl::Time now,
                          Write& write) {
  const bool held = record.allocation.live();
  queue_.Remove(record.allocation.id);
  book_.End(record, state, reason, now);
  const Allocation& a = record.allocation;
  std::set<std::string> nodes;
  if (held) {
    for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
  }
  write.mutations.push_back(PutAllocationMutation{a, record.units});
  for (const std::string& node : nodes) DropReleasedRemovedDevices(node, write);
  write.events.push_back(Event{state == AllocationState::kExpired
                                   ? Event::Type::kExpired
                                   : Event::Type::kReleased,
                               now, a, a.node, a.end_reason, 0});
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::ExpireDueLocked(
    absl::Time now, int* expired) {
  Write write;
  std::vector<Record*> ended = book_.Due(now);
  for (Record* record : ended) {
    // A preempted allocation's grace is over; anything else's lease.
    if (record->allocation.state == AllocationState::kPreempted) {
      EndLocked(*record, AllocationState::kPreempted, kReasonPreempted, now,
                write);
    } else {
      EndLocked(
          *record, AllocationState::kExpired,
          record->allocation.pending() ? kReasonPendingExpired : kReasonExpired,
          now, write);
    }
  }
  if (expired != nullptr) *expired = static_cast<int>(ended.size());
  if (ended.empty()) return nullptr;
  auto ticket = Commit(std::move(write));
  for (Record* record : ended) record->ticket = ticket;
  if (auto admitted = AdmitLocked(now)) return admitted;
  return ticket;
}

namespace {

// What a request asks for (its validated spec) and who asks, as an
// allocation without devices, id, state or times.
Allocation Requested(const AllocationRequest& request, const MatchSpec& spec) {
  Allocation a;
  static_cast<RequestSpec&>(a) = spec;
  a.request_id = request.request_id;
  a.tenant = request.tenant;
  a.priority = request.priority;
  if (!request.device.empty()) a.device_spellings.push_back(request.device);
  a.device_spellings.insert(a.device_spellings.end(),
                            request.alternative_devices.begin(),
                            request.alternative_devices.end());
  a.container_name = request.container_name;
  return a;
}

}  // namespace

std::vector<std::string> Scheduler::Assign(
    Allocation& a, const Groups& groups) const {
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
  // Under mu_ the accelerator types know every model in the catalog
  // (ReplaceAcceleratorTypes checks that under mu_).
  const AcceleratorType& type = *accelerator_types()->Find(a.model);
  a.resource_name.clear();
  if (type.resource_name != DefaultResourceName(type.device_class)) {
    a.resource_name = type.resource_name;
  }
  const std::string requested_label =
      RequestedDeviceLabel(*accelerator_types(), a.device_spellings, type);
  for (const std::string& host : hosts) {
    a.targets.push_back(PlacementTargetOf(catalog_.nodes().find(host)->second,
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

void Scheduler::Allocate(const AllocationRequest& request,
                         Callback<Allocation> done) {
  Complete(QueueAllocate(request), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueAllocate(
    const AllocationRequest& request) {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*accelerator_types(), request,
                                options_.max_lease, options_.topology_levels));
  // Expiries queued on the way commit before this call's write (in queue
  // order); the flush after the lock is released sees to them on every path.
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a = Requested(request, spec);
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    if (Record* existing = book_.Find({"", request.request_id});
        existing != nullptr &&
        (existing->allocation.live() || existing->allocation.pending())) {
      const Allocation& e = existing->allocation;
      // The same models in any spelling and order are the same request,
      // and a retry gets `e` as it is (its placement keeps the label value
      // of the first request's spelling).
      if (!e.SameFor(RequestSpec::kRetry, a)) {
        return absl::AlreadyExistsError(absl::StrCat(
            "request_id \"", request.request_id, "\" already holds allocation ",
            e.id, " for ", e.count, " x ",
            RequestUnitName(e.device_class, e.requested_models, e.partition),
            e.replicas > 1 ? absl::StrCat(" x ", e.replicas, " replicas") : "",
            "; a retry must ask for the same accelerator, count, replicas, "
            "topology, pod_resources and share"));
      }
      // A retry: the same allocation, once it is durable. A pending one's
      // retry keeps its place alive (written when a tenth of the pending
      // lease has gone by, so that polling is not a write each time).
      if (e.pending() && now + options_.pending_lease - e.expires_at >
                             options_.pending_lease / 10) {
        book_.SetExpiry(*existing, now + options_.pending_lease);
        Write write;
        write.mutations.push_back(
            PutAllocationMutation{existing->allocation, {}});
        existing->ticket = Commit(std::move(write));
      }
      a = WithQueueFields(existing->allocation, /*may_compute=*/false);
      ticket = existing->ticket;
    } else {
      // The cycle counts the request in the mix (request_mix) before it is
      // placed, and reads the holds the last pass made.
      Snapshot snap = SnapshotAt(now);
      snap.count_into = &mix_;
      Holds holds(&book_, &reservations_, Holds::Standing::kReadOnly);
      DryStatement none;
      Session session(*framework_, snap, holds, none);
      CycleState cycle(CycleMode::kAllocate, snap, spec, a, &holds);
      cycle.set_queued(request.queue);
      CycleResult r = framework_->RunCycle(session, cycle);
      if (r.outcome == CycleResult::Outcome::kRefused) return r.refusal;
      a.id = book_.NewId(now);
      a.created_at = now;
      if (r.outcome == CycleResult::Outcome::kPlaced) {
        std::vector<std::string> keys = Assign(a, r.groups);
        a.state = AllocationState::kActive;
        a.admitted_at = now;
        a.expires_at = cycle.ends_at();
        Write write;
        write.mutations.push_back(PutAllocationMutation{a, keys, true});
        write.events.push_back(
            Event{Event::Type::kAllocated, now, a, a.node, "", 0});
        ticket = Commit(std::move(write));
        book_.Add(Record{a, std::move(keys), ticket});
      } else if (!request.queue) {
        // Its quota stops it, or nothing fits now.
        if (r.failure.kind == CycleFailure::Kind::kRefused) {
          return absl::ResourceExhaustedError(r.reason);
        }
        return absl::ResourceExhaustedError(
            framework_->WhyRefused(session, cycle));
      } else {
        ticket = EnqueueLocked(a, now);
        const Record& queued = *book_.Find({a.id, ""});
        a = WithQueueFields(queued.allocation, /*may_compute=*/false);
        ticket = queued.ticket;
      }
    }
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

void Scheduler::Release(const AllocationKey& key, Callback<Allocation> done) {
  Complete(QueueRelease(key), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueRelease(
    const AllocationKey& key) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    const Record* found = book_.Find(key);
    if (found == nullptr) return AllocationNotFound(key);
    Record& record = *book_.FindMutable(found->allocation.id);
    if (record.allocation.live() || record.allocation.pending()) {
      Write write;
      // A preempted allocation released in its grace ends as preempted; a
      // pending one is withdrawn.
      if (record.allocation.pending()) {
        EndLocked(record, AllocationState::kReleased, kReasonWithdrawn, now,
                  write);
      } else if (record.allocation.state == AllocationState::kPreempted) {
        EndLocked(record, AllocationState::kPreempted, kReasonPreempted, now,
                  write);
      } else {
        EndLocked(record, AllocationState::kReleased, kReasonReleased, now,
                  write);
      }
      record.ticket = Commit(std::move(write));
      AdmitLocked(now);
    }
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

void Scheduler::RenewLease(absl::string_view allocation_id,
                           absl::Duration lease, Callback<Allocation> done) {
  Complete(QueueRenewLease(allocation_id, lease), std::move(done));
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::QueueRenewLease(
    absl::string_view allocation_id, absl::Duration lease) {
  if (lease < absl::ZeroDuration() || lease > options_.max_lease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease ", absl::FormatDuration(lease), " is out of range [0, ",
        absl::FormatDuration(options_.max_lease), "]"));
  }
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = clock_->Now();
    ExpireDueLocked(now, nullptr);
    Record* found = book_.FindMutable(allocation_id);
    if (found == nullptr) {
      return AllocationNotFound({std::string(allocation_id), ""});
    }
    Record& record = *found;
    if (record.allocation.pending()) {
      // Keeps its place in the queue.
      book_.SetExpiry(
          record, now + (lease == absl::ZeroDuration() ? options_.pending_lease
                                                       : lease));
      Write write;
      write.mutations.push_back(PutAllocationMutation{record.allocation, {}});
      record.ticket = Commit(std::move(write));
      return Queued<Allocation>{
          WithQueueFields(record.allocation, /*may_compute=*/false),
          record.ticket};
    }
    if (record.allocation.state != AllocationState::kActive) {
      return absl::FailedPreconditionError(
          absl::StrCat("allocation ", allocation_id, " is ",
                       StateName(record.allocation.state),
                       "; only an ACTIVE or PENDING lease "
                       "can be renewed"));
    }
    book_.SetExpiry(
        record,
        now + (lease == absl::ZeroDuration() ? options_.default_lease : lease));
    Write write;
    write.mutations.push_back(
        PutAllocationMutation{record.allocation, record.units});
    record.ticket = Commit(std::move(write));
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

absl::StatusOr<Scheduler::Queued<Allocation>> Scheduler::FindDurable(
    const AllocationKey& key) const {
  absl::ReaderMutexLock lock(&mu_);
  const Record* record = book_.Find(key);
  if (record == nullptr) return AllocationNotFound(key);
  return Queued<Allocation>{WithQueueFields(record->allocation),
                            record->ticket};
}

void Scheduler::GetAllocation(const AllocationKey& key,
                              Callback<Allocation> done) const {
  absl::StatusOr<Queued<Allocation>> found = FindDurable(key);
  if (!found.ok()) {
    std::move(done)(found.status());
    return;
  }
  std::string id = found->value.id;
  Complete<Allocation>(
      std::move(found), [id = std::move(id), done = std::move(done)](
                            absl::StatusOr<Allocation> a) mutable {
        std::move(done)(a.ok() ? std::move(a) : NotWritten(id));
      });
}

absl::StatusOr<AllocationPage> Scheduler::ListAllocations(
    const AllocationFilter& filter, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  absl::ReaderMutexLock lock(&mu_);
  AllocationPage page = book_.List(filter, request.size, request.after);
  for (Allocation& a : page.allocations) {
    if (a.pending()) a = WithQueueFields(std::move(a));
  }
  return page;
}

absl::StatusOr<ExplainResult> Scheduler::Explain(
    const AllocationRequest& request) const {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*accelerator_types(), request,
                                options_.max_lease, options_.topology_levels));
  ExplainResult result;
  absl::ReaderMutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  // The request as Allocate would see it, as the pending allocation of its
  // request_id when it has one (its own holds, victims and re-layout); a new
  // one gets an id no allocation has ("a-..." are the book's), so that the
  // pass's actions can be tried for it.
  Allocation asking = Requested(request, spec);
  asking.id = absl::StrCat("explain:", request.request_id);
  if (const Record* r = book_.Find({"", request.request_id});
      r != nullptr && r->allocation.pending()) {
    const Allocation a = WithQueueFields(r->allocation);
    result.queue_position = a.queue_position;
    result.pending_reason = a.pending_reason;
    result.estimated_start = a.estimated_start;
    asking.id = a.id;
  }
  // A dry run of the cycle: Allocate's, and a pass's for a request that
  // queues (re-layouts as the next periodic pass would plan them), on a copy
  // of the mix that counts the request and a copy of the holds.
  RequestMix mix = mix_;
  Snapshot snap = SnapshotAt(now);
  snap.mix = &mix;
  snap.count_into = &mix;
  snap.previous = &reservations_;
  snap.refresh = false;
  snap.reservation_walk_limit = kReservationWalkLimit;
  snap.plan_relayouts = true;
  Holds holds(&book_, &reservations_, Holds::Standing::kScratch);
  DryStatement none;
  Session session(*framework_, snap, holds, none);
  CycleState cycle(CycleMode::kExplain, snap, spec, asking, &holds);
  cycle.set_queued(request.queue);
  CycleRecord record;
  cycle.set_record(&record);
  framework_->Prepare(cycle);
  result.explanation = AccountNodes(*framework_, cycle);
  CycleResult r = framework_->RunCycle(session, cycle);
  std::string& summary = result.explanation.summary;
  // Its quota's reason, then why it could never be placed.
  if (r.outcome != CycleResult::Outcome::kPlaced &&
      r.failure.kind == CycleFailure::Kind::kRefused) {
    absl::StrAppend(&summary, "; ", r.failure.reason);
  }
  if (r.outcome == CycleResult::Outcome::kRefused) {
    absl::StrAppend(&summary, "; ", r.refusal.message());
  }
  for (const std::string& s : r.summary) absl::StrAppend(&summary, "; ", s);
  result.scores = std::move(r.ranked);
  if (r.outcome == CycleResult::Outcome::kPlaced) {
    result.feasible = true;
    result.would_allocate = Requested(request, spec);
    Assign(result.would_allocate, r.groups);
    for (const std::string& words : framework_->DescribeUnits(cycle, r.groups)) {
      absl::StrAppend(&summary, "; ", words);
    }
  }
  result.steps = record.Take();
  return result;
}

absl::StatusOr<int> Scheduler::Sweep() {
  std::vector<std::shared_ptr<GroupCommitter::Ticket>> tickets;
  int expired = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stale_.load()) {
      // Retried here, once a sweep (Commit queues nothing meanwhile).
      if (absl::Status s = LoadLocked(); !s.ok()) {
        stale_reason_ = s;
        return s;
      }
    }
    const absl::Time now = clock_->Now();
    if (auto t = ExpireDueLocked(now, &expired))
      tickets.push_back(std::move(t));
    if (auto t = DropDueMigPlansLocked(now)) tickets.push_back(std::move(t));
    // Time alone may let pending requests in (a node's heartbeat, a
    // reservation's start).
    if (auto t = AdmitLocked(now, /*refresh_reservations=*/true)) {
      tickets.push_back(std::move(t));
    }
    Write write;
    for (std::string& id : book_.ForgetEnded(now - options_.retention)) {
      // Built in place: gcc 12 warns of a moved-from variant otherwise.
      write.mutations.emplace_back(std::in_place_type<DeleteAllocationMutation>,
                                   DeleteAllocationMutation{std::move(id)});
    }
    if (!write.mutations.empty()) tickets.push_back(Commit(std::move(write)));
  }
  for (const auto& t : tickets) RETURN_IF_ERROR(committer_->Wait(t));
  return expired;
}

SchedulerStats Scheduler::Stats() const {
  SchedulerStats stats;
  absl::ReaderMutexLock lock(&mu_);
  stats.capacity = catalog_.index().Capacity();
  stats.active_by_tenant = book_.ActiveByTenant();
  stats.pending_by_tenant = queue_.CountByTenant();
  stats.tenants = TenantStandingsLocked("");
  std::tie(stats.schedulable_nodes, stats.cordoned_nodes) =
      catalog_.NodeCounts();
  for (const auto& [node, account] : catalog_.index().accounts()) {
    if (account.allocatable.has_value()) stats.node_accounts[node] = account;
  }
  const absl::Time now = clock_->Now();
  for (const auto& [key, pool] : catalog_.index().pools()) {
    if (!key.partition.empty()) continue;
    stats.fragmentation[key.model] =
        FragmentationRatio(pool, mix_.ShapesFor(key, now));
  }
  return stats;
}

}  // namespace accelsched
