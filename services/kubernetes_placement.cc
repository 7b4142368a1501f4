#include "services/kubernetes_placement.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "services/kubernetes_json.pb.h"

namespace accelsched {
namespace {

std::string ToJson(const google::protobuf::Message& m) {
  std::string out;
  // Printing fails only for values JSON cannot hold (NaN, infinities), which
  // these messages cannot; the empty string would tell a client "none".
  if (!google::protobuf::util::MessageToJsonString(m, &out).ok()) return "";
  return out;
}

// A CEL string literal: the value between double quotes, escaped as CEL
// reads it (cel-spec, "String and Bytes Values").
std::string CelString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

}  // namespace

std::string PodSpecPatch(const Placement& p, absl::string_view container_name) {
  kubernetes::PodSpecPatch patch;
  if (!p.node_affinity.empty()) {
    kubernetes::NodeSelectorTerm* term =
        patch.mutable_affinity()
            ->mutable_node_affinity()
            ->mutable_required_during_scheduling_ignored_during_execution()
            ->add_node_selector_terms();
    for (const NodeSelectorRequirement& r : p.node_affinity) {
      kubernetes::NodeSelectorRequirement* e = term->add_match_expressions();
      e->set_key(r.key);
      e->set_operator_(r.op);
      for (const std::string& v : r.values) e->add_values(v);
    }
  }
  for (const Toleration& t : p.tolerations) {
    kubernetes::Toleration* o = patch.add_tolerations();
    o->set_key(t.key);
    o->set_operator_(t.op);
    o->set_value(t.value);
    o->set_effect(t.effect);
  }
  kubernetes::Container* container = patch.add_containers();
  container->set_name(std::string(container_name));
  // Propeller sets requests equal to limits for an accelerator it is given
  // one of (container_helper.go:73-86); Kubernetes requires it of extended
  // resources.
  const std::string count = absl::StrCat(p.resource_count);
  (*container->mutable_resources()->mutable_limits())[p.resource_name] = count;
  (*container->mutable_resources()->mutable_requests())[p.resource_name] =
      count;
  for (const auto& [name, value] : p.env) {
    kubernetes::EnvVar* e = container->add_env();
    e->set_name(name);
    e->set_value(value);
  }
  return ToJson(patch);
}

std::string ResourceClaim(const Allocation& a, const Placement& p) {
  if (a.device_class != DeviceClass::kNvidiaGpu || p.devices.empty() ||
      p.devices.size() > kMaxClaimDevices) {
    return "";
  }
  const std::string attributes =
      absl::StrCat("device.attributes[", CelString(kNvidiaDraDriver), "]");
  kubernetes::ResourceClaim claim;
  claim.set_api_version("resource.k8s.io/v1");
  claim.set_kind("ResourceClaim");
  const std::string name = absl::StrCat("accelsched-", a.id);
  if (a.id.empty()) {
    claim.mutable_metadata()->set_generate_name(name);
  } else {
    claim.mutable_metadata()->set_name(name);
  }
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const AllocatedDevice& d = p.devices[i];
    const bool mig = !d.mig_slice_id.empty();
    kubernetes::DeviceRequest* request =
        claim.mutable_spec()->mutable_devices()->add_requests();
    request->set_name(absl::StrCat(mig ? "mig-" : "gpu-", i));
    kubernetes::ExactDeviceRequest* exactly = request->mutable_exactly();
    exactly->set_device_class_name(mig ? kNvidiaMigDeviceClass
                                       : kNvidiaGpuDeviceClass);
    exactly->set_allocation_mode("ExactCount");
    exactly->set_count(1);
    // The DeviceClass's own selector (type "gpu" or "mig") runs first. A MIG
    // device the driver creates on demand (its DynamicMIG gate) has no uuid,
    // and reading a missing attribute aborts the allocation: hence the guard.
    exactly->add_selectors()->mutable_cel()->set_expression(
        mig ? absl::StrCat("\"uuid\" in ", attributes, " && ", attributes,
                           ".uuid == ", CelString(d.mig_slice_id))
            : absl::StrCat(attributes, ".uuid == ", CelString(d.device_id)));
  }
  return ToJson(claim);
}

void PlacementToProto(const Allocation& a, const Placement& p,
                      v1::Placement* proto) {
  proto->mutable_node_selector()->insert(p.node_selector.begin(),
                                         p.node_selector.end());
  proto->set_resource_name(p.resource_name);
  proto->set_resource_count(p.resource_count);
  proto->mutable_env()->insert(p.env.begin(), p.env.end());
  for (const Toleration& t : p.tolerations) {
    v1::Toleration* pt = proto->add_tolerations();
    pt->set_key(t.key);
    pt->set_operator_(t.op);
    pt->set_value(t.value);
    pt->set_effect(t.effect);
  }
  for (const NodeSelectorRequirement& r : p.node_affinity) {
    v1::NodeSelectorRequirement* pr = proto->add_node_affinity();
    pr->set_key(r.key);
    pr->set_operator_(r.op);
    for (const std::string& v : r.values) pr->add_values(v);
  }
  proto->set_pod_spec_patch(PodSpecPatch(p, a.container_name));
  proto->set_resource_claim(ResourceClaim(a, p));
}

}  // namespace accelsched
