#include "agent/mig_relayout.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "agent/nvidia_gpus.h"

namespace accelsched::agent {
namespace {

#define ACCELSCHED_AGENT_RETURN_IF_ERROR(expr)          \
  do {                                                  \
    if (absl::Status status_ = (expr); !status_.ok()) { \
      return status_;                                   \
    }                                                   \
  } while (false)

// `s` with `context` before its message, the code kept.
absl::Status Prefixed(const absl::Status& s, absl::string_view context) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

// Profile indexes (GPU instance and compute instance) are tried until NVML
// says there are no more (nvml.h 12810-12811, 13083-13084); 64 leaves room
// for growth past NVML 13.3's 0x12 and 0x9.
constexpr unsigned int kMaxProfileIndexes = 64;

// A GPU instance profile of the GPU.
struct GiProfile {
  unsigned int index = 0;
  std::string name;
  nvmlGpuInstanceProfileInfo_t info = {};
};

// A GPU instance that exists.
struct GpuInstance {
  MigSpot spot;
  nvmlGpuInstance_t handle = nullptr;
  nvmlGpuInstanceInfo_t info = {};
  const GiProfile* profile = nullptr;  // null for a profile without a name
  std::vector<nvmlDevice_t> mig_devices;
};

// What one Apply reads of one GPU.
class Gpu {
 public:
  Gpu(const NvmlLibrary& nvml, std::string id)
      : nvml_(nvml), id_(std::move(id)) {}
  // Instances point into profiles_.
  Gpu(const Gpu&) = delete;
  Gpu& operator=(const Gpu&) = delete;

