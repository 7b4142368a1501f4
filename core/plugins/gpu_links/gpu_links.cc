#include "core/plugins/gpu_links/gpu_links.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/framework/placement.h"
#include "core/plugins/gpu_links/linked_set.h"

namespace accelsched {
namespace {

// Whether any device of `node` in its inventory reports links to another.
bool HasLinks(const Node& node) {
  return std::any_of(
      node.devices.begin(), node.devices.end(),
      [](const Device& d) { return !d.removed && !d.links.empty(); });
}

// The ids of `units`' devices (whole devices: one each).
std::vector<absl::string_view> DeviceIds(absl::Span<const Unit* const> units) {
  std::vector<absl::string_view> ids;
  ids.reserve(units.size());
  for (const Unit* u : units) ids.push_back(u->key);
  return ids;
}

}  // namespace

std::unique_ptr<Plugin> GpuLinksPlugin::New() {
  return std::make_unique<GpuLinksPlugin>();
}

int GpuLinksPlugin::Weighs(const CycleState& cycle, const Node& node,
                           const PoolKey& pool, int count) const {
  if (!pool.partition.empty() || !HasLinks(node)) return count;
  return std::max(count, kMaxLinkedCandidates);
}

std::vector<int> GpuLinksPlugin::Choose(const CycleState& cycle,
                                        const Node& node,
                                        absl::Span<const Unit* const> units,
                                        int count) const {
  const LinkGraph graph(node, DeviceIds(units));
  if (graph.empty()) return {};
  return ChooseLinkedSet(graph, count).members;
}

std::string GpuLinksPlugin::Describe(
    const CycleState& cycle, absl::Span<const Unit* const> group) const {
  // A share's GPU is chosen by its free compute, not by links.
  if (cycle.spec().share.has_value()) return "";
  if (group.empty() || !group[0]->pool.partition.empty()) return "";
  const Node* node = cycle.snapshot().FindNode(group[0]->home);
  if (node == nullptr || !HasLinks(*node)) return "";
  // What UnitsIn weighed: the first kMaxLinkedCandidates free GPUs in
  // best-fit order (Explain allocates nothing, so the group's are free).
  const CapacityIndex& index = *cycle.snapshot().index;
  std::vector<const Unit*> free;
  if (auto pool = index.pools().find(group[0]->pool);
      pool != index.pools().end()) {
    if (auto home = pool->second.homes.find(group[0]->home);
        home != pool->second.homes.end()) {
      free = FreeUnitsBestFit(index, home->second);
    }
  }
  const int taken = static_cast<int>(group.size());
  const int weighed =
      std::min(static_cast<int>(free.size()), kMaxLinkedCandidates);
  if (taken >= weighed) return "";
  const bool more = static_cast<int>(free.size()) > weighed;
  free.resize(weighed);
  if (LinkGraph(*node, DeviceIds(free)).empty()) return "";
  std::vector<int> numbers;
  for (const Unit* u : group) numbers.push_back(u->order);
  const std::string gpus =
      absl::StrCat(taken == 1 ? "GPU " : "GPUs ", absl::StrJoin(numbers, ", "),
                   " of ", node->name);
  const std::string of = more
                             ? absl::StrCat("its first ", weighed, " free GPUs")
                             : absl::StrCat("its ", weighed, " free GPUs");
  if (taken == 1) {
    return absl::StrCat(gpus, ": of ", of,
                        ", the one that leaves the others best linked");
  }
  const LinkedSet set = AsLinkedSet(LinkGraph(*node, DeviceIds(group)));
  std::string links(PairTierPhrase(set.tier));
  if (set.nvlinks > 0) {
    absl::StrAppend(&links, ", ", set.nvlinks, " NVLinks among them");
  }
  return absl::StrCat(gpus, " (", links, "): the best-linked ", taken, " of ",
                      of);
}

}  // namespace accelsched
