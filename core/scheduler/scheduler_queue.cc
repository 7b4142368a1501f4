// The scheduler's queue calls: admission passes, pending requests, tenants'
// policies and standings, ordered and committed around the framework's pass
// (core/framework/admission_pass.h).
#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/page_token.h"
#include "core/base/status_macros.h"
#include "core/framework/admission_pass.h"
#include "core/model/mig_plan.h"
#include "core/scheduler/scheduler.h"
#include "core/tenants/dominant_share.h"

namespace accelsched {

// What an admission pass does, done to the scheduler's memory at once and
// queued as one write.
class Scheduler::PassStatement final : public CycleStatement {
 public:
  PassStatement(Scheduler& s, absl::Time now) : s_(s), now_(now) {}

  void Place(const std::string& id, const Groups& groups) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Record& r = *s_.book_.FindMutable(id);
    Allocation a = r.allocation;
    std::vector<std::string> keys = s_.Assign(a, groups);
    a.state = AllocationState::kActive;
    a.admitted_at = now_;
    a.expires_at = now_ + (a.lease == absl::ZeroDuration()
                               ? s_.options_.default_lease
                               : a.lease);
    // Written again whole: a stored allocation's devices never change in
    // place.
    write.mutations.push_back(DeleteAllocationMutation{id});
    write.mutations.push_back(PutAllocationMutation{a, keys, true});
    write.events.push_back(
        Event{Event::Type::kAdmitted, now_, a, a.node, "", 0});
    s_.book_.Admit(r, std::move(a), std::move(keys));
    written.push_back(&r);
  }

  void Preempt(const std::string& victim,
               const std::string& preemptor) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Record& r = *s_.book_.FindMutable(victim);
    // The grace never outlasts the victim's own lease.
    s_.book_.Preempt(r, preemptor,
                     std::min(r.allocation.expires_at,
                              now_ + s_.options_.preemption_grace));
    write.mutations.push_back(PutAllocationMutation{r.allocation, r.units});
    write.events.push_back(Event{Event::Type::kPreempted, now_, r.allocation,
                                 r.allocation.node,
                                 absl::StrCat("preempted for ", preemptor), 0});
    written.push_back(&r);
  }

  void PlanMigRelayout(const std::string& id,
                       const RelayoutChoice& choice) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::optional<Node> planned;
    for (const RelayoutChoice::Gpu& gpu : choice.gpus) {
      const uint64_t generation = s_.last_mig_generation_ + 1;
      absl::StatusOr<Node> node = s_.catalog_.SetMigPlan(
          choice.node, gpu.device_id,
          MigPlan{gpu.plan.layout, generation, id,
                  now_ + s_.options_.mig_relayout_timeout});
      // The planner only chose GPUs the catalog would take; one refused is
      // left out, and the request plans again later.
      if (!node.ok()) continue;
      s_.last_mig_generation_ = generation;  // one per event (LoadLocked)
      write.events.push_back(Event{
          Event::Type::kMigRelayoutPlanned, now_,
          s_.book_.Find({id, ""})->allocation, choice.node,
          absl::StrCat(gpu.device_id, ": ", DescribeMigLayout(gpu.plan.layout),
                       " (generation ", generation, "; destroys ",
                       gpu.plan.destroyed, " free slice",
                       gpu.plan.destroyed == 1 ? "" : "s", ", creates ",
                       gpu.plan.created, ")"),
          0});
      planned = *std::move(node);
    }
    if (planned.has_value()) {
      write.mutations.push_back(PutNodeMutation{*std::move(planned)});
    }
  }

  Write write;
  std::vector<Record*> written;

 private:
  Scheduler& s_;
  const absl::Time now_;
};

