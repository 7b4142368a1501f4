// What a Kubernetes pod needs to land on an allocation's devices: node
// selector, extended resource, visible-device environment, tolerations. Derived
// from the allocation alone.
#ifndef ACCELSCHED_CORE_PLACEMENT_H_
#define ACCELSCHED_CORE_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/allocation_model.h"

namespace accelsched {

struct Toleration {
  std::string key;
  std::string op;  // "Exists" or "Equal"
  std::string value;
  std::string effect;

  bool operator==(const Toleration&) const = default;
};

struct Placement {
  std::map<std::string, std::string> node_selector;
  std::string resource_name;
  int64_t resource_count = 0;
  std::map<std::string, std::string> env;
  std::vector<Toleration> tolerations;

  bool operator==(const Placement&) const = default;
};

// The extended resource of a device class ("nvidia.com/gpu"), or of a MIG
// profile
// ("nvidia.com/mig-1g.10gb") when `mig_profile` is set.
std::string ResourceName(DeviceClass device_class,
                         absl::string_view mig_profile);

Placement BuildPlacement(const Allocation& allocation);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLACEMENT_H_
