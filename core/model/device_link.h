// How one GPU of a node reaches another (Device.links in the proto), as the
// node agent reads it from NVML. Kinds are ordered: a pair's closeness is the
// best kind either GPU reports for it.
#ifndef ACCELSCHED_CORE_MODEL_DEVICE_LINK_H_
#define ACCELSCHED_CORE_MODEL_DEVICE_LINK_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace accelsched {

// Numbered as stored (storage/rows.cc): never renumber.
enum class LinkKind {
  // NVLinks, direct or through NVSwitches (DeviceLink.count of them).
  kNvlink = 0,
  // No NVLink; a PCIe path that crosses no host bridge (NVML's
  // nvmlDeviceGetTopologyCommonAncestor INTERNAL, SINGLE or MULTIPLE).
  kPcieSwitch = 1,
  // The same CPU, through its host bridge (HOSTBRIDGE or NODE).
  kSameNuma = 2,
};

struct DeviceLink {
  std::string peer_device_id;  // another device of the same node
  LinkKind kind = LinkKind::kNvlink;
  int count = 0;  // NVLinks for kNvlink (at least 1); 0 for the others

  bool operator==(const DeviceLink&) const = default;
};

// The proto's spelling: "NVLINK", "PCIE_SWITCH", "SAME_NUMA".
absl::string_view LinkKindName(LinkKind kind);
// The kind spelled `name` (as LinkKindName), or nullopt.
std::optional<LinkKind> ParseLinkKind(absl::string_view name);
// Every spelling, comma-separated, for messages.
absl::string_view LinkKindNames();

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_DEVICE_LINK_H_
