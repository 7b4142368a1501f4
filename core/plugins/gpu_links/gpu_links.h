// The gpu_links plugin (Score within a node): on a node that reports links
// between its GPUs (Device::links), a request of whole devices takes the
// best-linked set of its first kMaxLinkedCandidates eligible free GPUs
// (ChooseLinkedSet, linked_set.h: the best worst pair, then the most pair
// score, then the least score to the free GPUs left, then index order).
// Which node is chosen is the placement's; links only choose GPUs within it.
// A node without links, a MIG slice or a share is left to best-fit order.
#ifndef ACCELSCHED_CORE_PLUGINS_GPU_LINKS_GPU_LINKS_H_
#define ACCELSCHED_CORE_PLUGINS_GPU_LINKS_GPU_LINKS_H_

#include <memory>
#include <string>
#include <vector>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class GpuLinksPlugin final : public UnitScorePlugin {
 public:
  static constexpr char kName[] = "gpu_links";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  // Up to kMaxLinkedCandidates (at least `count`) on a node with links, for
  // whole devices; `count` otherwise.
  int Weighs(const CycleState& cycle, const Node& node, const PoolKey& pool,
             int count) const override;
  // The best-linked `count` of `units`; empty when they have no links among
  // them.
  std::vector<int> Choose(const CycleState& cycle, const Node& node,
                          absl::Span<const Unit* const> units,
                          int count) const override;
  // "GPUs 0, 2 of n1 (all NVLinked, 8 NVLinks among them): the best-linked 2
  // of its 6 free GPUs"; "" for a group links did not choose (no links
  // among the node's free GPUs, every one weighed asked for, or a share,
  // whose GPU is chosen by its free compute). O(free units of its node +
  // their links).
  std::string Describe(const CycleState& cycle,
                       absl::Span<const Unit* const> group) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_GPU_LINKS_GPU_LINKS_H_
