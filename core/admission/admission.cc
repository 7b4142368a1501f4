#include "core/admission/admission.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace accelsched {
namespace {

// What a preemptor waiting out its victims' grace adds to its reason.
std::string WaitingForVictims(size_t n) {
  return absl::StrCat("; waiting for ", n, " preempted allocation",
                      n == 1 ? "" : "s", " to end");
}

int64_t Demand(const MatchSpec& spec) {
  return static_cast<int64_t>(spec.count) * spec.replicas;
}

std::string Plural(const PoolKey& pool, int64_t n) {
  return absl::StrCat(UnitName(pool), n == 1 ? "" : "s");
}

// Why `tenant` may not take `demand` more units of `pool`; "" when it may.
// `*excess` (when not null) is set to the units the cohort is short of where
// the tenant stays within its own nominal quota: what it may reclaim from
// borrowers.
std::string QuotaBlock(const AdmissionContext& ctx, absl::string_view tenant,
                       const TenantPolicy& policy, const PoolKey& pool,
                       int64_t demand, int64_t* excess = nullptr) {
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return "";
  const int64_t used = ctx.book->Usage(tenant, pool);
  const int64_t nominal = q->second.nominal;
  const bool within = used + demand <= nominal;
  if (within && policy.cohort.empty()) return "";
  if (policy.cohort.empty()) {
    return absl::StrCat("quota: tenant ", tenant, " at ", used, "/", nominal,
                        " ", Plural(pool, nominal), ", asks ", demand, " more");
  }
  const int64_t borrow = used + demand - nominal;
  if (!within && q->second.borrowing_limit &&
      borrow > *q->second.borrowing_limit) {
    return absl::StrCat("quota: tenant ", tenant, " at ", used, "/", nominal,
                        " ", Plural(pool, nominal), " would borrow ", borrow,
                        ", over its borrowing limit ",
                        *q->second.borrowing_limit);
  }
  int64_t cohort_nominal = 0, cohort_used = 0;
  for (const std::string& member : ctx.tenants->CohortMembers(policy.cohort)) {
    const TenantPolicy& m = ctx.tenants->Find(member);
    auto mq = m.quotas.find(pool);
    if (mq == m.quotas.end()) continue;
    cohort_nominal += mq->second.nominal;
    cohort_used += ctx.book->Usage(member, pool);
  }
  if (cohort_used + demand > cohort_nominal) {
    if (within && excess != nullptr) {
      *excess = cohort_used + demand - cohort_nominal;
    }
    return absl::StrCat("quota: cohort ", policy.cohort, " at ", cohort_used,
                        "/", cohort_nominal, " ", Plural(pool, cohort_nominal),
                        ", tenant ", tenant, " asks ", demand, " more");
  }
  return "";
}

// Within its nominal quota of `pool` even after taking `demand` more.
bool WithinNominal(const AdmissionContext& ctx, absl::string_view tenant,
                   const PoolKey& pool, int64_t demand) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  auto q = policy.quotas.find(pool);
  return q != policy.quotas.end() &&
         ctx.book->Usage(tenant, pool) + demand <= q->second.nominal;
}

// Units of `pool` `tenant` holds above its nominal quota that are not
// already preempted (those are being given back).
int64_t Borrowed(const AdmissionContext& ctx, absl::string_view tenant,
                 const PoolKey& pool) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  auto q = policy.quotas.find(pool);
  if (q == policy.quotas.end()) return 0;
  return std::max<int64_t>(0, ctx.book->Usage(tenant, pool) -
                                  ctx.book->PreemptedUsage(tenant, pool) -
                                  q->second.nominal);
}

absl::Time LeaseEnd(const AdmissionContext& ctx, const Allocation& p) {
  return ctx.rules.now +
         (p.lease == absl::ZeroDuration() ? ctx.default_lease : p.lease);
}

