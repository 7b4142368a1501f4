// Dynamic MIG re-layout on the node (--allow_mig_relayout): the server plans
// a GPU's whole MIG layout (HeartbeatResponse.mig_plans, a v1::MigLayout per
// GPU id) and the agent applies it through NVML (MigRelayout), each plan at
// most once, reporting a failure in its next heartbeat (MigPlans). Not
// thread-safe: the agent's one loop owns these.
//
// Applying is a diff by (profile name, placement start): the GPU instances
// not in the plan are destroyed, the plan's slices not on the GPU created,
// the others kept (a kept one without a compute instance gets one). So it
// converges: an agent killed half way that is sent the same plan again after
// its restart finishes it without doing anything twice. Nothing is changed
// when the plan cannot apply as a whole (an unknown profile, a start its
// profile does not allow, slices that overlap, a compute process on an
// instance to destroy or an error reading them). The agent never switches a
// GPU into or out of MIG mode.
#ifndef ACCELSCHED_AGENT_MIG_RELAYOUT_H_
#define ACCELSCHED_AGENT_MIG_RELAYOUT_H_

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "accelsched/v1/accelsched.pb.h"
#include "agent/nvml_library.h"

namespace accelsched::agent {

// The node label by which the agent tells the server that it applies MIG
// re-layouts (the server plans them only on such nodes), and its value.
inline constexpr char kMigRelayoutLabel[] = "accelsched.io/mig-relayout";
inline constexpr char kMigRelayoutEnabled[] = "enabled";

// Sets kMigRelayoutLabel=enabled in `labels` when `allowed`, else removes it
// (so that the server never plans for an agent that will not apply); true
// when it was there without `allowed`.
bool SetMigRelayoutLabel(bool allowed,
                         std::map<std::string, std::string>& labels);

// A GPU instance as a plan names it: its profile (as discovery spells it,
// "3g.40gb") and its placement start.
struct MigSpot {
  std::string profile;
  int start = 0;

  auto operator<=>(const MigSpot&) const = default;
  bool operator==(const MigSpot&) const = default;
  // "3g.40gb at start 4".
  std::string ToString() const;
};

// The changes that turn one layout into another, each list by start.
struct MigLayoutDiff {
  std::vector<MigSpot> destroy;  // on the GPU, not in the plan
  std::vector<MigSpot> create;   // in the plan, not on the GPU
  std::vector<MigSpot> keep;     // in both
};

// The diff from the GPU instances `current` to `plan`'s slices.
// INVALID_ARGUMENT naming the slice when the plan has one without a profile,
// with a negative start, or twice.
absl::StatusOr<MigLayoutDiff> DiffMigLayout(const std::vector<MigSpot>& current,
                                            const v1::MigLayout& plan);

// Applies one GPU's plan; an interface so that MigPlans is tested apart.
class MigLayoutApplier {
 public:
  virtual ~MigLayoutApplier() = default;
  // Gives GPU `gpu_id` the GPU instances of `plan`; returns what it changed.
  // On an error it has stopped at the failing step, and the message names
  // the step, the instance (profile and start) and NVML's error.
  virtual absl::StatusOr<MigLayoutDiff> Apply(const std::string& gpu_id,
                                              const v1::MigLayout& plan) = 0;
};

// Applies plans through NVML. Blocks while NVML creates and destroys
// instances (a second or so each on real GPUs).
class MigRelayout final : public MigLayoutApplier {
 public:
  // `nvml` is not owned and must outlive this; null when the node has no
  // NVML (every plan is then refused).
  explicit MigRelayout(const NvmlLibrary* nvml) : nvml_(nvml) {}
  MigRelayout(const MigRelayout&) = delete;
  MigRelayout& operator=(const MigRelayout&) = delete;

