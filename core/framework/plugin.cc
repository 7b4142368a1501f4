#include "core/framework/plugin.h"

#include "absl/strings/str_cat.h"
#include "core/framework/cycle_state.h"
#include "core/framework/placement.h"

namespace accelsched {

absl::string_view ExtensionPointName(ExtensionPoint point) {
  switch (point) {
    case ExtensionPoint::kQueueSort:
      return "QueueSort";
    case ExtensionPoint::kPreFilter:
      return "PreFilter";
    case ExtensionPoint::kFilter:
      return "Filter";
    case ExtensionPoint::kScore:
      return "Score";
    case ExtensionPoint::kReserve:
      return "Reserve";
    case ExtensionPoint::kPostFilter:
      return "PostFilter";
  }
  return "";
}

std::optional<NodeReason> FilterPlugin::Describe(const CycleState& cycle,
                                                 const NodeView& node) const {
  const char* why = Filter(cycle, node);
  if (why == nullptr) return std::nullopt;
  return NodeReason{why, ""};
}

std::string PlacementPlugin::WhyNot(const Session& session,
                                    const CycleState& cycle) const {
  return WholeUnitsWhyNot(cycle);
}

std::optional<NodeReason> PlacementPlugin::DescribePool(
    const CycleState& cycle, absl::string_view node, const PoolKey& pool,
    absl::Span<const Unit* const> units) const {
  const MatchSpec& spec = cycle.requested_spec();
  // This node's own eligibility is in the account already: count the free
  // units whose other hosts (for a multi-host TPU slice) can serve too.
  int free = 0;
  std::string blocked_by;
  for (const Unit* u : units) {
    if (!u->free()) continue;
    bool others_ok = true;
    for (const std::string& host : u->hosts) {
      if (host != node && !cycle.filters().HostPasses(cycle, host)) {
        others_ok = false;
        break;
      }
    }
    if (others_ok) {
      ++free;
    } else {
      blocked_by = u->key.substr(u->key.find(' ') + 1);
    }
  }
  const std::string unit = spec.requested_models.size() != 1
                               ? ModelUnitName(pool)
                               : UnitName(pool);
  if (free == 0) {
    return NodeReason{absl::StrCat("no free ", unit),
                      blocked_by.empty()
                          ? ""
                          : absl::StrCat("another host of slice ", blocked_by,
                                         " cannot serve")};
  }
  if (free < spec.count) {
    return NodeReason{absl::StrCat("too few free ", unit, "s"),
                      absl::StrCat(free, " free, ", spec.count, " requested")};
  }
  return std::nullopt;
}

}  // namespace accelsched
