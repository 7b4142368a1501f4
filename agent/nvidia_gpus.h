// NVIDIA GPUs through NVML: each GPU's UUID, product name, memory, index, MIG
// mode and GPU instances, its health, and its readings.
//
// MIG slices are GPU instances (nvmlDeviceGetGpuInstances per profile), each
// named by the UUID of its first MIG device and by its profile, spelled as
// NVIDIA's k8s-device-plugin and mig-parted spell it (NVIDIA/go-nvlib
// pkg/nvlib/device/mig_profile.go NewMigProfile and MigProfileInfo.String:
// "<slices>g.<GB>gb" plus "+me", "+me.all", "+gfx" or "-me"), so that the
// names match the resource names the device plugin advertises. A GPU
// instance with no compute instance has no MIG device and is left out: no pod
// could use it.
//
// Health: a GPU is unhealthy while NVML reports pages pending retirement or a
// failed row remapping, or answers a health or shape query with an error
// (GPU_IS_LOST, UNKNOWN; NOT_SUPPORTED is no error), and from a critical XID
// event on (the event API,
// drained every pass; the XIDs NVIDIA's device plugin treats as application
// errors are ignored: NVIDIA/k8s-device-plugin internal/rm/health.go
// 13, 31, 43, 45, 68, 109) until the agent restarts, as the device plugin
// does: such a GPU needs a reset, after which the node is drained and the
// agent restarted. While a shape query fails, the GPU's last shape read whole
// is reported (so a failed read never re-registers the node). A GPU whose
// handle, UUID or name NVML cannot read is left out of the inventory, which
// the server then drops (or keeps unhealthy while allocated).
//
// Links: each GPU's NVLinks and PCIe paths to the others (agent/gpu_links.h),
// read again only when the set of GPUs changes.
//
// Readings: utilization.gpu / 100, memory used, GPU temperature and power of
// each GPU, and the memory used of each MIG slice. A reading NVML refuses or
// does not have (utilization on a MIG-enabled GPU) is left unset.
#ifndef ACCELSCHED_AGENT_NVIDIA_GPUS_H_
#define ACCELSCHED_AGENT_NVIDIA_GPUS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "agent/gpu_links.h"
#include "agent/nvml_library.h"
#include "agent/observation.h"

namespace accelsched::agent {

// The profile name of GPU-instance profile `profile_index` (an
// NVML_GPU_INSTANCE_PROFILE_* value) whose instances have `memory_mb` of a
// GPU with `gpu_memory_bytes` in all; empty for an index go-nvlib does not
// name.
std::string MigProfileName(unsigned int profile_index, uint64_t memory_mb,
                           uint64_t gpu_memory_bytes);

class NvidiaGpus final : public DeviceSource {
 public:
  // Every whole GPU not in MIG mode is reported with `sharing` (a MIG slice
  // is not shared).
  explicit NvidiaGpus(std::unique_ptr<NvmlLibrary> nvml,
                      v1::GpuSharing sharing = v1::GPU_SHARING_NONE);
  ~NvidiaGpus() override;

  // Errors only when NVML cannot count the GPUs; a single GPU's failure
  // leaves that GPU out (or unhealthy) instead.
  absl::Status Observe(Observation& out) override;

  const NvmlLibrary& nvml() const { return *nvml_; }

 private:
  // Registers a GPU for XID events once (a GPU that does not support them
  // gets no XID health, as with NVIDIA's device plugin).
  void WatchEvents(nvmlDevice_t gpu, const std::string& uuid);
  // Marks the GPUs of pending critical XIDs.
  void DrainEvents();
  // Adds the GPU instances of MIG GPU `gpu` to `d`, and their readings to
  // `out`; false when NVML fails to answer (then `d` is incomplete).
  bool ReadMigSlices(nvmlDevice_t gpu, uint64_t gpu_memory_bytes, v1::Device& d,
                     Observation& out) const;
  // The readings NVML gives; `memory` null when it could not be read.
  void ReadStats(nvmlDevice_t gpu, const nvmlMemory_t* memory,
                 v1::DeviceStats& stats) const;
  // False on a critical XID, pages pending retirement, a failed row
  // remapping, or an error answering about either.
  bool Healthy(nvmlDevice_t gpu, const std::string& uuid) const;

  const std::unique_ptr<NvmlLibrary> nvml_;
  const v1::GpuSharing sharing_;
  nvmlEventSet_t events_ = nullptr;
  std::set<std::string> watched_;  // UUIDs registered for events
  std::set<std::string> xid_unhealthy_;
  // The handles of the last pass (XID events name a handle).
  std::map<nvmlDevice_t, std::string> uuid_of_;
  // Each GPU's last shape read whole, reported while a read fails.
  std::map<std::string, v1::Device> last_good_;
  GpuLinks links_{*nvml_};
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_NVIDIA_GPUS_H_
