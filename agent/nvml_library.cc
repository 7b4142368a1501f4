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
  auto bind = [&](auto& fn, const char* name) {
    ::dlerror();
    void* symbol = ::dlsym(handle, name);
    if (symbol == nullptr && missing.ok()) {
      missing = absl::UnimplementedError(
          absl::StrCat(path, " has no ", name,
                       " (the driver is older than the agent supports)"));
    }
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(symbol);
  };
  decltype(&::nvmlInit_v2) init = nullptr;
  bind(init, "nvmlInit_v2");
#define ACCELSCHED_BIND(name) bind(lib->name, #name)
  ACCELSCHED_BIND(nvmlShutdown);
  ACCELSCHED_BIND(nvmlErrorString);
  ACCELSCHED_BIND(nvmlSystemGetDriverVersion);
  ACCELSCHED_BIND(nvmlDeviceGetCount_v2);
  ACCELSCHED_BIND(nvmlDeviceGetHandleByIndex_v2);
  ACCELSCHED_BIND(nvmlDeviceGetName);
  ACCELSCHED_BIND(nvmlDeviceGetIndex);
  ACCELSCHED_BIND(nvmlDeviceGetUUID);
  ACCELSCHED_BIND(nvmlDeviceGetTemperature);
  ACCELSCHED_BIND(nvmlDeviceGetPowerUsage);
  ACCELSCHED_BIND(nvmlDeviceGetMemoryInfo);
  ACCELSCHED_BIND(nvmlDeviceGetUtilizationRates);
  ACCELSCHED_BIND(nvmlDeviceGetRetiredPagesPendingStatus);
  ACCELSCHED_BIND(nvmlDeviceGetRemappedRows);
  ACCELSCHED_BIND(nvmlEventSetCreate);
  ACCELSCHED_BIND(nvmlDeviceRegisterEvents);
  ACCELSCHED_BIND(nvmlEventSetWait_v2);
  ACCELSCHED_BIND(nvmlEventSetFree);
  ACCELSCHED_BIND(nvmlDeviceGetMigMode);
  ACCELSCHED_BIND(nvmlDeviceGetGpuInstanceProfileInfo);
  ACCELSCHED_BIND(nvmlDeviceGetGpuInstances);
  ACCELSCHED_BIND(nvmlGpuInstanceGetInfo);
  ACCELSCHED_BIND(nvmlDeviceGetGpuInstanceId);
  ACCELSCHED_BIND(nvmlDeviceGetMaxMigDeviceCount);
  ACCELSCHED_BIND(nvmlDeviceGetMigDeviceHandleByIndex);
#undef ACCELSCHED_BIND
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
    case NVML_ERROR_INVALID_ARGUMENT:
      return absl::InvalidArgumentError(message);
    default:
      return absl::InternalError(message);
  }
}

std::string NvmlLibrary::DriverVersion() const {
  char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
  if (nvmlSystemGetDriverVersion(version, sizeof(version)) != NVML_SUCCESS) {
    return "";
  }
  return version;
}

}  // namespace accelsched::agent
