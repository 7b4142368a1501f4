#include "core/plugins/preemption/victim_search.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/tenants/quota_usage.h"

namespace accelsched {

std::vector<std::string> VictimSearch::ChooseReclaimVictims(
    const Allocation& p, const Reclaim& reclaim) const {
  const CapacityIndex::Pool* pool = index_.FindPool(reclaim.pool);
  if (pool == nullptr) return {};
  const std::string& cohort = snap_.tenants->Find(p.tenant).cohort;
  std::set<std::string> seen;
  std::vector<const AllocationBook::Record*> candidates;
  auto consider = [&](const std::string& id) {
    if (!seen.insert(id).second) return;
    const AllocationBook::Record* r = snap_.book->Find({id, ""});
    const Allocation& a = r->allocation;
    const TenantPolicy& owner = snap_.tenants->Find(a.tenant);
    if (a.state == AllocationState::kActive && owner.preemptible &&
        a.tenant != p.tenant && owner.cohort == cohort &&
        !session_.placed(a.id) &&
        BorrowedMilli(*snap_.book, *snap_.tenants, a.tenant, reclaim.pool) >
            0) {
      candidates.push_back(r);
    }
  };
  for (const auto& [home, h] : pool->homes) {
    for (const std::string& unit : h.units) {
      const Unit* u = index_.Find(unit);
      if (u == nullptr) continue;
      if (!u->holder.empty()) consider(u->holder);
      // Quota is what a reclaim takes back: a share gives back its
      // fraction, wherever it is.
      if (u->shared_milli > 0) {
        for (const std::string& holder :
             snap_.book->holdings().ShareHoldersOf(u->key)) {
          consider(holder);
        }
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
  // Borrowed, per tenant (thousandths of a unit).
  absl::flat_hash_map<std::string, int64_t> left;
  std::vector<std::string> victims;
  int64_t freed = 0;  // thousandths of a unit
  for (const AllocationBook::Record* r : candidates) {
    if (freed >= reclaim.milli) break;
    const std::string& tenant = r->allocation.tenant;
    auto [it, fresh] = left.try_emplace(tenant, 0);
    if (fresh)
      it->second =
          BorrowedMilli(*snap_.book, *snap_.tenants, tenant, reclaim.pool);
    if (it->second <= 0) continue;
    const int64_t milli = UsageMilliOf(r->allocation, r->units.size());
    it->second -= milli;
    freed += milli;
    victims.push_back(r->allocation.id);
  }
  if (freed < reclaim.milli) return {};
  return victims;
}

std::optional<VictimChoice> VictimSearch::ChooseVictims(
    const CycleState& cycle, const std::string& id, const Allocation& p,
    const MatchSpec& spec, bool borrowed_only, int64_t quota_milli) {
  // Gangs wait; a share takes only shares, and no reclaim; see
  // docs/concepts/sharing.md.
  if (spec.replicas > 1) return std::nullopt;
  if (spec.share.has_value()) {
    if (borrowed_only || quota_milli > 0) return std::nullopt;
    return ChooseShareVictims(cycle, id, p, spec);
  }
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
    const std::optional<int> lowest =
        snap_.book->tallies().LowestActivePriority(key);
    const bool reclaim = ReclaimPossible(*snap_.book, *snap_.tenants, p, key);
    const bool lower =
        !borrowed_only && lowest.has_value() && *lowest < p.priority;
    if (!lower && !reclaim) continue;
    const std::string gate =
        absl::StrCat(key.model, "|", key.partition, "|", p.priority, "|",
                     reclaim ? p.tenant : "", "|", borrowed_only, "|",
                     spec.count, "|", p.KeyFor(RequestSpec::kShape));
    if (no_victims_.contains(gate)) continue;
    const std::string& cohort = snap_.tenants->Find(p.tenant).cohort;
    // What a victim's tenant borrows (thousandths of a unit), which
    // reclaiming may take back.
    absl::flat_hash_map<std::string, int64_t> borrowed;
    auto victim_rank = [&](const Allocation& a) -> std::optional<int> {
      if (a.state != AllocationState::kActive) return std::nullopt;
      if (!snap_.tenants->Find(a.tenant).preemptible) return std::nullopt;
      // Admitted in this very pass: not taken back in it.
      if (session_.placed(a.id)) return std::nullopt;
      if (reclaim && !cohort.empty() && a.tenant != p.tenant &&
          snap_.tenants->Find(a.tenant).cohort == cohort &&
          BorrowedMilli(*snap_.book, *snap_.tenants, a.tenant, key) > 0) {
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
      if (session_.holds().HoldForOther(key, home, id, p.priority) ||
          !cycle.filters().Gates(cycle, home)) {
        continue;
      }
      int have = h.free;
      // The CPU, memory and pods the victims so far free on the node:
      // spec.pod_resources must fit with them too.
      NodeResources released;
      auto fits = [&] { return cycle.filters().Room(cycle, home, released); };
      std::map<std::string, int> held;  // victim -> its units here
      std::vector<const Unit*> shared;  // GPUs held in shares
      for (const std::string& unit : h.units) {
        const Unit* u = index_.Find(unit);
        if (u == nullptr || !u->healthy) continue;
        if (!u->holder.empty()) {
          ++held[u->holder];
        } else if (u->shared_milli > 0 && !borrowed_only) {
          // (A reclaim does not free a GPU held in shares: see below.)
          shared.push_back(u);
        }
      }
      // One allocation, or every share on one GPU: that GPU comes free only
      // when all of them go.
      struct Candidate {
        int rank;
        int priority;         // its members' highest
        absl::Time admitted;  // its members' latest
        std::vector<const Allocation*> members;
        int units;            // here
        int64_t total_milli;  // of the pool, on every node (UsageMilliOf)
        std::optional<NodeResources> pod_resources;  // its members', summed
        // The tie-break between equals: its latest-created member's id.
        const std::string& id() const { return members.back()->id; }
      };
      std::vector<Candidate> candidates;
      for (const auto& [victim, units] : held) {
        const AllocationBook::Record& r = *snap_.book->Find({victim, ""});
        const Allocation& a = r.allocation;
        if (auto rank = victim_rank(a)) {
          candidates.push_back(Candidate{*rank,
                                         a.priority,
                                         a.admitted_at,
                                         {&a},
                                         units,
                                         UsageMilliOf(a, r.units.size()),
                                         a.pod_resources});
        }
      }
      // A shared GPU's shares are taken only all together and only for
      // their lower priority: a share is never reclaimed
      // (docs/concepts/sharing.md), so a reclaim does not free a shared GPU.
      for (const Unit* u : shared) {
        Candidate c{1,
                    std::numeric_limits<int>::min(),
                    absl::InfinitePast(),
                    {},
                    1,
                    0,
                    std::nullopt};
        for (const std::string& holder :
             snap_.book->holdings().ShareHoldersOf(u->key)) {
          const Allocation& a = snap_.book->Find({holder, ""})->allocation;
          if (!victim_rank(a).has_value() || a.priority >= p.priority) {
            c.members.clear();
            break;
          }
          c.priority = std::max(c.priority, a.priority);
          c.admitted = std::max(c.admitted, a.admitted_at);
          c.members.push_back(&a);  // in id order: the holders' set's
          c.total_milli += UsageMilliOf(a, 0);
          if (a.pod_resources.has_value()) {
            if (!c.pod_resources.has_value()) c.pod_resources.emplace();
            *c.pod_resources += *a.pod_resources;
          }
        }
        if (!c.members.empty()) candidates.push_back(std::move(c));
      }
      // Borrowed first, lowest priority first, the fewest allocations (a
      // GPU of one share before one of three), most recently admitted
      // first (ids sort by creation: the later one on a tie).
      std::sort(candidates.begin(), candidates.end(),
                [](const Candidate& x, const Candidate& y) {
                  return std::make_tuple(x.rank, x.priority, x.members.size(),
                                         y.admitted, y.id()) <
                         std::make_tuple(y.rank, y.priority, y.members.size(),
                                         x.admitted, x.id());
                });
      std::vector<std::string> victims;
      int worst = std::numeric_limits<int>::min();  // highest victim priority
      absl::flat_hash_map<std::string, int64_t> taken;
      int64_t freed = 0;  // of the pool, on every node (thousandths)
      for (const Candidate& c : candidates) {
        if (have >= spec.count && freed >= quota_milli) {
          if (fits()) break;
          // Only the pod's resources fall short (so the node is accounted):
          // a victim that frees none of those short would be evicted for
          // nothing.
          const NodeAccount& account = *index_.Account(home);
          NodeResources room = account.available();
          room += released;
          if (!c.pod_resources.has_value() ||
              !Relieves(room, *spec.pod_resources,
                        /*limits_pods=*/account.allocatable->pods > 0,
                        *c.pod_resources)) {
            continue;
          }
        }
        if (c.rank == 0 && c.priority >= p.priority) {
          // Reclaiming takes back no more than the tenant borrows (rank 0 is
          // one allocation: shares are never reclaimed).
          const std::string& tenant = c.members.front()->tenant;
          auto [b, fresh] = borrowed.try_emplace(tenant, 0);
          if (fresh)
            b->second = BorrowedMilli(*snap_.book, *snap_.tenants, tenant, key);
          int64_t& t = taken[tenant];
          if (t >= b->second) continue;
          t += c.total_milli;
        }
        for (const Allocation* a : c.members) victims.push_back(a->id);
        worst = std::max(worst, c.priority);
        have += c.units;
        freed += c.total_milli;
        if (c.pod_resources.has_value()) released += *c.pod_resources;
      }
      // It must fit, and a reclaim must give back the quota it lacks.
      if (have < spec.count || !fits() || freed < quota_milli) continue;
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

bool VictimSearch::IsShareVictim(const Allocation& a, int priority) const {
  return a.state == AllocationState::kActive && a.priority < priority &&
         snap_.tenants->Find(a.tenant).preemptible && !session_.placed(a.id);
}

std::optional<VictimChoice> VictimSearch::ChooseShareVictims(
    const CycleState& cycle, const std::string& id, const Allocation& p,
    const MatchSpec& spec) {
  const GpuShare& share = *spec.share;
  struct Choice {
    std::vector<std::string> victims;
    int worst;  // the highest victim priority
    std::string unit;
    std::string node;
  };
  std::optional<Choice> best;
  for (const PoolKey& key : PoolsFor(index_, spec)) {
    const CapacityIndex::Pool* pool = index_.FindPool(key);
    if (pool == nullptr || pool->shared_milli == 0) continue;
    const std::optional<int> lowest =
        snap_.book->tallies().LowestActivePriority(key);
    if (!lowest.has_value() || *lowest >= p.priority) continue;
    const std::string gate = absl::StrCat("share|", key.model, "|", p.priority,
                                          "|", p.KeyFor(RequestSpec::kShape));
    if (no_victims_.contains(gate)) continue;
    const bool found_before = best.has_value();
    for (const auto& home_entry : pool->homes) {
      // Named, not a structured binding: the lambda below captures it.
      const std::string& home = home_entry.first;
      const CapacityIndex::Home& h = home_entry.second;
      if (session_.holds().HoldForOther(key, home, id, p.priority) ||
          !cycle.filters().Gates(cycle, home)) {
        continue;
      }
      for (const std::string& unit : h.units) {
        const Unit* u = index_.Find(unit);
        if (u == nullptr || !u->shareable() || u->shared_milli == 0) continue;
        // Shares of another group all go, or the share cannot join the GPU.
        const bool other_group = u->share_group != share.group;
        std::vector<const Allocation*> holders;
        bool all = true;
        for (const std::string& holder :
             snap_.book->holdings().ShareHoldersOf(u->key)) {
          const Allocation& a = snap_.book->Find({holder, ""})->allocation;
          if (IsShareVictim(a, p.priority)) {
            holders.push_back(&a);
          } else {
            all = false;
          }
        }
        if (holders.empty() || (other_group && !all)) continue;
        // The lowest priority first, then the most recently admitted (ids
        // sort by creation: the later one on a tie).
        std::sort(holders.begin(), holders.end(),
                  [](const Allocation* a, const Allocation* b) {
                    return std::make_tuple(a->priority, b->admitted_at, b->id) <
                           std::make_tuple(b->priority, a->admitted_at, a->id);
                  });
        const int64_t memory_needed = ShareMemory(share, u->memory_bytes);
        int64_t milli = u->free_milli();
        int64_t memory = u->free_share_memory();
        NodeResources released;  // the victims' pods' CPU, memory and pods
        bool joins = !other_group;
        auto fits = [&] {
          return joins && milli >= share.compute_milli &&
                 memory >= memory_needed &&
                 cycle.filters().Room(cycle, home, released);
        };
        std::vector<std::string> victims;
        int worst = std::numeric_limits<int>::min();
        for (const Allocation* a : holders) {
          if (fits()) break;
          const GpuShare& held = *a->held_share();
          victims.push_back(a->id);
          worst = std::max(worst, a->priority);
          milli += held.compute_milli;
          memory += held.memory_bytes;
          if (a->pod_resources.has_value()) released += *a->pod_resources;
          // Every share of another group gone, the GPU is anyone's.
          joins = joins || victims.size() == holders.size();
        }
        if (victims.empty() || !fits()) continue;
        // The fewest victims, then the lowest highest-victim priority, then
        // the GPU's key.
        if (!best.has_value() ||
            std::make_tuple(victims.size(), worst, u->key) <
                std::make_tuple(best->victims.size(), best->worst,
                                best->unit)) {
          best = Choice{std::move(victims), worst, u->key, home};
        }
      }
    }
    if (!found_before && !best.has_value()) no_victims_.insert(gate);
  }
  if (!best.has_value()) return std::nullopt;
  return VictimChoice{std::move(best->victims), std::move(best->node)};
}

}  // namespace accelsched
