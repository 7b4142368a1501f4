#include "core/catalog.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/name_table.h"
#include "core/node_validation.h"
#include "core/status_macros.h"
#include "core/tpu_topology.h"

namespace accelsched {
namespace {

absl::Status NodeNotFound(absl::string_view name) {
  return absl::NotFoundError(absl::StrCat("node \"", name, "\" not found"));
}

// Page tokens are opaque to clients: the last name of the previous page,
// base64-encoded.
std::string EncodePageToken(absl::string_view last_name) {
  return absl::WebSafeBase64Escape(last_name);
}

absl::StatusOr<std::string> DecodePageToken(absl::string_view token) {
  std::string name;
  if (!absl::WebSafeBase64Unescape(token, &name) ||
      !ValidateNodeName(name, "page_token").ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_token \"", token, "\" is not a token this server issued"));
  }
  return name;
}

}  // namespace

Catalog::Catalog(Store* store, const Clock* clock)
    : store_(store), clock_(clock) {}

absl::Status Catalog::Load() {
  ASSIGN_OR_RETURN(std::vector<Node> nodes, store_->LoadNodes());
  absl::MutexLock lock(&mu_);
  nodes_.clear();
  owner_.clear();
  tpu_slices_.clear();
  for (Node& node : nodes) {
    for (Device& d : node.devices) {
      const ModelInfo* model = FindModel(d.model);
      if (model == nullptr) {
        return absl::DataLossError(
            absl::StrCat("stored device \"", d.id, "\" has model \"", d.model,
                         "\", which this build does not know"));
      }
      d.canonical_model = std::string(model->canonical);
      d.device_class = model->device_class;
    }
    Index(node);
    std::string name = node.name;
    nodes_.emplace(std::move(name), std::move(node));
  }
  return absl::OkStatus();
}

absl::Status Catalog::CheckOwnership(const Node& node) const {
  auto check = [&](absl::string_view id,
                   absl::string_view field) -> absl::Status {
    auto it = owner_.find(id);
    if (it != owner_.end() && it->second != node.name) {
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

absl::Status Catalog::CheckTpuSlices(const Node& node) const {
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
    const TpuGeneration* gen =
        FindTpuGeneration(FindModel(d.model)->tpu_generation);
    if (chips > TopologyChips(d.tpu_topology) ||
        hosts > TopologyHosts(*gen, d.tpu_topology)) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, " would have ", chips, " chips on ", hosts, " hosts; a ",
          d.tpu_topology, " slice has ", TopologyChips(d.tpu_topology),
          " chips on ", TopologyHosts(*gen, d.tpu_topology)));
    }
  }
  return absl::OkStatus();
}

void Catalog::Index(const Node& node) {
  for (const Device& d : node.devices) {
    owner_[d.id] = node.name;
    for (const MigSlice& s : d.mig_slices) owner_[s.id] = node.name;
    if (!d.tpu_slice_id.empty()) {
      TpuSliceState& state = tpu_slices_[d.tpu_slice_id];
      state.canonical_model = d.canonical_model;
      state.topology = d.tpu_topology;
      ++state.chips_by_node[node.name];
    }
  }
}

void Catalog::Unindex(const Node& node) {
  for (const Device& d : node.devices) {
    owner_.erase(d.id);
    for (const MigSlice& s : d.mig_slices) owner_.erase(s.id);
    if (!d.tpu_slice_id.empty()) {
      auto it = tpu_slices_.find(d.tpu_slice_id);
      if (it == tpu_slices_.end()) continue;
      it->second.chips_by_node.erase(node.name);
      if (it->second.chips_by_node.empty()) tpu_slices_.erase(it);
    }
  }
}

absl::StatusOr<Node*> Catalog::FindMutable(absl::string_view name) {
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NodeNotFound(name);
  return &it->second;
}

absl::StatusOr<Node> Catalog::RegisterNode(Node node) {
  RETURN_IF_ERROR(NormalizeAndValidateNode(node));
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckOwnership(node));
  RETURN_IF_ERROR(CheckTpuSlices(node));
  auto existing = nodes_.find(node.name);
  node.schedulable =
      existing == nodes_.end() ? true : existing->second.schedulable;
  node.last_heartbeat = clock_->Now();
  RETURN_IF_ERROR(store_->PutNode(node));
  if (existing != nodes_.end()) {
    Unindex(existing->second);
    existing->second = node;
  } else {
    nodes_.emplace(node.name, node);
  }
  Index(node);
  return node;
}

absl::StatusOr<Node> Catalog::GetNode(absl::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = nodes_.find(name);
  if (it == nodes_.end()) return NodeNotFound(name);
  return it->second;
}