std::shared_ptr<GroupCommitter::Ticket> Scheduler::AdmitLocked(
    absl::Time now, bool refresh_reservations,
    std::vector<std::string> relayouts_done) {
  if (queue_.empty()) {
    if (!reservations_.empty()) reservations_ = ReservationState();
    return nullptr;
  }
  Snapshot snap = SnapshotAt(now);
  snap.previous = &reservations_;
  snap.refresh = refresh_reservations;
  snap.reservation_walk_limit = kReservationWalkLimit;
  snap.plan_relayouts = refresh_reservations;
  snap.relayouts_done = std::move(relayouts_done);
  PassStatement statement(*this, now);
  ReservationState next;
  {
    Holds holds(&book_, &reservations_, refresh_reservations,
                [this](absl::string_view id) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                  return queue_.contains(id);
                });
    Session session(*framework_, snap, holds, statement);
    next = RunAdmissionPass(*framework_, session, queue_);
  }
  reservations_ = std::move(next);
  // Taken out after the walk, which must not see the queue change.
  for (Record* r : statement.written) {
    if (r->allocation.live()) queue_.Remove(r->allocation.id);
  }
  // Emptied: nothing of this pass is for the requests that come next.
  if (queue_.empty()) reservations_ = ReservationState();
  ++generation_;
  if (statement.write.mutations.empty()) return nullptr;
  auto ticket = Commit(std::move(statement.write));
  for (Record* r : statement.written) r->ticket = ticket;
  return ticket;
}

std::shared_ptr<GroupCommitter::Ticket> Scheduler::EnqueueLocked(
    Allocation a, absl::Time now) {
  a.state = AllocationState::kPending;
  a.expires_at = now + options_.pending_lease;
  Write write;
  write.mutations.push_back(PutAllocationMutation{a, {}, true});
  auto ticket = Commit(std::move(write));
  queue_.Add(a);
  book_.Add(Record{std::move(a), {}, ticket});
  if (auto admitted = AdmitLocked(now)) return admitted;
  return ticket;
}

namespace {

// How stale one allocation's queue_position may be (GetQueue is exact).
constexpr absl::Duration kPositionsMaxAge = absl::Milliseconds(200);

}  // namespace

std::shared_ptr<const std::vector<std::string>> Scheduler::PendingOrder(
    bool fresh) const {
  absl::MutexLock lock(&order_mu_);
  // Real time, not the scheduler's clock: this bounds CPU, not semantics.
  const absl::Time now = absl::Now();
  if (order_generation_ != generation_ &&
      (fresh || order_ == nullptr ||
       now - order_computed_ > kPositionsMaxAge)) {
    const Snapshot snap = SnapshotAt(clock_->Now());
    Holds holds(&book_, &reservations_, Holds::Standing::kReadOnly);
    DryStatement none;
    Session session(*framework_, snap, holds, none);
    const QueueSortPlugin* sort = framework_->queue_sort();
    auto order = std::make_shared<std::vector<std::string>>(queue_.Order(
        [&](const std::string& tenant) {
          return sort == nullptr ? 0 : sort->TenantRank(session, tenant);
        },
        [&](const std::string& id) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          // What admitting it would add to its tenant's rank.
          return sort == nullptr
                     ? 0
                     : sort->RankAdded(snap, book_.Find({id, ""})->allocation);
        }));
    positions_.clear();
    for (size_t i = 0; i < order->size(); ++i) {
      positions_[(*order)[i]] = static_cast<int>(i) + 1;
    }
    order_ = std::move(order);
    order_generation_ = generation_;
    order_computed_ = now;
  }
  return order_;
}

Allocation Scheduler::WithQueueFields(Allocation a, bool may_compute) const {
  if (!a.pending()) return a;
  if (may_compute) PendingOrder(/*fresh=*/false);
  {
    absl::MutexLock lock(&order_mu_);
    auto it = positions_.find(a.id);
    // Queued since the order was last computed: last, for now.
    a.queue_position =
        it == positions_.end() ? static_cast<int>(queue_.size()) : it->second;
  }
  a.pending_reason = queue_.Reason(a.id);
  if (a.pending_reason.empty()) a.pending_reason = "waiting for a pass";
  // One overdue (a hold's lease end passed without the release, and no pass
  // since) is expected at any moment, not in the past.
  if (auto start = reservations_.starts.find(a.id);
      start != reservations_.starts.end()) {
    a.estimated_start = std::max(start->second, clock_->Now());
  }
  return a;
}