class Pass {
 public:
  Pass(const AdmissionContext& ctx, const Queue& queue,
       const AdmissionActions& actions)
      : ctx_(ctx),
        queue_(queue),
        actions_(actions),
        index_(ctx.catalog->index()) {
    // A preemptor's hold on its victims' nodes stands until it is
    // admitted: kept from the last pass while it waits, so that no request
    // of its priority or lower takes what was freed for it, even one ahead
    // of it in this pass's order. Other reservations are made afresh.
    if (ctx.previous != nullptr) {
      for (const auto& [pool, nodes] : ctx.previous->reservations) {
        for (const auto& [node, r] : nodes) {
          if (r.nominated && queue.contains(r.holder)) {
            state_.reservations[pool][node] = r;
            holders_.insert(r.holder);
          }
        }
      }
    }
  }

  // A tenant's dominant share, computed once per pass and again after each
  // admission of its own.
  double Share(const std::string& tenant) {
    auto [it, fresh] = shares_.try_emplace(tenant, 0.0);
    if (fresh) it->second = DominantShare(ctx_, tenant);
    return it->second;
  }

  Queue::Verdict Visit(const std::string& id) {
    // Without quotas every tenant's request of a shape has the same rights
    // (preemption goes by priority, and a walk goes down the priorities): a
    // shape that did not fit is given up on for all of them, the cheapest
    // step of a pass. With quotas the models a request may take, and
    // whether it may reclaim, are the tenant's: only its group is.
    const bool quotas = ctx_.tenants->has_quotas();
    const std::string& shape = queue_.Shape(id);
    if (!quotas) {
      if (auto blocked = blocked_.find(shape); blocked != blocked_.end()) {
        actions_.wait(id, blocked->second);
        return Queue::Verdict::kSkipShape;
      }
    }
    const Allocation& p = ctx_.book->Find({id, ""})->allocation;
    std::string why;
    Reclaim reclaim;
    const std::optional<MatchSpec> spec =
        WithinQuota(ctx_, p.tenant, SpecOf(p), &why, &reclaim);
    const Queue::Verdict miss =
        quotas ? Queue::Verdict::kSkipGroup : Queue::Verdict::kSkipShape;
    EligibilityRules rules = ctx_.rules;
    rules.reservations = &state_.reservations;
    rules.requester = id;
    rules.ends_at = LeaseEnd(ctx_, p);
    rules.priority = p.priority;
    if (!spec.has_value()) {
      MatchSpec pool = SpecOf(p);
      if (reclaim.units > 0) pool.models = {reclaim.pool.model};
      // Held afresh each pass, and not at all once nothing is in grace for
      // it: a quota-blocked request holds nothing.
      ForgetHolder(id);
      if (const auto& victims = ctx_.book->VictimsOf(id); !victims.empty()) {
        absl::StrAppend(&why, WaitingForVictims(victims.size()));
        HoldVictimNodes(id, p.priority, victims);
        if (reclaim.units > 0) HoldFit(id, pool, rules);
      } else if (reclaim.units > 0 && ctx_.preemption) {
        // Within its own quota, short of the cohort's: take back what
        // borrowers hold, from anywhere when the request fits now (holding
        // where it fits), else from the node that then fits it.
        const bool fits = MatchRequest(ctx_, pool, rules).has_value();
        const int n =
            fits ? ReclaimQuota(id, p, reclaim)
                 : Preempt(id, p, pool, /*borrowed_only=*/true, reclaim.units);
        if (n > 0) {
          if (fits) HoldFit(id, pool, rules);
          absl::StrAppend(&why, "; preempted ", n, " borrowing allocation",
                          n == 1 ? "" : "s", ", waiting for their grace");
        }
      }
      actions_.wait(id, why);
      return Queue::Verdict::kSkipGroup;
    }
    // Keyed by what the request may take (its tenant's quota may have
    // narrowed its models).
    const std::string key =
        quotas ? absl::StrCat(shape, "|", absl::StrJoin(spec->models, ","))
               : shape;
    if (quotas) {
      if (auto blocked = blocked_.find(key);
          blocked != blocked_.end() && !MayReclaim(p, *spec)) {
        actions_.wait(id, blocked->second);
        return miss;
      }
    }
    if (auto groups = MatchRequest(ctx_, *spec, rules)) {
      shares_.erase(p.tenant);
      admitted_.insert(id);
      ForgetHolder(id);
      actions_.admit(id, *std::move(groups));
      return Queue::Verdict::kTaken;
    }
    std::string reason = WaitReason(ctx_, *spec);
    const std::set<std::string>& victims = ctx_.book->VictimsOf(id);
    if (!victims.empty()) {
      absl::StrAppend(&reason, WaitingForVictims(victims.size()));
      HoldVictimNodes(id, p.priority, victims);
    } else if (int n = ctx_.preemption ? Preempt(id, p, *spec) : 0; n > 0) {
      absl::StrAppend(&reason, "; preempted ", n, " allocation",
                      n == 1 ? "" : "s", ", waiting for their grace");
    } else {
      absl::StrAppend(&reason, Reserve(id, *spec, p.priority));
    }
    blocked_.emplace(key, reason);
    actions_.wait(id, reason);
    return miss;
  }

