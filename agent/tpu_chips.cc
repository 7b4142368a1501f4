#include "agent/tpu_chips.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/files.h"

namespace accelsched::agent {
namespace {

// Google's PCI vendor id (tpu_info device.py:28, GOOGLE_PCI_VENDOR_ID).
constexpr absl::string_view kGoogleVendor = "0x1ae0";

// tpu_info/tpu_info/device.py:56-84 (ids), :213-218 (which use VFIO); model:
// the cloud.google.com/gke-tpu-accelerator value of the generation
// (ai-on-gke/tpu-device-plugin util.go AcceleratorGen). v2 and v3 have no GKE
// TPU VM node pools with a label of their own here, and no type in the
// registry: they are listed so that they are named in the error.
constexpr TpuPciId kTpuPciIds[] = {
    {"0x0027", "0x004e", "v2", "tpu-v2", false},
    {"0x0027", "0x004f", "v3", "tpu-v3", false},
    {"0x005e", "", "v4", "tpu-v4-podslice", false},
    {"0x0063", "", "v5e", "tpu-v5-lite-podslice", true},
    {"0x0062", "", "v5p", "tpu-v5p-slice", true},
    {"0x006f", "", "v6e", "tpu-v6e-slice", true},
    {"0x0076", "", "tpu7x", "tpu7x", true},
};

std::string ReadTrimmed(const std::filesystem::path& path) {
  absl::StatusOr<std::string> text = ReadWholeFile(path.string());
  if (!text.ok()) return "";
  return std::string(absl::StripAsciiWhitespace(*text));
}

const TpuPciId* Lookup(const std::string& device, const std::string& subsys) {
  for (const TpuPciId& id : kTpuPciIds) {
    if (device == id.device_id &&
        (*id.subsystem_device == '\0' || subsys == id.subsystem_device)) {
      return &id;
    }
  }
  return nullptr;
}

bool IsCharDevice(const std::filesystem::path& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// The single-host shape of `chips` chips: 2-D for v5e and v6e, 3-D for the
// others (the device plugin's getChipsPerDim: 1 -> 1,1,1; 4 -> 2,2,1;
// 8 -> 2,4,1).
std::string SingleHostTopology(absl::string_view generation, size_t chips) {
  const bool two_d = generation == "v5e" || generation == "v6e";
  switch (chips) {
    case 1:
      return two_d ? "1x1" : "1x1x1";
    case 4:
      return two_d ? "2x2" : "2x2x1";
    case 8:
      return two_d ? "2x4" : "2x4x1";
    default:
      return "";
  }
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

}  // namespace

absl::Span<const TpuPciId> TpuPciIds() { return kTpuPciIds; }

absl::Status TpuChips::Observe(Observation& out) {
  namespace fs = std::filesystem;
  const fs::path pci = fs::path(options_.sys_dir) / "bus/pci/devices";
  std::error_code ec;
  if (!fs::is_directory(pci, ec)) return absl::OkStatus();
  // Base address -> the chip's first function.
  struct Chip {
    const TpuPciId* id;
    std::string iommu_group;
  };
  std::map<std::string, Chip> chips;
  // Not a range-for: its increment throws on an error, this one reports it.
  for (fs::directory_iterator it(pci, ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::directory_entry& e = *it;
    if (ReadTrimmed(e.path() / "vendor") != kGoogleVendor) continue;
    const TpuPciId* id = Lookup(ReadTrimmed(e.path() / "device"),
                                ReadTrimmed(e.path() / "subsystem_device"));
    if (id == nullptr) continue;  // a Google function that is not a TPU
    const std::string address = e.path().filename().string();
    const std::string base = address.substr(0, address.rfind('.'));
    std::error_code no_group;  // v2-v4 have none
    const fs::path group = fs::read_symlink(e.path() / "iommu_group", no_group);
    chips.emplace(base, Chip{id, no_group ? "" : group.filename().string()});
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot list ", pci.string(), ": ", ec.message()));
  }
  if (chips.empty()) return absl::OkStatus();
  const TpuPciId* gen = chips.begin()->second.id;
  for (const auto& [base, chip] : chips) {
    if (chip.id->generation != gen->generation) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TPU chips of two generations on one host: ", gen->generation,
          " and ", chip.id->generation, " (", base, ")"));
    }
  }
  auto label = [&](const char* key) {
    auto it = options_.labels.find(key);
    return it == options_.labels.end() ? std::string() : it->second;
  };
  std::string model = label("cloud.google.com/gke-tpu-accelerator");
  if (model.empty()) model = gen->model;
  std::string topology = options_.topology;
  if (topology.empty()) topology = Env("TPU_TOPOLOGY");
  if (topology.empty()) topology = label("cloud.google.com/gke-tpu-topology");
  if (topology.empty())
    topology = SingleHostTopology(gen->generation, chips.size());
  std::string slice = options_.slice_id;
  if (slice.empty()) {
    std::vector<std::string> hosts =
        absl::StrSplit(Env("TPU_WORKER_HOSTNAMES"), ',', absl::SkipEmpty());
    slice = hosts.size() > 1 ? hosts[0] : options_.node_name;
  }
  int n = 0;
  for (const auto& [base, chip] : chips) {
    v1::Device d;
    d.set_id(absl::StrCat(options_.node_name, "-tpu", n));
    d.set_device_class(v1::GOOGLE_TPU);
    d.set_model(model);
    d.set_index(n);
    d.set_tpu_slice_id(slice);
    d.set_tpu_topology(topology);
    const fs::path node =
        chip.id->vfio ? fs::path(options_.dev_dir) / "vfio" / chip.iommu_group
                      : fs::path(options_.dev_dir) / absl::StrCat("accel", n);
    if ((chip.id->vfio && chip.iommu_group.empty()) || !IsCharDevice(node)) {
      out.unhealthy.insert(d.id());
    }
    out.devices.push_back(std::move(d));
    ++n;
  }
  return absl::OkStatus();
}

}  // namespace accelsched::agent
