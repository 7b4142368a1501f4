// A node's CPU, memory and pod slots beside its accelerators, or what one pod
// needs of them (accelsched.v1.NodeResources). Plain copyable values and the
// arithmetic the accounting needs.
#ifndef ACCELSCHED_CORE_MODEL_NODE_RESOURCES_H_
#define ACCELSCHED_CORE_MODEL_NODE_RESOURCES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace accelsched {

struct NodeResources {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  // A node's: pods it may run, 0 not limited. A pod's need: always >= 1 once
  // normalised (NormalizedPodNeed).
  int64_t pods = 0;

  NodeResources& operator+=(const NodeResources& o) {
    cpu_milli += o.cpu_milli;
    memory_bytes += o.memory_bytes;
    pods += o.pods;
    return *this;
  }
  NodeResources& operator-=(const NodeResources& o) {
    cpu_milli -= o.cpu_milli;
    memory_bytes -= o.memory_bytes;
    pods -= o.pods;
    return *this;
  }
  bool operator==(const NodeResources&) const = default;
};

// The largest values accepted anywhere (NodeResources' limits in the proto):
// far above any machine, far below where sums of them could overflow.
inline constexpr int64_t kMaxCpuMilli = 100'000'000;          // 100,000 cores
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 52;  // 4 PiB
inline constexpr int64_t kMaxPods = 100'000;

// INVALID_ARGUMENT naming `field`.cpu_milli (or .memory_bytes, .pods) when a
// value is negative or above its limit.
absl::Status CheckNodeResources(absl::string_view field,
                                const NodeResources& r);

// A request's pod_resources as an allocation holds them: pods 0 means 1.
NodeResources NormalizedPodNeed(NodeResources need);

// The first resource of `need` that `available` cannot hold ("cpu_milli",
// "memory_bytes", "pods"; pods only where `limits_pods`), or nullptr when it
// fits.
const char* FirstShortfall(const NodeResources& available,
                           const NodeResources& need, bool limits_pods);

// Whether `freed` adds to at least one resource that `room` is short of for
// `need` (pods only where `limits_pods`).
bool Relieves(const NodeResources& room, const NodeResources& need,
              bool limits_pods, const NodeResources& freed);

// "1500 of 8000 cpu_milli free, the request needs 4000" for the resource
// FirstShortfall named.
std::string ShortfallDetail(absl::string_view resource,
                            const NodeResources& available,
                            const NodeResources& allocatable,
                            const NodeResources& need);

// "" when no resource of `available` is negative; else what live
// allocations hold beyond `allocatable`, e.g. "live allocations hold 12000
// cpu_milli of 8000 allocatable".
std::string OvercommitNote(const NodeResources& available,
                           const NodeResources& allocatable);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_NODE_RESOURCES_H_
