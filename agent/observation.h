// What one discovery pass sees on a node: the devices (the inventory the
// server's catalog must match), which of them are unhealthy now, their latest
// readings, and the node's allocatable CPU, memory and pods.
#ifndef ACCELSCHED_AGENT_OBSERVATION_H_
#define ACCELSCHED_AGENT_OBSERVATION_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "accelsched/v1/accelsched.pb.h"

namespace accelsched::agent {

struct Observation {
  // In discovery order; `healthy` and `stats` are left unset here (health is
  // `unhealthy`, readings are `stats`), so that two passes over an unchanged
  // node compare equal.
  std::vector<v1::Device> devices;
  std::set<std::string> unhealthy;               // device ids
  std::map<std::string, v1::DeviceStats> stats;  // by device or MIG slice id
  // Node.allocatable to register (agent/node_allocatable.h); nullopt: none
  // (the node's CPU and memory are not accounted). Not set by DeviceSources.
  std::optional<v1::NodeResources> allocatable;
};

// One kind of device a node may have (NVIDIA GPUs through NVML, TPU chips,
// a hand-written inventory). Not thread-safe: the agent's one loop calls it.
class DeviceSource {
 public:
  virtual ~DeviceSource() = default;
  // Adds what this source sees now to `out`. An error means the source could
  // not look (its devices' state is unknown), not that a device is unhealthy.
  virtual absl::Status Observe(Observation& out) = 0;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_OBSERVATION_H_
