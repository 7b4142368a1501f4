// The share the queue's order weighs tenants by within a priority (Queue
// walks lowest share first): a tenant's dominant resource share, and a
// pass's cache of it. Not thread-safe: read under the scheduler's lock.
#ifndef ACCELSCHED_CORE_ADMISSION_DOMINANT_SHARE_H_
#define ACCELSCHED_CORE_ADMISSION_DOMINANT_SHARE_H_

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "core/admission/admission_context.h"

namespace accelsched {

// The tenant's dominant resource share: the largest fraction of any pool's
// units it holds (live allocations, PREEMPTED ones in their grace included;
// a GPU share as its fraction of a unit), divided by its weight. 0 for a tenant
// holding nothing; pools with no units are left out.
double DominantShare(const AdmissionContext& ctx, absl::string_view tenant);

// One pass's shares: each tenant's computed on first use and kept until the
// pass admits one of its requests (Forget), so that a walk over many groups
// of a tenant does not recompute it. `ctx` is not owned and must outlive it.
class ShareCache {
 public:
  explicit ShareCache(const AdmissionContext& ctx) : ctx_(ctx) {}
  ShareCache(const ShareCache&) = delete;
  ShareCache& operator=(const ShareCache&) = delete;

  // DominantShare(ctx, tenant) as of its first use since the last Forget.
  double Share(const std::string& tenant);
  // Its usage changed (an admission): the next Share computes it again.
  void Forget(const std::string& tenant) { shares_.erase(tenant); }

 private:
  const AdmissionContext& ctx_;
  absl::flat_hash_map<std::string, double> shares_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_ADMISSION_DOMINANT_SHARE_H_
