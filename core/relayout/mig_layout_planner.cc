#include "core/relayout/mig_layout_planner.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

namespace accelsched {
namespace {

// Slots start..start+memory_slices-1 (kMaxMigSlots fits in 64 bits).
uint64_t SlotMask(int memory_slices, int start) {
  return ((uint64_t{1} << memory_slices) - 1) << start;
}

// Fragmentation values closer than this are a tie.
constexpr double kEpsilon = 1e-9;

// A depth-first walk over the memory slots: at each slot not yet covered,
// one of the profiles allowed to start there, or nothing. Every leaf is a
// layout NVIDIA's placement rules allow that keeps the pinned slices.
class LayoutSearch {
 public:
  LayoutSearch(const MigGeometry& g, absl::Span<const MigSliceState> now,
               absl::string_view target, int want,
               absl::Span<const MigDemand> mix)
      : g_(g), now_(now), target_(target), want_(want), mix_(mix) {
    counts_.assign(g.profiles.size(), 0);
    free_at_.assign(g.memory_slices, nullptr);
    for (const MigSliceState& s : now) {
      if (!s.pinned) {
        if (s.slice.start >= 0 && s.slice.start < g.memory_slices) {
          free_at_[s.slice.start] = &s.slice;
        }
        continue;
      }
      const MigProfile* p = g.Find(s.slice.profile);
      if (p == nullptr) continue;  // validated at registration
      used_ |= SlotMask(p->memory_slices, s.slice.start);
      compute_ += p->compute_slices;
      ++counts_[p - g.profiles.data()];
    }
  }

  std::optional<MigLayoutPlan> Run() {
    Walk(0);
    return std::move(best_);
  }

 private:
  void Walk(int slot) {
    if (++visited_ > kMaxLayoutsVisited) return;
    // Free slices starting in slots a chosen slice covers are destroyed.
    int skipped = 0;
    while (slot < g_.memory_slices && (used_ >> slot & 1) != 0) {
      if (free_at_[slot] != nullptr) ++skipped;
      ++slot;
    }
    destroyed_ += skipped;
    if (slot >= g_.memory_slices) {
      Evaluate();
    } else if (!Hopeless()) {
      const MigSlice* here = free_at_[slot];
      for (size_t i = 0; i < g_.profiles.size(); ++i) {
        const MigProfile& p = g_.profiles[i];
        if (!std::binary_search(p.starts.begin(), p.starts.end(), slot)) {
          continue;
        }
        const uint64_t mask = SlotMask(p.memory_slices, slot);
        if ((used_ & mask) != 0 ||
            compute_ + p.compute_slices > g_.compute_slices ||
            (p.max_instances > 0 && counts_[i] >= p.max_instances)) {
          continue;
        }
        const int lost = here != nullptr && here->profile != p.name ? 1 : 0;
        used_ |= mask;
        compute_ += p.compute_slices;
        destroyed_ += lost;
        ++counts_[i];
        chosen_.push_back(MigSlice{"", p.name, slot});
        Walk(slot + 1);
        chosen_.pop_back();
        --counts_[i];
        destroyed_ -= lost;
        compute_ -= p.compute_slices;
        used_ &= ~mask;
      }
      // The slot stays empty.
      const int lost = here != nullptr ? 1 : 0;
      destroyed_ += lost;
      Walk(slot + 1);
      destroyed_ -= lost;
    }
    destroyed_ -= skipped;
  }

  // Branch and bound: this partial layout destroys more than the best found,
  // which already has every target slice wanted.
  bool Hopeless() const {
    return best_.has_value() && best_->targets == want_ &&
           destroyed_ > best_->destroyed;
  }

  void Evaluate() {
    MigLayoutPlan plan;
    std::vector<bool> free;
    std::vector<bool> kept(now_.size(), false);
    for (size_t i = 0; i < now_.size(); ++i) {
      if (now_[i].pinned) kept[i] = true;
    }
    // Chosen slices where a free one is already are that one, kept.
    std::vector<MigSlice> layout;
    std::vector<bool> is_new;
    for (const MigSlice& c : chosen_) {
      MigSlice s = c;
      bool fresh = true;
      for (size_t i = 0; i < now_.size(); ++i) {
        const MigSlice& n = now_[i].slice;
        if (!now_[i].pinned && n.profile == c.profile && n.start == c.start) {
          s.id = n.id;
          kept[i] = true;
          fresh = false;
          break;
        }
      }
      layout.push_back(std::move(s));
      is_new.push_back(fresh);
    }
    for (size_t i = 0; i < now_.size(); ++i) {
      if (now_[i].pinned) {
        layout.push_back(now_[i].slice);
        is_new.push_back(false);
      } else if (!kept[i]) {
        ++plan.destroyed;
      }
    }
    // Ascending by start, pinned and chosen together.
    std::vector<size_t> order(layout.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return layout[a].start < layout[b].start;
    });
    for (size_t i : order) {
      const bool pinned =
          !is_new[i] &&
          std::any_of(now_.begin(), now_.end(), [&](const MigSliceState& s) {
            return s.pinned && s.slice == layout[i];
          });
      bool taken = false;
      if (is_new[i]) {
        ++plan.created;
        if (layout[i].profile == target_ && plan.targets < want_) {
          ++plan.targets;
          taken = true;
        }
      }
      plan.layout.push_back(layout[i]);
      free.push_back(!pinned && !taken);
    }
    if (plan.targets == 0) return;
    plan.fragmentation_after = MigFragmentation(g_, plan.layout, free, mix_);
    if (best_.has_value() && !Better(plan, *best_)) return;
    best_ = std::move(plan);
  }

