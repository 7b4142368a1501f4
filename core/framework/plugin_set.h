// The plugins of one profile, by the extension points each implements, in
// profile order: what Framework::Create builds and the cycle's steps walk.
// Read only once built, so that concurrent cycles may share it.
#ifndef ACCELSCHED_CORE_FRAMEWORK_PLUGIN_SET_H_
#define ACCELSCHED_CORE_FRAMEWORK_PLUGIN_SET_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/framework/plugin.h"

namespace accelsched {

class PluginSet {
 public:
  struct WeightedScore {
    const ScorePlugin* plugin;
    double weight;
  };

  PluginSet() = default;
  PluginSet(const PluginSet&) = delete;
  PluginSet& operator=(const PluginSet&) = delete;

  // Takes `plugin` (its Score weighted by `weight`) after those added
  // before. INVALID_ARGUMENT naming it when a plugin of its name() was added
  // already, or when it is a second QueueSort or UnitScore plugin; nothing
  // is added then.
  absl::Status Add(std::unique_ptr<Plugin> plugin, double weight);

  // At most one of each (null: none).
  const QueueSortPlugin* queue_sort() const { return queue_sort_; }
  const UnitScorePlugin* unit_score() const { return unit_score_; }
  // The plugins of each point, in profile order.
  absl::Span<const PreFilterPlugin* const> pre_filters() const {
    return pre_filters_;
  }
  absl::Span<const FilterEntry> filters() const { return filters_; }
  absl::Span<const PlacementPlugin* const> placements() const {
    return placements_;
  }
  absl::Span<const WeightedScore> scores() const { return scores_; }
  absl::Span<const ReservePlugin* const> reserves() const { return reserves_; }
  absl::Span<const PostFilterPlugin* const> post_filters() const {
    return post_filters_;
  }
  // The placement plugin of the request: the first that places it, or
  // nullptr.
  const PlacementPlugin* PlacerFor(const CycleState& cycle) const;
  // The plugin of that name, or nullptr.
  const Plugin* Find(absl::string_view name) const;

 private:
  std::vector<std::unique_ptr<Plugin>> plugins_;
  const QueueSortPlugin* queue_sort_ = nullptr;
  const UnitScorePlugin* unit_score_ = nullptr;
  std::vector<const PreFilterPlugin*> pre_filters_;
  std::vector<FilterEntry> filters_;
  std::vector<const PlacementPlugin*> placements_;
  std::vector<WeightedScore> scores_;
  std::vector<const ReservePlugin*> reserves_;
  std::vector<const PostFilterPlugin*> post_filters_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_PLUGIN_SET_H_