  // Finds the GPU, checks its MIG mode, reads its profiles and instances.
  absl::Status Read() {
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Find());
    unsigned int current = 0, pending = 0;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
        nvml_.Check(nvml_.nvmlDeviceGetMigMode(handle_, &current, &pending),
                    "nvmlDeviceGetMigMode"),
        absl::StrCat("reading the MIG mode of ", id_)));
    if (current != NVML_DEVICE_MIG_ENABLE) {
      return absl::FailedPreconditionError(absl::StrCat(
          id_, " is not in MIG mode (the agent never changes MIG mode)"));
    }
    nvmlMemory_t memory = {};
    ACCELSCHED_AGENT_RETURN_IF_ERROR(
        Prefixed(nvml_.Check(nvml_.nvmlDeviceGetMemoryInfo(handle_, &memory),
                             "nvmlDeviceGetMemoryInfo"),
                 absl::StrCat("reading the memory of ", id_)));
    ACCELSCHED_AGENT_RETURN_IF_ERROR(ReadProfiles(memory.total));
    ACCELSCHED_AGENT_RETURN_IF_ERROR(ReadInstances());
    return ReadMigDevices();
  }

  const std::string& id() const { return id_; }
  nvmlDevice_t handle() const { return handle_; }
  std::vector<GpuInstance>& instances() { return instances_; }

  const GiProfile* Profile(const std::string& name) const {
    for (const GiProfile& p : profiles_) {
      if (p.name == name) return &p;
    }
    return nullptr;
  }
  std::string ProfileNames() const {
    std::vector<std::string> names;
    for (const GiProfile& p : profiles_) names.push_back(p.name);
    return absl::StrJoin(names, ", ");
  }

 private:
  absl::Status Find() {
    unsigned int count = 0;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(
        Prefixed(nvml_.Check(nvml_.nvmlDeviceGetCount_v2(&count),
                             "nvmlDeviceGetCount_v2"),
                 "counting the GPUs"));
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t gpu = nullptr;
      char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      // A GPU that does not answer for its handle or UUID is not this one
      // as far as the agent can tell (discovery leaves it out too).
      if (nvml_.nvmlDeviceGetHandleByIndex_v2(i, &gpu) != NVML_SUCCESS ||
          nvml_.nvmlDeviceGetUUID(gpu, uuid, sizeof(uuid)) != NVML_SUCCESS) {
        continue;
      }
      if (id_ == uuid) {
        handle_ = gpu;
        return absl::OkStatus();
      }
    }
    return absl::NotFoundError(absl::StrCat(id_, " is not on this node"));
  }

  absl::Status ReadProfiles(uint64_t gpu_memory_bytes) {
    for (unsigned int p = 0; p < kMaxProfileIndexes; ++p) {
      GiProfile profile;
      profile.index = p;
      const nvmlReturn_t r =
          nvml_.nvmlDeviceGetGpuInstanceProfileInfo(handle_, p, &profile.info);
      if (r == NVML_ERROR_INVALID_ARGUMENT) break;  // past the last index
      if (r == NVML_ERROR_NOT_SUPPORTED) continue;  // not on this GPU
      ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
          nvml_.Check(r, "nvmlDeviceGetGpuInstanceProfileInfo"),
          absl::StrCat("reading GPU instance profile index ", p, " of ", id_)));
      profile.name =
          MigProfileName(p, profile.info.memorySizeMB, gpu_memory_bytes);
      if (profile.name.empty()) {
        // Never in a plan: instances of it are destroyed as not planned.
        profile.name = absl::StrCat("GPU instance profile index ", p);
      }
      profiles_.push_back(std::move(profile));
    }
    return absl::OkStatus();
  }

  absl::Status ReadInstances() {
    for (const GiProfile& profile : profiles_) {
      if (profile.info.instanceCount == 0) continue;
      std::vector<nvmlGpuInstance_t> handles(profile.info.instanceCount);
      unsigned int n = 0;
      ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
          nvml_.Check(nvml_.nvmlDeviceGetGpuInstances(handle_, profile.info.id,
                                                      handles.data(), &n),
                      "nvmlDeviceGetGpuInstances"),
          absl::StrCat("listing the ", profile.name, " instances of ", id_)));
      for (unsigned int k = 0; k < n && k < handles.size(); ++k) {
        GpuInstance gi;
        gi.handle = handles[k];
        gi.profile = &profile;
        ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
            nvml_.Check(nvml_.nvmlGpuInstanceGetInfo(gi.handle, &gi.info),
                        "nvmlGpuInstanceGetInfo"),
            absl::StrCat("reading a ", profile.name, " instance of ", id_)));
        gi.spot =
            MigSpot{profile.name, static_cast<int>(gi.info.placement.start)};
        instances_.push_back(std::move(gi));
      }
    }
    std::sort(instances_.begin(), instances_.end(),
              [](const GpuInstance& a, const GpuInstance& b) {
                return a.spot.start < b.spot.start;
              });
    return absl::OkStatus();
  }

  // Each GPU instance's MIG devices (one per compute instance).
  absl::Status ReadMigDevices() {
    unsigned int max_mig = 0;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
        nvml_.Check(nvml_.nvmlDeviceGetMaxMigDeviceCount(handle_, &max_mig),
                    "nvmlDeviceGetMaxMigDeviceCount"),
        absl::StrCat("counting the MIG devices of ", id_)));
    for (unsigned int m = 0; m < max_mig; ++m) {
      nvmlDevice_t mig = nullptr;
      const nvmlReturn_t r =
          nvml_.nvmlDeviceGetMigDeviceHandleByIndex(handle_, m, &mig);
      if (r == NVML_ERROR_NOT_FOUND) continue;  // no MIG device at this index
      ACCELSCHED_AGENT_RETURN_IF_ERROR(
          Prefixed(nvml_.Check(r, "nvmlDeviceGetMigDeviceHandleByIndex"),
                   absl::StrCat("reading MIG device ", m, " of ", id_)));
      unsigned int gi_id = 0;
      ACCELSCHED_AGENT_RETURN_IF_ERROR(
          Prefixed(nvml_.Check(nvml_.nvmlDeviceGetGpuInstanceId(mig, &gi_id),
                               "nvmlDeviceGetGpuInstanceId"),
                   absl::StrCat("reading MIG device ", m, " of ", id_)));
      for (GpuInstance& gi : instances_) {
        if (gi.info.id == gi_id) gi.mig_devices.push_back(mig);
      }
    }
    return absl::OkStatus();
  }

  const NvmlLibrary& nvml_;
  const std::string id_;
  nvmlDevice_t handle_ = nullptr;
  std::vector<GiProfile> profiles_;
  std::vector<GpuInstance> instances_;
};

