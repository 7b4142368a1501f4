#include "core/plugins/node_resources/node_resources.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/framework/placement.h"

namespace accelsched {
namespace {

// "insufficient <resource>", for the resource Shortfall names.
const char* Insufficient(const char* resource) {
  const absl::string_view r = resource;
  if (r == "cpu_milli") return "insufficient cpu_milli";
  if (r == "memory_bytes") return "insufficient memory_bytes";
  return "insufficient pods";
}

}  // namespace

std::unique_ptr<Plugin> NodeResourcesPlugin::New() {
  return std::make_unique<NodeResourcesPlugin>();
}

bool NodeResourcesPlugin::Prepare(CycleState& cycle) const {
  const std::optional<NodeResources>& need = cycle.spec().pod_resources;
  if (!need.has_value()) return false;
  cycle.filters().SetMinimumRoom(need->cpu_milli, need->memory_bytes);
  return true;
}

const char* NodeResourcesPlugin::Filter(const CycleState& cycle,
                                        const NodeView& node) const {
  const char* resource = cycle.snapshot().index->Shortfall(
      node.name, *cycle.spec().pod_resources, node.freed);
  return resource == nullptr ? nullptr : Insufficient(resource);
}

std::optional<NodeReason> NodeResourcesPlugin::Describe(
    const CycleState& cycle, const NodeView& node) const {
  const CapacityIndex& index = *cycle.snapshot().index;
  const NodeResources& need = *cycle.spec().pod_resources;
  const char* resource = index.Shortfall(node.name, need);
  if (resource == nullptr) return std::nullopt;
  const NodeAccount& account = *index.Account(node.name);
  return NodeReason{Insufficient(resource),
                    ShortfallDetail(resource, account.available(),
                                    *account.allocatable, need)};
}

Verdict NodeResourcesPlugin::PreFilter(Session& session,
                                       CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  if (!spec.pod_resources.has_value()) return Verdict::Success();
  // A pool with a node that is not accounted, or with one that offers both
  // the CPU and the memory, may take the pod some day.
  const NodeResources& need = *spec.pod_resources;
  int64_t most_cpu = 0;
  int64_t most_memory = 0;
  for (const PoolCandidate& c : CandidatePools(*cycle.snapshot().index, spec)) {
    const CapacityIndex::Pool& pool = *c.pool;
    if (pool.unaccounted_homes > 0) return Verdict::Success();
    bool offered = false;
    pool.by_allocatable.ForEachFrom({0, need.cpu_milli, std::string()},
                                    need.memory_bytes,
                                    [&](const HomeTree::Entry&) {
                                      offered = true;
                                      return false;
                                    });
    if (offered) return Verdict::Success();
    if (const HomeTree::Entry* last = pool.by_allocatable.Last()) {
      most_cpu = std::max(most_cpu, last->cpu);
      most_memory = std::max(most_memory, pool.by_allocatable.MaxMemory());
    }
  }
  if (need.cpu_milli > most_cpu) {
    return Verdict::Unresolvable(
        absl::StrCat("pod_resources.cpu_milli ", need.cpu_milli,
                     " is more than any node with a ", SpecUnitName(spec),
                     " offers: at most ", most_cpu, " cpu_milli allocatable"));
  }
  if (need.memory_bytes > most_memory) {
    return Verdict::Unresolvable(absl::StrCat(
        "pod_resources.memory_bytes ", need.memory_bytes,
        " is more than any node with a ", SpecUnitName(spec),
        " offers: at most ", most_memory, " memory_bytes allocatable"));
  }
  return Verdict::Unresolvable(absl::StrCat(
      "pod_resources (", need.cpu_milli, " cpu_milli, ", need.memory_bytes,
      " memory_bytes): no node with a ", SpecUnitName(spec), " offers both"));
}

}  // namespace accelsched
