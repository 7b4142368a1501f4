// TPU slice topologies per generation, with their chip and host counts.
// Immutable data; thread-safe.
#ifndef ACCELSCHED_CORE_TPU_TOPOLOGY_H_
#define ACCELSCHED_CORE_TPU_TOPOLOGY_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace accelsched {

struct TpuGeneration {
  absl::string_view name;  // "v5e", "v5p", "v6e"
  int dimensions;          // 2 for v5e and v6e ("2x4"), 3 for v5p ("2x2x1")
  // Slices of up to this many chips fit on one host; larger slices span hosts
  // of chips_per_host chips each.
  int max_single_host_chips;
  int chips_per_host;
  absl::Span<const absl::string_view> topologies;
};

absl::Span<const TpuGeneration> AllTpuGenerations();

// nullptr when unknown.
const TpuGeneration* FindTpuGeneration(absl::string_view name);

// True when `topology` is one the generation offers ("2x4" for v5e).
bool HasTopology(const TpuGeneration& gen, absl::string_view topology);

// Chips in a topology: the product of its dimensions; 0 when it is not of the
// form NxM[xK].
int TopologyChips(absl::string_view topology);

// Hosts a slice of `topology` spans in `gen` (1 for single-host slices).
int TopologyHosts(const TpuGeneration& gen, absl::string_view topology);

// The generation's topologies, comma-separated, for error messages.
std::string TopologyNames(const TpuGeneration& gen);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_TPU_TOPOLOGY_H_