// FAILED_PRECONDITION when a compute process runs on `gi` (or NVML's error
// when its processes cannot be read).
absl::Status CheckNoProcesses(const NvmlLibrary& nvml, const GpuInstance& gi) {
  for (nvmlDevice_t mig : gi.mig_devices) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    // For the message only.
    (void)nvml.nvmlDeviceGetUUID(mig, uuid, sizeof(uuid));
    const std::string what = absl::StrCat(
        gi.spot.ToString(), uuid[0] ? " (" : "", uuid, uuid[0] ? ")" : "");
    // A count of 0 asks how many there are (nvml.h 7369-7371).
    unsigned int count = 0;
    const nvmlReturn_t r =
        nvml.nvmlDeviceGetComputeRunningProcesses_v3(mig, &count, nullptr);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE || (r == NVML_SUCCESS && count > 0)) {
      return absl::FailedPreconditionError(absl::StrCat(
          count,
          count == 1 ? " compute process runs" : " compute processes run",
          " on ", what, ", which the plan destroys"));
    }
    ACCELSCHED_AGENT_RETURN_IF_ERROR(
        Prefixed(nvml.Check(r, "nvmlDeviceGetComputeRunningProcesses_v3"),
                 absl::StrCat("checking for compute processes on ", what)));
  }
  return absl::OkStatus();
}

// The compute instance profiles of `gi` (index order).
absl::StatusOr<std::vector<nvmlComputeInstanceProfileInfo_t>>
ComputeInstanceProfiles(const NvmlLibrary& nvml, const GpuInstance& gi) {
  std::vector<nvmlComputeInstanceProfileInfo_t> profiles;
  for (unsigned int p = 0; p < kMaxProfileIndexes; ++p) {
    nvmlComputeInstanceProfileInfo_t info = {};
    const nvmlReturn_t r = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi.handle, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(
        Prefixed(nvml.Check(r, "nvmlGpuInstanceGetComputeInstanceProfileInfo"),
                 absl::StrCat("reading compute instance profile index ", p,
                              " of ", gi.spot.ToString())));
    profiles.push_back(info);
  }
  return profiles;
}

// The compute instances of `gi`.
absl::StatusOr<std::vector<nvmlComputeInstance_t>> ComputeInstances(
    const NvmlLibrary& nvml, const GpuInstance& gi) {
  absl::StatusOr<std::vector<nvmlComputeInstanceProfileInfo_t>> profiles =
      ComputeInstanceProfiles(nvml, gi);
  if (!profiles.ok()) return profiles.status();
  std::vector<nvmlComputeInstance_t> all;
  for (const nvmlComputeInstanceProfileInfo_t& profile : *profiles) {
    if (profile.instanceCount == 0) continue;
    std::vector<nvmlComputeInstance_t> handles(profile.instanceCount);
    unsigned int n = 0;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
        nvml.Check(nvml.nvmlGpuInstanceGetComputeInstances(
                       gi.handle, profile.id, handles.data(), &n),
                   "nvmlGpuInstanceGetComputeInstances"),
        absl::StrCat("listing the compute instances of ", gi.spot.ToString())));
    for (unsigned int k = 0; k < n && k < handles.size(); ++k) {
      all.push_back(handles[k]);
    }
  }
  return all;
}

// Destroys `gi`'s compute instances, then `gi`.
absl::Status Destroy(const NvmlLibrary& nvml, const GpuInstance& gi) {
  absl::StatusOr<std::vector<nvmlComputeInstance_t>> cis =
      ComputeInstances(nvml, gi);
  if (!cis.ok()) return cis.status();
  for (nvmlComputeInstance_t ci : *cis) {
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
        nvml.Check(nvml.nvmlComputeInstanceDestroy(ci),
                   "nvmlComputeInstanceDestroy"),
        absl::StrCat("destroying a compute instance of ", gi.spot.ToString())));
  }
  return Prefixed(nvml.Check(nvml.nvmlGpuInstanceDestroy(gi.handle),
                             "nvmlGpuInstanceDestroy"),
                  absl::StrCat("destroying GPU instance ", gi.spot.ToString()));
}

// Creates a compute instance over all of `gi` (the compute instance profile
// of as many slices as its GPU instance profile).
absl::Status CreateWholeComputeInstance(const NvmlLibrary& nvml,
                                        const GpuInstance& gi) {
  absl::StatusOr<std::vector<nvmlComputeInstanceProfileInfo_t>> profiles =
      ComputeInstanceProfiles(nvml, gi);
  if (!profiles.ok()) return profiles.status();
  for (const nvmlComputeInstanceProfileInfo_t& profile : *profiles) {
    if (profile.sliceCount != gi.profile->info.sliceCount) continue;
    nvmlComputeInstance_t ci = nullptr;
    return Prefixed(
        nvml.Check(nvml.nvmlGpuInstanceCreateComputeInstance(gi.handle,
                                                             profile.id, &ci),
                   "nvmlGpuInstanceCreateComputeInstance"),
        absl::StrCat("creating the compute instance of ", gi.spot.ToString()));
  }
  return absl::FailedPreconditionError(
      absl::StrCat("creating the compute instance of ", gi.spot.ToString(),
                   ": no compute instance profile of ",
                   gi.profile->info.sliceCount, " slices"));
}

