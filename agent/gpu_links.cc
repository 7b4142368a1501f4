#include "agent/gpu_links.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"

namespace accelsched::agent {
namespace {

// A PCI address to compare: "domain:bus:device.function" in lower case with
// an 8-digit domain, so that an address spelled in upper case, or with the
// legacy 4-digit domain, still matches; else `bus_id` in lower case.
std::string PciKey(const char (&bus_id)[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]) {
  const std::string text(bus_id, strnlen(bus_id, sizeof(bus_id)));
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  char rest = 0;
  if (std::sscanf(text.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device,
                  &function, &rest) == 4) {
    return absl::StrFormat("%08x:%02x:%02x.%x", domain, bus, device, function);
  }
  return absl::AsciiStrToLower(text);
}

// The link kind of a PCIe common ancestor; empty for none (SYSTEM, or a level
// NVML may add later that this agent does not know).
const char* KindOfLevel(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
    case NVML_TOPOLOGY_SINGLE:
    case NVML_TOPOLOGY_MULTIPLE:
      return kPcieSwitch;
    case NVML_TOPOLOGY_HOSTBRIDGE:
    case NVML_TOPOLOGY_NODE:
      return kSameNuma;
    default:
      return "";
  }
}

// The most NVLinks the server takes in one DeviceLink.
constexpr int kMaxNvlinksPerLink = 64;

}  // namespace

const GpuLinks::LinksByUuid& GpuLinks::Read(const std::vector<Gpu>& gpus) {
  std::vector<std::string> uuids;
  uuids.reserve(gpus.size());
  for (const Gpu& g : gpus) uuids.push_back(g.uuid);
  const bool same = reads_ > 0 && uuids == uuids_;
  if (same && complete_ && ++passes_ < kPassesBetweenReads) return links_;
  LinksByUuid links;
  const bool complete = ReadFromNvml(gpus, links);
  ++reads_;
  passes_ = 0;
  if (!same || complete || !complete_) {
    links_ = std::move(links);
    uuids_ = std::move(uuids);
    complete_ = complete;
  }
  return links_;
}

bool GpuLinks::ReadFromNvml(const std::vector<Gpu>& gpus,
                            LinksByUuid& out) const {
  const NvmlLibrary& nvml = nvml_;
  const size_t n = gpus.size();
  bool complete = true;
  // NOT_SUPPORTED: the GPU or driver does not have it, which is an answer;
  // any other error is a failure worth another read.
  auto answered = [&](nvmlReturn_t r) {
    if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED) complete = false;
    return r == NVML_SUCCESS;
  };

  // Each GPU's PCI address, to tell which GPU an NVLink reaches; a GPU whose
  // address does not read is reached by no link (its own links still count).
  std::map<std::string, size_t> gpu_at;
  if (nvml.nvmlDeviceGetPciInfo_v3 != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      nvmlPciInfo_t pci = {};
      if (answered(nvml.nvmlDeviceGetPciInfo_v3(gpus[i].handle, &pci))) {
        gpu_at.emplace(PciKey(pci.busId), i);
      }
    }
  }

  // direct[i][j]: NVLinks from GPU i whose remote end is GPU j;
  // switch_links[i]: those whose remote end is an NVSwitch.
  std::vector<std::vector<int>> direct(n, std::vector<int>(n, 0));
  std::vector<int> switch_links(n, 0);
  if (nvml.nvmlDeviceGetNvLinkState != nullptr) {
    for (size_t i = 0; i < n; ++i) {
      const nvmlDevice_t gpu = gpus[i].handle;
      for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
        // INVALID_ARGUMENT or NOT_SUPPORTED: no such link (a GPU with fewer
        // than NVML_NVLINK_MAX_LINKS, or none); any other error leaves this
        // link out and the next ones are still asked.
        nvmlEnableState_t active = NVML_FEATURE_DISABLED;
        const nvmlReturn_t state =
            nvml.nvmlDeviceGetNvLinkState(gpu, link, &active);
        if (state != NVML_ERROR_INVALID_ARGUMENT && !answered(state)) continue;
        if (state != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
        // Without the remote type (an older driver, or NVML cannot say) the
        // remote PCI address decides: a switch's matches no GPU.
        nvmlIntNvLinkDeviceType_t type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
        if (nvml.nvmlDeviceGetNvLinkRemoteDeviceType != nullptr &&
            !answered(
                nvml.nvmlDeviceGetNvLinkRemoteDeviceType(gpu, link, &type))) {
          type = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
        }
        if (type == NVML_NVLINK_DEVICE_TYPE_SWITCH) {
          ++switch_links[i];
          continue;
        }
        if (type != NVML_NVLINK_DEVICE_TYPE_GPU &&
            type != NVML_NVLINK_DEVICE_TYPE_UNKNOWN) {
          continue;  // a CPU (IBM NPU)
        }
        nvmlPciInfo_t remote = {};
        if (nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2 == nullptr ||
            !answered(
                nvml.nvmlDeviceGetNvLinkRemotePciInfo_v2(gpu, link, &remote))) {
          continue;
        }
        auto peer = gpu_at.find(PciKey(remote.busId));
        if (peer != gpu_at.end() && peer->second != i) {
          ++direct[i][peer->second];
        }
      }
    }
  }

  // Each pair once, so that both GPUs report the same link.
  std::vector<std::vector<v1::DeviceLink>> pair(n,
                                                std::vector<v1::DeviceLink>(n));
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      v1::DeviceLink& link = pair[i][j];
      // A link is seen from both ends; the end that saw more wins (the other
      // may have failed to answer for some).
      int count = std::max(direct[i][j], direct[j][i]);
      if (switch_links[i] > 0 && switch_links[j] > 0) {
        count += std::min(switch_links[i], switch_links[j]);
      }
      if (count > 0) {
        link.set_kind(kNvLink);
        // The server refuses a count above 64 (kMaxNvlinksPerLink in
        // core/catalog/node_validation.h), and with it the whole node.
        link.set_count(std::min(count, kMaxNvlinksPerLink));
      } else if (nvml.nvmlDeviceGetTopologyCommonAncestor != nullptr) {
        nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
        if (answered(nvml.nvmlDeviceGetTopologyCommonAncestor(
                gpus[i].handle, gpus[j].handle, &level))) {
          link.set_kind(KindOfLevel(level));
        }
      }
      pair[j][i] = link;
    }
  }

  out.clear();
  for (size_t i = 0; i < n; ++i) {
    std::vector<v1::DeviceLink>& links = out[gpus[i].uuid];
    for (size_t j = 0; j < n; ++j) {
      if (j == i || pair[i][j].kind().empty()) continue;
      v1::DeviceLink& link = links.emplace_back(pair[i][j]);
      link.set_peer_device_id(gpus[j].uuid);
    }
  }
  return complete;
}

}  // namespace accelsched::agent
