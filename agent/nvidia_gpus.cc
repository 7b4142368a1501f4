#include "agent/nvidia_gpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"

namespace accelsched::agent {
namespace {

// XIDs that are the application's fault, not the GPU's
// (NVIDIA/k8s-device-plugin 1b826ac internal/rm/health.go:229-243).
constexpr unsigned long long kApplicationXids[] = {13, 31, 43, 45, 68, 109};

// Slices and attribute suffix of each GPU-instance profile index
// (NVIDIA/go-nvlib 3c16156 pkg/nvlib/device/mig_profile.go:60-145 and
// String() at :170-182; REV2 has twice the memory and no attribute).
struct ProfileShape {
  unsigned int index;
  int slices;
  const char* suffix;
};
constexpr ProfileShape kProfileShapes[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 1, ""},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 2, ""},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 3, ""},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 4, ""},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 7, ""},
    {NVML_GPU_INSTANCE_PROFILE_8_SLICE, 8, ""},
    {NVML_GPU_INSTANCE_PROFILE_6_SLICE, 6, ""},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, "+me"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1, 2, "+me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 1, ""},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX, 1, "+gfx"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX, 2, "+gfx"},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, 4, "+gfx"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, 1, "-me"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME, 2, "-me"},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME, 1, "+me.all"},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, 2, "+me.all"},
};

// Reads a string attribute of `device` into `out`.
template <typename Fn>
absl::Status ReadString(const NvmlLibrary& nvml, Fn fn, nvmlDevice_t device,
                        const char* what, std::string& out) {
  char buffer[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  static_assert(NVML_DEVICE_NAME_V2_BUFFER_SIZE >=
                NVML_DEVICE_UUID_V2_BUFFER_SIZE);
  if (absl::Status s = nvml.Check(fn(device, buffer, sizeof(buffer)), what);
      !s.ok()) {
    return s;
  }
  out = buffer;
  return absl::OkStatus();
}

struct GpuInstance {
  std::string profile;
  unsigned int start = 0;
};

}  // namespace

std::string MigProfileName(unsigned int profile_index, uint64_t memory_mb,
                           uint64_t gpu_memory_bytes) {
  const ProfileShape* shape = nullptr;
  for (const ProfileShape& s : kProfileShapes) {
    if (s.index == profile_index) shape = &s;
  }
  if (shape == nullptr || gpu_memory_bytes == 0) return "";
  // go-nvlib getMigMemorySizeGB (mig_profile.go:384-392): the instance's
  // share of the GPU rounded up to eighths, times the GPU's GB rounded up.
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
  double fraction = static_cast<double>(memory_mb) * kMiB /
                    static_cast<double>(gpu_memory_bytes);
  fraction = std::ceil(fraction * 8) / 8;
  const double total_gb =
      static_cast<double>((gpu_memory_bytes + kGiB - 1) / kGiB);
  const auto gb = static_cast<uint64_t>(std::llround(fraction * total_gb));
  return absl::StrCat(shape->slices, "g.", gb, "gb", shape->suffix);
}

NvidiaGpus::NvidiaGpus(std::unique_ptr<NvmlLibrary> nvml)
    : nvml_(std::move(nvml)) {
  // Without an event set, XIDs go unseen; the other health checks remain.
  if (nvml_->nvmlEventSetCreate(&events_) != NVML_SUCCESS) events_ = nullptr;
}

NvidiaGpus::~NvidiaGpus() {
  if (events_ != nullptr) (void)nvml_->nvmlEventSetFree(events_);
}

void NvidiaGpus::WatchEvents(nvmlDevice_t gpu, const std::string& uuid) {
  if (events_ == nullptr || watched_.contains(uuid)) return;
  // NOT_SUPPORTED (an old GPU): no XID health, as with the device plugin.
  if (nvml_->nvmlDeviceRegisterEvents(gpu, nvmlEventTypeXidCriticalError,
                                      events_) == NVML_SUCCESS) {
    watched_.insert(uuid);
  }
}

void NvidiaGpus::DrainEvents() {
  if (events_ == nullptr) return;
  for (int i = 0; i < 1024; ++i) {  // bounded: a storm must not stall a pass
    nvmlEventData_t data = {};
    if (nvml_->nvmlEventSetWait_v2(events_, &data, 0) != NVML_SUCCESS) return;
    if (data.eventType != nvmlEventTypeXidCriticalError) continue;
    if (std::find(std::begin(kApplicationXids), std::end(kApplicationXids),
                  data.eventData) != std::end(kApplicationXids)) {
      continue;
    }
    std::string uuid;
    if (ReadString(*nvml_, nvml_->nvmlDeviceGetUUID, data.device,
                   "nvmlDeviceGetUUID", uuid)
            .ok()) {
      std::fprintf(stderr, "accelsched-agent: XID %llu on %s: unhealthy\n",
                   data.eventData, uuid.c_str());
      xid_unhealthy_.insert(uuid);
    }
  }
}