absl::StatusOr<QueuePage> Scheduler::GetQueue(
    absl::string_view tenant, int page_size,
    absl::string_view page_token) const {
  ASSIGN_OR_RETURN(const PageRequest request,
                   ParsePageRequest(page_size, page_token));
  size_t start = 0;
  if (!request.after.empty() && !absl::SimpleAtoi(request.after, &start)) {
    return absl::InvalidArgumentError("page_token is not one GetQueue gave");
  }
  QueuePage page;
  absl::ReaderMutexLock lock(&mu_);
  const std::shared_ptr<const std::vector<std::string>> order =
      PendingOrder(/*fresh=*/true);
  size_t seen = 0;
  for (const std::string& id : *order) {
    const Allocation& a = book_.Find({id, ""})->allocation;
    if (!tenant.empty() && a.tenant != tenant) continue;
    if (seen++ < start) continue;
    if (static_cast<int>(page.pending.size()) == request.size) {
      page.next_page_token = EncodePageToken(absl::StrCat(seen - 1));
      break;
    }
    page.pending.push_back(WithQueueFields(a));
  }
  return page;
}

std::vector<TenantStanding> Scheduler::TenantStandings(
    absl::string_view tenant) const {
  absl::ReaderMutexLock lock(&mu_);
  return TenantStandingsLocked(tenant);
}

std::vector<TenantStanding> Scheduler::TenantStandingsLocked(
    absl::string_view tenant) const {
  const std::map<std::string, int64_t> pending = queue_.CountByTenant();
  std::set<std::string> names;
  for (const auto& entry : book_.usage_milli()) names.insert(entry.first);
  for (const auto& entry : tenants_->tenants()) names.insert(entry.first);
  for (const auto& entry : pending) names.insert(entry.first);
  std::vector<TenantStanding> out;
  for (const std::string& name : names) {
    if (!tenant.empty() && name != tenant) continue;
    const TenantPolicy& policy = tenants_->Find(name);
    TenantStanding t;
    t.tenant = name;
    t.dominant_share =
        DominantShare(catalog_.index(), book_, *tenants_, name);
    t.weight = policy.weight;
    t.cohort = policy.cohort;
    auto p = pending.find(name);
    t.pending = p == pending.end() ? 0 : p->second;
    std::map<PoolKey, TenantStanding::Pool> pools;
    for (const auto& [key, quota] : policy.quotas) {
      pools[key] = TenantStanding::Pool{key, 0, quota.nominal_milli, 0};
    }
    if (auto u = book_.usage_milli().find(name);
        u != book_.usage_milli().end()) {
      for (const auto& [key, used] : u->second) {
        auto [it, fresh] =
            pools.try_emplace(key, TenantStanding::Pool{key, 0, -1, 0});
        it->second.used_milli = used;
      }
    }
    for (auto& [key, pool] : pools) {
      if (pool.nominal_milli >= 0) {
        pool.borrowed_milli =
            std::max<int64_t>(0, pool.used_milli - pool.nominal_milli);
      }
      t.pools.push_back(pool);
    }
    out.push_back(std::move(t));
  }
  return out;
}

absl::Status Scheduler::SetTenantPolicies(
    std::shared_ptr<const TenantPolicies> next) {
  std::shared_ptr<GroupCommitter::Ticket> ticket;
  {
    absl::MutexLock lock(&mu_);
    // Not in force while memory is stale: the admission write after it would
    // be refused, and the caller told the policies did not change.
    if (stale_.load()) return StaleError();
    tenants_ = std::move(next);
    ++generation_;
    ticket = AdmitLocked(clock_->Now());
  }
  committer_->Flush();
  return ticket == nullptr ? absl::OkStatus() : committer_->Wait(ticket);
}

}  // namespace accelsched
