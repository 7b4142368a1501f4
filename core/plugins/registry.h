// Every scheduling plugin, registered by name, and the default profile built
// from the server's options. The one table of core/plugins/registry.cc lists
// them: a new plugin is its folder (core/plugins/<name>/, with its
// plugin.cmake) and one line there, in the order the default profile runs it
// at each extension point it implements.
#ifndef ACCELSCHED_CORE_PLUGINS_REGISTRY_H_
#define ACCELSCHED_CORE_PLUGINS_REGISTRY_H_

#include "core/framework/registry.h"
#include "core/packing/packing_policy.h"

namespace accelsched {

// Every plugin of the table, by name. Built once; never changes.
const Registry& PluginRegistry();

// What of the default profile the server's flags choose.
struct ProfileOptions {
  // The placement plugin of whole units (--packing); the lease term runs
  // only beside fragmentation.
  Packing packing = Packing::kFragmentation;
  // Whether the preemption and reclaim plugins run (--preemption).
  bool preemption = true;
};

// The table's plugins in its order, as `options` choose them, each with its
// weight.
Profile DefaultProfile(const ProfileOptions& options);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PLUGINS_REGISTRY_H_
