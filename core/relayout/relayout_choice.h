// A MIG re-layout chosen for one waiting request: which GPUs of one node to
// re-slice, and into what (core/plugins/mig_relayout/ chooses it; the
// scheduler writes it as the GPUs' MIG plans). Plain value.
#ifndef ACCELSCHED_CORE_RELAYOUT_RELAYOUT_CHOICE_H_
#define ACCELSCHED_CORE_RELAYOUT_RELAYOUT_CHOICE_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/model/unit.h"
#include "core/relayout/mig_layout_planner.h"

namespace accelsched {

// The plans that let one request fit on `node`.
struct RelayoutChoice {
  struct Gpu {
    std::string device_id;
    MigLayoutPlan plan;
  };
  std::string node;
  std::vector<Gpu> gpus;  // in device index order
  int destroyed = 0;      // free slices destroyed in all
  // Change in MigFragmentation over those GPUs.
  double fragmentation_change = 0;
  // When every slice it destroys is free: InfinitePast for a plan that can
  // be applied now; planned ahead, the latest lease end of the allocations
  // on them.
  absl::Time start = absl::InfinitePast();
  // The pools of the slices it destroys, sorted: what to hold on `node`
  // while it waits for them.
  std::vector<PoolKey> pools;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_RELAYOUT_RELAYOUT_CHOICE_H_
