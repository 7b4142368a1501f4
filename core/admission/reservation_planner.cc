#include "core/admission/reservation_planner.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/admission/queue.h"

namespace accelsched {
namespace {

// What the lease walk of Reserve depends on besides the cluster and the
// holds of the pass: two requests with one key find the same nodes at the
// same lease (or none within the walk limit) where no pool of theirs is
// held for another and no node is (Reserve records a cut walk only then).
// The lease is not in it: a walk does not read it.
std::string WalkKey(const MatchSpec& spec, int priority) {
  return absl::StrCat(spec.KeyFor(RequestSpec::kWalk), priority);
}

// What to add to a holder's reason.
std::string Holds(const std::vector<std::string>& nodes, absl::Time start) {
  return absl::StrCat(
      "; holds ", nodes.front(),
      nodes.size() > 1 ? absl::StrCat(" and ", nodes.size() - 1, " more") : "",
      " from ", absl::FormatTime(start));
}

}  // namespace

ReservationPlanner::ReservationPlanner(
    const AdmissionContext& ctx,
    absl::FunctionRef<bool(absl::string_view id)> waiting)
    : ctx_(ctx), index_(ctx.catalog->index()) {
  // A preemptor's hold on its victims' nodes stands until it is admitted:
  // kept from the last pass while it waits, so that no request of its
  // priority or lower takes what was freed for it, even one ahead of it in
  // this pass's order. Other reservations are made afresh.
  // Holds for a re-layout planned ahead stand as they were until the next
  // refresh (made there afresh), but for a higher priority's taking part of
  // them or the round letting them go: between refreshes no pass plans
  // ahead.
  if (ctx.previous != nullptr) {
    const bool keep_ahead = !ctx.refresh_reservations;
    for (const auto& [pool, nodes] : ctx.previous->reservations) {
      for (const auto& [node, r] : nodes) {
        if (!waiting(r.holder)) continue;
        if (r.nominated) {
          state_.reservations[pool][node] = r;
          kept_holders_.insert(r.holder);
        } else if (auto why = ctx.previous->ahead.find(r.holder);
                   r.ahead && keep_ahead && why != ctx.previous->ahead.end()) {
          state_.reservations[pool][node] = r;
          state_.ahead[r.holder] = why->second;
        }
      }
    }
    // What was looked for in vain is not looked for again before the
    // refresh, whoever asks for it next.
    if (!ctx.refresh_reservations) {
      state_.unplaced_walks = ctx.previous->unplaced_walks;
    }
  }
}

void ReservationPlanner::Forget(const std::string& id) {
  forgotten_.insert(id);
  state_.ahead.erase(id);
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

bool ReservationPlanner::ReservedForOther(const PoolKey& pool,
                                          const std::string& home,
                                          const std::string& id,
                                          int priority) const {
  auto p = state_.reservations.find(pool);
  if (p == state_.reservations.end()) return false;
  auto r = p->second.find(home);
  if (r == p->second.end() || r->second.holder == id) return false;
  return !r->second.YieldsTo(priority);
}

void ReservationPlanner::HoldFit(const std::string& id, const MatchSpec& spec,
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

void ReservationPlanner::HoldVictimNodes(const std::string& id, int priority,
                                         const std::set<std::string>& victims) {
  for (const std::string& victim : victims) {
    const AllocationBook::Record& r = *ctx_.book->Find({victim, ""});
    const PoolKey pool = PoolOf(r.allocation);
    reserved_pools_.insert(pool);
    // A share holds no unit of its own: its GPU is the unit it frees.
    std::vector<std::string> units = r.units;
    if (const std::string* gpu = SharedUnitOf(r.allocation)) {
      units.push_back(*gpu);
    }
    for (const std::string& unit : units) {
      const Unit* u = index_.Find(unit);
      if (u == nullptr) continue;
      // A node an earlier request holds this pass stays its.
      if (ReservedForOther(pool, u->home, id, priority)) continue;
      Reservation& res = state_.reservations[pool][u->home];
      if (res.holder != id) {
        // Taken over from one of lower priority: nothing of its hold
        // (start, kind) is this one's.
        res = Reservation{r.allocation.expires_at, id, /*nominated=*/true,
                          priority};
      }
      res.start = std::max(res.start, r.allocation.expires_at);
    }
  }
}

bool ReservationPlanner::HeldForOther(const PoolKey& pool,
                                      const std::string& home,
                                      const std::string& id) const {
  auto p = state_.reservations.find(pool);
  if (p == state_.reservations.end()) return false;
  auto r = p->second.find(home);
  return r != p->second.end() && r->second.holder != id;
}

std::string ReservationPlanner::HoldPools(const std::string& id, int priority,
                                          const std::string& node,
                                          const std::vector<PoolKey>& pools,
                                          absl::Time start,
                                          absl::string_view what) {
  for (const PoolKey& pool : pools) {
    state_.reservations[pool][node] =
        Reservation{start, id, /*nominated=*/false, priority, /*ahead=*/true};
  }
  std::string reason = absl::StrCat(Holds({node}, start), what);
  state_.ahead[id] = reason;
  return reason;
}

std::string ReservationPlanner::KeptAhead(const std::string& id) const {
  auto it = state_.ahead.find(id);
  return it == state_.ahead.end() ? "" : it->second;
}

std::optional<std::string> ReservationPlanner::Reuse(
    const std::string& id, const std::string& walk_key) {
  if (ctx_.previous == nullptr || ctx_.refresh_reservations) {
    return std::nullopt;
  }
  if (!previous_indexed_) {
    previous_indexed_ = true;
    for (const auto& [pool, nodes] : ctx_.previous->reservations) {
      for (const auto& [node, r] : nodes) {
        // Holds for a re-layout planned ahead are kept (or let go) as a
        // whole, never taken over here.
        if (r.ahead) continue;
        previous_by_holder_[r.holder].push_back({&pool, &node, &r});
      }
    }
  }
  auto it = previous_by_holder_.find(id);
  bool taken_over = false;
  if (it == previous_by_holder_.end()) {
    // Another request that asked the same held it last pass (it was
    // admitted, or is no longer first): the same nodes serve this one.
    auto last = ctx_.previous->walk_holders.find(walk_key);
    // Not from one that had its turn this pass: admitted (perhaps onto
    // those very nodes), or no longer holding.
    if (last == ctx_.previous->walk_holders.end() ||
        forgotten_.contains(last->second)) {
      return std::nullopt;
    }
    it = previous_by_holder_.find(last->second);
    if (it == previous_by_holder_.end()) return std::nullopt;
    taken_over = true;
  }
  std::vector<std::string> nodes;
  absl::Time start = absl::InfinitePast();
  for (const Held& h : it->second) {
    if (reserved_pools_.contains(*h.pool)) return std::nullopt;
    if (taken_over && h.reservation->nominated) return std::nullopt;
  }
  for (const Held& h : it->second) {
    Reservation& r = state_.reservations[*h.pool][*h.node];
    r = *h.reservation;
    r.holder = id;
    nodes.push_back(*h.node);
    start = std::max(start, h.reservation->start);
  }
  if (auto last = ctx_.previous->walk_holders.find(walk_key);
      taken_over ||
      (last != ctx_.previous->walk_holders.end() && last->second == id)) {
    state_.walk_holders[walk_key] = id;
  }
  for (const Held& h : it->second) reserved_pools_.insert(*h.pool);
  std::sort(nodes.begin(), nodes.end());
  return Holds(nodes, start);
}

std::string ReservationPlanner::Reserve(const std::string& id,
                                        const MatchSpec& spec, int priority) {
  std::string walk_key = WalkKey(spec, priority);
  if (std::optional<std::string> reused = Reuse(id, walk_key)) return *reused;
  if (!ctx_.refresh_reservations && ctx_.previous != nullptr &&
      (ctx_.previous->unplaced.contains(id) ||
       ctx_.previous->unplaced_walks.contains(walk_key))) {
    // Looked for in vain under the walk limit (this request, or one that
    // asks the same): again at the next refresh.
    for (const PoolKey& key : PoolsFor(index_, spec)) {
      reserved_pools_.insert(key);
    }
    // The key, when remembered, was copied over already: one unplaced
    // by its id alone (its walk saw less than another would) stays so
    // without it.
    state_.unplaced.insert(id);
    return "";
  }
  Forget(id);  // what it held is looked for again
  bool cut = false;
  // Whether the walk saw all it would see for any request of its walk key:
  // no pool of it taken by another this pass, no node held for another.
  bool exact = true;
  struct Best {
    absl::Time start = absl::InfiniteFuture();
    PoolKey pool;
    std::vector<std::string> nodes;
  } best;
  for (const PoolKey& key : PoolsFor(index_, spec)) {
    // The pool's first request that must wait is its holder, whether or
    // not a reservation is found for it.
    if (!reserved_pools_.insert(key).second) {
      exact = false;
      continue;
    }
    const CapacityIndex::Pool* pool = index_.FindPool(key);
    if (pool == nullptr) continue;
    // Keyed by the index's own home names, which outlive the pass: the walk
    // visits up to the walk limit of leases and copies no name per lease.
    absl::flat_hash_map<absl::string_view, int> avail;
    // What the walk has freed so far of each node's CPU, memory and pods.
    absl::flat_hash_map<std::string, NodeResources> freed;
    absl::flat_hash_set<absl::string_view> counted;  // homes in `ready`
    absl::flat_hash_map<absl::string_view, bool> eligible;
    std::map<std::string, std::vector<std::string>> ready;
    std::optional<absl::Time> start;
    std::vector<std::string>* chosen = nullptr;
    auto room = [&](const std::string& home) {
      if (!spec.pod_resources.has_value()) return true;
      auto f = freed.find(home);
      return index_.Shortfall(home, *spec.pod_resources,
                              f == freed.end() ? NodeResources{} : f->second) ==
             nullptr;
    };
    // Counts `home` ready when it reaches spec.count and has room; true once
    // a domain has enough ready nodes.
    auto add = [&](const std::string& home, int units) {
      int& a = avail[home];
      a += units;
      if (a < spec.count || counted.contains(home) || !room(home)) {
        return false;
      }
      auto [e, fresh] = eligible.try_emplace(home, false);
      std::string domain;
      if (fresh) {
        const bool other = ReservedForOther(key, home, id, priority);
        exact = exact && !other;
        e->second = !other && EligibleHome(ctx_, home, spec, &domain);
      } else if (e->second && !spec.topology_key.empty()) {
        EligibleHome(ctx_, home, spec, &domain);
      }
      if (!e->second) return false;
      counted.insert(home);
      std::vector<std::string>& nodes = ready[domain];
      nodes.push_back(home);
      if (static_cast<int>(nodes.size()) < spec.replicas) return false;
      chosen = &nodes;
      return true;
    };
    pool->by_free.ForEach([&](const CapacityIndex::FreeEntry& e) {
      if (!add(e.home, e.free)) return true;
      start = ctx_.rules.now;
      return false;
    });
    if (!start.has_value()) {
      size_t walked = 0;
      // Shares the walk has yet to see end, per shared GPU: it frees whole
      // when the last one has.
      absl::flat_hash_map<std::string, size_t> shares_left;
      ctx_.book->ForEachLiveByExpiry(key, [&](const AllocationBook::Record& r) {
        const Allocation& a = r.allocation;
        if (a.expires_at >= best.start) return false;
        if (!ctx_.refresh_reservations && ctx_.reservation_walk_limit > 0 &&
            ++walked > ctx_.reservation_walk_limit) {
          cut = true;
          return false;
        }
        if (a.pod_resources.has_value()) {
          for (const std::string& node : NodesOf(a)) {
            freed[node] += *a.pod_resources;
          }
        }
        // Whether `unit` coming free completes the reservation.
        auto frees = [&](absl::string_view unit) {
          const Unit* u = index_.Find(unit);
          return u != nullptr && u->healthy && add(u->home, 1);
        };
        bool done = false;
        for (const std::string& unit : r.units) {
          if (frees(unit)) {
            done = true;
            break;
          }
        }
        if (const std::string* gpu = SharedUnitOf(a); !done && gpu) {
          auto [left, fresh] = shares_left.try_emplace(*gpu, 0);
          if (fresh) left->second = ctx_.book->ShareHolderCount(*gpu);
          done = left->second > 0 && --left->second == 0 && frees(*gpu);
        }
        if (done) start = a.expires_at;
        return !done;
      });
    }
    if (start.has_value() && *start < best.start) {
      best = Best{*start, key, *chosen};
    }
  }
  if (best.nodes.empty()) {
    if (cut) {
      state_.unplaced.insert(id);
      if (exact) state_.unplaced_walks.insert(std::move(walk_key));
    }
    return "";
  }
  for (const std::string& node : best.nodes) {
    state_.reservations[best.pool][node] = Reservation{best.start, id};
  }
  state_.walk_holders[std::move(walk_key)] = id;
  return Holds(best.nodes, best.start);
}

ReservationState ReservationPlanner::Take() {
  // A gang starts once the last of its nodes is free; a request with
  // victims in grace once the last has ended (a reclaimer's HoldFit holds
  // from now, its quota coming back only then).
  absl::flat_hash_map<std::string, absl::Time>& starts = state_.starts;
  for (const auto& [pool, nodes] : state_.reservations) {
    for (const auto& [node, r] : nodes) {
      auto [it, fresh] = starts.try_emplace(r.holder, r.start);
      if (!fresh) it->second = std::max(it->second, r.start);
    }
  }
  for (auto& [holder, start] : starts) {
    for (const std::string& victim : ctx_.book->VictimsOf(holder)) {
      start =
          std::max(start, ctx_.book->Find({victim, ""})->allocation.expires_at);
    }
  }
  return std::move(state_);
}
}  // namespace accelsched
