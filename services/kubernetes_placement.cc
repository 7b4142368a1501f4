#include "services/kubernetes_placement.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/labels.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace accelsched {
namespace {

// RapidJSON's streaming writer: keys come out in the order written, so one
// placement always gives the same bytes, and no document is built.
class JsonWriter {
 public:
  JsonWriter() : writer_(buffer_) {}
  JsonWriter& Key(absl::string_view key) {
    writer_.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
    return *this;
  }
  JsonWriter& String(absl::string_view value) {
    writer_.String(value.data(),
                   static_cast<rapidjson::SizeType>(value.size()));
    return *this;
  }
  JsonWriter& Field(absl::string_view key, absl::string_view value) {
    return Key(key).String(value);
  }
  JsonWriter& Int(int value) {
    writer_.Int(value);
    return *this;
  }
  JsonWriter& StartObject() {
    writer_.StartObject();
    return *this;
  }
  JsonWriter& EndObject() {
    writer_.EndObject();
    return *this;
  }
  JsonWriter& StartArray() {
    writer_.StartArray();
    return *this;
  }
  JsonWriter& EndArray() {
    writer_.EndArray();
    return *this;
  }
  std::string Done() const {
    return std::string(buffer_.GetString(), buffer_.GetSize());
  }

 private:
  rapidjson::StringBuffer buffer_;
  rapidjson::Writer<rapidjson::StringBuffer> writer_;
};

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
  // Kubernetes' field names, k8s.io/api v0.34 core/v1 types.go.
  JsonWriter w;
  w.StartObject();
  if (!p.node_affinity.empty()) {
    w.Key("affinity").StartObject().Key("nodeAffinity").StartObject();
    w.Key("requiredDuringSchedulingIgnoredDuringExecution").StartObject();
    w.Key("nodeSelectorTerms").StartArray().StartObject();
    w.Key("matchExpressions").StartArray();
    for (const NodeSelectorRequirement& r : p.node_affinity) {
      w.StartObject().Field("key", r.key).Field("operator", r.op);
      if (!r.values.empty()) {
        w.Key("values").StartArray();
        for (const std::string& v : r.values) w.String(v);
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray().EndObject().EndArray();    // matchExpressions, term, terms
    w.EndObject().EndObject().EndObject();  // required, nodeAffinity, affinity
  }
  if (!p.tolerations.empty()) {
    w.Key("tolerations").StartArray();
    for (const Toleration& t : p.tolerations) {
      w.StartObject().Field("key", t.key).Field("operator", t.op);
      if (!t.value.empty()) w.Field("value", t.value);
      w.Field("effect", t.effect).EndObject();
    }
    w.EndArray();
  }
  w.Key("containers").StartArray().StartObject();
  if (!container_name.empty()) w.Field("name", container_name);
  // Propeller sets requests equal to limits for an accelerator it is given
  // one of (container_helper.go:73-86); Kubernetes requires it of extended
  // resources.
  const std::string count = absl::StrCat(p.resource_count);
  w.Key("resources").StartObject();
  for (absl::string_view list : {"limits", "requests"}) {
    w.Key(list).StartObject().Field(p.resource_name, count).EndObject();
  }
  w.EndObject();
  if (!p.env.empty()) {
    w.Key("env").StartArray();
    for (const auto& [name, value] : p.env) {
      w.StartObject().Field("name", name).Field("value", value).EndObject();
    }
    w.EndArray();
  }
  w.EndObject().EndArray();  // the container, containers
  w.EndObject();
  return w.Done();
}

std::string ShareClaimName(absl::string_view device_id, GpuSharing sharing) {
  const absl::string_view mode = sharing == GpuSharing::kMps ? "mps-"
                                 : sharing == GpuSharing::kTimeSlicing
                                     ? "time-slicing-"
                                     : "";
  std::string name =
      absl::StrCat("accelsched-share-", mode, absl::AsciiStrToLower(device_id));
  return IsDnsSubdomain(name) ? name : "";
}

std::string ResourceClaim(const Allocation& a, const Placement& p) {
  if (a.device_class != DeviceClass::kNvidiaGpu || p.devices.empty() ||
      p.devices.size() > kMaxClaimDevices) {
    return "";
  }
  const AllocatedDevice* shared =
      p.devices.size() == 1 && p.devices[0].share.has_value() ? &p.devices[0]
                                                              : nullptr;
  const std::string share_claim =
      shared != nullptr ? ShareClaimName(shared->device_id, shared->sharing)
                        : "";
  if (shared != nullptr && share_claim.empty()) return "";
  // k8s.io/api v0.34 resource/v1 types.go: ResourceClaim, DeviceRequest,
  // ExactDeviceRequest, DeviceSelector, CELDeviceSelector.
  const std::string attributes =
      absl::StrCat("device.attributes[", CelString(kNvidiaDraDriver), "]");
  JsonWriter w;
  w.StartObject()
      .Field("apiVersion", "resource.k8s.io/v1")
      .Field("kind", "ResourceClaim");
  w.Key("metadata").StartObject();
  if (shared != nullptr) {
    w.Field("name", share_claim);
  } else {
    w.Field(a.id.empty() ? "generateName" : "name",
            absl::StrCat("accelsched-", a.id));
  }
  w.EndObject();
  w.Key("spec").StartObject().Key("devices").StartObject();
  w.Key("requests").StartArray();
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const AllocatedDevice& d = p.devices[i];
    const bool mig = !d.mig_slice_id.empty();
    // The DeviceClass's own selector (type "gpu" or "mig") runs first. A MIG
    // device the driver creates on demand (its DynamicMIG gate) has no uuid,
    // and reading a missing attribute aborts the allocation: hence the guard.
    const std::string expression =
        mig ? absl::StrCat("\"uuid\" in ", attributes, " && ", attributes,
                           ".uuid == ", CelString(d.mig_slice_id))
            : absl::StrCat(attributes, ".uuid == ", CelString(d.device_id));
    w.StartObject().Field("name", absl::StrCat(mig ? "mig-" : "gpu-", i));
    w.Key("exactly").StartObject();
    w.Field("deviceClassName",
            mig ? kNvidiaMigDeviceClass : kNvidiaGpuDeviceClass);
    w.Key("selectors").StartArray().StartObject().Key("cel").StartObject();
    w.Field("expression", expression).EndObject().EndObject().EndArray();
    w.Field("allocationMode", "ExactCount").Key("count").Int(1);
    w.EndObject().EndObject();  // exactly, the request
  }
  w.EndArray();  // requests
  if (shared != nullptr && shared->sharing != GpuSharing::kNone) {
    // NVIDIA's DRA driver's opaque config (22407113,
    // api/nvidia.com/resource/v1beta1/: api.go:27-30 the group, version and
    // kind GpuConfig; gpuconfig.go:31 sharing; sharing.go:29-30 and 63-66
    // the strategies and their configs, 35 and 77 interval "Default"). An
    // MPS config without limits: the driver fills an empty one
    // (gpuconfig.go:74-78) and its daemon then limits nothing.
    w.Key("config").StartArray().StartObject();
    w.Key("requests").StartArray().String("gpu-0").EndArray();
    w.Key("opaque").StartObject().Field("driver", kNvidiaDraDriver);
    w.Key("parameters").StartObject();
    w.Field("apiVersion", "resource.nvidia.com/v1beta1")
        .Field("kind", "GpuConfig");
    w.Key("sharing").StartObject();
    if (shared->sharing == GpuSharing::kMps) {
      w.Field("strategy", "MPS");
    } else {
      w.Field("strategy", "TimeSlicing");
      w.Key("timeSlicingConfig")
          .StartObject()
          .Field("interval", "Default")
          .EndObject();
    }
    w.EndObject().EndObject().EndObject();  // sharing, parameters, opaque
    w.EndObject().EndArray();               // the config, config
  }
  w.EndObject().EndObject();  // devices, spec
  w.EndObject();
  return w.Done();
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