absl::StatusOr<NodePage> Catalog::ListNodes(
    const LabelSelector& selector, int page_size,
    absl::string_view page_token) const {
  if (page_size < 0 || page_size > kMaxPageSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "page_size ", page_size, " is out of range [0, ", kMaxPageSize, "]"));
  }
  if (page_size == 0) page_size = kDefaultPageSize;
  std::string after;
  if (!page_token.empty()) {
    ASSIGN_OR_RETURN(after, DecodePageToken(page_token));
  }
  NodePage page;
  absl::ReaderMutexLock lock(&mu_);
  auto it = after.empty() ? nodes_.begin() : nodes_.upper_bound(after);
  for (; it != nodes_.end(); ++it) {
    if (!selector.Matches(it->second.labels)) continue;
    if (static_cast<int>(page.nodes.size()) == page_size) {
      page.next_page_token = EncodePageToken(page.nodes.back().name);
      break;
    }
    page.nodes.push_back(it->second);
  }
  return page;
}

absl::Status Catalog::RemoveNode(absl::string_view name, bool /*force*/) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Node * node, FindMutable(name));
  RETURN_IF_ERROR(store_->DeleteNode(name));
  Unindex(*node);
  nodes_.erase(nodes_.find(name));
  return absl::OkStatus();
}

absl::StatusOr<Node> Catalog::SetNodeSchedulable(absl::string_view name,
                                                 bool schedulable) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Node * node, FindMutable(name));
  Node updated = *node;
  updated.schedulable = schedulable;
  RETURN_IF_ERROR(store_->PutNodeStatus(updated));
  *node = std::move(updated);
  return *node;
}

absl::Status Catalog::Heartbeat(
    absl::string_view name,
    const std::vector<std::string>& unhealthy_device_ids) {
  if (unhealthy_device_ids.size() > kMaxDevicesPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat("unhealthy_device_ids has ", unhealthy_device_ids.size(),
                     " entries; at most ", kMaxDevicesPerNode));
  }
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(Node * node, FindMutable(name));
  absl::flat_hash_set<absl::string_view> unhealthy;
  for (size_t i = 0; i < unhealthy_device_ids.size(); ++i) {
    const std::string& id = unhealthy_device_ids[i];
    const bool known = std::any_of(node->devices.begin(), node->devices.end(),
                                   [&](const Device& d) { return d.id == id; });
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("unhealthy_device_ids[", i, "] \"", id,
                       "\" is not a device of node \"", name, "\""));
    }
    unhealthy.insert(id);
  }
  Node updated = *node;
  updated.last_heartbeat = clock_->Now();
  for (Device& d : updated.devices) d.healthy = !unhealthy.contains(d.id);
  RETURN_IF_ERROR(store_->PutNodeStatus(updated));
  *node = std::move(updated);
  return absl::OkStatus();
}

std::vector<CapacityEntry> Catalog::GetCapacity() const {
  using Key = std::tuple<int, std::string, std::string>;
  std::map<Key, CapacityEntry> entries;
  auto count = [&](DeviceClass c, const std::string& model,
                   const std::string& partition, bool healthy) {
    CapacityEntry& e = entries[Key{static_cast<int>(c), model, partition}];
    e.device_class = c;
    e.model = model;
    e.partition = partition;
    ++e.total;
    ++(healthy ? e.free : e.unhealthy);
  };
  absl::ReaderMutexLock lock(&mu_);
  // A TPU slice is one unit, free only when every chip of it is registered and
  // healthy.
  absl::flat_hash_map<std::string, bool> tpu_healthy;
  for (const auto& [name, node] : nodes_) {
    for (const Device& d : node.devices) {
      if (!d.tpu_slice_id.empty()) {
        auto [it, inserted] = tpu_healthy.try_emplace(d.tpu_slice_id, true);
        it->second = it->second && d.healthy;
      } else if (d.mig_enabled) {
        for (const MigSlice& s : d.mig_slices) {
          count(d.device_class, d.canonical_model, s.profile, d.healthy);
        }
      } else {
        count(d.device_class, d.canonical_model, "", d.healthy);
      }
    }
  }
  for (const auto& [slice_id, state] : tpu_slices_) {
    int chips = 0;
    for (const auto& [node, n] : state.chips_by_node) chips += n;
    const bool complete = chips == TopologyChips(state.topology);
    count(DeviceClass::kGoogleTpu, state.canonical_model, state.topology,
          complete && tpu_healthy[slice_id]);
  }
  std::vector<CapacityEntry> out;
  out.reserve(entries.size());
  for (auto& [key, e] : entries) out.push_back(std::move(e));
  return out;
}

size_t Catalog::node_count() const {
  absl::ReaderMutexLock lock(&mu_);
  return nodes_.size();
}

}  // namespace accelsched
