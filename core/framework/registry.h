// Plugins by name (Kubernetes' pkg/scheduler/framework/plugins/registry.go),
// and the profile that names which of them a framework runs, in which order,
// with which weights (KubeSchedulerProfile with multiPoint: a plugin runs at
// every extension point it implements, in the profile's order).
#ifndef ACCELSCHED_CORE_FRAMEWORK_REGISTRY_H_
#define ACCELSCHED_CORE_FRAMEWORK_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/framework/plugin.h"

namespace accelsched {

using PluginFactory = std::unique_ptr<Plugin> (*)();

class Registry {
 public:
  // INVALID_ARGUMENT naming `name` when it is registered already, or when the
  // plugin `factory` makes is not named `name`.
  absl::Status Register(absl::string_view name, PluginFactory factory);
  // nullptr when nothing is registered under `name`.
  PluginFactory Find(absl::string_view name) const;
  // In registration order.
  const std::vector<std::string>& names() const { return names_; }

 private:
  absl::flat_hash_map<std::string, PluginFactory> factories_;
  std::vector<std::string> names_;
};

struct Profile {
  struct Entry {
    std::string plugin;
    // A Score plugin's weight (its score is multiplied by it); ignored at
    // the other points.
    double weight = 1;
  };
  // Each runs at every extension point it implements, in this order.
  std::vector<Entry> plugins;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_FRAMEWORK_REGISTRY_H_