  ReservationState TakeReservations() { return std::move(state_); }

  // Preemptors whose victims have all ended go first, onto the nodes held
  // for them (else a request ahead of them in the order, which could not
  // preempt, would take what was freed for them); one that still does not
  // get in lets its holds go and waits like any other. Each has had its
  // turn: the walk passes it by.
  void AdmitRipeHolders() {
    for (const std::string& id : holders_) {
      if (!ctx_.book->VictimsOf(id).empty()) continue;  // still in grace
      Visit(id);
      ForgetHolder(id);
      visited_.insert(id);
    }
  }

  Queue::Verdict VisitOnce(const std::string& id) {
    if (visited_.contains(id)) return Queue::Verdict::kSkipGroup;
    return Visit(id);
  }

 private:
  void ForgetHolder(const std::string& id) {
    for (auto pool = state_.reservations.begin();
         pool != state_.reservations.end();) {
      absl::erase_if(pool->second, [&](const auto& entry) {
        return entry.second.holder == id;
      });
      if (pool->second.empty()) {
        state_.reservations.erase(pool++);
      } else {
        ++pool;
      }
    }
  }

  // Whether `p` may take back borrowed units of a pool of `spec` (its
  // tenant is within its nominal quota there and a cohort member borrows).
  bool MayReclaim(const Allocation& p, const MatchSpec& spec) {
    if (!ctx_.preemption) return false;
    for (const PoolKey& key : PoolsFor(index_, spec)) {
      if (ReclaimPossible(p, key)) return true;
    }
    return false;
  }

  bool ReclaimPossible(const Allocation& p, const PoolKey& key) {
    const TenantPolicy& policy = ctx_.tenants->Find(p.tenant);
    if (policy.cohort.empty() ||
        !WithinNominal(ctx_, p.tenant, key, Demand(SpecOf(p)))) {
      return false;
    }
    for (const std::string& m : ctx_.tenants->CohortMembers(policy.cohort)) {
      if (m != p.tenant && Borrowed(ctx_, m, key) > 0) return true;
    }
    return false;
  }

  // Holds, from now, the nodes `spec` fits on now for `id` (a reclaimer
  // waiting for its quota), so that nothing after it takes them.
  void HoldFit(const std::string& id, const MatchSpec& spec,
               const EligibilityRules& rules) {
    std::optional<std::vector<std::vector<const Unit*>>> groups =
        MatchRequest(ctx_, spec, rules);
    if (!groups.has_value()) return;
    for (const auto& group : *groups) {
      const Unit& u = *group.front();
      if (ReservedForOther(u.pool, u.home, id, rules.priority)) continue;
      reserved_pools_.insert(u.pool);
      state_.reservations[u.pool][u.home] =
          Reservation{ctx_.rules.now, id, /*nominated=*/true, rules.priority};
    }
  }

  bool Eligible(const std::string& home, const MatchSpec& spec,
                std::string* domain) {
    auto it = ctx_.catalog->nodes().find(home);
    const Node* node =
        it == ctx_.catalog->nodes().end() ? nullptr : &it->second;
    if (Ineligible(node, spec, ctx_.rules) != nullptr) return false;
    if (!spec.topology_key.empty()) {
      auto label = node->labels.find(spec.topology_key);
      if (label == node->labels.end()) return false;
      *domain = label->second;
    }
    return true;
  }

