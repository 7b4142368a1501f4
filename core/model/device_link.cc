#include "core/model/device_link.h"

namespace accelsched {
namespace {

struct KindName {
  LinkKind kind;
  absl::string_view name;
};
constexpr KindName kKindNames[] = {
    {LinkKind::kNvlink, "NVLINK"},
    {LinkKind::kPcieSwitch, "PCIE_SWITCH"},
    {LinkKind::kSameNuma, "SAME_NUMA"},
};

}  // namespace

absl::string_view LinkKindName(LinkKind kind) {
  for (const KindName& k : kKindNames) {
    if (k.kind == kind) return k.name;
  }
  return "UNKNOWN";
}

std::optional<LinkKind> ParseLinkKind(absl::string_view name) {
  for (const KindName& k : kKindNames) {
    if (k.name == name) return k.kind;
  }
  return std::nullopt;
}

absl::string_view LinkKindNames() { return "NVLINK, PCIE_SWITCH, SAME_NUMA"; }

}  // namespace accelsched
