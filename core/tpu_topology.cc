#include "core/tpu_topology.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace accelsched {
namespace {

// GKE's supported topologies (cloud.google.com/gke-tpu-topology values).
constexpr absl::string_view kV5eTopologies[] = {"1x1", "2x2", "2x4",  "4x4",
                                                "4x8", "8x8", "8x16", "16x16"};
constexpr absl::string_view kV6eTopologies[] = {"1x1", "2x2", "2x4",  "4x4",
                                                "4x8", "8x8", "8x16", "16x16"};
constexpr absl::string_view kV5pTopologies[] = {
    "2x2x1", "2x2x2",  "2x4x4",   "4x4x4",    "4x4x8",   "4x8x8",
    "8x8x8", "8x8x16", "8x16x16", "16x16x16", "16x16x24"};

constexpr TpuGeneration kGenerations[] = {
    {"v5e", 2, 8, 4, kV5eTopologies},
    {"v5p", 3, 4, 4, kV5pTopologies},
    {"v6e", 2, 8, 4, kV6eTopologies},
};

}  // namespace

absl::Span<const TpuGeneration> AllTpuGenerations() { return kGenerations; }

const TpuGeneration* FindTpuGeneration(absl::string_view name) {
  for (const TpuGeneration& g : kGenerations) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

bool HasTopology(const TpuGeneration& gen, absl::string_view topology) {
  for (absl::string_view t : gen.topologies) {
    if (t == topology) return true;
  }
  return false;
}

int TopologyChips(absl::string_view topology) {
  std::vector<absl::string_view> dims = absl::StrSplit(topology, 'x');
  if (dims.size() < 2 || dims.size() > 3) return 0;
  int chips = 1;
  for (absl::string_view d : dims) {
    int n = 0;
    if (!absl::SimpleAtoi(d, &n) || n <= 0 || n > 64) return 0;
    chips *= n;
  }
  return chips;
}

int TopologyHosts(const TpuGeneration& gen, absl::string_view topology) {
  const int chips = TopologyChips(topology);
  if (chips <= gen.max_single_host_chips) return 1;
  return chips / gen.chips_per_host;
}

std::string TopologyNames(const TpuGeneration& gen) {
  return absl::StrJoin(gen.topologies, ", ");
}

}  // namespace accelsched
