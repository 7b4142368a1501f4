// The scheduler's catalog calls: node registration, reads, removal, cordon,
// heartbeats, capacity, and the accelerator types in force. Thread-safe; the
// write calls report as the scheduler's header says (core/scheduler/
// scheduler.h): once durable, exactly once.
#ifndef ACCELSCHED_CORE_SCHEDULER_NODE_CALLS_H_
#define ACCELSCHED_CORE_SCHEDULER_NODE_CALLS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/base/labels.h"
#include "core/base/page_token.h"
#include "core/catalog/catalog.h"
#include "core/catalog/node_queries.h"
#include "core/model/capacity.h"
#include "core/model/catalog_model.h"
#include "core/scheduler/lifecycle.h"
#include "core/scheduler/scheduler_state.h"

namespace accelsched {

class NodeCalls {
 public:
  // What a node agent reports of a MIG re-layout it could not apply.
  struct RelayoutFailure {
    std::string device_id;
    uint64_t generation = 0;  // of the plan
    std::string error;
  };
  // A node agent's heartbeat.
  struct HeartbeatReport {
    // The node's complete set of unhealthy devices now.
    std::vector<std::string> unhealthy_device_ids;
    // What the caller reports statistics for (kept apart, in a
    // DeviceStatsTable): each must be a device or MIG slice of the node.
    std::vector<std::string> reported_ids;
    // The MIG re-layouts its agent could not apply.
    std::vector<RelayoutFailure> relayout_failures;
  };
  // The MIG plans standing for a node's GPUs: GPU id -> plan.
  using MigPlans = std::map<std::string, MigPlan>;

  // Neither is owned; both must outlive the calls.
  NodeCalls(SchedulerState& state, Lifecycle& lifecycle,
            const SchedulerOptions& options)
      : state_(state), lifecycle_(lifecycle), options_(options) {}
  NodeCalls(const NodeCalls&) = delete;
  NodeCalls& operator=(const NodeCalls&) = delete;

  // Upsert: validates, keeps the cordon state of a known node, stamps the
  // heartbeat, and replaces labels and devices. A dropped device that a live
  // allocation holds is kept, unhealthy, until released; changing such a
  // device in place is FAILED_PRECONDITION. INVALID_ARGUMENT naming the field
  // for a malformed node. Then admits what the node lets in, first the
  // requests whose MIG re-layout it reports done.
  void RegisterNode(Node node, SchedulerCallback<Node> done);
  // The node as registered, with its cordon state, last heartbeat and device
  // health. NOT_FOUND naming it when no node has that name. Shows memory: a
  // MIG plan appears once its write is queued, before it is durable (an
  // agent learns of it only from a heartbeat reply, sent once it is); a
  // write acknowledged after the plan is seen is durable only once the
  // plan's is.
  absl::StatusOr<Node> GetNode(absl::string_view name) const;
  // `page_size` 0 means kDefaultPageSize; at most kMaxPageSize.
  // INVALID_ARGUMENT for a bad page size or token.
  absl::StatusOr<NodePage> ListNodes(const LabelSelector& selector,
                                     int page_size,
                                     absl::string_view page_token) const;
  // FAILED_PRECONDITION while the node holds live allocations, unless `force`,
  // which ends them with reason node_removed; NOT_FOUND for an unknown node.
  void RemoveNode(absl::string_view name, bool force,
                  SchedulerStatusCallback done);
  // Cordon (false) or uncordon; NOT_FOUND for an unknown node. Uncordoning
  // admits what the node lets in.
  void SetNodeSchedulable(absl::string_view name, bool schedulable,
                          SchedulerCallback<Node> done);
  // Records node `name`'s heartbeat. NOT_FOUND for an unknown node;
  // INVALID_ARGUMENT naming the first id that is not the node's, and then
  // nothing changes. Each relayout failure drops the plan of that generation
  // for that GPU (its slices planned away that still exist become
  // allocatable again; event MIG_RELAYOUT_DROPPED), and the GPU is not
  // planned for again for SchedulerOptions::mig_relayout_timeout; the
  // request it was for waits again (and may be planned for elsewhere). A
  // failure of a plan already dropped at its deadline gives back the slices
  // held for it. A failure of any other generation changes nothing. Once
  // the heartbeat is accepted, `accepted` runs under the scheduler's lock
  // (so that it is ordered with the node's registration and removal: keep it
  // short, and call nothing of the scheduler's from it). `done` gets, once
  // the heartbeat is durable, the plans that stood for the node's GPUs when
  // it was accepted: each written before it, so that no agent acts on a plan
  // a crash could forget (or a restart issue again under its generation).
  void Heartbeat(absl::string_view name, const HeartbeatReport& report,
                 absl::FunctionRef<void()> accepted,
                 SchedulerCallback<MigPlans> done);
  // Sorted by device class, model, partition.
  std::vector<CapacityEntry> GetCapacity() const;

  // The accelerator types in use now; requests and registrations already
  // validated keep the one they were checked against.
  std::shared_ptr<const AcceleratorTypeSet> accelerator_types() const;
  // Makes `next` the accelerator types for every later request, unless a
  // device in the catalog would lose its type: FAILED_PRECONDITION naming the
  // node and device when `next` does not know a device's model, gives it
  // another canonical model or class, lacks a MIG profile or TPU topology (of
  // the same chips and hosts) that the device uses. Blocks catalog changes
  // while it checks.
  absl::Status ReplaceAcceleratorTypes(
      std::shared_ptr<const AcceleratorTypeSet> next);

 private:
  // The write calls up to their commit: each takes the lock, changes
  // memory, queues its write and releases the lock before it returns.
  absl::StatusOr<Queued<Node>> QueueRegisterNode(Node node);
  absl::StatusOr<Queued<bool>> QueueRemoveNode(absl::string_view name,
                                               bool force);
  absl::StatusOr<Queued<Node>> QueueSetNodeSchedulable(absl::string_view name,
                                                       bool schedulable);
  absl::StatusOr<Queued<MigPlans>> QueueHeartbeat(
      absl::string_view name, const HeartbeatReport& report,
      absl::FunctionRef<void()> accepted);
  // `node` with its output-only `available` set from the index.
  Node WithAvailable(Node node) const ABSL_SHARED_LOCKS_REQUIRED(state_.mu());

  SchedulerState& state_;
  Lifecycle& lifecycle_;
  const SchedulerOptions& options_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_SCHEDULER_NODE_CALLS_H_