  // In order: finds the GPU by UUID (NOT_FOUND: not on this node) and checks
  // it is in MIG mode (FAILED_PRECONDITION otherwise); reads its GPU
  // instances and diffs them with `plan`; checks every slice to create has a
  // known profile and an allowed start and that the new layout does not
  // overlap (INVALID_ARGUMENT); checks no compute process runs on an
  // instance to destroy (FAILED_PRECONDITION, or NVML's error reading them).
  // Nothing has changed up to here. Then destroys the compute instances and
  // GPU instances planned away, gives each kept instance without a compute
  // instance one, and creates each new GPU instance at its start with a
  // compute instance over all of it. UNIMPLEMENTED when the loaded NVML lacks
  // a function this needs.
  absl::StatusOr<MigLayoutDiff> Apply(const std::string& gpu_id,
                                      const v1::MigLayout& plan) override;

 private:
  const NvmlLibrary* const nvml_;
};

// The server's limit on MigRelayoutFailure.error (services/
// scheduler_service.cc, kMaxRelayoutErrorBytes): a longer one would fail the
// whole heartbeat with INVALID_ARGUMENT.
inline constexpr size_t kMaxRelayoutErrorBytes = 4096;

// `error` cut to at most kMaxRelayoutErrorBytes, ending in "..." when cut,
// never inside a UTF-8 sequence.
std::string TruncatedRelayoutError(std::string error);

// How close to its deadline a plan is still started by default
// (--mig_relayout_margin).
inline constexpr absl::Duration kDefaultMigRelayoutMargin = absl::Seconds(30);

// The plans of the heartbeat replies: applies each plan at most once per
// agent process (a failed one is never retried; the server plans anew), and
// keeps the failures until a heartbeat delivers them.
class MigPlans {
 public:
  // `applier` is not owned and must outlive this. A plan whose deadline is
  // less than `margin` away is refused (see Handle).
  explicit MigPlans(MigLayoutApplier* applier,
                    absl::Duration margin = kDefaultMigRelayoutMargin)
      : applier_(applier), margin_(margin) {}
  MigPlans(const MigPlans&) = delete;
  MigPlans& operator=(const MigPlans&) = delete;

  // Handles, in GPU id order, each plan of `plans` (by GPU id) that is not
  // one already handled for that GPU (a plan is its generation, allocation
  // and deadline; one that differs in any of them is another, even at a
  // lower or equal generation), and remembers it whatever the outcome, so
  // that no plan is applied or reported twice in one process (a plan is
  // forgotten an hour after its deadline, when its deadline would refuse
  // it anyway). A plan whose deadline is at or before `now`, or less than
  // the margin after it, is refused without touching the GPU (the server
  // drops a plan at its deadline and may hand its slices out again); any
  // other, or one without a deadline (unset or 0), is applied. A refusal or
  // a failure goes to failures() with the plan's generation and the error
  // cut to kMaxRelayoutErrorBytes; a refusal's error names the deadline
  // (UTC), the time left and the margin. Logs each outcome on stderr. True
  // when a plan was applied: the GPUs' slices changed, so the node should
  // be registered again now.
  bool Handle(const google::protobuf::Map<std::string, v1::MigLayout>& plans,
              absl::Time now = absl::Now());

  // The failures to send in the next heartbeat
  // (HeartbeatRequest.mig_relayout_failures), by GPU id.
  const std::map<std::string, v1::MigRelayoutFailure>& failures() const {
    return failures_;
  }
  // Forgets failures(): a heartbeat carrying them succeeded.
  void FailuresDelivered() { failures_.clear(); }

 private:
  // What tells one plan from another.
  struct PlanId {
    uint64_t generation = 0;
    std::string allocation_id;
    int64_t deadline_seconds = 0;
    int32_t deadline_nanos = 0;

    bool operator==(const PlanId&) const = default;
    // An unset deadline reads as 0, and 0 is taken as unset (proto3: a
    // sender need not tell them apart).
    bool has_deadline() const {
      return deadline_seconds != 0 || deadline_nanos != 0;
    }
    absl::Time deadline() const {
      return absl::FromUnixSeconds(deadline_seconds) +
             absl::Nanoseconds(deadline_nanos);
    }
  };

  MigLayoutApplier* const applier_;
  const absl::Duration margin_;
  // GPU id -> the plans handled for it, but those an hour past their
  // deadline.
  std::map<std::string, std::vector<PlanId>> handled_;
  std::map<std::string, v1::MigRelayoutFailure> failures_;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_MIG_RELAYOUT_H_
