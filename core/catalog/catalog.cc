#include "core/catalog/catalog.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/accelerators/tpu_topology.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_queries.h"
#include "core/catalog/node_validation.h"

namespace accelsched {
namespace {

std::set<std::string> TpuSlicesOf(const Node& node) {
  std::set<std::string> slices;
  for (const Device& d : node.devices) {
    if (!d.tpu_slice_id.empty()) slices.insert(d.tpu_slice_id);
  }
  return slices;
}

}  // namespace

absl::Status Catalog::Load(std::vector<Node> nodes,
                           const AcceleratorTypeSet& types) {
  nodes_.clear();
  node_of_.clear();
  tpu_slices_.clear();
  mig_gpus_.Clear();
  index_ = CapacityIndex();
  for (Node& node : nodes) {
    for (Device& d : node.devices) {
      const AcceleratorType* model = types.Find(d.model);
      absl::Status fits;
      if (model == nullptr) {
        fits = absl::DataLossError(absl::StrCat(
            "stored device \"", d.id, "\" has model \"", d.model,
            "\", which the accelerator-type registry does not know (add it "
            "with --accelerator_types)"));
      } else {
        d.canonical_model = model->canonical_model;
        d.device_class = model->device_class;
        // As ReplaceAcceleratorTypes refuses a set of types that no longer fits
        // a device, start-up refuses one too.
        fits = ValidateDeviceGeometry(*model, d, "device");
        if (!fits.ok()) {
          fits = absl::DataLossError(
              absl::StrCat("stored device \"", d.id, "\" of node \"", node.name,
                           "\" does not fit the accelerator-type registry: ",
                           fits.message()));
        }
      }
      if (!fits.ok()) {
        Load({}, types).IgnoreError();  // empty cannot fail
        return fits;
      }
    }
    IndexNode(node);
    std::string name = node.name;
    nodes_.emplace(std::move(name), std::move(node));
  }
  for (const auto& [name, node] : nodes_) {
    index_.SetAllocatable(name, node.allocatable);
    RefreshUnits(name, {});
  }
  return absl::OkStatus();
}

absl::Status Catalog::CheckOwnership(const Node& node) const {
  auto check = [&](absl::string_view id,
                   absl::string_view field) -> absl::Status {
    auto it = node_of_.find(id);
    if (it != node_of_.end() && it->second != node.name) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " \"", id, "\" is already registered on node \"",
                       it->second, "\""));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < node.devices.size(); ++i) {
    const Device& d = node.devices[i];
    RETURN_IF_ERROR(check(d.id, absl::StrCat("node.devices[", i, "].id")));
    for (size_t j = 0; j < d.mig_slices.size(); ++j) {
      RETURN_IF_ERROR(
          check(d.mig_slices[j].id,
                absl::StrCat("node.devices[", i, "].mig_slices[", j, "].id")));
    }
  }
  return absl::OkStatus();
}

absl::Status Catalog::CheckTpuSlices(const AcceleratorTypeSet& types,
                                     const Node& node) const {
  // Chips per slice that this registration brings.
  std::map<std::string, std::pair<const Device*, int>> mine;
  for (const Device& d : node.devices) {
    if (d.tpu_slice_id.empty()) continue;
    auto& [first, chips] = mine[d.tpu_slice_id];
    if (first == nullptr) first = &d;
    ++chips;
  }
  for (const auto& [slice_id, entry] : mine) {
    const Device& d = *entry.first;
    auto it = tpu_slices_.find(slice_id);
    if (it == tpu_slices_.end()) continue;
    const TpuSliceState& state = it->second;
    int chips = entry.second;
    int hosts = 1;
    for (const auto& [other, n] : state.chips_by_node) {
      if (other == node.name) continue;
      chips += n;
      ++hosts;
    }
    if (hosts == 1)
      continue;  // only this node held it: its own chips were checked
    const std::string field =
        absl::StrCat("node.devices (TPU slice \"", slice_id, "\")");
    if (state.canonical_model != d.canonical_model ||
        state.topology != d.tpu_topology) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " is ", d.canonical_model, " ", d.tpu_topology, " here but ",
          state.canonical_model, " ", state.topology, " on other nodes"));
    }
    // Node validation found the model and its topology.
    const TpuTopology topology =
        *types.Find(d.model)->FindTopology(d.tpu_topology);
    if (chips > topology.chips || hosts > topology.hosts) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, " would have ", chips, " chips on ", hosts,
                       " hosts; a ", d.tpu_topology, " slice has ",
                       topology.chips, " chips on ", topology.hosts));
    }
  }
  return absl::OkStatus();
}

