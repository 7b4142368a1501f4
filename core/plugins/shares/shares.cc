#include "core/plugins/shares/shares.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/framework/placement.h"

namespace accelsched {
namespace {

// Whether `share` may join the shares on `u`: they are of its group, or
// there are none.
bool JoinsGroup(const Unit& u, const GpuShare& share) {
  return u.shared_milli == 0 || u.share_group == share.group;
}

// Whether `share` fits what is left of `u`: its group, its compute and the
// memory it takes of this GPU (ShareMemory).
bool ShareFits(const Unit& u, const GpuShare& share) {
  return u.shareable() && JoinsGroup(u, share) &&
         u.free_milli() >= share.compute_milli &&
         ShareMemory(share, u.memory_bytes) <= u.free_share_memory();
}

// A group's name in a message: "group \"ml\"", or "no group".
std::string GroupText(absl::string_view group) {
  return group.empty() ? "no group" : absl::StrCat("group \"", group, "\"");
}

// Why the closest of `units` to holding `share` does not: "GPU-3 has 300 of
// 1000 milli free, the request needs 470"; when none may take a share now,
// why ("held whole or unhealthy", "GPU-3 holds shares of group \"a\", the
// request is of no group"), or "" when none takes shares at all.
std::string ShareShortfall(absl::Span<const Unit* const> units,
                           const GpuShare& share) {
  const Unit* most = nullptr;
  const Unit* other_group = nullptr;
  bool sharing = false;
  for (const Unit* u : units) {
    sharing = sharing || u->sharing != GpuSharing::kNone;
    if (!u->shareable()) continue;
    if (!JoinsGroup(*u, share)) {
      if (other_group == nullptr) other_group = u;
      continue;
    }
    if (most == nullptr || u->free_milli() > most->free_milli()) most = u;
  }
  if (most == nullptr && other_group != nullptr) {
    return absl::StrCat(other_group->key, " holds shares of ",
                        GroupText(other_group->share_group),
                        ", the request is of ", GroupText(share.group));
  }
  if (most == nullptr) return sharing ? "held whole or unhealthy" : "";
  if (most->free_milli() < share.compute_milli) {
    return absl::StrCat(most->key, " has ", most->free_milli(), " of ",
                        kGpuMilli, " milli free, the request needs ",
                        share.compute_milli);
  }
  return absl::StrCat(most->key, " has ", most->free_share_memory(),
                      " bytes of GPU memory free, the share needs ",
                      ShareMemory(share, most->memory_bytes));
}

}  // namespace

std::unique_ptr<Plugin> SharesPlugin::New() {
  return std::make_unique<SharesPlugin>();
}

Verdict SharesPlugin::PreFilter(Session& session, CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  if (!spec.share.has_value()) return Verdict::Success();
  // A share without memory takes its fraction of whatever GPU it lands on.
  bool sharing = false;
  uint64_t most_memory = 0;
  for (const PoolCandidate& c :
       CandidatePools(*cycle.snapshot().index, spec)) {
    if (c.pool->sharing_memory.empty()) continue;
    sharing = true;
    most_memory = std::max(most_memory, *c.pool->sharing_memory.rbegin());
  }
  if (!sharing) {
    return Verdict::Unresolvable(
        absl::StrCat("share: no ", SpecUnitName(spec), " takes shares"));
  }
  if (static_cast<uint64_t>(spec.share->memory_bytes) > most_memory) {
    return Verdict::Unresolvable(absl::StrCat(
        "share.memory_bytes ", spec.share->memory_bytes, " is more than any ",
        SpecUnitName(spec), " that takes shares has: at most ", most_memory,
        " bytes"));
  }
  return Verdict::Success();
}

bool SharesPlugin::Places(const CycleState& cycle) const {
  return cycle.spec().share.has_value();
}

std::optional<Groups> SharesPlugin::Place(const Session& session,
                                          const CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  const CapacityIndex& index = *cycle.snapshot().index;
  const GpuShare& share = *spec.share;
  // A share that gives its memory skips the GPUs with less free; one that
  // takes a fraction is checked GPU by GPU.
  const int64_t memory = share.memory_bytes > 0
                             ? share.memory_bytes
                             : std::numeric_limits<int64_t>::min();
  const Unit* best = nullptr;
  int best_free = kGpuMilli + 1;
  const HomeTree::Entry from{static_cast<int>(share.compute_milli),
                             std::numeric_limits<int64_t>::min(),
                             std::string()};
  for (const PoolCandidate& c : CandidatePools(index, spec)) {
    auto visit = [&](const CapacityIndex::FreeEntry& e) {
      // Later entries of this tree have no less free: none beats `best` (an
      // equal one loses the tie to the earlier model, or to a GPU its group
      // already shares).
      if (e.free >= best_free) return false;
      const Unit* u = index.Find(e.home);
      if (!ShareFits(*u, share) ||
          !cycle.filters().HomePasses(cycle, *c.key, u->home)) {
        return true;
      }
      best = u;
      best_free = e.free;
      return false;
    };
    // The GPUs the share's group already shares, then those nobody shares
    // (all kGpuMilli free: never a better fit than a shared one).
    if (auto group = c.pool->by_share.find(share.group);
        group != c.pool->by_share.end()) {
      group->second.ForEachFrom(from, memory, visit);
    }
    c.pool->unshared.ForEachFrom(from, memory, visit);
  }
  if (best == nullptr) return std::nullopt;
  return OneGroup({best});
}

std::string SharesPlugin::WhyNot(const Session& session,
                                 const CycleState& cycle) const {
  const MatchSpec& spec = cycle.spec();
  const CapacityIndex& index = *cycle.snapshot().index;
  int64_t free_milli = 0;
  // Whether GPUs with compute free hold shares of a group other than the
  // share's, which it may not join.
  bool other_groups = false;
  for (const PoolKey& key : PoolsFor(index, spec)) {
    if (const auto* pool = index.FindPool(key)) {
      free_milli += pool->free_share_milli;
      other_groups =
          other_groups ||
          pool->by_share.size() >
              (pool->by_share.contains(spec.share->group) ? 1u : 0u);
    }
  }
  return absl::StrCat("no ", SpecUnitName(spec), " has ",
                      spec.share->compute_milli, " compute milli",
                      spec.share->memory_bytes > 0
                          ? absl::StrCat(" and ", spec.share->memory_bytes,
                                         " bytes of GPU memory")
                          : "",
                      " free for the share (", free_milli,
                      " milli free over the sharing devices, in all",
                      other_groups ? ", some on GPUs that shares of "
                                     "another group hold"
                                   : "",
                      ")");
}

std::optional<NodeReason> SharesPlugin::DescribePool(
    const CycleState& cycle, absl::string_view node, const PoolKey& pool,
    absl::Span<const Unit* const> units) const {
  const MatchSpec& spec = cycle.requested_spec();
  const GpuShare& share = *spec.share;
  if (std::any_of(units.begin(), units.end(),
                  [&](const Unit* u) { return ShareFits(*u, share); })) {
    return std::nullopt;
  }
  const std::string unit = spec.requested_models.size() != 1
                               ? ModelUnitName(pool)
                               : UnitName(pool);
  std::string detail = ShareShortfall(units, share);
  return NodeReason{detail.empty()
                        ? absl::StrCat("no ", unit, " takes shares")
                        : absl::StrCat("no ", unit, " with the share free"),
                    std::move(detail)};
}

}  // namespace accelsched