// A slice to create, with its profile and placement.
struct NewInstance {
  MigSpot spot;
  const GiProfile* profile = nullptr;
  nvmlGpuInstancePlacement_t placement = {};
};

// INVALID_ARGUMENT when the GPU has no such profile, or the profile no
// placement at that start.
absl::StatusOr<NewInstance> CheckNew(const NvmlLibrary& nvml, const Gpu& gpu,
                                     const MigSpot& spot) {
  NewInstance n;
  n.spot = spot;
  n.profile = gpu.Profile(spot.profile);
  if (n.profile == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "profile \"", spot.profile, "\" is not a GPU instance ", "profile of ",
        gpu.id(), " (valid: ", gpu.ProfileNames(), ")"));
  }
  unsigned int count = 0;
  const std::string what =
      absl::StrCat("reading the placements of ", spot.profile);
  ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
      nvml.Check(nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(
                     gpu.handle(), n.profile->info.id, nullptr, &count),
                 "nvmlDeviceGetGpuInstancePossiblePlacements_v2"),
      what));
  std::vector<nvmlGpuInstancePlacement_t> placements(count);
  ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
      nvml.Check(
          nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2(
              gpu.handle(), n.profile->info.id, placements.data(), &count),
          "nvmlDeviceGetGpuInstancePossiblePlacements_v2"),
      what));
  placements.resize(std::min<size_t>(count, placements.size()));
  std::vector<std::string> starts;
  for (const nvmlGpuInstancePlacement_t& p : placements) {
    if (static_cast<int>(p.start) == spot.start) {
      n.placement = p;
      return n;
    }
    starts.push_back(absl::StrCat(p.start));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      spot.profile, " cannot start at ", spot.start, " on ", gpu.id(),
      " (valid starts: ", absl::StrJoin(starts, ", "), ")"));
}

// INVALID_ARGUMENT when two instances of the new layout share memory slices.
absl::Status CheckNoOverlap(
    std::vector<std::pair<MigSpot, nvmlGpuInstancePlacement_t>> layout) {
  std::sort(layout.begin(), layout.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second.start, a.first) <
           std::tie(b.second.start, b.first);
  });
  for (size_t i = 1; i < layout.size(); ++i) {
    const auto& [before, p] = layout[i - 1];
    if (layout[i].second.start < p.start + p.size) {
      return absl::InvalidArgumentError(
          absl::StrCat(layout[i].first.ToString(), " overlaps ",
                       before.ToString(), " in the planned layout"));
    }
  }
  return absl::OkStatus();
}

// The functions a re-layout needs that the library may lack.
absl::Status CheckFunctions(const NvmlLibrary& nvml) {
  const std::pair<const void*, const char*> needed[] = {
      {reinterpret_cast<const void*>(
           nvml.nvmlDeviceGetComputeRunningProcesses_v3),
       "nvmlDeviceGetComputeRunningProcesses_v3"},
      {reinterpret_cast<const void*>(
           nvml.nvmlDeviceGetGpuInstancePossiblePlacements_v2),
       "nvmlDeviceGetGpuInstancePossiblePlacements_v2"},
      {reinterpret_cast<const void*>(
           nvml.nvmlDeviceCreateGpuInstanceWithPlacement),
       "nvmlDeviceCreateGpuInstanceWithPlacement"},
      {reinterpret_cast<const void*>(nvml.nvmlGpuInstanceDestroy),
       "nvmlGpuInstanceDestroy"},
      {reinterpret_cast<const void*>(
           nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo),
       "nvmlGpuInstanceGetComputeInstanceProfileInfo"},
      {reinterpret_cast<const void*>(nvml.nvmlGpuInstanceCreateComputeInstance),
       "nvmlGpuInstanceCreateComputeInstance"},
      {reinterpret_cast<const void*>(nvml.nvmlComputeInstanceDestroy),
       "nvmlComputeInstanceDestroy"},
      {reinterpret_cast<const void*>(nvml.nvmlGpuInstanceGetComputeInstances),
       "nvmlGpuInstanceGetComputeInstances"},
  };
  for (const auto& [fn, name] : needed) {
    if (fn == nullptr) {
      return absl::UnimplementedError(
          absl::StrCat("the loaded NVML has no ", name,
                       " (the driver is older than MIG re-layout needs)"));
    }
  }
  return absl::OkStatus();
}

