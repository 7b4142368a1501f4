// The life of dynamic MIG re-layouts (docs/concepts/mig.md): a
// plan is written on a GPU with its generation (one more than any before it,
// never reused), the pending allocation it is for and a deadline; it ends
// when the node registers the planned layout (applied), a layout the plan
// does not explain, or leaves MIG mode; when the node's agent reports it
// could not apply it; or at its deadline. A GPU whose plan failed or was
// dropped is not planned for again for the timeout. A plan dropped at its
// deadline keeps the slices it planned away out of service (its agent may be
// under way) until the node registers again or leaves, the agent reports the
// plan failed, or a timeout more. Each change is made in the catalog at once
// and queued in the caller's Write (the GPU's node and the MIG events).
// Not thread-safe: it relies on the scheduler's lock, as the catalog does.
#ifndef ACCELSCHED_CORE_RELAYOUT_MIG_RELAYOUTS_H_
#define ACCELSCHED_CORE_RELAYOUT_MIG_RELAYOUTS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/catalog/catalog.h"
#include "core/commit/write.h"
#include "core/model/allocation_model.h"
#include "core/model/catalog_model.h"
#include "core/relayout/relayout_choice.h"

namespace accelsched {

class MigRelayouts final : public LapsedPlans {
 public:
  // `timeout`: how long a node has to report a planned layout, and how long
  // a GPU whose plan failed or was dropped is not planned for again.
  explicit MigRelayouts(absl::Duration timeout) : timeout_(timeout) {}
  MigRelayouts(const MigRelayouts&) = delete;
  MigRelayouts& operator=(const MigRelayouts&) = delete;

  // Before the catalog loads `nodes` from the store, whose last event is
  // `event_sequence`: the generations go on above it (every plan an agent can
  // have seen was written with its MIG_RELAYOUT_PLANNED event, so no plan
  // written had a generation above the events written) and above any stored
  // one. Held slices stay held (a reload after a failed commit stops no
  // agent), and those released since are held again: the write that
  // released them may be the one that failed.
  void Load(uint64_t event_sequence, const std::vector<Node>& nodes);

  // Writes `choice`'s plans for pending `pending` (deadline now + timeout),
  // one generation each, with an event MIG_RELAYOUT_PLANNED per GPU and the
  // node. A GPU the catalog refuses (Catalog::SetMigPlan) is left out: the
  // request plans again later.
  void Plan(Catalog& catalog, const Allocation& pending,
            const RelayoutChoice& choice, absl::Time now, Write& write);

  // Ends the plan of GPU `device_id` on `node` if it is of `generation` (0:
  // any), writes the node and event MIG_RELAYOUT_DROPPED with `why`, and
  // keeps the GPU from plans until now + timeout; the slices it planned away
  // stay out of service until `hold_until` (InfinitePast: not at all), the
  // node's next registration or removal, or the agent's failure report of
  // that plan. False, with nothing written, when the GPU has no such plan.
  bool Drop(Catalog& catalog, const std::string& node,
            const std::string& device_id, uint64_t generation,
            absl::string_view why, absl::Time now, Write& write,
            absl::Time hold_until = absl::InfinitePast());

  // The periodic sweep's: drops the plans whose deadline has passed (their
  // slices held for a timeout more), forgets backoffs and releases holds
  // that have run out. Returns whether it wrote anything.
  bool DropDue(Catalog& catalog, absl::Time now, Write& write);

  // What a registration of `node` (at `now`) ended (Catalog::Put's
  // plan_ends): the pending allocations whose plans the node applied, to be
  // placed first; the GPUs of the others are backed off, with an event
  // MIG_RELAYOUT_DROPPED each.
  std::vector<std::string> Registered(const std::string& node,
                                      const std::vector<MigPlanEnd>& ends,
                                      absl::Time now, Write& write);

  // The agent of `node` could not apply the plan of `generation` on GPU
  // `device_id`: the plan is dropped (as Drop, with its error), or, when it
  // was dropped at its deadline already, the slices held for it are
  // released. Returns whether slices came back into service.
  bool Failed(Catalog& catalog, const std::string& node,
              const std::string& device_id, uint64_t generation,
              absl::string_view error, absl::Time now, Write& write);

  // GPUs whose plan failed or timed out -> when they may be planned for
  // again. In memory only: a restart forgets it.
  const absl::flat_hash_map<std::string, absl::Time>& backoff() const {
    return backoff_;
  }

  // LapsedPlans.
  const MigPlan* LapsedPlan(absl::string_view node,
                            absl::string_view device_id) const override;
  void NodeReported(absl::string_view node) override;

 private:
  // A plan dropped at its deadline, whose slices it planned away stay out of
  // service until `until` or the node's next registration.
  struct Lapsed {
    MigPlan plan;
    absl::Time until;
  };
  using GpuKey = std::pair<std::string, std::string>;  // (node, device id)

  const absl::Duration timeout_;
  // The last generation issued.
  uint64_t last_generation_ = 0;
  absl::flat_hash_map<std::string, absl::Time> backoff_;
  std::map<GpuKey, Lapsed> lapsed_;
  // Those of lapsed_ released by a registration, a removal or the agent's
  // report before their time was up, kept until then for Load to hold again.
  std::map<GpuKey, Lapsed> released_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_RELAYOUT_MIG_RELAYOUTS_H_
