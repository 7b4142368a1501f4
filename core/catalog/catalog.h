// The cluster catalog: nodes, which node owns each device and MIG slice, the
// TPU slices spread over nodes, and the capacity index of allocatable units
// derived from all of that. Not thread-safe: it relies on its owner's lock,
// as leveldb's VersionSet relies on DBImpl's mutex (the scheduler holds its
// lock around every call).
//
// Who holds a unit is not the catalog's to know: it asks a UnitHolders (the
// allocation book's unit holdings, core/book/unit_holdings.h) whenever it
// re-derives units, so that ownership is kept in one place only.
#ifndef ACCELSCHED_CORE_CATALOG_CATALOG_H_
#define ACCELSCHED_CORE_CATALOG_CATALOG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/catalog/capacity_index.h"
#include "core/catalog/mig_gpus.h"
#include "core/model/catalog_model.h"
#include "core/model/mig_plan.h"

namespace accelsched {

// Who holds a unit now.
class UnitHolders {
 public:
  virtual ~UnitHolders() = default;
  // The live allocation holding unit `key`; "" when none.
  virtual absl::string_view HolderOf(absl::string_view key) const = 0;
  // What the live shares on unit `key` hold together (zeros when none).
  virtual GpuShare SharedOf(absl::string_view key) const { return {}; }
  // The live allocations holding shares of unit `key`, by id.
  virtual std::vector<std::string> ShareHoldersOf(absl::string_view key) const {
    return {};
  }
};

// Which MIG plans that ended unapplied still keep their slices out of
// service: a plan dropped at its deadline may still be under way on its node
// (its agent may be destroying those slices). The MIG re-layout lifecycle
// (core/relayout/mig_relayouts.h) answers; the catalog asks whenever it
// re-derives a node's units, and tells it when a node registers again or
// leaves (what it registers is what it has: no agent is under way).
class LapsedPlans {
 public:
  virtual ~LapsedPlans() = default;
  // The plan of GPU `device_id` on `node` whose slices it planned away stay
  // out of service, or nullptr.
  virtual const MigPlan* LapsedPlan(absl::string_view node,
                                    absl::string_view device_id) const = 0;
  // `node` registered again or was removed: none of its plans keeps slices
  // out of service any more.
  virtual void NodeReported(absl::string_view node) = 0;
};

// A MIG re-layout plan that a registration ended.
struct MigPlanEnd {
  std::string node;
  std::string device_id;
  MigPlan plan;
  // True when the GPU now has the planned layout; otherwise why the plan
  // was dropped ("the GPU left MIG mode", ...).
  bool applied = false;
  std::string reason;
};

// A device whose health a heartbeat changed.
struct HealthChange {
  std::string device_id;
  bool healthy = true;
};

class Catalog {
 public:
  // `holders` and `lapsed` (null: no plan keeps slices out of service) are
  // not owned and must outlive the catalog.
  Catalog(const UnitHolders* holders, LapsedPlans* lapsed)
      : holders_(holders), lapsed_(lapsed) {}
  Catalog(const Catalog&) = delete;
  Catalog& operator=(const Catalog&) = delete;

  // Replaces the whole catalog with `nodes` as the store returned them,
  // typing each device through `types`. DATA_LOSS for a device whose model
  // the set of types does not know or that does not fit its type; the
  // catalog then has no node.
  absl::Status Load(std::vector<Node> nodes, const AcceleratorTypeSet& types);

  // What the catalog holds; core/catalog/node_queries.h asks them.
  const NodeMap& nodes() const { return nodes_; }
  const CapacityIndex& index() const { return index_; }
  // The MIG GPUs with plans, and those that may be re-laid out.
  const MigGpus& mig_gpus() const { return mig_gpus_; }
  // For the unit holdings only (core/book/unit_holdings.h), which mirror
  // ownership into it.
  CapacityIndex& mutable_index() { return index_; }

