// Validation of a node's registration as it stands alone: names, labels,
// models, MIG layouts, TPU slice fields. Whether a device id belongs to another
// node is the catalog's check, since only the catalog sees every node.
#ifndef ACCELSCHED_CORE_CATALOG_NODE_VALIDATION_H_
#define ACCELSCHED_CORE_CATALOG_NODE_VALIDATION_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/model/catalog_model.h"

namespace accelsched {

inline constexpr size_t kMaxIdLength = 128;
inline constexpr size_t kMaxDevicesPerNode = 1024;
inline constexpr size_t kMaxLabelsPerNode = 256;
// The most NVLinks one DeviceLink may count: NVML_NVLINK_MAX_LINKS is 36
// (go-nvml gen/nvml/nvml.h @2f9e261, line 455); room is left for growth.
inline constexpr int kMaxNvlinksPerLink = 64;
// The most links one device, and one node, may report (one per peer: a full
// mesh of 64 GPUs is 4,032). They bound the rows a registration writes and
// the matcher's walk of a node's links.
inline constexpr size_t kMaxLinksPerDevice = 256;
inline constexpr size_t kMaxLinksPerNode = 4096;

// INVALID_ARGUMENT naming `field` unless `name` is a Kubernetes node name
// (lower-case DNS subdomain of at most 253 characters).
absl::Status ValidateNodeName(absl::string_view name, absl::string_view field);

// INVALID_ARGUMENT naming `field` unless `id` is 1..kMaxIdLength printable
// ASCII characters without spaces (GPU and MIG UUIDs, TPU chip and slice ids,
// request ids).
absl::Status ValidateId(absl::string_view id, absl::string_view field);

// Checks the MIG and TPU fields of `device` against `model`, its type: MIG
// slices only with mig_enabled, on a type with MIG, in a valid layout; TPU
// slice fields exactly on a TPU type, with one of its topologies; sharing
// only on an NVIDIA GPU not in MIG mode. Errors are
// INVALID_ARGUMENT naming the field under `field`.
absl::Status ValidateDeviceGeometry(const AcceleratorType& model,
                                    const Device& device,
                                    absl::string_view field);

// Checks `node` against `types` and fills in each device's canonical_model
// and device_class from it. Errors are INVALID_ARGUMENT naming the field
// ("node.devices[3].mig_slices[1].start"). Each device's links must name
// another device of the node, count 1..kMaxNvlinksPerLink NVLinks for NVLINK
// and 0 for the other kinds, name each peer at most once, and number at
// most kMaxLinksPerDevice per device and kMaxLinksPerNode per node.
absl::Status NormalizeAndValidateNode(const AcceleratorTypeSet& types,
                                      Node& node);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_CATALOG_NODE_VALIDATION_H_
