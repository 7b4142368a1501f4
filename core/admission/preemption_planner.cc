#include "core/admission/preemption_planner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/admission/queue.h"

namespace accelsched {

std::vector<std::string> PreemptionPlanner::ChooseReclaimVictims(
    const Allocation& p, const Reclaim& reclaim) const {
  const CapacityIndex::Pool* pool = index_.FindPool(reclaim.pool);
  if (pool == nullptr) return {};
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
  if (freed < reclaim.units) return {};
  return victims;
}

std::optional<VictimChoice> PreemptionPlanner::ChooseVictims(
    const std::string& id, const Allocation& p, const MatchSpec& spec,
    bool borrowed_only, int64_t quota_units) {
  if (spec.replicas > 1) return std::nullopt;  // gangs wait; see README
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
    const bool reclaim = ReclaimPossible(ctx_, p, key);
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
    for (const auto& home_entry : pool->homes) {
      // Named, not a structured binding: the lambda below captures it.
      const std::string& home = home_entry.first;
      const auto& h = home_entry.second;
      std::string domain;
      if (reservations_.ReservedForOther(key, home, id, p.priority) ||
          !EligibleHome(ctx_, home, spec, &domain)) {
        continue;
      }
      int have = h.free;
      // The CPU, memory and pods the victims so far free on the node:
      // spec.pod_resources must fit with them too.
      NodeResources released;
      auto fits = [&] {
        return !spec.pod_resources.has_value() ||
               index_.Shortfall(home, *spec.pod_resources, released) == nullptr;
      };
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
          candidates.push_back(Candidate{*rank, a.priority, a.admitted_at, &a,
                                         units,
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
        if (have >= spec.count && freed >= quota_units) {
          if (fits()) break;
          // Only the pod's resources fall short (so the node is accounted):
          // a victim that frees none of those short would be evicted for
          // nothing.
          const NodeAccount& account = *index_.Account(home);
          NodeResources room = account.available();
          room += released;
          if (!c.a->pod_resources.has_value() ||
              !Relieves(room, *spec.pod_resources,
                        /*limits_pods=*/account.allocatable->pods > 0,
                        *c.a->pod_resources)) {
            continue;
          }
        }
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
        if (c.a->pod_resources.has_value()) released += *c.a->pod_resources;
      }
      // It must fit, and a reclaim must give back the quota it lacks.
      if (have < spec.count || !fits() || freed < quota_units) continue;
      // The fewest victims; then the lowest priorities among them.
      if (!best.has_value() ||
          std::make_tuple(victims.size(), worst, home) <
              std::make_tuple(best->victims.size(), best->worst, best->node)) {
        best = Choice{std::move(victims), home, worst};
      }
    }
    if (!found_before && !best.has_value()) no_victims_.insert(gate);
  }
  if (!best.has_value()) return std::nullopt;
  return VictimChoice{std::move(best->victims), std::move(best->node)};
}
}  // namespace accelsched
