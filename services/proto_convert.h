// Translation between the accelsched.v1 protos and core's types. Checks only
// what the proto can get wrong that core cannot see (enum values out of range);
// the rest is core's.
#ifndef ACCELSCHED_SERVICES_PROTO_CONVERT_H_
#define ACCELSCHED_SERVICES_PROTO_CONVERT_H_

#include "absl/status/statusor.h"
#include "accelsched/v1/accelsched.pb.h"
#include "core/book/allocation_book.h"
#include "core/catalog/device_stats.h"
#include "core/model/allocation_model.h"
#include "core/model/capacity.h"
#include "core/model/catalog_model.h"
#include "core/placement/placement.h"
#include "core/scheduler/replies.h"

namespace accelsched {

absl::StatusOr<Node> NodeFromProto(const v1::Node& proto);
// Device.mig_plan included (output only: NodeFromProto ignores it).
void NodeToProto(const Node& node, v1::Node* proto);
void MigPlanToProto(const MigPlan& plan, v1::MigLayout* proto);
void CapacityToProto(const CapacityEntry& entry, v1::CapacityEntry* proto);

// A heartbeat's device_stats, converted and checked by ValidateDeviceStats in
// the order of `ids` (its keys, sorted); a reading without a time gets `now`.
absl::StatusOr<DeviceStatsMap> DeviceStatsFromProto(
    const google::protobuf::Map<std::string, v1::DeviceStats>& proto,
    const std::vector<std::string>& ids, absl::Time now);
// Sets Device.stats and MigSlice.stats in `proto` from `stats`; ids that are
// not in the node are ignored.
void AttachDeviceStats(const DeviceStatsMap& stats, v1::Node* proto);

absl::StatusOr<AllocationRequest> AllocationRequestFromProto(
    const v1::AllocateRequest& proto);
// With the placements derived from it (core/placement/placement.h,
// services/kubernetes_placement.h) while it is ACTIVE, or is Explain's
// preview; an ended one has none (its devices may be another's now). The
// preview, which has no id, leaves id and state unset.
void AllocationToProto(const Allocation& allocation,
                       const PlacementOptions& placement,
                       v1::Allocation* proto);
void EventToProto(const Event& event, const PlacementOptions& placement,
                  v1::Event* proto);
void ExplainToProto(const ExplainResult& result,
                    const PlacementOptions& placement,
                    v1::ExplainResponse* proto);
void TenantStandingToProto(const TenantStanding& standing,
                           v1::TenantUsage* proto);

// Exactly one of allocation_id and request_id; INVALID_ARGUMENT otherwise.
template <typename Request>
absl::StatusOr<AllocationKey> AllocationKeyFromProto(const Request& proto);

absl::StatusOr<AllocationKey> AllocationKeyFromIds(
    const std::string& allocation_id, const std::string& request_id);

template <typename Request>
absl::StatusOr<AllocationKey> AllocationKeyFromProto(const Request& proto) {
  return AllocationKeyFromIds(proto.allocation_id(), proto.request_id());
}

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_PROTO_CONVERT_H_