absl::Status Catalog::KeepAllocatedDevices(const Node& old_node,
                                           Node& node) const {
  for (const std::string& key : index_.UnitsOnNode(old_node.name)) {
    const Unit* unit = index_.Find(key);
    if (!unit->held()) continue;
    for (const AllocatedDevice& held : unit->devices) {
      if (held.node != old_node.name) continue;
      const Device* was = FindDevice(old_node, held.device_id);
      const Device* now = FindDevice(node, held.device_id);
      if (now == nullptr) {
        if (was != nullptr) {
          Device kept = *was;
          kept.removed = true;
          kept.healthy = false;
          // Its peers may be gone too, and a node read back with GetNode
          // must register again as it is.
          kept.links.clear();
          node.devices.push_back(std::move(kept));
        }
        continue;
      }
      // Present again: it must still offer the unit it is allocated as.
      bool same = now->canonical_model == was->canonical_model &&
                  now->mig_enabled == was->mig_enabled &&
                  now->tpu_slice_id == was->tpu_slice_id &&
                  now->tpu_topology == was->tpu_topology;
      if (same && !held.mig_slice_id.empty()) {
        same = std::any_of(now->mig_slices.begin(), now->mig_slices.end(),
                           [&](const MigSlice& s) {
                             return s.id == held.mig_slice_id &&
                                    s.profile == held.profile;
                           });
      }
      // Its shares were placed by its sharing mode and memory.
      if (same && unit->shared_milli > 0 &&
          (now->sharing != was->sharing ||
           static_cast<int64_t>(now->memory_bytes) < unit->shared_memory)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node.devices: device \"", held.device_id, "\" holds shares (",
            unit->shared_milli, " milli, ", unit->shared_memory,
            " bytes of GPU memory) and cannot change its sharing or report "
            "less memory than they hold until they are released"));
      }
      if (!same) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node.devices: device \"", held.device_id, "\" is in live ",
            unit->holder.empty() ? "shares"
                                 : absl::StrCat("allocation ", unit->holder),
            " and cannot change its model, MIG layout or TPU slice "
            "until that is released"));
      }
    }
  }
  // A kept device's MIG slices must not reappear elsewhere in the new
  // inventory.
  absl::flat_hash_set<std::string> ids;
  for (const Device& d : node.devices) {
    if (!d.removed) {
      ids.insert(d.id);
      for (const MigSlice& s : d.mig_slices) ids.insert(s.id);
    }
  }
  for (const Device& d : node.devices) {
    if (!d.removed) continue;
    for (const MigSlice& s : d.mig_slices) {
      if (ids.contains(s.id)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "node.devices: MIG slice \"", s.id, "\" of removed device \"", d.id,
            "\" is still allocated"));
      }
    }
  }
  return absl::OkStatus();
}

void Catalog::IndexNode(const Node& node) {
  mig_gpus_.Enter(node);
  for (const Device& d : node.devices) {
    node_of_[d.id] = node.name;
    for (const MigSlice& s : d.mig_slices) node_of_[s.id] = node.name;
    if (!d.tpu_slice_id.empty()) {
      TpuSliceState& state = tpu_slices_[d.tpu_slice_id];
      state.canonical_model = d.canonical_model;
      state.topology = d.tpu_topology;
      ++state.chips_by_node[node.name];
    }
  }
}

void Catalog::UnindexNode(const Node& node) {
  mig_gpus_.Forget(node);
  for (const Device& d : node.devices) {
    node_of_.erase(d.id);
    for (const MigSlice& s : d.mig_slices) node_of_.erase(s.id);
    if (!d.tpu_slice_id.empty()) {
      auto it = tpu_slices_.find(d.tpu_slice_id);
      if (it == tpu_slices_.end()) continue;
      it->second.chips_by_node.erase(node.name);
      if (it->second.chips_by_node.empty()) tpu_slices_.erase(it);
    }
  }
}

