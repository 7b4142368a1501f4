#include "core/framework/registry.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace accelsched {

absl::Status Registry::Register(absl::string_view name, PluginFactory factory) {
  if (factories_.contains(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin \"", name, "\" is registered twice"));
  }
  if (std::unique_ptr<Plugin> plugin = factory(); plugin->name() != name) {
    return absl::InvalidArgumentError(
        absl::StrCat("plugin \"", name, "\" is registered for a plugin named \"",
                     plugin->name(), "\""));
  }
  factories_.emplace(name, factory);
  names_.emplace_back(name);
  return absl::OkStatus();
}

PluginFactory Registry::Find(absl::string_view name) const {
  auto it = factories_.find(name);
  return it == factories_.end() ? nullptr : it->second;
}

}  // namespace accelsched