// How long after its deadline a handled plan is remembered.
constexpr absl::Duration kForgetHandledPlan = absl::Hours(1);

}  // namespace

bool SetMigRelayoutLabel(bool allowed,
                         std::map<std::string, std::string>& labels) {
  if (allowed) {
    labels[kMigRelayoutLabel] = kMigRelayoutEnabled;
    return false;
  }
  return labels.erase(kMigRelayoutLabel) > 0;
}

std::string MigSpot::ToString() const {
  return absl::StrCat(profile, " at start ", start);
}

absl::StatusOr<MigLayoutDiff> DiffMigLayout(const std::vector<MigSpot>& current,
                                            const v1::MigLayout& plan) {
  std::set<MigSpot> planned;
  for (int i = 0; i < plan.slices_size(); ++i) {
    const v1::MigSlice& s = plan.slices(i);
    const std::string field = absl::StrCat("mig_plan.slices[", i, "]");
    if (s.profile().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(field, " has no profile"));
    }
    if (s.start() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".start ", s.start(), " is negative"));
    }
    if (!planned.insert(MigSpot{s.profile(), s.start()}).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", MigSpot{s.profile(), s.start()}.ToString(),
                       " is planned twice"));
    }
  }
  const std::set<MigSpot> now(current.begin(), current.end());
  MigLayoutDiff diff;
  for (const MigSpot& s : now) {
    (planned.contains(s) ? diff.keep : diff.destroy).push_back(s);
  }
  for (const MigSpot& s : planned) {
    if (!now.contains(s)) diff.create.push_back(s);
  }
  auto by_start = [](std::vector<MigSpot>& spots) {
    std::stable_sort(
        spots.begin(), spots.end(),
        [](const MigSpot& a, const MigSpot& b) { return a.start < b.start; });
  };
  by_start(diff.destroy);
  by_start(diff.create);
  by_start(diff.keep);
  return diff;
}

absl::StatusOr<MigLayoutDiff> MigRelayout::Apply(const std::string& gpu_id,
                                                 const v1::MigLayout& plan) {
  if (nvml_ == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(gpu_id, " is not on this node (no NVML loaded)"));
  }
  const NvmlLibrary& nvml = *nvml_;
  ACCELSCHED_AGENT_RETURN_IF_ERROR(CheckFunctions(nvml));
  Gpu gpu(nvml, gpu_id);
  ACCELSCHED_AGENT_RETURN_IF_ERROR(gpu.Read());
  std::vector<MigSpot> current;
  for (const GpuInstance& gi : gpu.instances()) current.push_back(gi.spot);
  absl::StatusOr<MigLayoutDiff> diff = DiffMigLayout(current, plan);
  if (!diff.ok()) return diff.status();

  // Everything that can be checked before a change.
  std::vector<NewInstance> created;
  std::vector<std::pair<MigSpot, nvmlGpuInstancePlacement_t>> layout;
  for (const MigSpot& spot : diff->create) {
    absl::StatusOr<NewInstance> n = CheckNew(nvml, gpu, spot);
    if (!n.ok()) return n.status();
    layout.emplace_back(spot, n->placement);
    created.push_back(*std::move(n));
  }
  std::vector<const GpuInstance*> destroyed;
  std::vector<const GpuInstance*> kept;
  for (const GpuInstance& gi : gpu.instances()) {
    const bool keep = std::find(diff->keep.begin(), diff->keep.end(),
                                gi.spot) != diff->keep.end();
    (keep ? kept : destroyed).push_back(&gi);
    if (keep) layout.emplace_back(gi.spot, gi.info.placement);
  }
  ACCELSCHED_AGENT_RETURN_IF_ERROR(CheckNoOverlap(std::move(layout)));
  for (const GpuInstance* gi : destroyed) {
    ACCELSCHED_AGENT_RETURN_IF_ERROR(CheckNoProcesses(nvml, *gi));
  }

  // The changes, each checked; the first failure stops them.
  for (const GpuInstance* gi : destroyed) {
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Destroy(nvml, *gi));
  }
  for (const GpuInstance* gi : kept) {
    // An instance created by a re-layout that stopped before its compute
    // instance (the agent killed, a failure).
    absl::StatusOr<std::vector<nvmlComputeInstance_t>> cis =
        ComputeInstances(nvml, *gi);
    if (!cis.ok()) return cis.status();
    if (cis->empty()) {
      ACCELSCHED_AGENT_RETURN_IF_ERROR(CreateWholeComputeInstance(nvml, *gi));
    }
  }
  for (const NewInstance& n : created) {
    GpuInstance gi;
    gi.spot = n.spot;
    gi.profile = n.profile;
    ACCELSCHED_AGENT_RETURN_IF_ERROR(Prefixed(
        nvml.Check(
            nvml.nvmlDeviceCreateGpuInstanceWithPlacement(
                gpu.handle(), n.profile->info.id, &n.placement, &gi.handle),
            "nvmlDeviceCreateGpuInstanceWithPlacement"),
        absl::StrCat("creating GPU instance ", n.spot.ToString())));
    ACCELSCHED_AGENT_RETURN_IF_ERROR(CreateWholeComputeInstance(nvml, gi));
  }
  return diff;
}

