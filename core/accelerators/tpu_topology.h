// TPU slice topologies: the shapes a TPU generation offers, with their chip and
// host counts, and the checks that such a table is consistent. The tables
// themselves are data in the set of accelerator types; everything here is a
// pure function.
#ifndef ACCELSCHED_CORE_ACCELERATORS_TPU_TOPOLOGY_H_
#define ACCELSCHED_CORE_ACCELERATORS_TPU_TOPOLOGY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace accelsched {

// Each dimension of a topology is at most this.
inline constexpr int kMaxTopologyDimension = 1024;

struct TpuTopology {
  std::string topology;  // "2x4", "2x2x4"
  int chips = 0;         // the product of the dimensions
  int hosts = 0;         // the VMs (Kubernetes nodes) a slice spans
};

// Every 3-D shape AxBxC whose dimensions are multiples of dimension_multiple
// (with A <= B <= C when ascending), of at most max_chips chips, each host
// holding chips_per_host of them: Google's rule for TPU v4 and v5p slices.
struct TpuTopologyRule {
  int dimension_multiple = 0;
  int max_chips = 0;
  int chips_per_host = 0;
  bool ascending = false;
};

// The dimensions of "NxM" or "NxMxK" (each 1..kMaxTopologyDimension); empty
// when `topology` is not of that form.
std::vector<int> TopologyDimensions(absl::string_view topology);

// Chips in a topology: the product of its dimensions; 0 when malformed.
int TopologyChips(absl::string_view topology);

// nullptr when `topology` is not in `topologies`.
const TpuTopology* FindTpuTopology(absl::Span<const TpuTopology> topologies,
                                   absl::string_view topology);

// The topology `rule` gives `topology`, or nullopt when it does not cover it.
std::optional<TpuTopology> ApplyTopologyRule(const TpuTopologyRule& rule,
                                             absl::string_view topology);

// The topologies, then the rules in words, comma-separated, for error
// messages.
std::string TopologyNames(absl::Span<const TpuTopology> topologies,
                          absl::Span<const TpuTopologyRule> rules);

// OK when every topology is well formed and listed once, all have the same
// number of dimensions, `chips` is the product of the dimensions and `hosts`
// divides it evenly. Otherwise INVALID_ARGUMENT naming the field
// ("tpu_topologies[3].hosts ...").
absl::Status ValidateTpuTopologies(absl::Span<const TpuTopology> topologies);

// OK when every rule has positive numbers and chips_per_host divides the
// chips of its smallest shape (so every shape spans whole hosts). Otherwise
// INVALID_ARGUMENT naming the field ("tpu_topology_rules[0].chips_per_host").
absl::Status ValidateTpuTopologyRules(absl::Span<const TpuTopologyRule> rules);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ACCELERATORS_TPU_TOPOLOGY_H_
