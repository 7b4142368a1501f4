#include "core/plugins/index_placer.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "core/plugins/registry.h"

namespace accelsched {

namespace {

std::unique_ptr<const Framework> FrameworkFor(Packing packing) {
  absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
      PluginRegistry(), DefaultProfile(ProfileOptions{packing, false}));
  // The registry's own plugins: a failure is a bug.
  if (!fw.ok()) {
    std::fprintf(stderr, "IndexPlacer: %s\n",
                 std::string(fw.status().message()).c_str());
    std::abort();
  }
  return *std::move(fw);
}

}  // namespace

IndexPlacer::IndexPlacer(const CapacityIndex* index, const NodeMap* nodes,
                         Options options)
    : framework_(FrameworkFor(options.packing)),
      holds_(nullptr, nullptr, Holds::Standing::kReadOnly),
      session_(*framework_, snapshot_, holds_, statement_) {
  snapshot_.index = index;
  snapshot_.nodes = nodes;
  snapshot_.heartbeat_timeout = options.heartbeat_timeout;
  snapshot_.mix = options.mix;
  snapshot_.leases = options.leases;
}

std::optional<Groups> IndexPlacer::Place(const MatchSpec& spec, absl::Time now,
                                         absl::Time ends_at) {
  snapshot_.now = now;
  CycleState cycle(CycleMode::kAllocate, snapshot_, spec, request_, nullptr,
                   ends_at);
  framework_->Prepare(cycle);
  return framework_->Place(session_, cycle);
}

std::optional<UnitGroup> IndexPlacer::PlaceOne(const MatchSpec& spec,
                                               absl::Time now,
                                               absl::Time ends_at) {
  std::optional<Groups> groups = Place(spec, now, ends_at);
  if (!groups.has_value()) return std::nullopt;
  return std::move(groups->front());
}

std::vector<RankedPlacement> IndexPlacer::Rank(const MatchSpec& spec,
                                               absl::Time now,
                                               absl::Time ends_at) {
  snapshot_.now = now;
  CycleState cycle(CycleMode::kAllocate, snapshot_, spec, request_, nullptr,
                   ends_at);
  framework_->Prepare(cycle);
  const Plugin* p = framework_->plugins().Find("fragmentation");
  if (p == nullptr) return {};
  return dynamic_cast<const PlacementPlugin*>(p)->Rank(session_, cycle);
}

}  // namespace accelsched
