#include "core/scheduler/allocation_calls.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/framework/diagnosis.h"
#include "core/matching/allocation_request.h"

namespace accelsched {
namespace {

using Record = AllocationBook::Record;

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

void AllocationCalls::Allocate(const AllocationRequest& request,
                               SchedulerCallback<Allocation> done) {
  Complete(state_.committer(), QueueAllocate(request), std::move(done));
}

absl::StatusOr<Queued<Allocation>> AllocationCalls::QueueAllocate(
    const AllocationRequest& request) {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*state_.types(), request, options_.max_lease,
                                options_.topology_levels));
  // Expiries queued on the way commit before this call's write (in queue
  // order); the flush after the lock is released sees to them on every path.
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a = Requested(request, spec);
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    const absl::Time now = state_.clock().Now();
    lifecycle_.ExpireDue(now, nullptr);
    if (Record* existing = m.book.Find({"", request.request_id});
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
        m.book.SetExpiry(*existing, now + options_.pending_lease);
        Write write;
        write.mutations.push_back(
            PutAllocationMutation{existing->allocation, {}});
        existing->ticket = state_.Commit(std::move(write));
      }
      a = lifecycle_.WithQueueFields(existing->allocation,
                                     /*may_compute=*/false);
      ticket = existing->ticket;
    } else {
      // The cycle counts the request in the mix (request_mix) before it is
      // placed, and reads the holds the last pass made.
      Snapshot snap = lifecycle_.SnapshotAt(now);
      snap.count_into = &m.mix;
      Holds holds(&m.book, &m.reservations, Holds::Standing::kReadOnly);
      DryStatement none;
      Session session(framework_, snap, holds, none);
      CycleState cycle(CycleMode::kAllocate, snap, spec, a, &holds);
      cycle.notes().queued = request.queue;
      CycleResult r = framework_.RunCycle(session, cycle);
      if (r.outcome == CycleResult::Outcome::kRefused) return r.refusal;
      a.id = m.ids.Next(now);
      a.created_at = now;
      if (r.outcome == CycleResult::Outcome::kPlaced) {
        std::vector<std::string> keys = lifecycle_.Assign(a, r.groups);
        a.state = AllocationState::kActive;
        a.admitted_at = now;
        a.expires_at = cycle.ends().lease();
        Write write;
        write.mutations.push_back(PutAllocationMutation{a, keys, true});
        write.events.push_back(
            Event{Event::Type::kAllocated, now, a, a.node, "", 0});
        ticket = state_.Commit(std::move(write));
        m.leases.Admitted(m.book.Add(Record{a, std::move(keys), ticket}));
      } else if (!request.queue) {
        // Its quota stops it, or nothing fits now.
        if (r.failure.kind == CycleFailure::Kind::kRefused) {
          return absl::ResourceExhaustedError(r.reason);
        }
        return absl::ResourceExhaustedError(
            WhyRefused(framework_, session, cycle));
      } else {
        ticket = lifecycle_.Enqueue(a, now);
        const Record& queued = *m.book.Find(a.id);
        a = lifecycle_.WithQueueFields(queued.allocation,
                                       /*may_compute=*/false);
        ticket = queued.ticket;
      }
    }
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

void AllocationCalls::Release(const AllocationKey& key,
                              SchedulerCallback<Allocation> done) {
  Complete(state_.committer(), QueueRelease(key), std::move(done));
}

absl::StatusOr<Queued<Allocation>> AllocationCalls::QueueRelease(
    const AllocationKey& key) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    const absl::Time now = state_.clock().Now();
    lifecycle_.ExpireDue(now, nullptr);
    const Record* found = m.book.Find(key);
    if (found == nullptr) return AllocationNotFound(key);
    Record& record = *m.book.Find(found->allocation.id);
    if (record.allocation.live() || record.allocation.pending()) {
      Write write;
      // A preempted allocation released in its grace ends as preempted; a
      // pending one is withdrawn.
      if (record.allocation.pending()) {
        lifecycle_.End(record, AllocationState::kReleased, kReasonWithdrawn,
                       now, write);
      } else if (record.allocation.state == AllocationState::kPreempted) {
        lifecycle_.End(record, AllocationState::kPreempted, kReasonPreempted,
                       now, write);
      } else {
        lifecycle_.End(record, AllocationState::kReleased, kReasonReleased, now,
                       write);
      }
      record.ticket = state_.Commit(std::move(write));
      lifecycle_.Admit(now);
    }
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

void AllocationCalls::RenewLease(absl::string_view allocation_id,
                                 absl::Duration lease,
                                 SchedulerCallback<Allocation> done) {
  Complete(state_.committer(), QueueRenewLease(allocation_id, lease),
           std::move(done));
}

