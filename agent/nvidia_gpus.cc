#include "agent/nvidia_gpus.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
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

NvidiaGpus::NvidiaGpus(std::unique_ptr<NvmlLibrary> nvml,
                       v1::GpuSharing sharing)
    : nvml_(std::move(nvml)), sharing_(sharing) {
  // Without an event set, XIDs go unseen; the other health checks remain.
  if (nvml_->nvmlEventSetCreate == nullptr ||
      nvml_->nvmlEventSetCreate(&events_) != NVML_SUCCESS) {
    events_ = nullptr;
  }
}

NvidiaGpus::~NvidiaGpus() {
  // Nothing can be done about a failure at exit.
  if (events_ != nullptr && nvml_->nvmlEventSetFree != nullptr) {
    (void)nvml_->nvmlEventSetFree(events_);
  }
}

void NvidiaGpus::WatchEvents(nvmlDevice_t gpu, const std::string& uuid) {
  if (events_ == nullptr || nvml_->nvmlDeviceRegisterEvents == nullptr ||
      watched_.contains(uuid)) {
    return;
  }
  // NOT_SUPPORTED (an old GPU): no XID health, as with the device plugin.
  if (nvml_->nvmlDeviceRegisterEvents(gpu, nvmlEventTypeXidCriticalError,
                                      events_) == NVML_SUCCESS) {
    watched_.insert(uuid);
  }
}

void NvidiaGpus::DrainEvents() {
  if (events_ == nullptr || nvml_->nvmlEventSetWait_v2 == nullptr) return;
  for (int i = 0; i < 1024; ++i) {  // bounded: a storm must not stall a pass
    nvmlEventData_t data = {};
    if (nvml_->nvmlEventSetWait_v2(events_, &data, 0) != NVML_SUCCESS) return;
    if (data.eventType != nvmlEventTypeXidCriticalError) continue;
    if (std::find(std::begin(kApplicationXids), std::end(kApplicationXids),
                  data.eventData) != std::end(kApplicationXids)) {
      continue;
    }
    // By the handle seen in the last pass: the GPU of an XID such as 79
    // (fallen off the bus) may not answer for its UUID any more.
    auto it = uuid_of_.find(data.device);
    if (it == uuid_of_.end()) {
      std::fprintf(stderr,
                   "accelsched-agent: XID %llu on a GPU not seen before\n",
                   data.eventData);
      continue;
    }
    std::fprintf(stderr, "accelsched-agent: XID %llu on %s: unhealthy\n",
                 data.eventData, it->second.c_str());
    xid_unhealthy_.insert(it->second);
  }
}

