// End-to-end: the placements a client reads from the real server (Allocate,
// GetAllocation after kill -9, Explain), and their JSON as Kubernetes would
// read it.
#include <csignal>

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"

namespace accelsched {
namespace {

using ::google::protobuf::Struct;
using ::testing::HasSubstr;
using Stub = v1::AcceleratorScheduler::Stub;

// A100 node with one GPU split into seven 1g.5gb slices, labelled as GPU
// Feature Discovery labels a node under the device plugin's mixed strategy.
v1::Node MixedNode() {
  v1::Node n;
  n.set_name("mixed-1");
  (*n.mutable_labels())["nvidia.com/mig.strategy"] = "mixed";
  (*n.mutable_labels())["kubernetes.io/hostname"] = "host-mixed";
  AddMigA100(&n, "GPU-m", 0, "MIG-m-");
  return n;
}

Struct ParseJson(const std::string& json) {
  Struct s;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &s).ok())
      << json;
  return s;
}

const google::protobuf::Value& At(const Struct& s, const std::string& key) {
  return s.fields().at(key);
}

TEST_F(E2eTest, MixedStrategyNodeGetsTheMigResourceAndNoPartitionLabel) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(MixedNode()).ok());
  v1::AllocateRequest req = AllocateReq("mig", "A100", 2, "1g.5gb");
  req.set_container_name("trainer");
  v1::Allocation a;
  grpc::Status s = Allocate(req, &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const v1::Placement& p = a.placement();
  EXPECT_EQ(p.resource_name(), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(p.resource_count(), 2);
  EXPECT_FALSE(
      p.node_selector().contains("k8s.amazonaws.com/gpu-partition-size"));
  EXPECT_TRUE(p.env().empty());
  ASSERT_EQ(a.placements_size(), 1);
  EXPECT_EQ(a.placements(0).DebugString(), p.DebugString());

  // The patch, read as JSON: the named container gets the resource.
  const Struct patch = ParseJson(p.pod_spec_patch());
  const auto& container =
      At(patch, "containers").list_value().values(0).struct_value();
  EXPECT_EQ(At(container, "name").string_value(), "trainer");
  EXPECT_EQ(
      At(At(At(container, "resources").struct_value(), "limits").struct_value(),
         "nvidia.com/mig-1g.5gb")
          .string_value(),
      "2");
  EXPECT_THAT(p.pod_spec_patch(), Not(HasSubstr("gpu-partition-size")));

  // The claim pins exactly the two MIG devices allocated.
  const Struct claim = ParseJson(p.resource_claim());
  EXPECT_EQ(At(claim, "apiVersion").string_value(), "resource.k8s.io/v1");
  const auto& requests =
      At(At(At(claim, "spec").struct_value(), "devices").struct_value(),
         "requests")
          .list_value();
  ASSERT_EQ(requests.values_size(), 2);
  for (int i = 0; i < 2; ++i) {
    const Struct& exactly =
        At(requests.values(i).struct_value(), "exactly").struct_value();
    EXPECT_EQ(At(exactly, "deviceClassName").string_value(), "mig.nvidia.com");
    EXPECT_THAT(
        At(At(exactly, "selectors").list_value().values(0).struct_value(),
           "cel")
            .struct_value()
            .fields()
            .at("expression")
            .string_value(),
        HasSubstr("uuid == \"" + a.devices(i).mig_slice_id() + "\""));
  }

  // Relabelling the node later does not move a pod already told where to go,
  // and a restart after kill -9 gives the same bytes.
  v1::Node relabelled = MixedNode();
  (*relabelled.mutable_labels())["nvidia.com/mig.strategy"] = "single";
  ASSERT_TRUE(Register(relabelled).ok());
  server_->Stop(SIGKILL);
  ASSERT_TRUE(StartServer());
  v1::GetAllocationRequest get;
  get.set_allocation_id(a.id());
  v1::Allocation got;
  ASSERT_TRUE(Call(&Stub::GetAllocation, get, &got).ok());
  EXPECT_EQ(got.placement().DebugString(), p.DebugString());
  // Once released, no placement: its devices may be another's.
  v1::ReleaseRequest release;
  release.set_allocation_id(a.id());
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  EXPECT_FALSE(released.has_placement());
  EXPECT_EQ(released.placements_size(), 0);
  ASSERT_TRUE(Call(&Stub::GetAllocation, get, &got).ok());
  EXPECT_FALSE(got.has_placement());
  // A new allocation there follows the node's label as it is now.
  v1::Allocation single;
  ASSERT_TRUE(
      Allocate(AllocateReq("mig-2", "A100", 1, "1g.5gb"), &single).ok());
  EXPECT_EQ(single.placement().resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(single.placement().node_selector().at(
                "k8s.amazonaws.com/gpu-partition-size"),
            "1g.5gb");
}

TEST_F(E2eTest, MultiHostTpuSliceHasOnePinnedPlacementPerHost) {
  ASSERT_TRUE(StartServer());
  v1::Node b = TpuHost("tpu-b", "chip-b");
  (*b.mutable_labels())["cloud.google.com/gke-tpu-accelerator"] = "v5p-own";
  ASSERT_TRUE(Register(TpuHost("tpu-a", "chip-a")).ok());
  ASSERT_TRUE(Register(b).ok());
  v1::AllocateRequest req = AllocateReq("tpu", "V5P", 1, "2x2x2");
  req.mutable_accelerator()->set_device_class(v1::GOOGLE_TPU);
  v1::Allocation a;
  grpc::Status s = Allocate(req, &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_FALSE(
      a.placement().node_selector().contains("kubernetes.io/hostname"));
  EXPECT_EQ(a.placement().resource_count(), 4);
  // The slice's own placement fits either host.
  ASSERT_GE(a.placement().node_affinity_size(), 1);
  EXPECT_THAT(a.placement().node_affinity(0).values(),
              testing::ElementsAre("tpu-v5p-slice", "v5p-own"));
  EXPECT_TRUE(a.placement().resource_claim().empty());  // no DRA driver
  ASSERT_EQ(a.placements_size(), 2);
  const char* hosts[] = {"tpu-a", "tpu-b"};
  // Each host's own label where it has one, the registry's value elsewhere.
  const char* values[] = {"tpu-v5p-slice", "v5p-own"};
  for (int i = 0; i < 2; ++i) {
    const v1::Placement& p = a.placements(i);
    EXPECT_EQ(p.node_selector().at("kubernetes.io/hostname"), hosts[i]);
    EXPECT_EQ(p.node_selector().at("cloud.google.com/gke-tpu-accelerator"),
              values[i]);
    EXPECT_EQ(p.node_selector().at("cloud.google.com/gke-tpu-topology"),
              "2x2x2");
    EXPECT_EQ(p.resource_name(), "google.com/tpu");
    EXPECT_EQ(p.resource_count(), 4);
    ASSERT_EQ(p.tolerations_size(), 2);
    EXPECT_EQ(p.tolerations(0).value(), values[i]);
  }
}

// A node without the device label: the value propeller writes for the
// request's own spelling (docs/concepts/placement.md, "Label values"), for a
// request admitted from the queue after kill -9 too, and unchanged by a retry
// in another spelling.
TEST_F(E2eTest, UnlabelledNodeGetsTheValueOfTheRequestsSpelling) {
  ASSERT_TRUE(StartServer());
  v1::Node n;
  n.set_name("h100-1");
  AddGpu(&n, "GPU-h", "NVIDIA H100 80GB HBM3", 0);
  ASSERT_TRUE(Register(n).ok());
  v1::Allocation first;
  ASSERT_TRUE(Allocate(AllocateReq("first", "nvidia-h100"), &first).ok());
  constexpr char kAccel[] = "k8s.amazonaws.com/accelerator";
  EXPECT_EQ(first.placement().node_selector().at(kAccel), "nvidia-h100");
  v1::AllocateRequest late = AllocateReq("late", "H100 80G");
  late.set_queue(true);
  v1::Allocation pending;
  ASSERT_TRUE(Allocate(late, &pending).ok());
  ASSERT_EQ(pending.state(), v1::PENDING);

  server_->Stop(SIGKILL);
  ASSERT_TRUE(StartServer());
  v1::ReleaseRequest release;
  release.set_allocation_id(first.id());
  v1::Allocation released;
  ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  v1::GetAllocationRequest get;
  get.set_allocation_id(pending.id());
  v1::Allocation admitted;
  ASSERT_TRUE(Call(&Stub::GetAllocation, get, &admitted).ok());
  ASSERT_EQ(admitted.state(), v1::ACTIVE);
  const v1::Placement& p = admitted.placement();
  EXPECT_EQ(p.node_selector().at(kAccel), "nvidia-h100-80gb");
  ASSERT_GE(p.tolerations_size(), 1);
  EXPECT_EQ(p.tolerations(0).value(), "nvidia-h100-80gb");
  EXPECT_THAT(p.pod_spec_patch(), HasSubstr("\"nvidia-h100-80gb\""));
  // A retry spelled otherwise is the same request, and changes nothing.
  v1::Allocation retried;
  ASSERT_TRUE(Allocate(AllocateReq("late", "nvidia-h100"), &retried).ok());
  EXPECT_EQ(retried.id(), admitted.id());
  EXPECT_EQ(retried.placement().DebugString(), p.DebugString());
}

TEST_F(E2eTest, VisibleDevicesOnlyWithTheFlag) {
  ASSERT_TRUE(StartServer({"--nvidia_visible_devices"}));
  ASSERT_TRUE(Register(GpuNode()).ok());
  v1::Allocation a;
  ASSERT_TRUE(Allocate(AllocateReq("w", "A100", 1, ""), &a).ok());
  EXPECT_EQ(a.placement().env().at("NVIDIA_VISIBLE_DEVICES"),
            a.devices(0).device_id());
  EXPECT_THAT(a.placement().pod_spec_patch(),
              HasSubstr(R"("env":[{"name":"NVIDIA_VISIBLE_DEVICES","value":")" +
                        a.devices(0).device_id() + "\"}]"));
}

TEST_F(E2eTest, ExplainPreviewsThePlacementAndABadContainerIsRefused) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(GpuNode()).ok());
  v1::ExplainResponse explained;
  ASSERT_TRUE(
      Call(&Stub::Explain, AllocateReq("e", "A100", 1, ""), &explained).ok());
  ASSERT_TRUE(explained.feasible());
  EXPECT_THAT(explained.would_allocate().placement().resource_claim(),
              HasSubstr(R"("generateName":"accelsched-")"));
  ASSERT_EQ(explained.would_allocate().placements_size(), 1);

  v1::AllocateRequest bad = AllocateReq("bad", "A100", 1, "");
  bad.set_container_name("Not_A_Name");
  grpc::Status s = Allocate(bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("container_name \"Not_A_Name\""));
  const v1::GetCapacityResponse capacity = Capacity();
  for (const v1::CapacityEntry& e : capacity.entries()) {
    EXPECT_EQ(e.allocated(), 0) << e.DebugString();
  }
}

}  // namespace
}  // namespace accelsched
