#include "services/proto_convert.h"

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace accelsched {
namespace {

absl::Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void ToTimestamp(absl::Time t, google::protobuf::Timestamp* ts) {
  const int64_t ns = absl::ToUnixNanos(t);
  ts->set_seconds(ns / 1'000'000'000);
  ts->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

}  // namespace

absl::StatusOr<Node> NodeFromProto(const v1::Node& proto) {
  Node node;
  node.name = proto.name();
  node.labels.insert(proto.labels().begin(), proto.labels().end());
  node.schedulable = proto.schedulable();
  node.last_heartbeat = FromTimestamp(proto.last_heartbeat());
  node.devices.reserve(proto.devices_size());
  for (int i = 0; i < proto.devices_size(); ++i) {
    const v1::Device& p = proto.devices(i);
    if (!v1::DeviceClass_IsValid(p.device_class())) {
      return absl::InvalidArgumentError(
          absl::StrCat("node.devices[", i, "].device_class ", p.device_class(),
                       " is not a DeviceClass"));
    }
    Device d;
    d.id = p.id();
    d.device_class = static_cast<DeviceClass>(p.device_class());
    d.model = p.model();
    d.memory_bytes = p.memory_bytes();
    d.index = p.index();
    d.healthy = p.healthy();
    d.mig_enabled = p.mig_enabled();
    for (const v1::MigSlice& s : p.mig_slices()) {
      d.mig_slices.push_back(MigSlice{s.id(), s.profile(), s.start()});
    }
    d.tpu_slice_id = p.tpu_slice_id();
    d.tpu_topology = p.tpu_topology();
    node.devices.push_back(std::move(d));
  }
  return node;
}

void NodeToProto(const Node& node, v1::Node* proto) {
  proto->set_name(node.name);
  proto->mutable_labels()->insert(node.labels.begin(), node.labels.end());
  proto->set_schedulable(node.schedulable);
  ToTimestamp(node.last_heartbeat, proto->mutable_last_heartbeat());
  for (const Device& d : node.devices) {
    v1::Device* p = proto->add_devices();
    p->set_id(d.id);
    p->set_device_class(static_cast<v1::DeviceClass>(d.device_class));
    p->set_model(d.model);
    p->set_canonical_model(d.canonical_model);
    p->set_memory_bytes(d.memory_bytes);
    p->set_index(d.index);
    p->set_healthy(d.healthy);
    p->set_mig_enabled(d.mig_enabled);
    for (const MigSlice& s : d.mig_slices) {
      v1::MigSlice* ps = p->add_mig_slices();
      ps->set_id(s.id);
      ps->set_profile(s.profile);
      ps->set_start(s.start);
    }
    p->set_tpu_slice_id(d.tpu_slice_id);
    p->set_tpu_topology(d.tpu_topology);
  }
}

void CapacityToProto(const CapacityEntry& e, v1::CapacityEntry* proto) {
  proto->set_device_class(static_cast<v1::DeviceClass>(e.device_class));
  proto->set_model(e.model);
  proto->set_partition(e.partition);
  proto->set_total(e.total);
  proto->set_allocated(e.allocated);
  proto->set_free(e.free);
  proto->set_unhealthy(e.unhealthy);
}

}  // namespace accelsched
