// Which placement the matcher picks among the nodes that could take a request
// (the server's --packing flag, docs/concepts/packing.md).
#ifndef ACCELSCHED_CORE_PACKING_PACKING_POLICY_H_
#define ACCELSCHED_CORE_PACKING_PACKING_POLICY_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace accelsched {

enum class Packing {
  // The placement that adds least to the expected fragmentation under the
  // recent mix of requests, and whose units come free together with the
  // node's others (core/packing/placement_score.h). The default.
  kFragmentation,
  // The node with the fewest free units that fit (least available CPU on
  // ties).
  kBestFit,
  // The first node, in name order, with room.
  kFirstFit,
  // The node with the most free units (least allocated first).
  kSpread,
};

// "fragmentation", "best_fit", "first_fit", "spread"; INVALID_ARGUMENT naming
// `--packing` and the accepted values for anything else.
absl::StatusOr<Packing> ParsePacking(absl::string_view name);
absl::string_view PackingName(Packing packing);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PACKING_PACKING_POLICY_H_
