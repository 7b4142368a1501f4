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
      ends_{LeaseEnd(snapshot, request), std::nullopt} {}

CycleState::CycleState(CycleMode mode, const Snapshot& snapshot,
                       const MatchSpec& spec, const Allocation& request,
                       const Holds* holds, absl::Time ends_at)
    : mode_(mode),
      snapshot_(&snapshot),
      spec_(&spec),
      request_(&request),
      holds_(holds),
      ends_{ends_at, DurationEstimate{ends_at - snapshot.now,
                                      DurationSource::kLease, 0}} {}

const DurationEstimate& CycleState::expected() const {
  if (!ends_.expected.has_value()) {
    ends_.expected = ExpectedDuration(*snapshot_, *request_);
  }
  return *ends_.expected;
}

absl::Time CycleState::expected_end() const {
  return snapshot_->now + expected().duration;
}

}  // namespace accelsched