void Catalog::PutTpuSliceUnit(const std::string& slice_id) {
  const std::string key = TpuUnitKey(slice_id);
  auto it = tpu_slices_.find(slice_id);
  if (it == tpu_slices_.end()) {
    index_.Remove(key);
    return;
  }
  const TpuSliceState& state = it->second;
  Unit u;
  u.key = key;
  u.pool =
      PoolKey{DeviceClass::kGoogleTpu, state.canonical_model, state.topology};
  int chips = 0;
  bool healthy = true;
  for (const auto& [host, n] : state.chips_by_node) {
    u.hosts.push_back(host);
    const Node& node = nodes_.find(host)->second;
    std::vector<const Device*> mine;
    for (const Device& d : node.devices) {
      if (d.tpu_slice_id == slice_id) mine.push_back(&d);
    }
    std::sort(mine.begin(), mine.end(), [](const Device* a, const Device* b) {
      return a->index < b->index;
    });
    for (const Device* d : mine) {
      u.devices.push_back(AllocatedDevice{host, d->id, "", ""});
      healthy = healthy && d->healthy && !d->removed;
      ++chips;
    }
  }
  u.home = u.hosts.front();
  u.healthy = healthy && chips == TopologyChips(state.topology);
  PutUnit(std::move(u));
}

void Catalog::RefreshUnits(const std::string& node_name,
                           const std::set<std::string>& old_slices) {
  for (const std::string& key : index_.UnitsOnNode(node_name)) {
    const Unit* u = index_.Find(key);
    if (u->hosts.size() == 1) index_.Remove(key);
  }
  std::set<std::string> slices = old_slices;
  auto it = nodes_.find(node_name);
  if (it != nodes_.end()) {
    const Node& node = it->second;
    for (const Device& d : node.devices) {
      const bool healthy = d.healthy && !d.removed;
      if (!d.tpu_slice_id.empty()) {
        slices.insert(d.tpu_slice_id);
      } else if (d.mig_enabled) {
        std::vector<MigSlice> away;
        if (d.mig_plan.has_value()) {
          away = PlannedAway(*d.mig_plan, d.mig_slices);
        } else if (const MigPlan* lapsed =
                       lapsed_ == nullptr
                           ? nullptr
                           : lapsed_->LapsedPlan(node_name, d.id)) {
          away = PlannedAway(*lapsed, d.mig_slices);
        }
        for (const MigSlice& s : d.mig_slices) {
          // A slice planned away is not handed out while the plan stands,
          // or may still be under way (SetMigPlan refuses to plan away a
          // held one).
          if (std::find(away.begin(), away.end(), s) != away.end() &&
              holders_->HolderOf(s.id).empty()) {
            continue;
          }
          PutUnit(Unit{s.id,
                       PoolKey{d.device_class, d.canonical_model, s.profile},
                       node_name,
                       {node_name},
                       {AllocatedDevice{node_name, d.id, s.id, s.profile}},
                       d.id,
                       d.index * 8 + s.start,
                       healthy,
                       ""});
        }
      } else {
        Unit u{d.id,
               PoolKey{d.device_class, d.canonical_model, ""},
               node_name,
               {node_name},
               {AllocatedDevice{node_name, d.id, "", ""}},
               "",
               d.index,
               healthy,
               ""};
        u.sharing = d.sharing;
        u.memory_bytes = d.memory_bytes;
        PutUnit(std::move(u));
      }
    }
  }
  for (const std::string& slice : slices) PutTpuSliceUnit(slice);
}

void Catalog::PutUnit(Unit unit) {
  unit.holder = std::string(holders_->HolderOf(unit.key));
  const GpuShare shared = holders_->SharedOf(unit.key);
  unit.shared_milli = shared.compute_milli;
  unit.shared_memory = shared.memory_bytes;
  unit.share_group = shared.group;
  index_.Put(std::move(unit));
}

