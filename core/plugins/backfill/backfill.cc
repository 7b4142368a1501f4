#include "core/plugins/backfill/backfill.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

// What the lease walk depends on besides the cluster and the holds of the
// pass: two requests with one key find the same nodes at the same lease (or
// none within the walk limit) where no pool of theirs is held for another
// and no node is (a cut walk is remembered only then). The lease is not in
// it: a walk does not read it.
std::string WalkKey(const MatchSpec& spec, int priority) {
  return absl::StrCat(spec.KeyFor(RequestSpec::kWalk), priority);
}

// The value of `key` on node `home`, "" for none (or no key).
absl::string_view DomainOf(const Snapshot& snap, absl::string_view home,
                           const std::string& key) {
  if (key.empty()) return "";
  const Node* node = snap.FindNode(home);
  if (node == nullptr) return "";
  auto label = node->labels.find(key);
  return label == node->labels.end() ? absl::string_view()
                                     : absl::string_view(label->second);
}

// The walk of one session: the last pass's holds by holder, indexed on first
// use.
class Walk : public SessionState {
 public:
  explicit Walk(Session& session)
      : session_(session),
        snap_(session.snapshot()),
        holds_(session.holds()),
        index_(*snap_.index) {}

  std::string Reserve(const CycleState& cycle, const std::string& id,
                      const MatchSpec& spec, int priority);

 private:
  struct Held {
    const PoolKey* pool;
    const std::string* node;
    const Reservation* reservation;
  };
  // The last pass's hold of `id`, taken over as it was, unless a pool of it
  // is already held this pass. nullopt when there is none to take. Also the
  // last pass's hold made by the walk for another request of the same
  // `walk_key`, now held by `id`.
  std::optional<std::string> Reuse(const std::string& id,
                                   const std::string& walk_key);

  Session& session_;
  const Snapshot& snap_;
  Holds& holds_;
  const CapacityIndex& index_;
  bool previous_indexed_ = false;
  absl::flat_hash_map<std::string, std::vector<Held>> previous_by_holder_;
};

std::optional<std::string> Walk::Reuse(const std::string& id,
                                       const std::string& walk_key) {
  const ReservationState* previous = snap_.previous;
  if (previous == nullptr || snap_.refresh) return std::nullopt;
  if (!previous_indexed_) {
    previous_indexed_ = true;
    for (const auto& [pool, nodes] : previous->reservations) {
      for (const auto& [node, r] : nodes) {
        // Holds for a re-layout planned ahead are kept (or let go) as a
        // whole, never taken over here.
        if (r.ahead) continue;
        previous_by_holder_[r.held_for].push_back({&pool, &node, &r});
      }
    }
  }
  auto it = previous_by_holder_.find(id);
  bool taken_over = false;
  if (it == previous_by_holder_.end()) {
    // Another request that asked the same held it last pass (it was
    // admitted, or is no longer first): the same nodes serve this one.
    auto last = previous->walk_holds.find(walk_key);
    // Not from one that had its turn this pass: admitted (perhaps onto
    // those very nodes), or no longer holding.
    if (last == previous->walk_holds.end() ||
        holds_.WasReleased(last->second)) {
      return std::nullopt;
    }
    it = previous_by_holder_.find(last->second);
    if (it == previous_by_holder_.end()) return std::nullopt;
    taken_over = true;
  }
  std::vector<std::string> nodes;
  absl::Time start = absl::InfinitePast();
  for (const Held& h : it->second) {
    if (holds_.TurnTaken(*h.pool)) return std::nullopt;
    if (taken_over && h.reservation->nominated) return std::nullopt;
  }
  for (const Held& h : it->second) {
    Reservation r = *h.reservation;
    r.held_for = id;
    holds_.Hold(*h.pool, *h.node, std::move(r));
    nodes.push_back(*h.node);
    start = std::max(start, h.reservation->start);
  }
  if (auto last = previous->walk_holds.find(walk_key);
      taken_over ||
      (last != previous->walk_holds.end() && last->second == id)) {
    holds_.memory().walk_holds[walk_key] = id;
  }
  for (const Held& h : it->second) holds_.TakeTurn(*h.pool);
  std::sort(nodes.begin(), nodes.end());
  return HoldsText(nodes, start);
}

