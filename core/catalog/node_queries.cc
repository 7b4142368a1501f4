#include "core/catalog/node_queries.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/accelerators/tpu_topology.h"
#include "core/base/page_token.h"
#include "core/catalog/node_validation.h"

namespace accelsched {
namespace {

// Why `next` cannot describe `d`, a device the catalog holds as `current`
// describes it; OK when it can.
absl::Status TypeStillFits(const AcceleratorTypeSet& current,
                           const AcceleratorTypeSet& next, const Device& d) {
  const AcceleratorType* t = next.Find(d.model);
  if (t == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("model \"", d.model, "\" would no longer be known"));
  }
  if (t->canonical_model != d.canonical_model ||
      t->device_class != d.device_class) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model \"", d.model, "\" would become ", t->canonical_model, " (",
        DeviceClassName(t->device_class), ") instead of ", d.canonical_model));
  }
  if (absl::Status s = ValidateDeviceGeometry(*t, d, "device"); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("it would not fit: ", s.message()));
  }
  if (!d.tpu_topology.empty()) {
    const std::optional<TpuTopology> was =
        current.Find(d.model)->FindTopology(d.tpu_topology);
    const std::optional<TpuTopology> will = t->FindTopology(d.tpu_topology);
    if (!will || !was || will->chips != was->chips ||
        will->hosts != was->hosts) {
      return absl::FailedPreconditionError(
          absl::StrCat("TPU topology ", d.tpu_topology, " of ",
                       t->canonical_model, " would be gone or changed"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status NodeNotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("node \"", name, "\" not found"));
}

absl::StatusOr<const Node*> FindNode(const NodeMap& nodes,
                                     absl::string_view name) {
  auto it = nodes.find(name);
  if (it == nodes.end()) return NodeNotFound(name);
  return &it->second;
}

std::set<std::string> HoldersOn(const CapacityIndex& index,
                                const UnitHolders& holders,
                                absl::string_view name) {
  std::set<std::string> live;
  for (const std::string& key : index.UnitsOnNode(name)) {
    const Unit* u = index.Find(key);
    if (!u->holder.empty()) live.insert(u->holder);
    if (u->shared_milli > 0) {
      for (std::string& id : holders.ShareHoldersOf(key)) {
        live.insert(std::move(id));
      }
    }
  }
  return live;
}

NodePage NodesPage(const NodeMap& nodes, const LabelSelector& selector,
                   int page_size, absl::string_view after) {
  NodePage page;
  auto it = after.empty() ? nodes.begin() : nodes.upper_bound(after);
  for (; it != nodes.end(); ++it) {
    if (!selector.Matches(it->second.labels)) continue;
    if (static_cast<int>(page.nodes.size()) == page_size) {
      page.next_page_token = EncodePageToken(page.nodes.back().name);
      break;
    }
    page.nodes.push_back(it->second);
  }
  return page;
}

absl::Status CheckAcceleratorTypes(const NodeMap& nodes,
                                   const AcceleratorTypeSet& current,
                                   const AcceleratorTypeSet& next) {
  for (const auto& [name, node] : nodes) {
    for (const Device& d : node.devices) {
      absl::Status fits = TypeStillFits(current, next, d);
      if (!fits.ok()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node \"", name, "\" device \"", d.id, "\": ", fits.message()));
      }
    }
  }
  return absl::OkStatus();
}

std::pair<int64_t, int64_t> NodeCounts(const NodeMap& nodes) {
  int64_t schedulable = 0;
  for (const auto& entry : nodes)
    schedulable += entry.second.schedulable ? 1 : 0;
  return {schedulable, static_cast<int64_t>(nodes.size()) - schedulable};
}

}  // namespace accelsched