  // Whether `home` is held for another request against one of `priority`
  // (a preemptor's hold yields to a higher priority).
  bool ReservedForOther(const PoolKey& pool, const std::string& home,
                        const std::string& id, int priority) const {
    auto p = state_.reservations.find(pool);
    if (p == state_.reservations.end()) return false;
    auto r = p->second.find(home);
    if (r == p->second.end() || r->second.holder == id) return false;
    return !(r->second.nominated && priority > r->second.priority);
  }

  // What to add to a holder's reason.
  static std::string Holds(const std::vector<std::string>& nodes,
                           absl::Time start) {
    return absl::StrCat("; holds ", nodes.front(),
                        nodes.size() > 1
                            ? absl::StrCat(" and ", nodes.size() - 1, " more")
                            : "",
                        " from ", absl::FormatTime(start));
  }

  // The last pass's reservation of `id`, taken over as it was, unless a pool
  // of it is already held this pass. nullopt when there is none to take.
  std::optional<std::string> Reuse(const std::string& id) {
    if (ctx_.previous == nullptr || ctx_.refresh_reservations) {
      return std::nullopt;
    }
    if (!previous_indexed_) {
      previous_indexed_ = true;
      for (const auto& [pool, nodes] : ctx_.previous->reservations) {
        for (const auto& [node, r] : nodes) {
          previous_by_holder_[r.holder].push_back({&pool, &node, &r});
        }
      }
    }
    auto it = previous_by_holder_.find(id);
    if (it == previous_by_holder_.end()) return std::nullopt;
    std::vector<std::string> nodes;
    absl::Time start = absl::InfinitePast();
    for (const Held& h : it->second) {
      if (reserved_pools_.contains(*h.pool)) return std::nullopt;
    }
    for (const Held& h : it->second) {
      state_.reservations[*h.pool][*h.node] = *h.reservation;
      nodes.push_back(*h.node);
      start = std::max(start, h.reservation->start);
    }
    for (const Held& h : it->second) reserved_pools_.insert(*h.pool);
    std::sort(nodes.begin(), nodes.end());
    return Holds(nodes, start);
  }

  // The first request of a pool that must wait holds the nodes that free
  // first for it. Returns what to add to its reason.
  std::string Reserve(const std::string& id, const MatchSpec& spec,
                      int priority) {
    if (std::optional<std::string> reused = Reuse(id)) return *reused;
    if (!ctx_.refresh_reservations && ctx_.previous != nullptr &&
        ctx_.previous->unplaced.contains(id)) {
      // Looked for in vain under the walk limit: again at the next refresh.
      for (const PoolKey& key : PoolsFor(index_, spec)) {
        reserved_pools_.insert(key);
      }
      state_.unplaced.insert(id);
      return "";
    }
    ForgetHolder(id);  // what it held is looked for again
    bool cut = false;
    struct Best {
      absl::Time start = absl::InfiniteFuture();
      PoolKey pool;
      std::vector<std::string> nodes;
    } best;
    for (const PoolKey& key : PoolsFor(index_, spec)) {
      // The pool's first request that must wait is its holder, whether or
      // not a reservation is found for it.
      if (!reserved_pools_.insert(key).second) continue;
      const CapacityIndex::Pool* pool = index_.FindPool(key);
      if (pool == nullptr) continue;
      absl::flat_hash_map<std::string, int> avail;
      absl::flat_hash_map<std::string, bool> eligible;
      std::map<std::string, std::vector<std::string>> ready;
      std::optional<absl::Time> start;
      std::vector<std::string>* chosen = nullptr;
      // Counts `home` ready when it reaches spec.count; true once a domain
      // has enough ready nodes.
      auto add = [&](const std::string& home, int units) {
        int& a = avail[home];
        const int before = a;
        a += units;
        if (before >= spec.count || a < spec.count) return false;
        auto [e, fresh] = eligible.try_emplace(home, false);
        std::string domain;
        if (fresh) {
          e->second = !ReservedForOther(key, home, id, priority) &&
                      Eligible(home, spec, &domain);
        } else if (e->second && !spec.topology_key.empty()) {
          Eligible(home, spec, &domain);
        }
        if (!e->second) return false;
        std::vector<std::string>& nodes = ready[domain];
        nodes.push_back(home);
        if (static_cast<int>(nodes.size()) < spec.replicas) return false;
        chosen = &nodes;
        return true;
      };
      for (const auto& [free, home] : pool->by_free) {
        if (add(home, free)) {
          start = ctx_.rules.now;
          break;
        }
      }
      if (!start.has_value()) {
        size_t walked = 0;
        ctx_.book->ForEachLiveByExpiry(
            key, [&](const AllocationBook::Record& r) {
              const Allocation& a = r.allocation;
              if (a.expires_at >= best.start) return false;
              if (!ctx_.refresh_reservations &&
                  ctx_.reservation_walk_limit > 0 &&
                  ++walked > ctx_.reservation_walk_limit) {
                cut = true;
                return false;
              }
              for (const std::string& unit : r.units) {
                const Unit* u = index_.Find(unit);
                if (u == nullptr || !u->healthy) continue;
                if (add(u->home, 1)) {
                  start = a.expires_at;
                  return false;
                }
              }
              return true;
            });
      }
      if (start.has_value() && *start < best.start) {
        best = Best{*start, key, *chosen};
      }
    }
    if (best.nodes.empty()) {
      if (cut) state_.unplaced.insert(id);
      return "";
    }
    for (const std::string& node : best.nodes) {
      state_.reservations[best.pool][node] = Reservation{best.start, id};
    }
    return Holds(best.nodes, best.start);
  }