  // Enters `node` (normalised and validated on its own against `types`)
  // with heartbeat `now`, replacing labels and devices of a node of that name
  // and keeping its cordon state (a new node is schedulable). A dropped
  // device that a live allocation holds is kept, unhealthy and `removed`,
  // until released. INVALID_ARGUMENT naming the field when a device or MIG
  // slice id is another node's, or when a TPU slice shared with other nodes
  // disagrees with them or outgrows its topology; FAILED_PRECONDITION when a
  // held device would change in place. Nothing changes on error. Returns the
  // node as stored. A GPU's MIG plan and plan generation are the catalog's:
  // the registration's own are ignored, the stored ones kept, and a plan
  // ends (appended to `plan_ends`, when not null) once the GPU reports its
  // layout, or when it reports one the plan does not explain
  // (ProgressOf, core/model/mig_plan.h), leaves MIG mode or is dropped (a
  // dropped GPU kept while held, too). The catalog's LapsedPlans is told
  // (NodeReported): no plan keeps the node's slices out of service any
  // more.
  absl::StatusOr<Node> Put(const AcceleratorTypeSet& types, Node node,
                           absl::Time now,
                           std::vector<MigPlanEnd>* plan_ends = nullptr);
  // Makes `plan` (its slices, generation, allocation and deadline) the MIG
  // re-layout of GPU `device_id` on `node` (a device not removed), and its
  // generation the GPU's mig_generation; the slices it plans away stop being
  // allocatable. NOT_FOUND for an unknown node or device;
  // FAILED_PRECONDITION when the device is not a MIG GPU, already has a
  // plan, or a slice the plan destroys is held. Returns the node to write.
  absl::StatusOr<Node> SetMigPlan(absl::string_view node,
                                  absl::string_view device_id, MigPlan plan);
  // Ends the plan of GPU `device_id` on `node` if it is of `generation`
  // (0: whichever it is): its slices planned away that still exist are
  // allocatable again, unless the catalog's LapsedPlans keeps them out of
  // service. Returns the node to write and the plan ended; nullopt when
  // there was no such plan (nothing changes).
  std::optional<std::pair<Node, MigPlan>> DropMigPlan(
      absl::string_view node, absl::string_view device_id, uint64_t generation);
  // Re-derives the units of `node` (a no-op for an unknown one): what
  // LapsedPlans answers for it changed.
  void RefreshNode(absl::string_view node);
  // Drops the node and its units. NOT_FOUND when absent. The caller ends the
  // allocations on it first.
  absl::Status Remove(absl::string_view name);
  // Cordon (false) or uncordon. NOT_FOUND when absent. Returns the node.
  absl::StatusOr<Node> SetSchedulable(absl::string_view name, bool schedulable);
  // Records a heartbeat at `now`: `unhealthy_device_ids` is the node's whole
  // set of unhealthy devices; `reported_ids` must each be a device or MIG
  // slice of the node. NOT_FOUND for an unknown node; INVALID_ARGUMENT naming
  // the first id that is not the node's, and then nothing changes. Returns
  // the devices whose health changed.
  absl::StatusOr<std::vector<HealthChange>> Heartbeat(
      absl::string_view name,
      const std::vector<std::string>& unhealthy_device_ids,
      const std::vector<std::string>& reported_ids, absl::Time now);
  // Forgets the kept (removed) devices of `name` that no allocation holds any
  // more; returns the node to write when it changed.
  std::optional<Node> DropReleasedRemovedDevices(absl::string_view name);

 private:
  // Chips each node holds of one TPU slice.
  struct TpuSliceState {
    std::string canonical_model;
    std::string topology;
    std::map<std::string, int> chips_by_node;
  };

  absl::Status CheckOwnership(const Node& node) const;
  absl::Status CheckTpuSlices(const AcceleratorTypeSet& types,
                              const Node& node) const;
  absl::Status KeepAllocatedDevices(const Node& old_node, Node& node) const;
  // Gives `node`'s GPUs the MIG plans and generations they had in
  // `old_node`, ending the plans its layout completes or contradicts.
  static void CarryMigPlans(const Node& old_node, Node& node,
                            std::vector<MigPlanEnd>* plan_ends);
  void IndexNode(const Node& node);
  void UnindexNode(const Node& node);
  // Re-derives the units of `node` (and of TPU slices it holds or held).
  void RefreshUnits(const std::string& node,
                    const std::set<std::string>& old_slices);
  void PutTpuSliceUnit(const std::string& slice_id);
  // `unit` with its holder from the holders.
  void PutUnit(Unit unit);

  const UnitHolders* const holders_;
  LapsedPlans* const lapsed_;
  NodeMap nodes_;
  // Device and MIG slice id -> owning node.
  absl::flat_hash_map<std::string, std::string> node_of_;
  absl::flat_hash_map<std::string, TpuSliceState> tpu_slices_;
  MigGpus mig_gpus_;
  CapacityIndex index_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_CATALOG_H_
