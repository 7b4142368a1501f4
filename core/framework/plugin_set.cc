#include "core/framework/plugin_set.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/framework/cycle_state.h"

namespace accelsched {

absl::Status PluginSet::Add(std::unique_ptr<Plugin> plugin, double weight) {
  const std::string name(plugin->name());
  if (Find(name) != nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("profile: plugin \"", name, "\" is named twice"));
  }
  auto* q = dynamic_cast<const QueueSortPlugin*>(plugin.get());
  if (q != nullptr && queue_sort_ != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile: plugin \"", name, "\" is a second QueueSort plugin (",
        queue_sort_->name(), " is the first)"));
  }
  auto* u = dynamic_cast<const UnitScorePlugin*>(plugin.get());
  if (u != nullptr && unit_score_ != nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile: plugin \"", name, "\" is a second UnitScore plugin (",
        unit_score_->name(), " is the first)"));
  }
  auto* filter = dynamic_cast<const FilterPlugin*>(plugin.get());
  if (filter != nullptr && filters_.size() == FilterChain::kMaxFilters) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile: plugin \"", name, "\" is a Filter plugin past the ",
        FilterChain::kMaxFilters, " a profile may name"));
  }
  const Plugin* p = plugin.get();
  plugins_.push_back(std::move(plugin));
  if (q != nullptr) queue_sort_ = q;
  if (u != nullptr) unit_score_ = u;
  if (auto* f = dynamic_cast<const PreFilterPlugin*>(p)) {
    pre_filters_.push_back(f);
  }
  if (filter != nullptr) {
    filters_.push_back(
        FilterEntry{filter, filter->kind(), filter->home_only()});
  }
  if (auto* f = dynamic_cast<const PlacementPlugin*>(p)) {
    placements_.push_back(f);
  }
  if (auto* f = dynamic_cast<const ScorePlugin*>(p)) {
    scores_.push_back({f, weight});
  }
  if (auto* f = dynamic_cast<const ReservePlugin*>(p)) reserves_.push_back(f);
  if (auto* f = dynamic_cast<const PostFilterPlugin*>(p)) {
    post_filters_.push_back(f);
  }
  return absl::OkStatus();
}

const PlacementPlugin* PluginSet::PlacerFor(const CycleState& cycle) const {
  for (const PlacementPlugin* p : placements_) {
    if (p->Places(cycle)) return p;
  }
  return nullptr;
}

const Plugin* PluginSet::Find(absl::string_view name) const {
  for (const auto& p : plugins_) {
    if (p->name() == name) return p.get();
  }
  return nullptr;
}

}  // namespace accelsched