absl::StatusOr<Queued<Allocation>> AllocationCalls::QueueRenewLease(
    absl::string_view allocation_id, absl::Duration lease) {
  if (lease < absl::ZeroDuration() || lease > options_.max_lease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "lease ", absl::FormatDuration(lease), " is out of range [0, ",
        absl::FormatDuration(options_.max_lease), "]"));
  }
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  Allocation a;
  {
    absl::MutexLock lock(&state_.mu());
    lifecycle_.AssertHeld();
    SchedulerMemory& m = state_.memory();
    const absl::Time now = state_.clock().Now();
    lifecycle_.ExpireDue(now, nullptr);
    Record* found = m.book.Find(allocation_id);
    if (found == nullptr) {
      return AllocationNotFound({std::string(allocation_id), ""});
    }
    Record& record = *found;
    if (record.allocation.pending()) {
      // Keeps its place in the queue.
      m.book.SetExpiry(
          record, now + (lease == absl::ZeroDuration() ? options_.pending_lease
                                                       : lease));
      Write write;
      write.mutations.push_back(PutAllocationMutation{record.allocation, {}});
      record.ticket = state_.Commit(std::move(write));
      return Queued<Allocation>{
          lifecycle_.WithQueueFields(record.allocation, /*may_compute=*/false),
          record.ticket};
    }
    if (record.allocation.state != AllocationState::kActive) {
      return absl::FailedPreconditionError(
          absl::StrCat("allocation ", allocation_id, " is ",
                       StateName(record.allocation.state),
                       "; only an ACTIVE or PENDING lease "
                       "can be renewed"));
    }
    m.book.SetExpiry(
        record,
        now + (lease == absl::ZeroDuration() ? options_.default_lease : lease));
    Write write;
    write.mutations.push_back(
        PutAllocationMutation{record.allocation, record.units});
    record.ticket = state_.Commit(std::move(write));
    a = record.allocation;
    ticket = record.ticket;
  }
  return Queued<Allocation>{std::move(a), std::move(ticket)};
}

absl::StatusOr<Queued<Allocation>> AllocationCalls::FindDurable(
    const AllocationKey& key) const {
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  const SchedulerMemory& m = state_.view();
  const Record* record = m.book.Find(key);
  if (record == nullptr) return AllocationNotFound(key);
  return Queued<Allocation>{lifecycle_.WithQueueFields(record->allocation),
                            record->ticket};
}

void AllocationCalls::GetAllocation(const AllocationKey& key,
                                    SchedulerCallback<Allocation> done) const {
  absl::StatusOr<Queued<Allocation>> found = FindDurable(key);
  if (!found.ok()) {
    std::move(done)(found.status());
    return;
  }
  std::string id = found->value.id;
  Complete<Allocation>(
      state_.committer(), std::move(found),
      [id = std::move(id),
       done = std::move(done)](absl::StatusOr<Allocation> a) mutable {
        std::move(done)(a.ok() ? std::move(a) : NotWritten(id));
      });
}

absl::StatusOr<AllocationPage> AllocationCalls::ListAllocations(
    const AllocationFilter& filter, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  const SchedulerMemory& m = state_.view();
  AllocationPage page =
      AllocationsPage(m.book, filter, request.size, request.after);
  for (Allocation& a : page.allocations) {
    if (a.pending()) a = lifecycle_.WithQueueFields(std::move(a));
  }
  return page;
}

absl::StatusOr<ExplainResult> AllocationCalls::Explain(
    const AllocationRequest& request) const {
  ASSIGN_OR_RETURN(
      MatchSpec spec,
      ValidateAllocationRequest(*state_.types(), request, options_.max_lease,
                                options_.topology_levels));
  ExplainResult result;
  absl::ReaderMutexLock lock(&state_.mu());
  lifecycle_.AssertReaderHeld();
  const SchedulerMemory& m = state_.view();
  const absl::Time now = state_.clock().Now();
  // The request as Allocate would see it, as the pending allocation of its
  // request_id when it has one (its own holds, victims and re-layout); a new
  // one gets an id no allocation has ("a-..." are the book's), so that the
  // pass's actions can be tried for it.
  Allocation asking = Requested(request, spec);
  asking.id = absl::StrCat("explain:", request.request_id);
  if (const Record* r = m.book.Find({"", request.request_id});
      r != nullptr && r->allocation.pending()) {
    const Allocation a = lifecycle_.WithQueueFields(r->allocation);
    result.queue_position = a.queue_position;
    result.pending_reason = a.pending_reason;
    result.estimated_start = a.estimated_start;
    asking.id = a.id;
  }
  // A dry run of the cycle: Allocate's, and a pass's for a request that
  // queues (re-layouts as the next periodic pass would plan them), on a copy
  // of the mix that counts the request and a copy of the holds.
  RequestMix mix = m.mix;
  Snapshot snap = lifecycle_.SnapshotAt(now);
  snap.mix = &mix;
  snap.count_into = &mix;
  snap.previous = &m.reservations;
  snap.refresh = false;
  snap.reservation_walk_limit = Lifecycle::kReservationWalkLimit;
  snap.plan_relayouts = true;
  Holds holds(&m.book, &m.reservations, Holds::Standing::kScratch);
  DryStatement none;
  Session session(framework_, snap, holds, none);
  CycleState cycle(CycleMode::kExplain, snap, spec, asking, &holds);
  cycle.notes().queued = request.queue;
  CycleRecord record;
  cycle.notes().record = &record;
  framework_.Prepare(cycle);
  result.explanation = AccountNodes(framework_, cycle);
  CycleResult r = framework_.RunCycle(session, cycle);
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
  result.expected = cycle.ends().expected();
  if (r.outcome == CycleResult::Outcome::kPlaced) {
    result.feasible = true;
    result.would_allocate = Requested(request, spec);
    lifecycle_.Assign(result.would_allocate, r.groups);
    for (const std::string& words :
         DescribeUnits(framework_.plugins(), cycle, r.groups)) {
      absl::StrAppend(&summary, "; ", words);
    }
  }
  result.steps = record.Take();
  return result;
}

}  // namespace accelsched
