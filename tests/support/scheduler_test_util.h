// Builders for scheduler tests: nodes, devices and requests in a line each.
#ifndef ACCELSCHED_TESTS_SUPPORT_SCHEDULER_TEST_UTIL_H_
#define ACCELSCHED_TESTS_SUPPORT_SCHEDULER_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "core/model/allocation_model.h"
#include "core/model/catalog_model.h"

namespace accelsched {

inline Device Gpu(std::string id, const char* model, int index) {
  Device d;
  d.id = std::move(id);
  d.model = model;
  d.index = index;
  return d;
}

// An A100-40GB split into seven 1g.5gb slices, ids "<id>-s<start>".
inline Device MigA100(const std::string& id, int index) {
  Device d = Gpu(id, "nvidia-tesla-a100", index);
  d.mig_enabled = true;
  for (int s = 0; s < 7; ++s) {
    d.mig_slices.push_back({absl::StrCat(id, "-s", s), "1g.5gb", s});
  }
  return d;
}

inline Device Chip(std::string id, const char* slice, const char* topology,
                   int index) {
  Device d = Gpu(std::move(id), "tpu-v5p-slice", index);
  d.tpu_slice_id = slice;
  d.tpu_topology = topology;
  return d;
}

inline Node MakeNode(std::string name, std::vector<Device> devices,
                     Labels labels = {}) {
  Node n;
  n.name = std::move(name);
  n.devices = std::move(devices);
  n.labels = std::move(labels);
  return n;
}

inline AllocationRequest Want(std::string request_id, std::string device,
                              int count = 1, std::string partition = "") {
  AllocationRequest r;
  r.request_id = std::move(request_id);
  r.device = std::move(device);
  r.count = count;
  if (!partition.empty()) {
    r.partition_kind = PartitionKind::kPartitionSize;
    r.partition_size = std::move(partition);
  }
  return r;
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_SCHEDULER_TEST_UTIL_H_
