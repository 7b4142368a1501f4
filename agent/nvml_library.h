// libnvidia-ml loaded at run time: the agent builds and runs on hosts without
// NVIDIA's driver, and one binary serves every driver version. Every call's
// return code is checked by the caller through Check().
#ifndef ACCELSCHED_AGENT_NVML_LIBRARY_H_
#define ACCELSCHED_AGENT_NVML_LIBRARY_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/nvml_api.h"

namespace accelsched::agent {

class NvmlLibrary {
 public:
  // dlopen()s `path` (a file name is searched as the dynamic linker does),
  // looks up the functions below and calls nvmlInit_v2. NOT_FOUND naming the
  // path and dlerror() when the library cannot be loaded; UNIMPLEMENTED
  // naming a missing symbol the inventory needs (the functions for readings,
  // health, events, MIG re-layout and GPU links may be missing: they are
  // null then);
  // FAILED_PRECONDITION with NVML's message when initialization fails (no
  // driver loaded, no permission).
  static absl::StatusOr<std::unique_ptr<NvmlLibrary>> Load(
      const std::string& path);
  // nvmlShutdown, then dlclose.
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  // OK for NVML_SUCCESS; otherwise a status whose message names `what` and
  // carries nvmlErrorString(): NOT_FOUND, UNIMPLEMENTED (NOT_SUPPORTED,
  // FUNCTION_NOT_FOUND), PERMISSION_DENIED, DEADLINE_EXCEEDED (TIMEOUT),
  // UNAVAILABLE (GPU_IS_LOST, driver not loaded), FAILED_PRECONDITION
  // (IN_USE), RESOURCE_EXHAUSTED (INSUFFICIENT_RESOURCES), INVALID_ARGUMENT
  // or INTERNAL.
  absl::Status Check(nvmlReturn_t r, absl::string_view what) const;

  // The driver's version string ("550.54.15"); empty when NVML cannot say.
  std::string DriverVersion() const;

#define ACCELSCHED_NVML_FUNCTION(name) decltype(&::name) name = nullptr
  ACCELSCHED_NVML_FUNCTION(nvmlShutdown);
  ACCELSCHED_NVML_FUNCTION(nvmlErrorString);
  ACCELSCHED_NVML_FUNCTION(nvmlSystemGetDriverVersion);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetCount_v2);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetHandleByIndex_v2);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetName);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetIndex);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetUUID);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetTemperature);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetPowerUsage);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetMemoryInfo);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetUtilizationRates);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetRetiredPagesPendingStatus);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetRemappedRows);
  ACCELSCHED_NVML_FUNCTION(nvmlEventSetCreate);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceRegisterEvents);
  ACCELSCHED_NVML_FUNCTION(nvmlEventSetWait_v2);
  ACCELSCHED_NVML_FUNCTION(nvmlEventSetFree);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetMigMode);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetGpuInstanceProfileInfo);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetGpuInstances);
  ACCELSCHED_NVML_FUNCTION(nvmlGpuInstanceGetInfo);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetGpuInstanceId);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetMaxMigDeviceCount);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetMigDeviceHandleByIndex);
  // MIG re-layout (agent/mig_relayout.h); null in a library without them.
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetComputeRunningProcesses_v3);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetGpuInstancePossiblePlacements_v2);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceCreateGpuInstanceWithPlacement);
  ACCELSCHED_NVML_FUNCTION(nvmlGpuInstanceDestroy);
  ACCELSCHED_NVML_FUNCTION(nvmlGpuInstanceGetComputeInstanceProfileInfo);
  ACCELSCHED_NVML_FUNCTION(nvmlGpuInstanceCreateComputeInstance);
  ACCELSCHED_NVML_FUNCTION(nvmlComputeInstanceDestroy);
  ACCELSCHED_NVML_FUNCTION(nvmlGpuInstanceGetComputeInstances);
  // GPU links (agent/gpu_links.h); null in a library without them.
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetPciInfo_v3);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetTopologyCommonAncestor);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetNvLinkState);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetNvLinkRemotePciInfo_v2);
  ACCELSCHED_NVML_FUNCTION(nvmlDeviceGetNvLinkRemoteDeviceType);
#undef ACCELSCHED_NVML_FUNCTION

 private:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}
  void* const handle_;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_NVML_LIBRARY_H_
