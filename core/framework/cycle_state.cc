#include "core/framework/cycle_state.h"

namespace accelsched {

void FilterChain::Add(const FilterEntry& filter) {
  switch (filter.kind) {
    case FilterPlugin::Kind::kGate:
      if (filter.home_only) {
        home_gates_.push_back(filter.plugin);
      } else {
        gates_.push_back(filter.plugin);
      }
      break;
    case FilterPlugin::Kind::kRoom:
      room_.push_back(filter.plugin);
      break;
    case FilterPlugin::Kind::kHeld:
      held_.push_back(filter.plugin);
      break;
  }
  all_.push_back(filter.plugin);
}

void FilterChain::Clear() {
  min_room_ = MinimumRoom{};
  gates_.clear();
  home_gates_.clear();
  room_.clear();
  held_.clear();
  all_.clear();
}

bool FilterChain::Gates(const CycleState& cycle, absl::string_view name) const {
  if (gates_.empty() && home_gates_.empty()) return true;
  return Gates(cycle, name, cycle.snapshot().FindNode(name));
}

bool FilterChain::Gates(const CycleState& cycle, absl::string_view name,
                        const Node* node) const {
  const NodeView view{name, node, nullptr, NodeResources{}};
  for (const FilterPlugin* f : gates_) {
    if (f->Filter(cycle, view) != nullptr) return false;
  }
  for (const FilterPlugin* f : home_gates_) {
    if (f->Filter(cycle, view) != nullptr) return false;
  }
  return true;
}

bool FilterChain::HostGates(const CycleState& cycle,
                            absl::string_view host) const {
  if (gates_.empty()) return true;
  const NodeView view{host, cycle.snapshot().FindNode(host), nullptr,
                      NodeResources{}};
  for (const FilterPlugin* f : gates_) {
    if (f->Filter(cycle, view) != nullptr) return false;
  }
  return true;
}

bool FilterChain::Room(const CycleState& cycle, absl::string_view name,
                       const NodeResources& freed) const {
  if (room_.empty()) return true;
  const NodeView view{name, nullptr, nullptr, freed};
  for (const FilterPlugin* f : room_) {
    if (f->Filter(cycle, view) != nullptr) return false;
  }
  return true;
}

bool FilterChain::Held(const CycleState& cycle, const PoolKey& pool,
                       absl::string_view home) const {
  if (held_.empty()) return true;
  const NodeView view{home, nullptr, &pool, NodeResources{}};
  for (const FilterPlugin* f : held_) {
    if (f->Filter(cycle, view) != nullptr) return false;
  }
  return true;
}

CycleState::CycleState(CycleMode mode, const Snapshot& snapshot,
                       const MatchSpec& spec, const Allocation& request,
                       const Holds* holds)
    : mode_(mode),
      snapshot_(&snapshot),
      spec_(&spec),
      request_(&request),
      holds_(holds),
      ends_(snapshot, request) {}

CycleState::CycleState(CycleMode mode, const Snapshot& snapshot,
                       const MatchSpec& spec, const Allocation& request,
                       const Holds* holds, absl::Time ends_at)
    : mode_(mode),
      snapshot_(&snapshot),
      spec_(&spec),
      request_(&request),
      holds_(holds),
      ends_(snapshot.now, ends_at) {}

CycleEnds::CycleEnds(const Snapshot& snapshot, const Allocation& request)
    : snapshot_(&snapshot),
      request_(&request),
      now_(snapshot.now),
      lease_(LeaseEnd(snapshot, request)) {}

CycleEnds::CycleEnds(absl::Time now, absl::Time ends_at)
    : snapshot_(nullptr),
      request_(nullptr),
      now_(now),
      lease_(ends_at),
      expected_(DurationEstimate{ends_at - now, DurationSource::kLease, 0}) {}

const DurationEstimate& CycleEnds::expected() const {
  if (!expected_.has_value()) {
    expected_ = ExpectedDuration(*snapshot_, *request_);
  }
  return *expected_;
}

}  // namespace accelsched