bool NvidiaGpus::ReadMigSlices(nvmlDevice_t gpu, uint64_t gpu_memory_bytes,
                               v1::Device& d, Observation& out) const {
  const NvmlLibrary& nvml = *nvml_;
  // GPU instance id -> profile and start, from the GPU-instance API. Profile
  // indexes are tried until NVML says there are no more; NVML_GPU_INSTANCE_
  // PROFILE_COUNT is 0x12 in NVML 13.3, so 64 leaves room for growth.
  std::map<unsigned int, GpuInstance> instances;
  for (unsigned int p = 0; p < 64; ++p) {
    nvmlGpuInstanceProfileInfo_t info = {};
    const nvmlReturn_t r =
        nvml.nvmlDeviceGetGpuInstanceProfileInfo(gpu, p, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;  // past the last index
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;  // not on this GPU
    if (r != NVML_SUCCESS) return false;
    if (info.instanceCount == 0) continue;
    const std::string profile =
        MigProfileName(p, info.memorySizeMB, gpu_memory_bytes);
    if (profile.empty()) {
      std::fprintf(stderr,
                   "accelsched-agent: GPU instance profile index %u has no "
                   "name here; its instances are left out\n",
                   p);
      continue;
    }
    std::vector<nvmlGpuInstance_t> handles(info.instanceCount);
    unsigned int n = 0;
    if (nvml.nvmlDeviceGetGpuInstances(gpu, info.id, handles.data(), &n) !=
        NVML_SUCCESS) {
      return false;
    }
    for (unsigned int k = 0; k < n && k < handles.size(); ++k) {
      nvmlGpuInstanceInfo_t gi = {};
      if (nvml.nvmlGpuInstanceGetInfo(handles[k], &gi) != NVML_SUCCESS) {
        return false;
      }
      instances[gi.id] = GpuInstance{profile, gi.placement.start};
    }
  }
  // Each GPU instance's first MIG device names it.
  unsigned int max_mig = 0;
  if (nvml.nvmlDeviceGetMaxMigDeviceCount(gpu, &max_mig) != NVML_SUCCESS) {
    return false;
  }
  std::vector<v1::MigSlice> slices;
  std::set<unsigned int> named;
  for (unsigned int m = 0; m < max_mig; ++m) {
    nvmlDevice_t mig = nullptr;
    const nvmlReturn_t r =
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(gpu, m, &mig);
    if (r == NVML_ERROR_NOT_FOUND) continue;  // no MIG device at this index
    unsigned int gi_id = 0;
    std::string mig_uuid;
    if (r != NVML_SUCCESS ||
        nvml.nvmlDeviceGetGpuInstanceId(mig, &gi_id) != NVML_SUCCESS ||
        !ReadString(nvml, nvml.nvmlDeviceGetUUID, mig, "nvmlDeviceGetUUID",
                    mig_uuid)
             .ok()) {
      return false;
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
      out.stats[mig_uuid].set_memory_used_bytes(
          static_cast<int64_t>(mig_memory.used));
    }
  }
  std::sort(slices.begin(), slices.end(),
            [](const v1::MigSlice& a, const v1::MigSlice& b) {
              return a.start() < b.start();
            });
  for (v1::MigSlice& s : slices) *d.add_mig_slices() = std::move(s);
  return true;
}

void NvidiaGpus::ReadStats(nvmlDevice_t gpu, const nvmlMemory_t* memory,
                           v1::DeviceStats& stats) const {
  const NvmlLibrary& nvml = *nvml_;
  if (memory != nullptr) {
    stats.set_memory_used_bytes(static_cast<int64_t>(memory->used));
  }
  nvmlUtilization_t utilization = {};
  if (nvml.nvmlDeviceGetUtilizationRates != nullptr &&
      nvml.nvmlDeviceGetUtilizationRates(gpu, &utilization) == NVML_SUCCESS &&
      utilization.gpu <= 100) {
    stats.set_utilization(utilization.gpu / 100.0);
  }
  // Readings outside what the server accepts (core/catalog/device_stats.h) are
  // left out rather than have the whole heartbeat refused.
  unsigned int temperature = 0, milliwatts = 0;
  if (nvml.nvmlDeviceGetTemperature != nullptr &&
      nvml.nvmlDeviceGetTemperature(gpu, NVML_TEMPERATURE_GPU, &temperature) ==
          NVML_SUCCESS &&
      temperature <= 1000) {
    stats.set_temperature_celsius(temperature);
  }
  if (nvml.nvmlDeviceGetPowerUsage != nullptr &&
      nvml.nvmlDeviceGetPowerUsage(gpu, &milliwatts) == NVML_SUCCESS &&
      milliwatts <= 1'000'000'000u) {
    stats.set_power_watts(milliwatts / 1000.0);
  }
}

bool NvidiaGpus::Healthy(nvmlDevice_t gpu, const std::string& uuid) const {
  const NvmlLibrary& nvml = *nvml_;
  if (xid_unhealthy_.contains(uuid)) return false;
  // SUCCESS or NOT_SUPPORTED (a GPU without the feature, or in MIG mode);
  // any other answer (GPU_IS_LOST, UNKNOWN, ...) is unhealthy.
  auto answered = [](nvmlReturn_t r) {
    return r == NVML_SUCCESS || r == NVML_ERROR_NOT_SUPPORTED;
  };
  if (nvml.nvmlDeviceGetRetiredPagesPendingStatus != nullptr) {
    nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
    const nvmlReturn_t r =
        nvml.nvmlDeviceGetRetiredPagesPendingStatus(gpu, &pending);
    if (!answered(r) ||
        (r == NVML_SUCCESS && pending == NVML_FEATURE_ENABLED)) {
      return false;
    }
  }
  if (nvml.nvmlDeviceGetRemappedRows != nullptr) {
    unsigned int corrected = 0, uncorrected = 0, remap_pending = 0, failed = 0;
    const nvmlReturn_t r = nvml.nvmlDeviceGetRemappedRows(
        gpu, &corrected, &uncorrected, &remap_pending, &failed);
    if (!answered(r) || (r == NVML_SUCCESS && failed != 0)) return false;
  }
  return true;
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
  uuid_of_.clear();
  std::vector<GpuLinks::Gpu> seen;
  const size_t first = out.devices.size();  // out may hold other sources'
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t gpu = nullptr;
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
    uuid_of_[gpu] = uuid;
    seen.push_back({gpu, uuid});
    WatchEvents(gpu, uuid);
    v1::Device d;
    d.set_id(uuid);
    d.set_device_class(v1::NVIDIA_GPU);
    d.set_model(name);
    unsigned int index = i;
    // Else the enumeration order, which is NVML's index too.
    (void)nvml.nvmlDeviceGetIndex(gpu, &index);
    d.set_index(static_cast<int32_t>(index));

    // The GPU's shape (memory, MIG mode, instances) must read whole, or the
    // inventory would change with a failed read: then the last good shape is
    // reported, unhealthy.
    nvmlMemory_t memory = {};
    bool whole = nvml.nvmlDeviceGetMemoryInfo(gpu, &memory) == NVML_SUCCESS;
    d.set_memory_bytes(whole ? memory.total : 0);
    unsigned int current = 0, pending = 0;
    const nvmlReturn_t mig_mode =
        nvml.nvmlDeviceGetMigMode(gpu, &current, &pending);
    if (mig_mode != NVML_SUCCESS && mig_mode != NVML_ERROR_NOT_SUPPORTED) {
      whole = false;
    }
    d.set_mig_enabled(mig_mode == NVML_SUCCESS &&
                      current == NVML_DEVICE_MIG_ENABLE);
    if (whole && d.mig_enabled()) {
      whole = ReadMigSlices(gpu, memory.total, d, out);
    }
    // A sharing GPU must report its memory (shares divide it): one whose
    // memory did not read is registered unshared until it does.
    if (!d.mig_enabled() && d.memory_bytes() > 0) d.set_sharing(sharing_);
    const bool healthy = whole && Healthy(gpu, uuid);
    if (whole) {
      last_good_[uuid] = d;
    } else if (auto it = last_good_.find(uuid); it != last_good_.end()) {
      d = it->second;
    }
    if (!healthy) out.unhealthy.insert(uuid);

    v1::DeviceStats stats;
    ReadStats(gpu, whole ? &memory : nullptr, stats);
    if (stats.ByteSizeLong() > 0) out.stats[uuid] = std::move(stats);
    out.devices.push_back(std::move(d));
  }
  // After the loop: a GPU's links name the GPUs after it too. Also on a GPU
  // reported as last read whole, whose links are as current as anyone's.
  const GpuLinks::LinksByUuid& links = links_.Read(seen);
  for (size_t k = first; k < out.devices.size(); ++k) {
    v1::Device& d = out.devices[k];
    auto it = links.find(d.id());
    if (it == links.end()) continue;
    d.clear_links();
    for (const v1::DeviceLink& link : it->second) *d.add_links() = link;
  }
  return absl::OkStatus();
}

}  // namespace accelsched::agent
