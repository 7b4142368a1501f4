// The catalog's MIG GPUs as the re-layout planner and lifecycle find them:
// which GPUs have a MIG plan, and which may be re-laid out, per model. Kept by
// the catalog as nodes enter and leave it. Not thread-safe: the catalog's
// owner's lock covers it.
#ifndef ACCELSCHED_CORE_CATALOG_MIG_GPUS_H_
#define ACCELSCHED_CORE_CATALOG_MIG_GPUS_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "core/model/catalog_model.h"

namespace accelsched {

// The node label with which an agent says it applies MIG re-layouts
// (--allow_mig_relayout); the server plans them only on nodes where it is
// kMigRelayoutEnabled.
inline constexpr char kMigRelayoutLabel[] = "accelsched.io/mig-relayout";
inline constexpr char kMigRelayoutEnabled[] = "enabled";

// (node, device id) of GPUs, in that order.
using GpuSet = std::set<std::pair<std::string, std::string>>;

class MigGpus {
 public:
  // Enters the GPUs of `node` (its plans, and its MIG GPUs not removed when
  // its agent applies re-layouts); Forget drops them. A node is entered
  // once, as it stands; a changed node is forgotten first.
  void Enter(const Node& node);
  void Forget(const Node& node);
  void Clear();
  // GPU `device` on `node` has a MIG plan now (Planned), or none
  // (Unplanned).
  void Planned(absl::string_view node, absl::string_view device);
  void Unplanned(absl::string_view node, absl::string_view device);

  // Every GPU with a MIG plan.
  const GpuSet& planned() const { return planned_; }
  // The MIG GPUs of canonical `model` on nodes whose agent applies
  // re-layouts (kMigRelayoutLabel).
  const GpuSet& RelayoutGpus(absl::string_view model) const;

 private:
  GpuSet planned_;
  std::map<std::string, GpuSet, std::less<>> relayout_gpus_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_MIG_GPUS_H_
