#include "core/scheduler/scheduler_state.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"

namespace accelsched {

SchedulerState::SchedulerState(Store* store, const Clock* clock,
                               std::shared_ptr<const AcceleratorTypeSet> types,
                               const SchedulerOptions& options)
    : store_(store),
      clock_(clock),
      events_(options.watch_buffer),
      types_(std::move(types)),
      memory_(options.mig_relayout_timeout),
      committer_(std::make_unique<GroupCommitter>(
          &store_, &events_,
          [this](const absl::Status& s) { OnCommitFailure(s); },
          GroupCommitter::Options{options.commit_mode,
                                  options.max_commit_batch})) {}

SchedulerState::~SchedulerState() { committer_.reset(); }

std::shared_ptr<const AcceleratorTypeSet> SchedulerState::types() const {
  absl::ReaderMutexLock lock(&types_mu_);
  return types_;
}

void SchedulerState::ReplaceTypes(
    std::shared_ptr<const AcceleratorTypeSet> next) {
  absl::MutexLock types_lock(&types_mu_);
  types_ = std::move(next);
}

absl::Status SchedulerState::LoadLocked() {
  // The numbering too: a commit reported failed may have committed (its
  // connection lost at COMMIT), and its events' numbers with it.
  ASSIGN_OR_RETURN(StoredState state, store_.Load());
  committer_->set_last_event_sequence(state.event_sequence);
  memory_.mig.Load(state.event_sequence, state.nodes);
  // The book first: the catalog asks it who holds each unit.
  memory_.book.Load(std::move(state.allocations));
  memory_.leases.Rebuild();
  memory_.queue.Clear();
  for (const AllocationBook::Record* r : PendingRecords(memory_.book)) {
    memory_.queue.Add(r->allocation);
  }
  memory_.reservations = ReservationState();
  ++memory_.version;
  RETURN_IF_ERROR(memory_.catalog.Load(std::move(state.nodes), *types()));
  MarkHeldResources(memory_.book, memory_.holdings);
  stale_reason_ = absl::OkStatus();
  stale_.store(false);
  return absl::OkStatus();
}

absl::Status SchedulerState::Ready() const {
  if (!stale_.load()) return absl::OkStatus();
  absl::ReaderMutexLock lock(&mu_);
  if (stale_reason_.ok()) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(
      "the scheduler lost track of the store after a failed commit and "
      "retries loading it every sweep: ",
      stale_reason_.message()));
}

absl::Status SchedulerState::CheckFresh() const {
  return stale_.load() ? StaleError() : absl::OkStatus();
}

absl::Status SchedulerState::ReloadIfStale() {
  if (!stale_.load()) return absl::OkStatus();
  // Retried here, once a sweep (Commit queues nothing meanwhile).
  if (absl::Status s = LoadLocked(); !s.ok()) {
    stale_reason_ = s;
    return s;
  }
  return absl::OkStatus();
}

void SchedulerState::OnCommitFailure(const absl::Status& status) {
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

absl::Status SchedulerState::StaleError() const {
  return absl::UnavailableError(
      absl::StrCat("the scheduler lost track of the store after a failed "
                   "commit: ",
                   stale_reason_.message()));
}

std::shared_ptr<GroupCommitter::Ticket> SchedulerState::Commit(Write write) {
  ++memory_.version;
  // After a reload that failed, memory is not what the store holds (it may
  // show plans never written): nothing built on it is written or answered,
  // a heartbeat's plans included, until a sweep has reloaded. A call that
  // passed Ready() just before gets here.
  if (stale_.load()) return GroupCommitter::Refused(StaleError());
  return committer_->Enqueue(std::move(write.mutations),
                             std::move(write.events));
}

void Complete(GroupCommitter& committer, absl::StatusOr<Queued<bool>> queued,
              SchedulerStatusCallback done) {
  Complete<bool>(committer, std::move(queued),
                 [done = std::move(done)](absl::StatusOr<bool> r) mutable {
                   std::move(done)(r.status());
                 });
}

}  // namespace accelsched
