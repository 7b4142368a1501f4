// Runs every device source of the node once and merges what they see.
#ifndef ACCELSCHED_AGENT_DISCOVERY_H_
#define ACCELSCHED_AGENT_DISCOVERY_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/observation.h"

namespace accelsched::agent {

// `sources` in order; every reading is stamped `now` (the sample time). The
// first source's error, prefixed with nothing more, or INVALID_ARGUMENT when
// two sources report one device id.
absl::StatusOr<Observation> ObserveAll(
    const std::vector<std::unique_ptr<DeviceSource>>& sources, absl::Time now);

// The node as `--once` prints it: name, labels, devices with health and
// latest readings, as JSON.
std::string NodeJson(v1::Node node, const Observation& observation);

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_DISCOVERY_H_
