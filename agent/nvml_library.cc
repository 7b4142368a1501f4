#include "agent/nvml_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace accelsched::agent {

absl::StatusOr<std::unique_ptr<NvmlLibrary>> NvmlLibrary::Load(
    const std::string& path) {
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    return absl::NotFoundError(absl::StrCat("cannot load ", path, ": ",
                                            error ? error : "unknown error"));
  }
  std::unique_ptr<NvmlLibrary> lib(new NvmlLibrary(handle));
  absl::Status missing;
  // A function the agent cannot do without (the inventory) must be there;
  // one for a reading or a health signal may be missing from a driver that
  // dropped or never had it (nvmlDeviceGetTemperature is deprecated since
  // NVML 13), and is then skipped.
  auto bind = [&](auto& fn, const char* name, bool required) {
    ::dlerror();
    void* symbol = ::dlsym(handle, name);
    if (symbol == nullptr && required && missing.ok()) {
      missing = absl::UnimplementedError(
          absl::StrCat(path, " has no ", name,
                       " (the driver is older than the agent supports)"));
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(symbol);
  };
  decltype(&::nvmlInit_v2) init = nullptr;
  bind(init, "nvmlInit_v2", true);
#define ACCELSCHED_REQUIRE(name) bind(lib->name, #name, true)
#define ACCELSCHED_OPTIONAL(name) bind(lib->name, #name, false)
  ACCELSCHED_REQUIRE(nvmlShutdown);
  ACCELSCHED_REQUIRE(nvmlErrorString);
  ACCELSCHED_OPTIONAL(nvmlSystemGetDriverVersion);
  ACCELSCHED_REQUIRE(nvmlDeviceGetCount_v2);
  ACCELSCHED_REQUIRE(nvmlDeviceGetHandleByIndex_v2);
  ACCELSCHED_REQUIRE(nvmlDeviceGetName);
  ACCELSCHED_REQUIRE(nvmlDeviceGetIndex);
  ACCELSCHED_REQUIRE(nvmlDeviceGetUUID);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetTemperature);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetPowerUsage);
  ACCELSCHED_REQUIRE(nvmlDeviceGetMemoryInfo);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetUtilizationRates);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetRetiredPagesPendingStatus);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetRemappedRows);
  ACCELSCHED_OPTIONAL(nvmlEventSetCreate);
  ACCELSCHED_OPTIONAL(nvmlDeviceRegisterEvents);
  ACCELSCHED_OPTIONAL(nvmlEventSetWait_v2);
  ACCELSCHED_OPTIONAL(nvmlEventSetFree);
  // MIG (NVML 11, driver R450 on): the inventory of a MIG GPU needs them all.
  ACCELSCHED_REQUIRE(nvmlDeviceGetMigMode);
  ACCELSCHED_REQUIRE(nvmlDeviceGetGpuInstanceProfileInfo);
  ACCELSCHED_REQUIRE(nvmlDeviceGetGpuInstances);
  ACCELSCHED_REQUIRE(nvmlGpuInstanceGetInfo);
  ACCELSCHED_REQUIRE(nvmlDeviceGetGpuInstanceId);
  ACCELSCHED_REQUIRE(nvmlDeviceGetMaxMigDeviceCount);
  ACCELSCHED_REQUIRE(nvmlDeviceGetMigDeviceHandleByIndex);
  // MIG re-layout, used only with --allow_mig_relayout (which refuses a plan
  // when one is missing).
  ACCELSCHED_OPTIONAL(nvmlDeviceGetComputeRunningProcesses_v3);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetGpuInstancePossiblePlacements_v2);
  ACCELSCHED_OPTIONAL(nvmlDeviceCreateGpuInstanceWithPlacement);
  ACCELSCHED_OPTIONAL(nvmlGpuInstanceDestroy);
  ACCELSCHED_OPTIONAL(nvmlGpuInstanceGetComputeInstanceProfileInfo);
  ACCELSCHED_OPTIONAL(nvmlGpuInstanceCreateComputeInstance);
  ACCELSCHED_OPTIONAL(nvmlComputeInstanceDestroy);
  ACCELSCHED_OPTIONAL(nvmlGpuInstanceGetComputeInstances);
  // GPU links: a hint for placement, never a reason to refuse a driver
  // (nvmlDeviceGetNvLinkRemoteDeviceType came later than the rest).
  ACCELSCHED_OPTIONAL(nvmlDeviceGetPciInfo_v3);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetTopologyCommonAncestor);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetNvLinkState);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetNvLinkRemotePciInfo_v2);
  ACCELSCHED_OPTIONAL(nvmlDeviceGetNvLinkRemoteDeviceType);
#undef ACCELSCHED_REQUIRE
#undef ACCELSCHED_OPTIONAL
  if (!missing.ok()) {
    lib->nvmlShutdown = nullptr;  // never initialized
    return missing;
  }
  if (absl::Status s = lib->Check(init(), "nvmlInit_v2"); !s.ok()) {
    lib->nvmlShutdown = nullptr;
    return absl::FailedPreconditionError(s.message());
  }
  return lib;
}

NvmlLibrary::~NvmlLibrary() {
  // Nothing useful can be done about a failed shutdown at exit.
  if (nvmlShutdown != nullptr) (void)nvmlShutdown();
  ::dlclose(handle_);
}

absl::Status NvmlLibrary::Check(nvmlReturn_t r, absl::string_view what) const {
  if (r == NVML_SUCCESS) return absl::OkStatus();
  const char* text = nvmlErrorString != nullptr ? nvmlErrorString(r) : nullptr;
  const std::string message =
      absl::StrCat(what, ": ", text != nullptr ? text : "NVML error",
                   " (nvmlReturn_t ", static_cast<int>(r), ")");
  switch (r) {
    case NVML_ERROR_NOT_FOUND:
      return absl::NotFoundError(message);
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return absl::UnimplementedError(message);
    case NVML_ERROR_NO_PERMISSION:
      return absl::PermissionDeniedError(message);
    case NVML_ERROR_TIMEOUT:
      return absl::DeadlineExceededError(message);
    case NVML_ERROR_GPU_IS_LOST:
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return absl::UnavailableError(message);
    case NVML_ERROR_IN_USE:
      return absl::FailedPreconditionError(message);
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return absl::ResourceExhaustedError(message);
    case NVML_ERROR_INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

std::string NvmlLibrary::DriverVersion() const {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvmlSystemGetDriverVersion == nullptr ||
      nvmlSystemGetDriverVersion(version, sizeof(version)) != NVML_SUCCESS) {
    return "";
  }
  return version;
}

}  // namespace accelsched::agent
