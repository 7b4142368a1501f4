#include "core/catalog/mig_gpus.h"

namespace accelsched {
namespace {

bool Relayouts(const Node& node) {
  auto it = node.labels.find(kMigRelayoutLabel);
  return it != node.labels.end() && it->second == kMigRelayoutEnabled;
}

}  // namespace

void MigGpus::Enter(const Node& node) {
  const bool relayouts = Relayouts(node);
  for (const Device& d : node.devices) {
    if (d.mig_plan.has_value()) planned_.emplace(node.name, d.id);
    if (d.mig_enabled && !d.removed && relayouts) {
      relayout_gpus_[d.canonical_model].emplace(node.name, d.id);
    }
  }
}

void MigGpus::Forget(const Node& node) {
  for (const Device& d : node.devices) {
    planned_.erase({node.name, d.id});
    if (auto it = relayout_gpus_.find(d.canonical_model);
        it != relayout_gpus_.end()) {
      it->second.erase({node.name, d.id});
      if (it->second.empty()) relayout_gpus_.erase(it);
    }
  }
}

void MigGpus::Clear() {
  planned_.clear();
  relayout_gpus_.clear();
}

void MigGpus::Planned(absl::string_view node, absl::string_view device) {
  planned_.emplace(std::string(node), std::string(device));
}

void MigGpus::Unplanned(absl::string_view node, absl::string_view device) {
  planned_.erase({std::string(node), std::string(device)});
}

const GpuSet& MigGpus::RelayoutGpus(absl::string_view model) const {
  static const GpuSet* const kNone = new GpuSet();
  auto it = relayout_gpus_.find(model);
  return it == relayout_gpus_.end() ? *kNone : it->second;
}

}  // namespace accelsched
