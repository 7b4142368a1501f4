#include "core/plugins/gpu_links/linked_set.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace accelsched {
namespace {

PairTier TierOf(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNvlink:
      return PairTier::kNvlink;
    case LinkKind::kPcieSwitch:
      return PairTier::kPcieSwitch;
    case LinkKind::kSameNuma:
      return PairTier::kSameNuma;
  }
  return PairTier::kNone;
}

// A set as ChooseLinkedSet ranks it: greater is better.
struct Rank {
  PairTier tier;
  int inner;  // pair weight among the members
  int cut;    // pair weight from the members to the GPUs left out

  bool operator>(const Rank& o) const {
    return std::make_tuple(tier, inner, -cut) >
           std::make_tuple(o.tier, o.inner, -o.cut);
  }
};

// The best `count`-subset of [0, n) by Rank (the first of equals in
// lexicographic order): Run visits every subset, Greedy grows one.
class Search {
 public:
  Search(const LinkGraph& graph, int n, int count)
      : graph_(graph), n_(n), count_(count), degree_(n, 0) {
    for (int a = 0; a < n; ++a) {
      for (int b = 0; b < n; ++b) {
        if (a != b) degree_[a] += graph.weight(a, b);
      }
    }
  }

  LinkedSet Run() {
    Visit(0, Rank{PairTier::kNvlink, 0, 0});
    return Best();
  }

  // From each GPU in turn, adds count - 1 times the GPU whose set ranks best
  // so far (the first of equals); keeps the best set so grown.
  LinkedSet Greedy() {
    for (int seed = 0; seed < n_; ++seed) {
      std::vector<bool> in(n_, false);
      in[seed] = true;
      members_.clear();
      Rank rank = With(Rank{PairTier::kNvlink, 0, 0}, seed);
      members_.push_back(seed);
      for (int step = 1; step < count_; ++step) {
        int pick = -1;
        Rank pick_rank{PairTier::kNone, 0, 0};
        for (int i = 0; i < n_; ++i) {
          if (in[i]) continue;
          const Rank r = With(rank, i);
          if (pick < 0 || r > pick_rank) {
            pick = i;
            pick_rank = r;
          }
        }
        in[pick] = true;
        members_.push_back(pick);
        rank = pick_rank;
      }
      std::sort(members_.begin(), members_.end());
      if (best_.empty() || rank > best_rank_ ||
          (!(best_rank_ > rank) && members_ < best_)) {
        best_ = members_;
        best_rank_ = rank;
      }
    }
    return Best();
  }

 private:
  // The rank of members_ and GPU `i` together, from `rank`, members_'s: the
  // cut gains i's pair weight to every GPU but the members, and loses the
  // members' weight to i.
  Rank With(const Rank& rank, int i) const {
    Rank out = rank;
    int added = 0;
    for (int m : members_) {
      out.tier = std::min(out.tier, graph_.tier(m, i));
      added += graph_.weight(m, i);
    }
    out.inner += added;
    out.cut += degree_[i] - 2 * added;
    return out;
  }

  LinkedSet Best() const {
    LinkedSet set;
    set.members = best_;
    set.tier = best_rank_.tier;
    for (size_t i = 0; i < best_.size(); ++i) {
      for (size_t j = i + 1; j < best_.size(); ++j) {
        set.nvlinks += graph_.nvlinks(best_[i], best_[j]);
      }
    }
    return set;
  }

  // Visits every set of members_ and `count_ - members_.size()` GPUs from
  // `next` on; `rank` is members_'s.
  void Visit(int next, const Rank& rank) {
    const int have = static_cast<int>(members_.size());
    if (have == count_) {
      if (best_.empty() || rank > best_rank_) {
        best_ = members_;
        best_rank_ = rank;
      }
      return;
    }
    // A set of this tier cannot beat a best of a higher one.
    if (!best_.empty() && rank.tier < best_rank_.tier) return;
    for (int i = next; i <= n_ - (count_ - have); ++i) {
      const Rank with = With(rank, i);
      members_.push_back(i);
      Visit(i + 1, with);
      members_.pop_back();
    }
  }

  const LinkGraph& graph_;
  const int n_;
  const int count_;
  std::vector<int> degree_;  // pair weight from each GPU to all the others
  std::vector<int> members_;
  std::vector<int> best_;
  Rank best_rank_{PairTier::kNone, 0, 0};
};

}  // namespace

LinkGraph::LinkGraph(const Node& node, absl::Span<const absl::string_view> ids)
    : n_(static_cast<int>(ids.size())),
      tier_(ids.size() * ids.size(), PairTier::kNone),
      nvlinks_(ids.size() * ids.size(), 0) {
  absl::flat_hash_map<absl::string_view, int> at;
  for (int i = 0; i < n_; ++i) at.emplace(ids[i], i);
  for (const Device& d : node.devices) {
    auto self = at.find(d.id);
    if (self == at.end()) continue;
    for (const DeviceLink& l : d.links) {
      auto peer = at.find(l.peer_device_id);
      if (peer == at.end() || peer->second == self->second) continue;
      const PairTier t = TierOf(l.kind);
      const int count = l.kind == LinkKind::kNvlink ? l.count : 0;
      for (auto [a, b] : {std::pair{self->second, peer->second},
                          std::pair{peer->second, self->second}}) {
        tier_[a * n_ + b] = std::max(tier_[a * n_ + b], t);
        nvlinks_[a * n_ + b] = std::max(nvlinks_[a * n_ + b], count);
      }
      empty_ = false;
    }
  }
}

int LinkGraph::weight(int a, int b) const {
  switch (tier(a, b)) {
    case PairTier::kNvlink:
      return 100 * nvlinks(a, b);
    case PairTier::kPcieSwitch:
      return 50;
    case PairTier::kSameNuma:
      return 20;
    case PairTier::kNone:
      return 10;
  }
  return 0;
}

int64_t SetsOf(int n, int count) {
  int64_t c = 1;
  for (int i = 1; i <= count; ++i) c = c * (n - count + i) / i;
  return c;
}

LinkedSet ChooseLinkedSet(const LinkGraph& graph, int count) {
  const int n = std::min(graph.size(), kMaxLinkedCandidates);
  if (n == 0) return LinkedSet{};
  count = std::clamp(count, 1, n);
  Search search(graph, n, count);
  return SetsOf(n, count) <= kMaxExhaustiveSets ? search.Run()
                                                : search.Greedy();
}

LinkedSet AsLinkedSet(const LinkGraph& graph) {
  LinkedSet set;
  for (int a = 0; a < graph.size(); ++a) {
    set.members.push_back(a);
    for (int b = a + 1; b < graph.size(); ++b) {
      set.tier = std::min(set.tier, graph.tier(a, b));
      set.nvlinks += graph.nvlinks(a, b);
    }
  }
  return set;
}

absl::string_view PairTierPhrase(PairTier tier) {
  switch (tier) {
    case PairTier::kNvlink:
      return "all NVLinked";
    case PairTier::kPcieSwitch:
      return "all under one PCIe switch";
    case PairTier::kSameNuma:
      return "all on one CPU";
    case PairTier::kNone:
      return "across CPUs";
  }
  return "";
}

}  // namespace accelsched