  static bool Better(const MigLayoutPlan& a, const MigLayoutPlan& b) {
    if (a.targets != b.targets) return a.targets > b.targets;
    if (a.destroyed != b.destroyed) return a.destroyed < b.destroyed;
    if (a.fragmentation_after < b.fragmentation_after - kEpsilon) return true;
    if (a.fragmentation_after > b.fragmentation_after + kEpsilon) return false;
    return a.created < b.created;
  }

  const MigGeometry& g_;
  absl::Span<const MigSliceState> now_;
  const absl::string_view target_;
  const int want_;
  absl::Span<const MigDemand> mix_;
  uint64_t used_ = 0;
  int compute_ = 0;
  std::vector<int> counts_;  // instances per profile, pinned and chosen
  // The free slice starting at each slot, if any.
  std::vector<const MigSlice*> free_at_;
  // Free slices the partial layout destroys so far.
  int destroyed_ = 0;
  std::vector<MigSlice> chosen_;
  std::optional<MigLayoutPlan> best_;
  int visited_ = 0;
};

}  // namespace

std::optional<MigLayoutPlan> PlanMigLayout(const MigGeometry& geometry,
                                           absl::Span<const MigSliceState> now,
                                           absl::string_view target, int want,
                                           absl::Span<const MigDemand> mix) {
  if (geometry.Find(target) == nullptr || want < 1) return std::nullopt;
  std::optional<MigLayoutPlan> plan =
      LayoutSearch(geometry, now, target, want, mix).Run();
  if (plan.has_value()) {
    std::vector<MigSlice> slices;
    std::vector<bool> free;
    for (const MigSliceState& s : now) {
      slices.push_back(s.slice);
      free.push_back(!s.pinned);
    }
    plan->fragmentation_before = MigFragmentation(geometry, slices, free, mix);
  }
  return plan;
}

double MigFragmentation(const MigGeometry& g, absl::Span<const MigSlice> layout,
                        const std::vector<bool>& free,
                        absl::Span<const MigDemand> mix) {
  uint64_t used = 0;
  int held_compute = 0;  // by every slice, free or not
  int free_compute = 0;
  std::vector<int> counts(g.profiles.size(), 0);
  std::vector<int> free_of(g.profiles.size(), 0);
  for (size_t i = 0; i < layout.size(); ++i) {
    const MigProfile* p = g.Find(layout[i].profile);
    if (p == nullptr) continue;
    const size_t k = p - g.profiles.data();
    used |= SlotMask(p->memory_slices, layout[i].start);
    held_compute += p->compute_slices;
    ++counts[k];
    if (free[i]) {
      free_compute += p->compute_slices;
      ++free_of[k];
    }
  }
  const int spare = std::max(0, g.compute_slices - held_compute);
  free_compute += spare;
  double total = 0;
  double stranded = 0;
  for (const MigDemand& d : mix) {
    const MigProfile* p = g.Find(d.profile);
    if (p == nullptr || d.weight <= 0) continue;
    const size_t k = p - g.profiles.data();
    total += d.weight;
    // Instances that fit in empty slots: with one size and fixed starts,
    // taking the earliest start that fits each time places the most.
    uint64_t mask = used;
    int budget = spare;
    int count = counts[k];
    int placeable = 0;
    for (int s : p->starts) {
      if (budget < p->compute_slices) break;
      if (p->max_instances > 0 && count >= p->max_instances) break;
      const uint64_t m = SlotMask(p->memory_slices, s);
      if ((mask & m) != 0) continue;
      mask |= m;
      budget -= p->compute_slices;
      ++count;
      ++placeable;
    }
    const int usable = (free_of[k] + placeable) * p->compute_slices;
    stranded += d.weight * std::max(0, free_compute - usable);
  }
  return total > 0 ? stranded / total : 0;
}

}  // namespace accelsched
