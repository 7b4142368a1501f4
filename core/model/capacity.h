// Capacity accounting: how many allocatable units of each (device class, model,
// partition) the cluster has, and in which state.
#ifndef ACCELSCHED_CORE_MODEL_CAPACITY_H_
#define ACCELSCHED_CORE_MODEL_CAPACITY_H_

#include <cstdint>
#include <string>

#include "core/model/device_class.h"

namespace accelsched {

// One allocatable kind of unit: a whole non-MIG device (partition ""), a MIG
// slice (partition = profile) or a whole TPU slice (partition = topology).
struct CapacityEntry {
  DeviceClass device_class = DeviceClass::kNvidiaGpu;
  std::string model;  // canonical
  std::string partition;
  int64_t total = 0;
  int64_t allocated = 0;
  int64_t free = 0;
  int64_t unhealthy = 0;  // neither free nor allocated
  // Over the pool's devices that take shares: the compute (thousandths of a
  // GPU) and GPU memory no share or whole-device allocation holds, on
  // healthy devices.
  int64_t free_compute_milli = 0;
  int64_t free_memory_bytes = 0;
  // The compute the pool's shares hold, on any of its devices.
  int64_t allocated_compute_milli = 0;

  bool operator==(const CapacityEntry&) const = default;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_MODEL_CAPACITY_H_
