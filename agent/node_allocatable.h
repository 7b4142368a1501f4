// What the agent registers as Node.allocatable, the CPU, memory and pods that
// pods placed by accelsched may use on the node (--allocatable):
//   kubernetes  the node's status.allocatable, from a file holding the Node
//               object as `kubectl get node NAME -o json` prints it
//               (--kube_node_file; a sidecar refreshes it), re-read each pass;
//   machine     the host's online CPUs and /proc/meminfo MemTotal minus a
//               reserve (--reserved_cpu_milli, --reserved_memory_bytes), pods
//               --max_pods, re-read each pass;
//   none        nothing: the node's CPU and memory are not accounted.
// A pass that cannot read its source keeps the last value read (none before
// the first), so that a file being replaced or a malformed edit neither drops
// the node's accounting nor registers wrong values.
#ifndef ACCELSCHED_AGENT_NODE_ALLOCATABLE_H_
#define ACCELSCHED_AGENT_NODE_ALLOCATABLE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "accelsched/v1/accelsched.pb.h"

namespace accelsched::agent {

// The largest values the server accepts (accelsched.v1.NodeResources'
// comment): the agent refuses more rather than have every registration,
// devices included, refused.
inline constexpr int64_t kMaxCpuMilli = 100'000'000;          // 100,000 cores
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 52;  // 4 PiB
inline constexpr int64_t kMaxPods = 100'000;

// status.allocatable of the Node object in `json` (`kubectl get node NAME -o
// json`): cpu as cpu_milli (Quantity.MilliValue), memory in bytes and pods
// (Quantity.Value), as kube-scheduler counts them (agent/kube_quantity.h).
// pods absent is 0 (not limited). INVALID_ARGUMENT naming `source` and the
// field when `json` is not JSON, not a Node ("kind"), names a node other than
// `node_name` (metadata.name; not checked when `node_name` is empty), has no
// status.allocatable cpu or memory, or has a quantity that is malformed,
// negative or above the limits above.
absl::StatusOr<v1::NodeResources> KubeNodeAllocatable(
    absl::string_view json, absl::string_view source,
    absl::string_view node_name);

// sysconf(_SC_NPROCESSORS_ONLN): the CPUs online on this host (a container
// sees the host's). INTERNAL with errno's text when sysconf fails.
absl::StatusOr<int64_t> OnlineCpus();

// MemTotal of `proc_dir`/meminfo in bytes (the kernel writes kB, meaning
// KiB). The errno's code naming the file when it cannot be read (NOT_FOUND
// when it does not exist); INVALID_ARGUMENT naming it when it has no
// well-formed MemTotal line.
absl::StatusOr<int64_t> MemTotalBytes(const std::string& proc_dir);

// What the machine path keeps back from pods (kubelet's kube-reserved,
// system-reserved and hard eviction threshold together) and the pod limit.
struct MachineReserve {
  int64_t cpu_milli = 0;
  int64_t memory_bytes = 0;
  int32_t max_pods = 0;  // 0: not limited
};

// `cpus` * 1000 and `memory_bytes` minus the reserve, pods `max_pods`. A
// reserve larger than the machine leaves 0 of that resource, and `notice`
// (when not null) says so; otherwise `notice` is left empty.
v1::NodeResources MachineAllocatable(int64_t cpus, int64_t memory_bytes,
                                     const MachineReserve& reserve,
                                     std::string* notice);

// Reads the allocatable each pass and remembers the last good reading. Not
// thread-safe: the agent's one loop calls it.
class NodeAllocatable {
 public:
  enum class Source { kNone, kKubernetes, kMachine };

  struct Options {
    Source source = Source::kNone;
    // The agent's node: the Node object in the file must be this one.
    std::string node_name;
    std::string kube_node_file;      // kKubernetes
    std::string proc_dir = "/proc";  // kMachine: meminfo
    MachineReserve reserve;          // kMachine
    // kMachine: how many CPUs are online; tests swap it.
    std::function<absl::StatusOr<int64_t>()> online_cpus = OnlineCpus;
  };

  struct Reading {
    // What to register: this pass's value or, when it could not be read,
    // the last good one (nullopt before any, and always with kNone).
    std::optional<v1::NodeResources> allocatable;
    // Why this pass could not read its source; OK when it could.
    absl::Status error;
    // Worth a log line although the read succeeded (a reserve larger than
    // the machine); empty otherwise.
    std::string notice;
  };

  explicit NodeAllocatable(Options options);

  // Reads the source again (a file read or two; never blocks on the
  // network).
  Reading Read();

 private:
  absl::StatusOr<v1::NodeResources> ReadSource(std::string& notice) const;

  const Options options_;
  std::optional<v1::NodeResources> last_good_;
};

// The source for --allocatable=`flag`: "auto" is kKubernetes when
// `kube_node_file` is set, else kMachine; "none" is kNone. INVALID_ARGUMENT
// for another value, or for "none" with a --kube_node_file (which it would
// ignore).
absl::StatusOr<NodeAllocatable::Source> AllocatableSource(
    absl::string_view flag, bool kube_node_file);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_NODE_ALLOCATABLE_H_
