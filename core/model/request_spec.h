// What a request asks for, validated and canonical: computed once, when the
// request is accepted (ValidateAllocationRequest, core/matching/
// allocation_request.h), and kept by its allocation (an Allocation is a
// RequestSpec with its identity, devices and life). Plain copyable value.
//
// Its fields are listed once, in ForEachField, with what each takes part in;
// everything that compares or keys requests follows from that table: a
// retry's equality (SameFor(kRetry): ALREADY_EXISTS otherwise), the queue's
// shape (KeyFor(kShape): requests of one shape compete for the same units),
// the backfill walk's key (KeyFor(kWalk): requests of one key find the same
// nodes at the same lease) and the stored row (storage/rows.cc: a column, or
// columns, per field, named `stored_as`). A new field is one line there (and a
// schema migration); the build fails when a member is missing from it.
#ifndef ACCELSCHED_CORE_MODEL_REQUEST_SPEC_H_
#define ACCELSCHED_CORE_MODEL_REQUEST_SPEC_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/base/labels.h"
#include "core/model/device_class.h"
#include "core/model/gpu_share.h"
#include "core/model/node_resources.h"

namespace accelsched {

struct RequestSpec {
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  // The acceptable canonical models, sorted and unique; empty: any model of
  // device_class (whole devices only: `partition` is then "").
  std::vector<std::string> requested_models;
  std::string partition;  // "" whole device; MIG profile; TPU topology
  // The request set accelerator.unpartitioned: the same devices as no
  // partition value, but propeller then keeps the pod off partitioned nodes.
  bool unpartitioned = false;
  int count = 1;     // units per group, all on one node
  int replicas = 1;  // groups (a gang), each on its own node
  // With replicas: every group on nodes sharing one value of this label (the
  // request's topology_key, or its required_topology).
  std::string topology_key;
  // With replicas: a node label whose domains the groups take as few of as
  // can hold them; "" none.
  std::string preferred_topology;
  // Every key=value a node must have (a node_selector).
  Labels node_selector;
  absl::Duration lease = absl::ZeroDuration();  // 0: the server default
  // What each group's pod needs on its node (every host of a multi-host
  // slice), normalised (NormalizedPodNeed); nullopt: not limited.
  std::optional<NodeResources> pod_resources;
  // A share of one GPU (count 1, partition "", NVIDIA GPU models) instead of
  // whole units; nullopt: whole units. Once placed, the device holds it with
  // its memory resolved (AllocatedDevice::share).
  std::optional<GpuShare> share;
  // How long the task is expected to run once admitted, as the caller gave
  // it (0: not given): packing weighs it in place of the lease
  // (core/packing/expected_duration.h). A hint, never a limit.
  absl::Duration expected_duration = absl::ZeroDuration();

  bool operator==(const RequestSpec&) const = default;

  // What a field takes part in (a bit set).
  enum Role : unsigned {
    // A retry of the request id must repeat it (else ALREADY_EXISTS).
    kRetry = 1,
    // It decides where the request can go: requests equal in every kShape
    // field compete for the same units (Queue's groups); a duration keys by
    // its power of two seconds, so that varied leases do not make a group of
    // every request.
    kShape = 2,
    // The backfill walk reads it (ReservationPlanner's walk key).
    kWalk = 4,
  };
  struct Field {
    const char* name;
    unsigned roles;
    // Its column in storage, or the prefix of its columns ("pod" for
    // pod_cpu_milli, pod_memory_bytes and pod_pods); "" for a field stored in
    // a table of its own (node_selector).
    const char* stored_as;
  };

  // Calls `visit(Field, &RequestSpec::member)` for every member, in this
  // order: the one list of the request's fields.
  template <typename Visit>
  static constexpr void ForEachField(Visit&& visit) {
    constexpr unsigned kAll = kRetry | kShape | kWalk;
    visit(Field{"device_class", kAll, "device_class"},
          &RequestSpec::device_class);
    visit(Field{"requested_models", kAll, "requested_models"},
          &RequestSpec::requested_models);
    visit(Field{"partition", kAll, "partition"}, &RequestSpec::partition);
    // The same devices as no partition value: not where it can go.
    visit(Field{"unpartitioned", kRetry, "unpartitioned"},
          &RequestSpec::unpartitioned);
    visit(Field{"count", kAll, "count"}, &RequestSpec::count);
    visit(Field{"replicas", kAll, "replicas"}, &RequestSpec::replicas);
    visit(Field{"topology_key", kAll, "topology_key"},
          &RequestSpec::topology_key);
    // The walk holds whichever nodes free first, in any preferred domain.
    visit(Field{"preferred_topology", kRetry | kShape, "preferred_topology"},
          &RequestSpec::preferred_topology);
    // A retry keeps what it got; where it may go is another question.
    visit(Field{"node_selector", kShape | kWalk, ""},
          &RequestSpec::node_selector);
    visit(Field{"lease", kShape, "lease_ns"}, &RequestSpec::lease);
    visit(Field{"pod_resources", kAll, "pod"}, &RequestSpec::pod_resources);
    // A share never holds a reservation: the walk is not made for it.
    visit(Field{"share", kRetry | kShape, "share"}, &RequestSpec::share);
    // A hint for packing: neither what a retry must repeat nor where the
    // request can go.
    visit(Field{"expected_duration", 0, "expected_duration_ns"},
          &RequestSpec::expected_duration);
  }

  // Whether `other` asks for the same as this in every field of `role`.
  bool SameFor(Role role, const RequestSpec& other) const;
  // Every field of `role`, encoded so that two specs have one key exactly
  // when SameFor(role) holds of them (but for a duration's power of two).
  std::string KeyFor(Role role) const;
};

namespace request_spec_internal {

// How many members an aggregate has: the most initializers it takes.
struct AnyValue {
  template <typename T>
  operator T() const;
};
template <typename T, typename... A>
constexpr int AggregateArity() {
  if constexpr (requires { T{std::declval<A>()..., AnyValue{}}; }) {
    return AggregateArity<T, A..., AnyValue>();
  } else {
    return sizeof...(A);
  }
}
constexpr int ListedFields() {
  int n = 0;
  RequestSpec::ForEachField([&n](RequestSpec::Field, auto) { ++n; });
  return n;
}

}  // namespace request_spec_internal

static_assert(request_spec_internal::AggregateArity<RequestSpec>() ==
                  request_spec_internal::ListedFields(),
              "every member of RequestSpec must be listed in ForEachField");

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_REQUEST_SPEC_H_