  // A preemptor's victims' nodes stay its own until they are free.
  void HoldVictimNodes(const std::string& id, int priority,
                       const std::set<std::string>& victims) {
    for (const std::string& victim : victims) {
      const AllocationBook::Record& r = *ctx_.book->Find({victim, ""});
      const PoolKey pool = PoolOf(r.allocation);
      reserved_pools_.insert(pool);
      for (const std::string& unit : r.units) {
        const Unit* u = index_.Find(unit);
        if (u == nullptr) continue;
        // A node an earlier request holds this pass stays its.
        if (ReservedForOther(pool, u->home, id, priority)) continue;
        Reservation& res = state_.reservations[pool][u->home];
        res.holder = id;
        res.start = std::max(res.start, r.allocation.expires_at);
        res.nominated = true;
        res.priority = priority;
      }
    }
  }

  // Preempts the borrowers' allocations of `reclaim.pool` in `p`'s cohort,
  // lowest priority and most recently admitted first, until `reclaim.units`
  // come back; returns how many (0: not enough borrowed to reclaim).
  int ReclaimQuota(const std::string& id, const Allocation& p,
                   const Reclaim& reclaim) {
    const CapacityIndex::Pool* pool = index_.FindPool(reclaim.pool);
    if (pool == nullptr) return 0;
    const std::string& cohort = ctx_.tenants->Find(p.tenant).cohort;
    std::set<std::string> seen;
    std::vector<const AllocationBook::Record*> candidates;
    for (const auto& [home, h] : pool->homes) {
      for (const std::string& unit : h.units) {
        const Unit* u = index_.Find(unit);
        if (u == nullptr || u->allocation.empty() ||
            !seen.insert(u->allocation).second) {
          continue;
        }
        const AllocationBook::Record* r = ctx_.book->Find({u->allocation, ""});
        const Allocation& a = r->allocation;
        const TenantPolicy& owner = ctx_.tenants->Find(a.tenant);
        if (a.state == AllocationState::kActive && owner.preemptible &&
            a.tenant != p.tenant && owner.cohort == cohort &&
            !admitted_.contains(a.id) &&
            Borrowed(ctx_, a.tenant, reclaim.pool) > 0) {
          candidates.push_back(r);
        }
      }
    }
    std::sort(
        candidates.begin(), candidates.end(),
        [](const AllocationBook::Record* x, const AllocationBook::Record* y) {
          const Allocation& a = x->allocation;
          const Allocation& b = y->allocation;
          // Ids sort by creation: the later one first on a tie.
          return std::make_tuple(a.priority, b.admitted_at, b.id) <
                 std::make_tuple(b.priority, a.admitted_at, a.id);
        });
    absl::flat_hash_map<std::string, int64_t> left;  // borrowed, per tenant
    std::vector<std::string> victims;
    int64_t freed = 0;
    for (const AllocationBook::Record* r : candidates) {
      if (freed >= reclaim.units) break;
      const std::string& tenant = r->allocation.tenant;
      auto [it, fresh] = left.try_emplace(tenant, 0);
      if (fresh) it->second = Borrowed(ctx_, tenant, reclaim.pool);
      if (it->second <= 0) continue;
      const int64_t units = static_cast<int64_t>(r->units.size());
      it->second -= units;
      freed += units;
      victims.push_back(r->allocation.id);
    }
    if (freed < reclaim.units) return 0;
    for (const std::string& victim : victims) actions_.preempt(victim, id);
    return static_cast<int>(victims.size());
  }