void Catalog::CarryMigPlans(const Node& old_node, Node& node,
                            std::vector<MigPlanEnd>* plan_ends) {
  for (Device& d : node.devices) {
    if (d.removed) {
      // Kept only while held, and planned for no more: no agent may act on
      // its plan.
      if (d.mig_plan.has_value() && plan_ends != nullptr) {
        plan_ends->push_back(MigPlanEnd{node.name, d.id, *d.mig_plan, false,
                                        "the GPU left the node"});
      }
      d.mig_plan.reset();
      continue;
    }
    const Device* was = FindDevice(old_node, d.id);
    if (was == nullptr) continue;
    d.mig_generation = was->mig_generation;
    if (!was->mig_plan.has_value()) continue;
    MigPlanEnd end{node.name, d.id, *was->mig_plan, false, ""};
    if (!d.mig_enabled || d.canonical_model != was->canonical_model) {
      end.reason = "the GPU left MIG mode or changed model";
    } else {
      switch (ProgressOf(*was->mig_plan, was->mig_slices, d.mig_slices)) {
        case MigPlanProgress::kInProgress:
          d.mig_plan = was->mig_plan;
          continue;
        case MigPlanProgress::kApplied:
          end.applied = true;
          break;
        case MigPlanProgress::kBroken:
          end.reason = absl::StrCat(
              "the GPU reported a layout the plan does "
              "not lead to: ",
              DescribeMigLayout(d.mig_slices));
          break;
      }
    }
    if (plan_ends != nullptr) plan_ends->push_back(std::move(end));
  }
  // A device that left the node ends its plan too.
  for (const Device& was : old_node.devices) {
    if (!was.mig_plan.has_value() || FindDevice(node, was.id) != nullptr) {
      continue;
    }
    if (plan_ends != nullptr) {
      plan_ends->push_back(MigPlanEnd{node.name, was.id, *was.mig_plan, false,
                                      "the GPU left the node"});
    }
  }
}

absl::StatusOr<Node> Catalog::SetMigPlan(absl::string_view node_name,
                                         absl::string_view device_id,
                                         MigPlan plan) {
  auto it = nodes_.find(node_name);
  if (it == nodes_.end()) return NodeNotFound(node_name);
  Device* d = nullptr;
  for (Device& candidate : it->second.devices) {
    if (candidate.id == device_id && !candidate.removed) d = &candidate;
  }
  if (d == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "device \"", device_id, "\" not found on node \"", node_name, "\""));
  }
  if (!d->mig_enabled) {
    return absl::FailedPreconditionError(
        absl::StrCat("device \"", device_id, "\" is not in MIG mode"));
  }
  if (d->mig_plan.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("device \"", device_id, "\" has a MIG plan already"));
  }
  for (const MigSlice& s : PlannedAway(plan, d->mig_slices)) {
    if (!holders_->HolderOf(s.id).empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("MIG slice \"", s.id, "\" is held by allocation ",
                       holders_->HolderOf(s.id)));
    }
  }
  d->mig_generation = plan.generation;
  d->mig_plan = std::move(plan);
  mig_gpus_.Planned(it->first, d->id);
  RefreshUnits(it->first, {});
  return it->second;
}

std::optional<std::pair<Node, MigPlan>> Catalog::DropMigPlan(
    absl::string_view node_name, absl::string_view device_id,
    uint64_t generation) {
  auto it = nodes_.find(node_name);
  if (it == nodes_.end()) return std::nullopt;
  Device* d = FindDevice(it->second, device_id);
  if (d == nullptr || !d->mig_plan.has_value() ||
      (generation != 0 && d->mig_plan->generation != generation)) {
    return std::nullopt;
  }
  MigPlan plan = *std::move(d->mig_plan);
  d->mig_plan.reset();
  mig_gpus_.Unplanned(it->first, d->id);
  RefreshUnits(it->first, {});
  return std::make_pair(it->second, std::move(plan));
}

void Catalog::RefreshNode(absl::string_view node) {
  if (nodes_.contains(node)) RefreshUnits(std::string(node), {});
}

