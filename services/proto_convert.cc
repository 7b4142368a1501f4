#include "services/proto_convert.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/base/status_macros.h"
#include "core/catalog/node_validation.h"
#include "core/placement/placement.h"
#include "google/protobuf/util/time_util.h"
#include "services/kubernetes_placement.h"

namespace accelsched {
namespace {

using ::google::protobuf::util::TimeUtil;

absl::Time FromTimestamp(const google::protobuf::Timestamp& ts) {
  return absl::FromUnixSeconds(ts.seconds()) + absl::Nanoseconds(ts.nanos());
}

void ToTimestamp(absl::Time t, google::protobuf::Timestamp* ts) {
  const int64_t ns = absl::ToUnixNanos(t);
  ts->set_seconds(ns / 1'000'000'000);
  ts->set_nanos(static_cast<int32_t>(ns % 1'000'000'000));
}

absl::Duration FromDuration(const google::protobuf::Duration& d) {
  return absl::Seconds(d.seconds()) + absl::Nanoseconds(d.nanos());
}

void DeviceStatsToProto(const DeviceStats& s, v1::DeviceStats* proto) {
  if (s.utilization.has_value()) proto->set_utilization(*s.utilization);
  proto->set_memory_used_bytes(s.memory_used_bytes);
  proto->set_temperature_celsius(s.temperature_celsius);
  proto->set_power_watts(s.power_watts);
  ToTimestamp(s.time, proto->mutable_time());
}

void AddPlacements(const Allocation& a, const PlacementOptions& options,
                   v1::Allocation* proto) {
  const std::vector<Placement> per_node = BuildNodePlacements(a, options);
  if (per_node.size() == 1) {
    // One node: the allocation's placement is that node's.
    PlacementToProto(a, per_node[0], proto->add_placements());
    *proto->mutable_placement() = proto->placements(0);
    return;
  }
  PlacementToProto(a, BuildPlacement(a, options), proto->mutable_placement());
  for (const Placement& p : per_node) {
    PlacementToProto(a, p, proto->add_placements());
  }
}

NodeResources ResourcesFromProto(const v1::NodeResources& proto) {
  return NodeResources{proto.cpu_milli(), proto.memory_bytes(), proto.pods()};
}

void ResourcesToProto(const NodeResources& r, v1::NodeResources* proto) {
  proto->set_cpu_milli(r.cpu_milli);
  proto->set_memory_bytes(r.memory_bytes);
  // Validated to at most kMaxPods (node_resources.h): fits an int32.
  proto->set_pods(static_cast<int32_t>(r.pods));
}

}  // namespace

absl::StatusOr<Node> NodeFromProto(const v1::Node& proto) {
  Node node;
  node.name = proto.name();
  node.labels.insert(proto.labels().begin(), proto.labels().end());
  node.schedulable = proto.schedulable();
  node.last_heartbeat = FromTimestamp(proto.last_heartbeat());
  // available is output only: ignored here.
  if (proto.has_allocatable()) {
    node.allocatable = ResourcesFromProto(proto.allocatable());
  }
  node.devices.reserve(proto.devices_size());
  for (int i = 0; i < proto.devices_size(); ++i) {
    const v1::Device& p = proto.devices(i);
    if (!v1::DeviceClass_IsValid(p.device_class())) {
      return absl::InvalidArgumentError(
          absl::StrCat("node.devices[", i, "].device_class ", p.device_class(),
                       " is not a DeviceClass"));
    }
    if (!v1::GpuSharing_IsValid(p.sharing())) {
      return absl::InvalidArgumentError(absl::StrCat("node.devices[", i,
                                                     "].sharing ", p.sharing(),
                                                     " is not a GpuSharing"));
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
    d.sharing = static_cast<GpuSharing>(p.sharing());
    for (int j = 0; j < p.links_size(); ++j) {
      const v1::DeviceLink& pl = p.links(j);
      std::optional<LinkKind> kind = ParseLinkKind(pl.kind());
      if (!kind.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("node.devices[", i, "].links[", j, "].kind \"",
                         pl.kind(), "\" is not one of ", LinkKindNames()));
      }
      d.links.push_back(DeviceLink{pl.peer_device_id(), *kind, pl.count()});
    }
    node.devices.push_back(std::move(d));
  }
  return node;
}

void NodeToProto(const Node& node, v1::Node* proto) {
  proto->set_name(node.name);
  proto->mutable_labels()->insert(node.labels.begin(), node.labels.end());
  proto->set_schedulable(node.schedulable);
  ToTimestamp(node.last_heartbeat, proto->mutable_last_heartbeat());
  if (node.allocatable.has_value()) {
    ResourcesToProto(*node.allocatable, proto->mutable_allocatable());
  }
  if (node.available.has_value()) {
    ResourcesToProto(*node.available, proto->mutable_available());
    if (node.allocatable.has_value()) {
      proto->set_overcommitted(
          OvercommitNote(*node.available, *node.allocatable));
    }
  }
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
    p->set_sharing(static_cast<v1::GpuSharing>(d.sharing));
    for (const DeviceLink& l : d.links) {
      v1::DeviceLink* pl = p->add_links();
      pl->set_peer_device_id(l.peer_device_id);
      pl->set_kind(std::string(LinkKindName(l.kind)));
      pl->set_count(l.count);
    }
    if (d.mig_plan.has_value())
      MigPlanToProto(*d.mig_plan, p->mutable_mig_plan());
  }
}

void MigPlanToProto(const MigPlan& plan, v1::MigLayout* proto) {
  for (const MigSlice& s : plan.slices) {
    v1::MigSlice* ps = proto->add_slices();
    ps->set_id(s.id);
    ps->set_profile(s.profile);
    ps->set_start(s.start);
  }
  proto->set_generation(plan.generation);
  proto->set_allocation_id(plan.allocation_id);
  ToTimestamp(plan.deadline, proto->mutable_deadline());
}

absl::StatusOr<DeviceStatsMap> DeviceStatsFromProto(
    const google::protobuf::Map<std::string, v1::DeviceStats>& proto,
    const std::vector<std::string>& ids, absl::Time now) {
  DeviceStatsMap out;
  out.reserve(ids.size());
  for (const std::string& id : ids) {
    const v1::DeviceStats& p = proto.at(id);
    DeviceStats s;
    if (p.has_utilization()) s.utilization = p.utilization();
    s.memory_used_bytes = p.memory_used_bytes();
    s.temperature_celsius = p.temperature_celsius();
    s.power_watts = p.power_watts();
    const std::string field =
        absl::StrCat("device_stats[\"", absl::CHexEscape(id), "\"]");
    if (p.has_time() &&
        (p.time().seconds() < TimeUtil::kTimestampMinSeconds ||
         p.time().seconds() > TimeUtil::kTimestampMaxSeconds ||
         p.time().nanos() < 0 || p.time().nanos() > 999'999'999)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".time is not a valid Timestamp"));
    }
    s.time = p.has_time() ? FromTimestamp(p.time()) : now;
    RETURN_IF_ERROR(ValidateDeviceStats(s, field));
    out.emplace(id, s);
  }
  return out;
}

void AttachDeviceStats(const DeviceStatsMap& stats, v1::Node* proto) {
  if (stats.empty()) return;
  for (v1::Device& d : *proto->mutable_devices()) {
    if (auto it = stats.find(d.id()); it != stats.end()) {
      DeviceStatsToProto(it->second, d.mutable_stats());
    }
    for (v1::MigSlice& s : *d.mutable_mig_slices()) {
      if (auto it = stats.find(s.id()); it != stats.end()) {
        DeviceStatsToProto(it->second, s.mutable_stats());
      }
    }
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
  proto->set_free_compute_milli(e.free_compute_milli);
  proto->set_free_memory_bytes(e.free_memory_bytes);
}

absl::StatusOr<AllocationRequest> AllocationRequestFromProto(
    const v1::AllocateRequest& proto) {
  // An absent accelerator reads as the default one: any NVIDIA GPU.
  const v1::Accelerator& acc = proto.accelerator();
  if (!v1::DeviceClass_IsValid(acc.device_class())) {
    return absl::InvalidArgumentError(absl::StrCat("accelerator.device_class ",
                                                   acc.device_class(),
                                                   " is not a DeviceClass"));
  }
  AllocationRequest req;
  req.request_id = proto.request_id();
  req.device = acc.device();
  req.alternative_devices.assign(proto.alternative_devices().begin(),
                                 proto.alternative_devices().end());
  req.device_class = static_cast<DeviceClass>(acc.device_class());
  switch (acc.partition_size_value_case()) {
    case v1::Accelerator::kUnpartitioned:
      req.partition_kind = acc.unpartitioned() ? PartitionKind::kUnpartitioned
                                               : PartitionKind::kUnset;
      break;
    case v1::Accelerator::kPartitionSize:
      req.partition_kind = acc.partition_size().empty()
                               ? PartitionKind::kUnset
                               : PartitionKind::kPartitionSize;
      req.partition_size = acc.partition_size();
      break;
    case v1::Accelerator::PARTITION_SIZE_VALUE_NOT_SET:
      break;
  }
  req.count = proto.count();
  req.node_selector.insert(proto.node_selector().begin(),
                           proto.node_selector().end());
  req.tenant = proto.tenant();
  req.container_name = proto.container_name();
  req.priority = proto.priority();
  req.lease = FromDuration(proto.lease());
  req.expected_duration = FromDuration(proto.expected_duration());
  req.queue = proto.queue();
  req.replicas = proto.replicas();
  req.topology_key = proto.topology_key();
  req.required_topology = proto.required_topology();
  req.preferred_topology = proto.preferred_topology();
  if (proto.has_pod_resources()) {
    req.pod_resources = ResourcesFromProto(proto.pod_resources());
  }
  if (proto.has_share()) {
    req.share = GpuShare{proto.share().compute_milli(),
                         proto.share().memory_bytes(), proto.share().group()};
  }
  return req;
}

void AllocationToProto(const Allocation& a, const PlacementOptions& placement,
                       v1::Allocation* proto) {
  proto->set_id(a.id);
  proto->set_request_id(a.request_id);
  proto->set_state(static_cast<v1::AllocationState>(a.state));
  proto->set_node(a.node);
  for (const AllocatedDevice& d : a.devices) {
    v1::AllocatedDevice* p = proto->add_devices();
    p->set_node(d.node);
    p->set_device_id(d.device_id);
    p->set_mig_slice_id(d.mig_slice_id);
    p->set_profile(d.profile);
    if (d.share.has_value()) {
      p->mutable_share()->set_compute_milli(
          static_cast<int32_t>(d.share->compute_milli));
      p->mutable_share()->set_memory_bytes(d.share->memory_bytes);
      p->mutable_share()->set_group(d.share->group);
    }
  }
  // An ended allocation's devices may be someone else's now: no placement
  // to start a pod with.
  if (a.live() || a.id.empty()) AddPlacements(a, placement, proto);
  proto->set_tenant(a.tenant);
  proto->set_model(a.model);
  proto->set_priority(a.priority);
  proto->set_queue_position(a.queue_position);
  proto->set_pending_reason(a.pending_reason);
  if (a.estimated_start.has_value()) {
    ToTimestamp(*a.estimated_start, proto->mutable_estimated_start());
  }
  proto->set_preempted_by(a.preempted_by);
  if (a.pod_resources.has_value()) {
    ResourcesToProto(*a.pod_resources, proto->mutable_pod_resources());
  }
  if (a.expected_duration > absl::ZeroDuration()) {
    // Validated: at most kMaxExpectedDuration, whole nanoseconds.
    *proto->mutable_expected_duration() = TimeUtil::NanosecondsToDuration(
        absl::ToInt64Nanoseconds(a.expected_duration));
  }
  if (!a.id.empty()) {
    ToTimestamp(a.created_at, proto->mutable_created_at());
    ToTimestamp(a.expires_at, proto->mutable_expires_at());
    if (!a.pending()) ToTimestamp(a.admitted_at, proto->mutable_admitted_at());
  }
}

void EventToProto(const Event& e, const PlacementOptions& placement,
                  v1::Event* proto) {
  proto->set_type(static_cast<v1::Event::Type>(e.type));
  ToTimestamp(e.time, proto->mutable_time());
  if (!e.allocation.id.empty())
    AllocationToProto(e.allocation, placement, proto->mutable_allocation());
  proto->set_node(e.node);
  proto->set_reason(e.reason);
  proto->set_sequence(e.sequence);
}

void ExplainToProto(const ExplainResult& r, const PlacementOptions& placement,
                    v1::ExplainResponse* proto) {
  proto->set_feasible(r.feasible);
  if (r.feasible)
    AllocationToProto(r.would_allocate, placement,
                      proto->mutable_would_allocate());
  for (const NodeVerdict& v : r.explanation.nodes) {
    v1::NodeVerdict* p = proto->add_nodes();
    p->set_node(v.node);
    for (const std::string& reason : v.reasons) p->add_reasons(reason);
  }
  proto->set_summary(r.explanation.summary);
  proto->set_queue_position(r.queue_position);
  proto->set_pending_reason(r.pending_reason);
  if (r.estimated_start.has_value()) {
    ToTimestamp(*r.estimated_start, proto->mutable_estimated_start());
  }
  for (const RankedPlacement& s : r.scores) {
    v1::NodeScore* p = proto->add_scores();
    p->set_node(s.node);
    p->set_score(s.score.total);
    p->set_detail(absl::StrCat(s.pool.model, ": ", DescribeScore(s.score), "; ",
                               DescribeDuration(r.expected)));
  }
  for (const CycleStep& step : r.steps) {
    v1::CycleStep* p = proto->add_steps();
    p->set_plugin(step.plugin);
    p->set_extension_point(step.extension_point);
    p->set_nodes_in(step.nodes_in);
    p->set_nodes_out(step.nodes_out);
    p->set_detail(step.detail);
  }
}

void TenantStandingToProto(const TenantStanding& t, v1::TenantUsage* proto) {
  proto->set_tenant(t.tenant);
  proto->set_dominant_share(t.dominant_share);
  proto->set_weight(t.weight);
  proto->set_cohort(t.cohort);
  proto->set_pending(static_cast<int32_t>(t.pending));
  for (const TenantStanding::Pool& p : t.pools) {
    v1::PoolUsage* u = proto->add_usage();
    u->set_device_class(static_cast<v1::DeviceClass>(p.pool.device_class));
    u->set_model(p.pool.model);
    u->set_partition(p.pool.partition);
    // The whole-unit fields round down; the _milli ones are exact.
    u->set_used(p.used_milli / kGpuMilli);
    u->set_nominal_quota(p.nominal_milli < 0 ? -1
                                             : p.nominal_milli / kGpuMilli);
    u->set_borrowed(p.borrowed_milli / kGpuMilli);
    u->set_used_milli(p.used_milli);
    u->set_nominal_quota_milli(p.nominal_milli);
    u->set_borrowed_milli(p.borrowed_milli);
  }
}

absl::StatusOr<AllocationKey> AllocationKeyFromIds(
    const std::string& allocation_id, const std::string& request_id) {
  if (allocation_id.empty() == request_id.empty()) {
    return absl::InvalidArgumentError(
        "exactly one of allocation_id and request_id is required");
  }
  if (!allocation_id.empty()) {
    RETURN_IF_ERROR(ValidateId(allocation_id, "allocation_id"));
  } else {
    RETURN_IF_ERROR(ValidateId(request_id, "request_id"));
  }
  return AllocationKey{allocation_id, request_id};
}

}  // namespace accelsched