  // Preempts the fewest allocations that let `p` fit on one node; returns
  // how many (0: none would do). `borrowed_only`: cohort borrowers only (a
  // reclaim, where nothing else would free quota).
  int Preempt(const std::string& id, const Allocation& p, const MatchSpec& spec,
              bool borrowed_only = false, int64_t quota_units = 0) {
    if (spec.replicas > 1) return 0;  // gangs wait; see README
    struct Choice {
      std::vector<std::string> victims;
      std::string node;
      int worst;
    };
    std::optional<Choice> best;
    for (const PoolKey& key : PoolsFor(index_, spec)) {
      const CapacityIndex::Pool* pool = index_.FindPool(key);
      if (pool == nullptr) continue;
      // Cheap gates before a look at every unit of the pool: some
      // preemptible allocation of lower priority, or a cohort member to
      // reclaim from; and once per pass per (pool, rights).
      const std::optional<int> lowest = ctx_.book->LowestActivePriority(key);
      const bool reclaim = ReclaimPossible(p, key);
      const bool lower =
          !borrowed_only && lowest.has_value() && *lowest < p.priority;
      if (!lower && !reclaim) continue;
      const std::string gate =
          absl::StrCat(key.model, "|", key.partition, "|", p.priority, "|",
                       reclaim ? p.tenant : "", "|", borrowed_only, "|",
                       spec.count, "|", ShapeOf(p));
      if (no_victims_.contains(gate)) continue;
      const std::string& cohort = ctx_.tenants->Find(p.tenant).cohort;
      // Units a victim's tenant borrows, which reclaiming may take back.
      absl::flat_hash_map<std::string, int64_t> borrowed;
      auto victim_rank = [&](const Allocation& a) -> std::optional<int> {
        if (a.state != AllocationState::kActive) return std::nullopt;
        if (!ctx_.tenants->Find(a.tenant).preemptible) return std::nullopt;
        // Admitted in this very pass: not taken back in it.
        if (admitted_.contains(a.id)) return std::nullopt;
        if (reclaim && !cohort.empty() && a.tenant != p.tenant &&
            ctx_.tenants->Find(a.tenant).cohort == cohort &&
            Borrowed(ctx_, a.tenant, key) > 0) {
          return 0;  // borrowed: first to go
        }
        if (!borrowed_only && a.priority < p.priority) return 1;
        return std::nullopt;
      };
      const bool found_before = best.has_value();
      for (const auto& [home, h] : pool->homes) {
        std::string domain;
        if (ReservedForOther(key, home, id, p.priority) ||
            !Eligible(home, spec, &domain)) {
          continue;
        }
        int have = h.free;
        std::map<std::string, int> held;  // victim -> its units here
        for (const std::string& unit : h.units) {
          const Unit* u = index_.Find(unit);
          if (u == nullptr || !u->healthy || u->allocation.empty()) continue;
          ++held[u->allocation];
        }
        struct Candidate {
          int rank;
          int priority;
          absl::Time admitted;
          const Allocation* a;
          int units;      // here
          int64_t total;  // of the pool, on every node
        };
        std::vector<Candidate> candidates;
        for (const auto& [victim, units] : held) {
          const AllocationBook::Record& r = *ctx_.book->Find({victim, ""});
          const Allocation& a = r.allocation;
          if (auto rank = victim_rank(a)) {
            candidates.push_back(
                Candidate{*rank, a.priority, a.admitted_at, &a, units,
                          static_cast<int64_t>(r.units.size())});
          }
        }
        // Borrowed first, lowest priority first, most recently admitted
        // first (ids sort by creation: the later one on a tie).
        std::sort(
            candidates.begin(), candidates.end(),
            [](const Candidate& x, const Candidate& y) {
              return std::make_tuple(x.rank, x.priority, y.admitted, y.a->id) <
                     std::make_tuple(y.rank, y.priority, x.admitted, x.a->id);
            });
        std::vector<std::string> victims;
        int worst = std::numeric_limits<int>::min();  // highest victim priority
        absl::flat_hash_map<std::string, int64_t> taken;
        int64_t freed = 0;  // units of the pool, on every node
        for (const Candidate& c : candidates) {
          if (have >= spec.count && freed >= quota_units) break;
          if (c.rank == 0 && c.priority >= p.priority) {
            // Reclaiming takes back no more than the tenant borrows.
            auto [b, fresh] = borrowed.try_emplace(c.a->tenant, 0);
            if (fresh) b->second = Borrowed(ctx_, c.a->tenant, key);
            int64_t& t = taken[c.a->tenant];
            if (t >= b->second) continue;
            t += c.total;
          }
          victims.push_back(c.a->id);
          worst = std::max(worst, c.priority);
          have += c.units;
          freed += c.total;
        }
        // It must fit, and a reclaim must give back the quota it lacks.
        if (have < spec.count || freed < quota_units) continue;
        // The fewest victims; then the lowest priorities among them.
        if (!best.has_value() || std::make_tuple(victims.size(), worst, home) <
                                     std::make_tuple(best->victims.size(),
                                                     best->worst, best->node)) {
          best = Choice{std::move(victims), home, worst};
        }
      }
      if (!found_before && !best.has_value()) no_victims_.insert(gate);
    }
    if (!best.has_value()) return 0;
    for (const std::string& victim : best->victims) {
      actions_.preempt(victim, id);
    }
    HoldVictimNodes(id, p.priority, ctx_.book->VictimsOf(id));
    return static_cast<int>(best->victims.size());
  }