absl::StatusOr<Node> Catalog::Put(const AcceleratorTypeSet& types, Node node,
                                  absl::Time now,
                                  std::vector<MigPlanEnd>* plan_ends) {
  RETURN_IF_ERROR(CheckOwnership(node));
  RETURN_IF_ERROR(CheckTpuSlices(types, node));
  auto existing = nodes_.find(node.name);
  std::set<std::string> old_slices;
  node.schedulable = true;
  node.last_heartbeat = now;
  for (Device& d : node.devices) {
    if (d.removed) continue;  // kept by KeepAllocatedDevices, as it was
    d.mig_plan.reset();
    d.mig_generation = 0;
  }
  if (existing != nodes_.end()) {
    RETURN_IF_ERROR(KeepAllocatedDevices(existing->second, node));
    CarryMigPlans(existing->second, node, plan_ends);
    node.schedulable = existing->second.schedulable;
    old_slices = TpuSlicesOf(existing->second);
    UnindexNode(existing->second);
    existing->second = node;
  } else {
    nodes_.emplace(node.name, node);
  }
  // What the node registers is what it has: no agent is under way.
  if (lapsed_ != nullptr) lapsed_->NodeReported(node.name);
  IndexNode(node);
  // Lowered under what live allocations hold: they are kept (as a dropped
  // device in use is), and takes no request with pod_resources until they
  // fit again.
  index_.SetAllocatable(node.name, node.allocatable);
  RefreshUnits(node.name, old_slices);
  return node;
}

absl::Status Catalog::Remove(absl::string_view name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NodeNotFound(name);
  const std::string node_name(name);
  const std::set<std::string> old_slices = TpuSlicesOf(it->second);
  UnindexNode(it->second);
  if (lapsed_ != nullptr) lapsed_->NodeReported(node_name);
  nodes_.erase(it);
  index_.SetAllocatable(node_name, std::nullopt);
  RefreshUnits(node_name, old_slices);
  return absl::OkStatus();
}

absl::StatusOr<Node> Catalog::SetSchedulable(absl::string_view name,
                                             bool schedulable) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NodeNotFound(name);
  it->second.schedulable = schedulable;
  return it->second;
}

absl::StatusOr<std::vector<HealthChange>> Catalog::Heartbeat(
    absl::string_view name,
    const std::vector<std::string>& unhealthy_device_ids,
    const std::vector<std::string>& reported_ids, absl::Time now) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NodeNotFound(name);
  Node& node = it->second;
  absl::flat_hash_set<absl::string_view> unhealthy;
  for (size_t i = 0; i < unhealthy_device_ids.size(); ++i) {
    const std::string& id = unhealthy_device_ids[i];
    if (FindDevice(node, id) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unhealthy_device_ids[", i, "] \"", id,
                       "\" is not a device of node \"", name, "\""));
    }
    unhealthy.insert(id);
  }
  for (const std::string& id : reported_ids) {
    auto owner = node_of_.find(id);
    if (owner == node_of_.end() || owner->second != name) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device_stats[\"", absl::CHexEscape(id),
          "\"] is not a device or MIG slice of node \"", name, "\""));
    }
  }
  node.last_heartbeat = now;
  std::vector<HealthChange> changes;
  for (Device& d : node.devices) {
    const bool healthy = !d.removed && !unhealthy.contains(d.id);
    if (healthy == d.healthy) continue;
    d.healthy = healthy;
    changes.push_back(HealthChange{d.id, healthy});
  }
  if (!changes.empty()) RefreshUnits(node.name, TpuSlicesOf(node));
  return changes;
}

std::optional<Node> Catalog::DropReleasedRemovedDevices(
    absl::string_view name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return std::nullopt;
  Node& node = it->second;
  auto held = [&](const Device& d) {
    if (!holders_->HolderOf(d.id).empty()) return true;
    if (holders_->SharedOf(d.id).compute_milli > 0) return true;
    for (const MigSlice& s : d.mig_slices) {
      if (!holders_->HolderOf(s.id).empty()) return true;
    }
    return !d.tpu_slice_id.empty() &&
           !holders_->HolderOf(TpuUnitKey(d.tpu_slice_id)).empty();
  };
  auto droppable = [&](const Device& d) { return d.removed && !held(d); };
  if (std::none_of(node.devices.begin(), node.devices.end(), droppable)) {
    return std::nullopt;
  }
  const std::set<std::string> old_slices = TpuSlicesOf(node);
  UnindexNode(node);
  std::erase_if(node.devices, droppable);
  IndexNode(node);
  // Lowered under what live allocations hold: they are kept (as a dropped
  // device in use is), and takes no request with pod_resources until they
  // fit again.
  index_.SetAllocatable(node.name, node.allocatable);
  RefreshUnits(node.name, old_slices);
  return node;
}

}  // namespace accelsched
