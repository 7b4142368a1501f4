// The durable record the scheduler writes through. core/ defines it; storage/
// implements it (SQLite and PostgreSQL), so another engine can be added without
// touching core. tests/support/store_conformance.h holds every implementation,
// and the fake, to this contract.
//
// Implementations need not be thread-safe: the scheduler serialises every call
// (core/commit/serialized_store.h). It calls Load* before it serves, and again
// whenever memory must be rebuilt while it serves (after a commit failed, and
// from the periodic sweep while the last reload failed); Apply comes from its
// group committer, which runs one transaction at a time, from whichever thread
// leads the commit.
#ifndef ACCELSCHED_CORE_COMMIT_STORE_H_
#define ACCELSCHED_CORE_COMMIT_STORE_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/model/allocation_model.h"
#include "core/model/catalog_model.h"

namespace accelsched {

// Inserts or replaces the node: its schedulable flag, last heartbeat, labels,
// allocatable (absent included; `available` is never stored) and devices
// (each with every field, MIG slices included), in the order given. ALREADY_EXISTS when a device id or MIG slice id is another node's or
// repeats, or when two devices of the node that are not `removed` share an
// index.
struct PutNodeMutation {
  Node node;
};
// Writes only the node's schedulable flag, last heartbeat and the health of
// each of its devices (labels, the device list and `removed` are untouched).
// NOT_FOUND when the node, or one of the devices on it, is not stored.
struct PutNodeStatusMutation {
  Node node;
};
// Deletes the node and the devices it owns. Allocations are not touched.
// NOT_FOUND when the node is not stored.
struct DeleteNodeMutation {
  std::string name;
};
// `created`: inserts the allocation with its devices, units and node selector
// (ALREADY_EXISTS when the id is stored). Otherwise updates a stored one's
// state, expires_at, ended_at, end_reason and preempted_by, and its units'
// liveness (NOT_FOUND when the id is not stored); its other fields never
// change (a PENDING allocation admitted is deleted and created again in one
// batch). Either way ALREADY_EXISTS when a unit would be live in two
// allocations: the last guard against double booking. Units are live while
// the allocation is (Allocation::live).
struct PutAllocationMutation {
  Allocation allocation;
  // Unit keys.
  std::vector<std::string> units;
  bool created = false;
};
// Forgets an allocation (retention); one that is not stored is no error.
struct DeleteAllocationMutation {
  std::string id;
};
// Records that events up to `last` were published, so that numbering continues
// after a restart. FAILED_PRECONDITION when `last` is below the stored value.
struct PutEventSequenceMutation {
  uint64_t last = 0;
};

using Mutation =
    std::variant<PutNodeMutation, PutNodeStatusMutation, DeleteNodeMutation,
                 PutAllocationMutation, DeleteAllocationMutation,
                 PutEventSequenceMutation>;

struct StoredAllocation {
  Allocation allocation;
  std::vector<std::string> units;  // in the order first written

  bool operator==(const StoredAllocation&) const = default;
};

// What the Load* calls return, read as one state.
struct StoredState {
  uint64_t event_sequence = 0;
  std::vector<Node> nodes;
  std::vector<StoredAllocation> allocations;
};

class Store {
 public:
  virtual ~Store() = default;

  // LoadEventSequence, LoadNodes and LoadAllocations as of one moment: no
  // commit, this store's or another session's, lands between them (else rows
  // committed in between come back without their parents). Errors as theirs.
  // This default reads them in turn: enough for a store that alone writes its
  // data and whose caller serialises its calls; a store on a shared database
  // reads one snapshot.
  virtual absl::StatusOr<StoredState> Load() {
    StoredState state;
    absl::StatusOr<uint64_t> sequence = LoadEventSequence();
    if (!sequence.ok()) return sequence.status();
    state.event_sequence = *sequence;
    absl::StatusOr<std::vector<Node>> nodes = LoadNodes();
    if (!nodes.ok()) return nodes.status();
    state.nodes = *std::move(nodes);
    absl::StatusOr<std::vector<StoredAllocation>> allocations =
        LoadAllocations();
    if (!allocations.ok()) return allocations.status();
    state.allocations = *std::move(allocations);
    return state;
  }

  // Every node with its labels and devices, in name order, each node's devices
  // and MIG slices in the order written. Every field written comes back except
  // Device::canonical_model, which is the catalog's to derive (returned
  // empty). A TPU slice has one topology: every chip of it comes back with the
  // one written last.
  virtual absl::StatusOr<std::vector<Node>> LoadNodes() = 0;
  // Every allocation kept (live, pending, and ended ones not yet forgotten),
  // in id order, with every field but the output-only queue_position and
  // pending_reason.
  virtual absl::StatusOr<std::vector<StoredAllocation>> LoadAllocations() = 0;
  // The last event sequence number recorded; 0 for a new store.
  virtual absl::StatusOr<uint64_t> LoadEventSequence() = 0;

  // Applies the mutations in order in one durable transaction: all or none.
  // Returns only after the commit is on disk. On error nothing of the batch is
  // visible, now or after a reopen, and the error is that of the first
  // mutation that failed (the codes each mutation names above), or of the
  // commit itself.
  virtual absl::Status Apply(absl::Span<const Mutation> mutations) = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_COMMIT_STORE_H_
