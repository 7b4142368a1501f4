// Which of a node's free GPUs a request of several takes: the set with the
// best links between its members (Device::links, as the node agent reads
// them from NVML). NVIDIA/go-gpuallocator's best-effort policy and Slurm's
// GRES Links choose the same way; this one also keeps the GPUs it leaves
// linked to each other, so that the next request finds a good set too.
#ifndef ACCELSCHED_CORE_PLUGINS_GPU_LINKS_LINKED_SET_H_
#define ACCELSCHED_CORE_PLUGINS_GPU_LINKS_LINKED_SET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model/catalog_model.h"

namespace accelsched {

// How close two GPUs of a node are, worst first.
enum class PairTier : uint8_t {
  kNone = 0,        // different CPUs, or not reported
  kSameNuma = 1,    // one CPU, through its host bridge
  kPcieSwitch = 2,  // a PCIe path that crosses no host bridge
  kNvlink = 3,      // NVLinked, directly or through NVSwitches
};

// The links among some GPUs of one node, as either end reports them (the
// best kind either reports, the most NVLinks either counts).
class LinkGraph {
 public:
  // The links among `ids`, devices of `node` (ids that are not are GPUs
  // without links). O(devices of `node` + their links + ids^2).
  LinkGraph(const Node& node, absl::Span<const absl::string_view> ids);

  int size() const { return n_; }
  // Whether no two of the GPUs are linked at all (then every set is as good
  // as another).
  bool empty() const { return empty_; }
  PairTier tier(int a, int b) const { return tier_[a * n_ + b]; }
  int nvlinks(int a, int b) const { return nvlinks_[a * n_ + b]; }
  // go-gpuallocator's pair score (gpuallocator/besteffort_policy.go @876e7b7,
  // calculateGPUPairScore, lines 304-374): 100 per NVLink, 50 for a single
  // PCIe switch, 20 for the same CPU, 10 across CPUs.
  int weight(int a, int b) const;

 private:
  int n_;
  bool empty_ = true;
  std::vector<PairTier> tier_;  // n_ x n_
  std::vector<int> nvlinks_;    // n_ x n_
};

struct LinkedSet {
  std::vector<int> members;  // indexes into the graph's GPUs, ascending
  // The worst pair among them (kNvlink for a single GPU).
  PairTier tier = PairTier::kNvlink;
  int nvlinks = 0;  // NVLinks among them
};

// The most GPUs ChooseLinkedSet weighs.
inline constexpr int kMaxLinkedCandidates = 16;
// The most sets it weighs one by one: every choice on a board of 8 GPUs
// (C(8, 4) = 70), up to 4 of 16 (C(16, 4) = 1,820).
inline constexpr int kMaxExhaustiveSets = 2000;

// C(n, count) for 0 <= count <= n <= kMaxLinkedCandidates: the sets of
// `count` GPUs among n.
int64_t SetsOf(int n, int count);

// The `count` GPUs of the first n = min(size, kMaxLinkedCandidates) of
// `graph` that are best linked (count clamped to 1..n; empty when n is 0):
// the best worst pair (all NVLinked, else all under one PCIe switch, else
// all on one CPU), then the most pair weight among them, then the least pair
// weight to the GPUs left out (so that those stay linked to each other),
// then the earliest in the graph's order. Exact when C(n, count) <=
// kMaxExhaustiveSets, O(C(n, count) x count); otherwise (5 to 11 of 16 and
// the like) greedy: from each GPU, the GPU that makes the best set so far,
// count - 1 times, the best set so grown kept, O(n^2 x count^2).
LinkedSet ChooseLinkedSet(const LinkGraph& graph, int count);

// The worst pair and the NVLinks among all of `graph`'s GPUs, as a set.
LinkedSet AsLinkedSet(const LinkGraph& graph);

// "all NVLinked", "all under one PCIe switch", "all on one CPU", "across
// CPUs". Under one switch: every pair's common ancestor is below the host
// bridge, and in a tree that puts them all below one child of it, a switch.
absl::string_view PairTierPhrase(PairTier tier);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_GPU_LINKS_LINKED_SET_H_
