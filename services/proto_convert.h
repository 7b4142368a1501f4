// Translation between the accelsched.v1 protos and core's types. Checks only
// what the proto can get wrong that core cannot see (enum values out of range);
// the rest is core's.
#ifndef ACCELSCHED_SERVICES_PROTO_CONVERT_H_
#define ACCELSCHED_SERVICES_PROTO_CONVERT_H_

#include "absl/status/statusor.h"
#include "accelsched/v1/accelsched.pb.h"
#include "core/capacity.h"
#include "core/catalog_model.h"

namespace accelsched {

absl::StatusOr<Node> NodeFromProto(const v1::Node& proto);
void NodeToProto(const Node& node, v1::Node* proto);
void CapacityToProto(const CapacityEntry& entry, v1::CapacityEntry* proto);

}  // namespace accelsched

#endif  // ACCELSCHED_SERVICES_PROTO_CONVERT_H_
