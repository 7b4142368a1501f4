// A placement written as the Kubernetes JSON a client applies unchanged:
// Placement.pod_spec_patch and Placement.resource_claim. Produced here only,
// so that every client (the Go package in clients/go, grpcurl users) gets the
// same thing.
#ifndef ACCELSCHED_SERVICES_KUBERNETES_PLACEMENT_H_
#define ACCELSCHED_SERVICES_KUBERNETES_PLACEMENT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "accelsched/v1/accelsched.pb.h"
#include "core/model/allocation_model.h"
#include "core/placement/placement.h"

namespace accelsched {

// NVIDIA's DRA driver for GPUs (NVIDIA/k8s-dra-driver-gpu 22407113,
// cmd/gpu-kubelet-plugin/main.go:42; the DeviceClasses of its Helm chart,
// deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-{gpu,mig}.yaml).
inline constexpr char kNvidiaDraDriver[] = "gpu.nvidia.com";
inline constexpr char kNvidiaGpuDeviceClass[] = "gpu.nvidia.com";
inline constexpr char kNvidiaMigDeviceClass[] = "mig.nvidia.com";
// Kubernetes' limit on the devices of one claim (k8s.io/api v0.34
// resource/v1/types.go:750, DeviceRequestsMaxSize = AllocationResultsMaxSize).
inline constexpr size_t kMaxClaimDevices = 32;

// A JSON strategic-merge patch for a PodSpec: required node affinity (one
// term), tolerations, and on the container named `container_name` requests
// and limits of the resource and the environment. Without a name the
// container entry has none: "the first container" to accelsched's clients,
// not a patch Kubernetes' own strategic merge accepts. The content is
// core/placement/placement.h's: propeller's rules with the differences that
// docs/concepts/placement.md's table lists (label values, the MIG mixed
// strategy, the pin).
std::string PodSpecPatch(const Placement& placement,
                         absl::string_view container_name);

// JSON of a resource.k8s.io/v1 ResourceClaim named after the allocation
// (generateName for Explain's preview, which has no id) with one request per
// device of `placement`, each selecting it by UUID (a MIG device by its MIG
// UUID) through NVIDIA's DRA driver. Empty for other device classes, which
// have no DRA driver here, and for more than kMaxClaimDevices devices.
//
// A share's claim is the GPU's, not the allocation's: the driver gives a
// device to one claim at a time, so the pods sharing a GPU share its claim
// (as the driver's demo/specs/quickstart/v1/gpu-test3.yaml shares one by
// resourceClaimName). It is named ShareClaimName(GPU, its sharing) and
// carries the
// driver's GpuConfig with the GPU's sharing strategy and no default limits
// (the daemon's limits are the whole GPU; each pod's MPS limits are in its
// environment, placement.h), so every share of that GPU gets the same bytes.
// Empty when the GPU's id lowercased is no DNS subdomain name.
std::string ResourceClaim(const Allocation& allocation,
                          const Placement& placement);

// "accelsched-share-", the mode ("mps-", "time-slicing-") and `device_id`
// lowercased; empty when that is no DNS subdomain name (a name Kubernetes
// takes for an object). The mode is in the name so that a GPU registered
// again with another mode (possible only once no share holds it) gets a new
// claim: a claim left from the old mode would still carry its config.
std::string ShareClaimName(absl::string_view device_id, GpuSharing sharing);

// `placement` of `allocation` with both of the above.
void PlacementToProto(const Allocation& allocation, const Placement& placement,
                      v1::Placement* proto);

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_KUBERNETES_PLACEMENT_H_
