// The shares plugin: a request for a share of one GPU (GpuShare: compute in
// thousandths, memory, a group) instead of whole units.
// - PreFilter (new requests): FAILED_PRECONDITION when no unit of its pools
//   takes shares (naming `share`), or none has the memory it asks (naming
//   `share.memory_bytes`).
// - Score, the placement of a share: best fit per GPU, the one left with the
//   least free compute that still holds the share's compute and the memory it
//   takes of that GPU (ShareMemory), on a node the cycle's filters pass;
//   ties to the model order, then the unit key. Only units that take shares
//   (Unit::shareable) and hold no share of another group (GpuShare::group)
//   are considered. O(models x log GPUs) plus the GPUs skipped as ineligible
//   or short of memory for a share of a fraction of memory (those short of a
//   given memory_bytes are skipped by the index, O(log GPUs) per run).
#ifndef ACCELSCHED_CORE_PLUGINS_SHARES_SHARES_H_
#define ACCELSCHED_CORE_PLUGINS_SHARES_SHARES_H_

#include <memory>
#include <optional>
#include <string>

#include "core/framework/cycle_state.h"
#include "core/framework/plugin.h"

namespace accelsched {

class SharesPlugin final : public PreFilterPlugin, public PlacementPlugin {
 public:
  static constexpr char kName[] = "shares";
  static std::unique_ptr<Plugin> New();

  absl::string_view name() const override { return kName; }
  bool ForNewRequests() const override { return true; }
  Verdict PreFilter(Session& session, CycleState& cycle) const override;

  bool Places(const CycleState& cycle) const override;
  std::optional<Groups> Place(const Session& session,
                              const CycleState& cycle) const override;
  // "no nvidia-tesla-t4 device has 470 compute milli free for the share
  // (2300 milli free over the sharing devices, in all)".
  std::string WhyNot(const Session& session,
                     const CycleState& cycle) const override;
  // "no X takes shares", or "no X with the share free" with why the closest
  // GPU does not hold it ("GPU-3 has 300 of 1000 milli free, the request
  // needs 470"; "GPU-3 holds shares of group \"a\", the request is of no
  // group").
  std::optional<NodeReason> DescribePool(
      const CycleState& cycle, absl::string_view node, const PoolKey& pool,
      absl::Span<const Unit* const> units) const override;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_SHARES_SHARES_H_