  const AdmissionContext& ctx_;
  const Queue& queue_;
  const AdmissionActions& actions_;
  const CapacityIndex& index_;
  ReservationState state_;
  std::set<PoolKey> reserved_pools_;
  // The last pass's reservations by holder, indexed on first use.
  struct Held {
    const PoolKey* pool;
    const std::string* node;
    const Reservation* reservation;
  };
  bool previous_indexed_ = false;
  absl::flat_hash_map<std::string, std::vector<Held>> previous_by_holder_;
  // Shapes that did not fit this pass, with why.
  absl::flat_hash_map<std::string, std::string> blocked_;
  // Allocations admitted by this pass: never its victims.
  absl::flat_hash_set<std::string> admitted_;
  // Preemptors with holds kept from the last pass; those visited already.
  std::set<std::string> holders_;
  absl::flat_hash_set<std::string> visited_;
  // Preemption searches (pool, rights, shape) that found no victims.
  absl::flat_hash_set<std::string> no_victims_;
  absl::flat_hash_map<std::string, double> shares_;
};

}  // namespace

std::vector<PoolKey> PoolsFor(const CapacityIndex& index,
                              const MatchSpec& spec) {
  std::vector<PoolKey> out;
  if (spec.models.empty()) {
    for (const auto& [key, pool] :
         index.PoolsOf(spec.device_class, spec.partition)) {
      out.push_back(*key);
    }
    return out;
  }
  for (const std::string& model : spec.models) {
    out.push_back(PoolKey{spec.device_class, model, spec.partition});
  }
  return out;
}