absl::Status NvidiaGpus::Observe(Observation& out) {
  const NvmlLibrary& nvml = *nvml_;
  unsigned int count = 0;
  if (absl::Status s = nvml.Check(nvml.nvmlDeviceGetCount_v2(&count),
                                  "nvmlDeviceGetCount_v2");
      !s.ok()) {
    return s;
  }
  DrainEvents();
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t gpu = nullptr;
    v1::Device d;
    std::string uuid, name;
    if (nvml.nvmlDeviceGetHandleByIndex_v2(i, &gpu) != NVML_SUCCESS ||
        !ReadString(nvml, nvml.nvmlDeviceGetUUID, gpu, "nvmlDeviceGetUUID",
                    uuid)
             .ok() ||
        !ReadString(nvml, nvml.nvmlDeviceGetName, gpu, "nvmlDeviceGetName",
                    name)
             .ok()) {
      continue;  // fallen off the bus, or otherwise unreadable
    }
    d.set_id(uuid);
    d.set_device_class(v1::NVIDIA_GPU);
    d.set_model(name);
    unsigned int index = i;
    (void)nvml.nvmlDeviceGetIndex(gpu, &index);  // else the enumeration order
    d.set_index(static_cast<int32_t>(index));
    nvmlMemory_t memory = {};
    const bool has_memory =
        nvml.nvmlDeviceGetMemoryInfo(gpu, &memory) == NVML_SUCCESS;
    d.set_memory_bytes(has_memory ? memory.total : 0);
    unsigned int current = 0, pending = 0;
    d.set_mig_enabled(nvml.nvmlDeviceGetMigMode(gpu, &current, &pending) ==
                          NVML_SUCCESS &&
                      current == NVML_DEVICE_MIG_ENABLE);
    WatchEvents(gpu, uuid);

    v1::DeviceStats& stats = out.stats[uuid];
    if (has_memory) stats.set_memory_used_bytes(memory.used);
    nvmlUtilization_t utilization = {};
    if (nvml.nvmlDeviceGetUtilizationRates(gpu, &utilization) == NVML_SUCCESS) {
      stats.set_utilization(std::min(utilization.gpu, 100u) / 100.0);
    }
    unsigned int temperature = 0, milliwatts = 0;
    if (nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU,
                                      &temperature) == NVML_SUCCESS) {
      stats.set_temperature_celsius(temperature);
    }
    if (nvml.nvmlDeviceGetPowerUsage(gpu, &milliwatts) == NVML_SUCCESS) {
      stats.set_power_watts(milliwatts / 1000.0);
    }

    bool healthy = !xid_unhealthy_.contains(uuid);
    nvmlEnableState_t retired_pending = NVML_FEATURE_DISABLED;
    if (nvml.nvmlDeviceGetRetiredPagesPendingStatus(gpu, &retired_pending) ==
            NVML_SUCCESS &&
        retired_pending == NVML_FEATURE_ENABLED) {
      healthy = false;
    }
    unsigned int corrected = 0, uncorrected = 0, remap_pending = 0, failed = 0;
    if (nvml.nvmlDeviceGetRemappedRows(gpu, &corrected, &uncorrected,
                                       &remap_pending,
                                       &failed) == NVML_SUCCESS &&
        failed != 0) {
      healthy = false;
    }
    if (!healthy) out.unhealthy.insert(uuid);

    if (d.mig_enabled()) {
      // GPU instance id -> profile and start, from the GPU-instance API.
      std::map<unsigned int, GpuInstance> instances;
      for (unsigned int p = 0;; ++p) {
        nvmlGpuInstanceProfileInfo_t info = {};
        const nvmlReturn_t r =
            nvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, p, &info);
        if (r == NVML_ERROR_INVALID_ARGUMENT) break;  // past the last index
        if (r != NVML_SUCCESS || info.instanceCount == 0) continue;
        const std::string profile =
            MigProfileName(p, info.memorySizeMB, memory.total);
        if (profile.empty()) continue;
        std::vector<nvmlGpuInstance_t> handles(info.instanceCount);
        unsigned int n = 0;
        if (nvml.nvmlDeviceGetGpuInstances(gpu, info.id, handles.data(), &n) !=
            NVML_SUCCESS) {
          continue;
        }
        for (unsigned int k = 0; k < n && k < handles.size(); ++k) {
          nvmlGpuInstanceInfo_t gi = {};
          if (nvml.nvmlGpuInstanceGetInfo(handles[k], &gi) == NVML_SUCCESS) {
            instances[gi.id] = GpuInstance{profile, gi.placement.start};
          }
        }
      }
      // Each GPU instance's first MIG device names it.
      unsigned int max_mig = 0;
      (void)nvml.nvmlDeviceGetMaxMigDeviceCount(gpu, &max_mig);
      std::vector<v1::MigSlice> slices;
      std::set<unsigned int> named;
      for (unsigned int m = 0; m < max_mig; ++m) {
        nvmlDevice_t mig = nullptr;
        unsigned int gi_id = 0;
        std::string mig_uuid;
        if (nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, m, &mig) !=
                NVML_SUCCESS ||
            nvml.nvmlDeviceGetGpuInstanceId(mig, &gi_id) != NVML_SUCCESS ||
            !ReadString(nvml, nvml.nvmlDeviceGetUUID, mig, "nvmlDeviceGetUUID",
                        mig_uuid)
                 .ok()) {
          continue;
        }
        auto it = instances.find(gi_id);
        if (it == instances.end() || !named.insert(gi_id).second) continue;
        v1::MigSlice slice;
        slice.set_id(mig_uuid);
        slice.set_profile(it->second.profile);
        slice.set_start(static_cast<int32_t>(it->second.start));
        slices.push_back(std::move(slice));
        nvmlMemory_t mig_memory = {};
        if (nvml.nvmlDeviceGetMemoryInfo(mig, &mig_memory) == NVML_SUCCESS) {
          out.stats[mig_uuid].set_memory_used_bytes(mig_memory.used);
        }
      }
      std::sort(slices.begin(), slices.end(),
                [](const v1::MigSlice& a, const v1::MigSlice& b) {
                  return a.start() < b.start();
                });
      for (v1::MigSlice& s : slices) *d.add_mig_slices() = std::move(s);
    }
    out.devices.push_back(std::move(d));
  }
  return absl::OkStatus();
}

}  // namespace accelsched::agent