std::string Walk::Reserve(const CycleState& cycle, const std::string& id,
                          const MatchSpec& spec, int priority) {
  std::string walk_key = WalkKey(spec, priority);
  if (std::optional<std::string> reused = Reuse(id, walk_key)) return *reused;
  const ReservationState* previous = snap_.previous;
  ReservationState& memory = holds_.memory();
  if (!snap_.refresh && previous != nullptr &&
      (previous->unplaced.contains(id) ||
       previous->unplaced_walks.contains(walk_key))) {
    // Looked for in vain under the walk limit (this request, or one that
    // asks the same): again at the next refresh.
    for (const PoolKey& key : PoolsFor(index_, spec)) holds_.TakeTurn(key);
    // The key, when remembered, was copied over already: one unplaced by its
    // id alone (its walk saw less than another would) stays so without it.
    memory.unplaced.insert(id);
    return "";
  }
  holds_.Release(id);  // what it held is looked for again
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
    if (!holds_.TakeTurn(key)) {
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
      auto f = freed.find(home);
      return cycle.filters().Room(
          cycle, home, f == freed.end() ? NodeResources{} : f->second);
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
      if (fresh) {
        const bool other =
            holds_.HoldForOther(key, home, id, priority) != nullptr;
        exact = exact && !other;
        e->second = !other && cycle.filters().Gates(cycle, home);
      }
      if (!e->second) return false;
      counted.insert(home);
      std::vector<std::string>& nodes =
          ready[std::string(DomainOf(snap_, home, spec.topology_key))];
      nodes.push_back(home);
      if (static_cast<int>(nodes.size()) < spec.replicas) return false;
      chosen = &nodes;
      return true;
    };
    pool->by_free.ForEach([&](const CapacityIndex::FreeEntry& e) {
      if (!add(e.home, e.free)) return true;
      start = snap_.now;
      return false;
    });
    if (!start.has_value()) {
      size_t walked = 0;
      // Shares the walk has yet to see end, per shared GPU: it frees whole
      // when the last one has.
      absl::flat_hash_map<std::string, size_t> shares_left;
      snap_.book->ForEachLiveByExpiry(
          key, [&](const AllocationBook::Record& r) {
            const Allocation& a = r.allocation;
            if (a.expires_at >= best.start) return false;
            if (!snap_.refresh && snap_.reservation_walk_limit > 0 &&
                ++walked > snap_.reservation_walk_limit) {
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
              if (fresh)
                left->second = snap_.book->holdings().ShareHolderCount(*gpu);
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
      memory.unplaced.insert(id);
      if (exact) memory.unplaced_walks.insert(std::move(walk_key));
    }
    return "";
  }
  for (const std::string& node : best.nodes) {
    holds_.Hold(best.pool, node, Reservation{best.start, id});
  }
  memory.walk_holds[std::move(walk_key)] = id;
  return HoldsText(best.nodes, best.start);
}

}  // namespace

std::unique_ptr<Plugin> BackfillPlugin::New() {
  return std::make_unique<BackfillPlugin>();
}

PostFilterResult BackfillPlugin::PostFilter(Session& session, CycleState& cycle,
                                            const CycleFailure& failure) const {
  PostFilterResult r;
  const MatchSpec& spec = cycle.spec();
  if (failure.kind != CycleFailure::Kind::kNoFit ||
      session.snapshot().book == nullptr || cycle.request().id.empty() ||
      spec.share.has_value()) {
    return r;
  }
  r.code = PostFilterResult::Code::kWaiting;
  r.reason = session.StateOf<Walk>(*this).Reserve(
      cycle, std::string(cycle.request().id), spec, cycle.request().priority);
  r.detail = r.reason.empty() ? "holds nothing" : r.reason.substr(2);
  return r;
}

}  // namespace accelsched