MatchSpec SpecOf(const Allocation& a) {
  MatchSpec spec;
  spec.device_class = a.device_class;
  spec.models = a.requested_models;
  spec.partition = a.partition;
  spec.count = a.count;
  spec.selector = LabelSelector::FromMap(a.node_selector);
  spec.replicas = a.replicas;
  spec.topology_key = a.topology_key;
  return spec;
}

double DominantShare(const AdmissionContext& ctx, absl::string_view tenant) {
  auto usage = ctx.book->usage().find(tenant);
  if (usage == ctx.book->usage().end()) return 0;
  double share = 0;
  for (const auto& [key, used] : usage->second) {
    const CapacityIndex::Pool* pool = ctx.catalog->index().FindPool(key);
    if (pool == nullptr || pool->total == 0) continue;
    share = std::max(share, static_cast<double>(used) / pool->total);
  }
  return share / ctx.tenants->Find(tenant).weight;
}

std::optional<MatchSpec> WithinQuota(const AdmissionContext& ctx,
                                     absl::string_view tenant,
                                     const MatchSpec& spec, std::string* reason,
                                     Reclaim* reclaim) {
  const TenantPolicy& policy = ctx.tenants->Find(tenant);
  if (policy.quotas.empty()) return spec;
  std::vector<std::string> allowed;
  bool narrowed = false;
  for (const PoolKey& pool : PoolsFor(ctx.catalog->index(), spec)) {
    int64_t excess = 0;
    std::string why =
        QuotaBlock(ctx, tenant, policy, pool, Demand(spec), &excess);
    if (excess > 0 && reclaim != nullptr && reclaim->units == 0) {
      *reclaim = Reclaim{pool, excess};
    }
    if (why.empty()) {
      allowed.push_back(pool.model);
    } else {
      narrowed = true;
      if (reason->empty()) *reason = std::move(why);
    }
  }
  if (!narrowed) return spec;
  if (allowed.empty()) return std::nullopt;
  MatchSpec out = spec;
  std::sort(allowed.begin(), allowed.end());
  out.models = std::move(allowed);
  return out;
}

std::optional<std::vector<std::vector<const Unit*>>> MatchRequest(
    const AdmissionContext& ctx, const MatchSpec& spec,
    const EligibilityRules& rules) {
  if (spec.replicas > 1) {
    return MatchGang(ctx.catalog->index(), ctx.catalog->nodes(), spec, rules);
  }
  std::optional<std::vector<const Unit*>> units =
      Match(ctx.catalog->index(), ctx.catalog->nodes(), spec, rules);
  if (!units.has_value()) return std::nullopt;
  return std::vector<std::vector<const Unit*>>{*std::move(units)};
}

std::string WaitReason(const AdmissionContext& ctx, const MatchSpec& spec) {
  int64_t free = 0, total = 0;
  for (const PoolKey& key : PoolsFor(ctx.catalog->index(), spec)) {
    if (const auto* pool = ctx.catalog->index().FindPool(key)) {
      free += pool->free();
      total += pool->total;
    }
  }
  const std::string unit =
      RequestUnitName(spec.device_class, spec.models, spec.partition);
  if (spec.replicas > 1) {
    return absl::StrCat("no ", spec.replicas, " nodes",
                        spec.topology_key.empty()
                            ? ""
                            : absl::StrCat(" sharing one ", spec.topology_key),
                        " with ", spec.count, " free ", unit,
                        spec.count == 1 ? "" : "s", " each (", free,
                        " free of ", total, ")");
  }
  return absl::StrCat("no node has ", spec.count, " free ", unit,
                      spec.count == 1 ? "" : "s", " (", free, " free of ",
                      total, ")");
}

ReservationState RunAdmissionPass(const AdmissionContext& ctx,
                                  const Queue& queue,
                                  const AdmissionActions& actions) {
  Pass pass(ctx, queue, actions);
  pass.AdmitRipeHolders();
  queue.Walk([&](const std::string& tenant) { return pass.Share(tenant); },
             [&](const std::string& id) { return pass.VisitOnce(id); });
  return pass.TakeReservations();
}

}  // namespace accelsched
