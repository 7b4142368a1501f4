#include "core/book/allocation_holds.h"

namespace accelsched {

PoolKey PoolOf(const Allocation& a) {
  return PoolKey{a.device_class, a.model, a.partition};
}

int64_t UsageMilliOf(const Allocation& a, size_t units) {
  const GpuShare* share = a.held_share();
  return static_cast<int64_t>(units) * kGpuMilli +
         (share == nullptr ? 0 : share->compute_milli);
}

const std::string* SharedUnitOf(const Allocation& a) {
  return a.held_share() == nullptr ? nullptr : &a.devices.front().device_id;
}

std::set<std::string> NodesOf(const Allocation& a) {
  std::set<std::string> nodes;
  for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
  return nodes;
}

}  // namespace accelsched
