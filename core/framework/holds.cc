#include "core/framework/holds.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace accelsched {

std::string HoldsText(const std::vector<std::string>& nodes, absl::Time start) {
  return absl::StrCat(
      "; holds ", nodes.front(),
      nodes.size() > 1 ? absl::StrCat(" and ", nodes.size() - 1, " more") : "",
      " from ", absl::FormatTime(start));
}

Holds::Holds(const AllocationBook* book, const ReservationState* previous,
             bool refresh,
             absl::FunctionRef<bool(absl::string_view id)> waiting)
    : book_(book), reservations_(&state_.reservations) {
  // A preemptor's hold on its victims' nodes stands until it is admitted:
  // kept from the last pass while it waits, so that no request of its
  // priority or lower takes what was freed for it, even one ahead of it in
  // this pass's order. Other reservations are made afresh.
  // Holds for a re-layout planned ahead stand as they were until the next
  // refresh (made there afresh), but for a higher priority's taking part of
  // them or the pass letting them go: between refreshes no pass plans
  // ahead.
  if (previous == nullptr) return;
  for (const auto& [pool, nodes] : previous->reservations) {
    for (const auto& [node, r] : nodes) {
      if (!waiting(r.held_for)) continue;
      if (r.nominated) {
        state_.reservations[pool][node] = r;
        kept_preemptors_.insert(r.held_for);
      } else if (auto why = previous->ahead.find(r.held_for);
                 r.ahead && !refresh && why != previous->ahead.end()) {
        state_.reservations[pool][node] = r;
        state_.ahead[r.held_for] = why->second;
      }
    }
  }
  // What was looked for in vain is not looked for again before the
  // refresh, whoever asks for it next.
  if (!refresh) state_.unplaced_walks = previous->unplaced_walks;
}

Holds::Holds(const AllocationBook* book, const ReservationState* standing,
             Standing mode)
    : book_(book),
      reservations_(&state_.reservations),
      read_only_(mode == Standing::kReadOnly) {
  if (standing == nullptr) return;
  if (read_only_) {
    reservations_ = &standing->reservations;
  } else {
    state_.reservations = standing->reservations;
    state_.ahead = standing->ahead;
  }
}

void Holds::Release(const std::string& id) {
  if (read_only_) return;
  released_.insert(id);
  state_.ahead.erase(id);
  for (auto pool = state_.reservations.begin();
       pool != state_.reservations.end();) {
    absl::erase_if(pool->second, [&](const auto& entry) {
      return entry.second.held_for == id;
    });
    if (pool->second.empty()) {
      state_.reservations.erase(pool++);
    } else {
      ++pool;
    }
  }
}

const Reservation* Holds::HoldForOther(const PoolKey& pool,
                                       absl::string_view home,
                                       absl::string_view id,
                                       std::optional<int> priority) const {
  auto p = reservations_->find(pool);
  if (p == reservations_->end()) return nullptr;
  auto r = p->second.find(home);
  if (r == p->second.end() || r->second.held_for == id) return nullptr;
  if (priority.has_value() && r->second.YieldsTo(*priority)) return nullptr;
  return &r->second;
}

void Holds::Hold(const PoolKey& pool, const std::string& node,
                 Reservation reservation) {
  state_.reservations[pool][node] = std::move(reservation);
}

void Holds::HoldVictimNodes(const CapacityIndex& index, const std::string& id,
                            int priority,
                            const std::set<std::string>& victims) {
  for (const std::string& victim : victims) {
    const AllocationBook::Record& r = *book_->Find(victim);
    const PoolKey pool = PoolOf(r.allocation);
    turns_.insert(pool);
    // A share holds no unit of its own: its GPU is the unit it frees.
    std::vector<std::string> units = r.units;
    if (const std::string* gpu = SharedUnitOf(r.allocation)) {
      units.push_back(*gpu);
    }
    for (const std::string& unit : units) {
      const Unit* u = index.Find(unit);
      if (u == nullptr) continue;
      // A node an earlier request holds this pass stays its.
      if (HoldForOther(pool, u->home, id, priority) != nullptr) continue;
      Reservation& res = state_.reservations[pool][u->home];
      if (res.held_for != id) {
        // Taken over from one of lower priority: nothing of its hold
        // (start, kind) is this one's.
        res = Reservation{r.allocation.expires_at, id, /*nominated=*/true,
                          priority};
      }
      res.start = std::max(res.start, r.allocation.expires_at);
    }
  }
}

std::string Holds::HoldAhead(const std::string& id, int priority,
                             const std::string& node,
                             const std::vector<PoolKey>& pools,
                             absl::Time start, absl::string_view what) {
  for (const PoolKey& pool : pools) {
    state_.reservations[pool][node] =
        Reservation{start, id, /*nominated=*/false, priority, /*ahead=*/true};
  }
  std::string reason = absl::StrCat(HoldsText({node}, start), what);
  state_.ahead[id] = reason;
  return reason;
}

std::string Holds::KeptAhead(const std::string& id) const {
  auto it = state_.ahead.find(id);
  return it == state_.ahead.end() ? "" : it->second;
}

ReservationState Holds::Take() {
  // A gang starts once the last of its nodes is free; a request with
  // victims in grace once the last has ended (a reclaimer's hold of where
  // it fits holds from now, its quota coming back only then).
  absl::flat_hash_map<std::string, absl::Time>& starts = state_.starts;
  for (const auto& [pool, nodes] : state_.reservations) {
    for (const auto& [node, r] : nodes) {
      auto [it, fresh] = starts.try_emplace(r.held_for, r.start);
      if (!fresh) it->second = std::max(it->second, r.start);
    }
  }
  for (auto& [holder, start] : starts) {
    for (const std::string& victim : book_->tallies().VictimsOf(holder)) {
      start = std::max(start, book_->Find(victim)->allocation.expires_at);
    }
  }
  return std::move(state_);
}

}  // namespace accelsched
