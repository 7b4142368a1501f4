// The recent mix of requests: a decayed histogram of request shapes (units
// per node, and the CPU and memory each node's pod needs), per pool, that
// fragmentation is measured against (FGD, USENIX ATC'23: "fragmentation" is
// the free capacity that the workload's requests could not use where it
// lies). Each request counts 1, halved every `half_life` since, so that the
// mix follows a workload that changes over the day. Not thread-safe: the
// scheduler guards it.
#ifndef ACCELSCHED_CORE_PACKING_REQUEST_MIX_H_
#define ACCELSCHED_CORE_PACKING_REQUEST_MIX_H_

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "core/model/unit.h"

namespace accelsched {

// A request shape: `count` units of one pool on one node, with a pod that
// needs `cpu_milli` and `memory_bytes` there (0: nothing asked), and its
// share of the mix (the weights of one ShapesFor answer sum to 1).
struct RequestShape {
  int count = 1;
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  double weight = 0;
};

class RequestMix {
 public:
  // Shapes kept per pool: the heaviest; lighter ones are forgotten.
  static constexpr size_t kMaxShapes = 16;
  // CPU and memory are rounded up to these steps, so that pods asking
  // 3.9 and 4 cores count as one shape.
  static constexpr int64_t kCpuStep = 1000;
  static constexpr int64_t kMemoryStep = int64_t{1} << 30;

  explicit RequestMix(absl::Duration half_life = absl::Hours(1));

  // Counts one request for `count` units of `pool` on a node, each group's
  // pod needing `cpu_milli` and `memory_bytes` there. `pool.model` "" counts
  // it for every model of the pool's device class and partition (a request
  // for any model); a request that accepts several models is counted for
  // each with weight 1 / their number (`weight`). `now` must not go back.
  void Add(absl::Time now, const PoolKey& pool, int count, int64_t cpu_milli,
           int64_t memory_bytes, double weight = 1);

  // The shapes that could land on units of `pool` as of `now`: those counted
  // for its model and those counted for any model of its class and
  // partition, weights summing to 1, heaviest first. Empty when none was
  // counted.
  std::vector<RequestShape> ShapesFor(const PoolKey& pool,
                                      absl::Time now) const;
  // The units asked of `pool` as of `now`: each request's count times its
  // weight, decayed, summed over its shapes (those counted for any model of
  // its class and partition included). 0 when none was counted. What the
  // MIG re-layout planner weighs one profile against another by.
  double UnitsAsked(const PoolKey& pool, absl::Time now) const;

 private:
  using ShapeKey = std::tuple<int, int64_t, int64_t>;  // count, cpu, memory
  struct Bucket {
    absl::Time updated;
    std::map<ShapeKey, double> weights;  // as of `updated`
  };
  // Calls `fn` with each shape counted for `pool`'s model and for any model
  // of its class and partition (one bucket when pool.model is ""), its
  // weight decayed to `now`.
  void ForEachShape(
      const PoolKey& pool, absl::Time now,
      absl::FunctionRef<void(const ShapeKey& shape, double weight)> fn) const;
  // The factor a weight decays by from `from` to `to`.
  double Decay(absl::Time from, absl::Time to) const;

  absl::Duration half_life_;
  std::map<PoolKey, Bucket> buckets_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PACKING_REQUEST_MIX_H_
