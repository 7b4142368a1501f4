// How the GPUs of a node reach each other, read from NVML: the links the
// agent reports in Device.links (accelsched.proto DeviceLink), one per peer
// GPU at most, the best there is:
//
//   "NVLINK"       NVLinks between the two GPUs, direct (a link whose remote
//                  PCI address is the peer's) or through the NVSwitch fabric
//                  (both GPUs have links whose remote end is a switch: every
//                  GPU on the fabric reaches every other, at the fewer of the
//                  two GPUs' switch links), counted together;
//   "PCIE_SWITCH"  no NVLink, but nvmlDeviceGetTopologyCommonAncestor says
//                  INTERNAL, SINGLE or MULTIPLE (no host bridge between);
//   "SAME_NUMA"    no NVLink, HOSTBRIDGE or NODE (the same CPU);
//   none           SYSTEM (different CPUs), or NVML cannot tell.
//
// NVLinks are walked as Slurm's gpu_nvml.c and NVIDIA/go-gpuallocator
// internal/links/device.go walk them: every link index below
// NVML_NVLINK_MAX_LINKS, skipping a link NVML refuses (INVALID_ARGUMENT or
// NOT_SUPPORTED past the last link of a GPU with fewer, or any other error)
// or reports inactive.
#ifndef ACCELSCHED_AGENT_GPU_LINKS_H_
#define ACCELSCHED_AGENT_GPU_LINKS_H_

#include <map>
#include <string>
#include <vector>

#include "accelsched/v1/accelsched.pb.h"
#include "agent/nvml_library.h"

namespace accelsched::agent {

// DeviceLink.kind values.
inline constexpr char kNvLink[] = "NVLINK";
inline constexpr char kPcieSwitch[] = "PCIE_SWITCH";
inline constexpr char kSameNuma[] = "SAME_NUMA";

// The links between the GPUs of one node. Links are hardware, but NVLinks
// through NVSwitches come up only once the fabric is trained, and any NVML
// query may fail for a while: so they are read again when the set of GPUs
// changes, when the last read was incomplete (a query failed), and every
// kPassesBetweenReads calls; an incomplete read never replaces a complete
// one of the same GPUs, so that one transient NVML error cannot change the
// inventory (and re-register the node). One link per pair: a node of more
// than 64 GPUs, all linked, would pass the server's 4,096 links per node
// (core/catalog/node_validation.h) and be refused; no board has as many. Not
// thread-safe (the agent's one loop calls it).
class GpuLinks {
 public:
  // One whole GPU seen in this pass.
  struct Gpu {
    nvmlDevice_t handle = nullptr;
    std::string uuid;
  };
  using LinksByUuid = std::map<std::string, std::vector<v1::DeviceLink>>;

  // The same GPUs are read again every this many Read calls: every five
  // minutes at the agent's default --interval of 10 s.
  static constexpr int kPassesBetweenReads = 30;

  // `nvml` must outlive this.
  explicit GpuLinks(const NvmlLibrary& nvml) : nvml_(nvml) {}
  GpuLinks(const GpuLinks&) = delete;
  GpuLinks& operator=(const GpuLinks&) = delete;

  // Each GPU of `gpus` (this pass's GPUs, in NVML index order) by UUID, with
  // its links to the others in the order of `gpus`, one per peer at most
  // (peer_device_id is the peer's UUID); a GPU with no link has an empty
  // list. Reads NVML as the class comment says; otherwise returns the last
  // answer as it was, even though a handle may have changed. Never fails: a
  // function the driver lacks, or a query NVML refuses, leaves out the links
  // it would have shown. The reference is valid until the next call.
  const LinksByUuid& Read(const std::vector<Gpu>& gpus);

  // How many times Read has read NVML (for tests).
  int reads() const { return reads_; }

 private:
  // Reads every pair's link from NVML into `out`; false when a query failed
  // (beyond a link or level the GPU does not have).
  bool ReadFromNvml(const std::vector<Gpu>& gpus, LinksByUuid& out) const;

  const NvmlLibrary& nvml_;
  std::vector<std::string> uuids_;  // of the GPUs `links_` was read for
  LinksByUuid links_;
  bool complete_ = false;  // whether links_ was read without a failure
  int passes_ = 0;         // Read calls since links_ was read
  int reads_ = 0;
};

}  // namespace accelsched::agent

#endif  // ACCELSCHED_AGENT_GPU_LINKS_H_