std::string TruncatedRelayoutError(std::string error) {
  if (error.size() <= kMaxRelayoutErrorBytes) return error;
  constexpr absl::string_view kCut = "...";
  size_t keep = kMaxRelayoutErrorBytes - kCut.size();
  // Back to the first byte of a UTF-8 sequence (continuation bytes are
  // 10xxxxxx), so that the sequence cut is dropped whole.
  while (keep > 0 && (static_cast<unsigned char>(error[keep]) & 0xC0) == 0x80) {
    --keep;
  }
  error.resize(keep);
  error.append(kCut.data(), kCut.size());
  return error;
}

bool MigPlans::Handle(
    const google::protobuf::Map<std::string, v1::MigLayout>& plans,
    absl::Time now) {
  // In id order, so that the outcome does not depend on the map's.
  const std::map<std::string, v1::MigLayout> ordered(plans.begin(),
                                                     plans.end());
  // The server dropped these long ago and never sends them again; were one
  // sent, its deadline would refuse it.
  for (auto it = handled_.begin(); it != handled_.end();) {
    std::erase_if(it->second, [&](const PlanId& id) {
      return id.has_deadline() && now - id.deadline() > kForgetHandledPlan;
    });
    it = it->second.empty() ? handled_.erase(it) : std::next(it);
  }
  bool applied = false;
  for (const auto& [gpu_id, plan] : ordered) {
    const PlanId id{plan.generation(), plan.allocation_id(),
                    plan.deadline().seconds(), plan.deadline().nanos()};
    std::vector<PlanId>& handled = handled_[gpu_id];
    if (std::find(handled.begin(), handled.end(), id) != handled.end()) {
      continue;  // handled already, whatever came between
    }
    handled.push_back(id);
    absl::StatusOr<MigLayoutDiff> diff;
    const absl::Time deadline = id.deadline();
    // At its deadline a plan is refused whatever the margin: the server
    // drops it then.
    if (id.has_deadline() && (deadline <= now || deadline - now < margin_)) {
      // RFC 3339 in UTC, as protobuf's JSON and the server write times.
      const std::string when = absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ",
                                                deadline, absl::UTCTimeZone());
      const std::string left =
          deadline >= now
              ? absl::StrCat("is ", absl::FormatDuration(deadline - now),
                             " away")
              : absl::StrCat("passed ", absl::FormatDuration(now - deadline),
                             " ago");
      diff = absl::FailedPreconditionError(
          absl::StrCat("the plan's deadline ", when, " ", left, ", under the ",
                       absl::FormatDuration(margin_),
                       " margin (--mig_relayout_margin): not started"));
    } else {
      diff = applier_->Apply(gpu_id, plan);
    }
    if (!diff.ok()) {
      std::fprintf(stderr,
                   "accelsched-agent: MIG re-layout of %s (generation %llu) "
                   "failed: %s\n",
                   gpu_id.c_str(),
                   static_cast<unsigned long long>(plan.generation()),
                   diff.status().ToString().c_str());
      v1::MigRelayoutFailure& failure = failures_[gpu_id];
      failure.set_generation(plan.generation());
      failure.set_error(
          TruncatedRelayoutError(std::string(diff.status().message())));
      continue;
    }
    std::fprintf(stderr,
                 "accelsched-agent: MIG re-layout of %s (generation %llu) "
                 "applied: %zu kept, %zu destroyed, %zu created\n",
                 gpu_id.c_str(),
                 static_cast<unsigned long long>(plan.generation()),
                 diff->keep.size(), diff->destroy.size(), diff->create.size());
    applied = true;
  }
  return applied;
}

}  // namespace accelsched::agent
