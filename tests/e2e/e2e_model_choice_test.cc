// Requests without a named model, end to end: the real accelschedd on a real
// SQLite file, real gRPC clients. Flyte's plain `gpu: 1` (no accelerator),
// a device class alone, and a set of acceptable models.
#include <signal.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using Stub = v1::AcceleratorScheduler::Stub;

// mig-0: one A100 in MIG mode; l4-0: one L4; t4-0: two T4s, hostname label
// "host-t4".
void RegisterMixedCluster(E2eTest& t) {
  v1::Node mig = GpuNode();  // one whole A100 and one A100 in MIG mode
  mig.set_name("mig-0");
  mig.mutable_devices()->erase(mig.mutable_devices()->begin());
  ASSERT_TRUE(t.Register(mig).ok());
  v1::Node l4;
  l4.set_name("l4-0");
  AddGpu(&l4, "GPU-l4", "NVIDIA L4", 0);
  ASSERT_TRUE(t.Register(l4).ok());
  v1::Node t4;
  t4.set_name("t4-0");
  (*t4.mutable_labels())["kubernetes.io/hostname"] = "host-t4";
  AddGpu(&t4, "GPU-t4-0", "Tesla T4", 0);
  AddGpu(&t4, "GPU-t4-1", "Tesla T4", 1);
  ASSERT_TRUE(t.Register(t4).ok());
}

v1::AllocateRequest Alternatives(const std::string& request_id,
                                 const std::string& device,
                                 std::initializer_list<const char*> others,
                                 int count = 1) {
  v1::AllocateRequest r = AllocateReq(request_id, device, count);
  for (const char* o : others) r.add_alternative_devices(o);
  return r;
}

TEST_F(E2eTest, RequestsWithoutANamedModel) {
  ASSERT_TRUE(StartServer());
  ASSERT_NO_FATAL_FAILURE(RegisterMixedCluster(*this));

  // 1. No accelerator at all: any whole GPU. Best fit is the L4 node (one
  //    free, exactly enough), and the placement names no model.
  v1::AllocateRequest plain;
  plain.set_request_id("plain");
  v1::Allocation a;
  grpc::Status s = Allocate(plain, &a);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(a.node(), "l4-0");
  EXPECT_EQ(a.model(), "nvidia-l4");
  EXPECT_THAT(a.placement().node_selector(),
              ElementsAre(Pair("kubernetes.io/hostname", "l4-0")));
  EXPECT_EQ(a.placement().resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(a.placement().resource_count(), 1);

  // 2. A device class alone, two devices: only the T4 node has two whole
  //    GPUs; the MIG A100 is not a whole device.
  v1::AllocateRequest by_class;
  by_class.set_request_id("by-class");
  by_class.mutable_accelerator()->set_device_class(v1::NVIDIA_GPU);
  by_class.set_count(2);
  v1::Allocation b;
  s = Allocate(by_class, &b);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(b.model(), "nvidia-tesla-t4");
  EXPECT_THAT(b.placement().node_selector(),
              ElementsAre(Pair("kubernetes.io/hostname", "host-t4")));
  v1::AllocateRequest more;
  more.set_request_id("more");
  s = Allocate(more);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(),
              HasSubstr("0/3 nodes available: 1 no free nvidia-l4 device, 1 no "
                        "free nvidia-tesla-t4 device, 1 no whole NVIDIA_GPU "
                        "device"));
  v1::AllocateRequest tpu;
  tpu.set_request_id("tpu");
  tpu.mutable_accelerator()->set_device_class(v1::GOOGLE_TPU);
  s = Allocate(tpu);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("accelerator.device is required"));

  // 3. A set of models. Release the L4 and the T4s first.
  for (const char* id : {"plain", "by-class"}) {
    v1::ReleaseRequest release;
    release.set_request_id(id);
    v1::Allocation released;
    ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  }
  s = Allocate(Alternatives("set", "T4", {"nvidia-z9000"}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("alternative_devices[0]"));
  v1::ExplainResponse explain;
  ASSERT_TRUE(
      Call(&Stub::Explain, Alternatives("set", "T4", {"L4"}, 2), &explain)
          .ok());
  EXPECT_TRUE(explain.feasible());
  EXPECT_EQ(explain.would_allocate().model(), "nvidia-tesla-t4");
  ASSERT_EQ(explain.nodes_size(), 2);
  EXPECT_EQ(explain.nodes(0).node(), "l4-0");
  EXPECT_THAT(explain.nodes(0).reasons(),
              ElementsAre("too few free nvidia-l4 devices (1 free, 2 "
                          "requested)",
                          "no nvidia-tesla-t4 device"));
  EXPECT_THAT(explain.nodes(1).reasons(),
              ElementsAre("no nvidia-l4 or nvidia-tesla-t4 device"));
  v1::Allocation c;
  ASSERT_TRUE(Allocate(Alternatives("set", "T4", {"L4"}, 2), &c).ok());
  EXPECT_EQ(c.model(), "nvidia-tesla-t4");
  EXPECT_EQ(c.placement().node_selector().at("k8s.amazonaws.com/accelerator"),
            "nvidia-tesla-t4");
  v1::Allocation any;
  ASSERT_TRUE(Allocate(plain, &any).ok());

  ASSERT_TRUE(Allocate(AllocateReq("mig", "A100", 1, "1g.5gb")).ok());

  // Metrics carry the chosen model and what the request named.
  absl::StatusOr<std::string> metrics =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  const std::string kSeries =
      "accelsched_allocations_total{device_class=\"NVIDIA_GPU\",";
  EXPECT_THAT(*metrics, HasSubstr(kSeries + "model=\"nvidia-l4\",partition="
                                            "\"\",requested=\"any\"} 2\n"));
  EXPECT_THAT(*metrics,
              HasSubstr(kSeries + "model=\"nvidia-tesla-t4\",partition=\"\","
                                  "requested=\"any\"} 1\n"));
  EXPECT_THAT(*metrics,
              HasSubstr(kSeries + "model=\"nvidia-tesla-t4\",partition=\"\","
                                  "requested=\"alternatives\"} 1\n"));
  EXPECT_THAT(*metrics,
              HasSubstr(kSeries + "model=\"nvidia-tesla-a100\",partition="
                                  "\"1g.5gb\",requested=\"model\"} 1\n"));

  // A retry after kill -9 is the same request in any spelling and order.
  server_->Stop(SIGKILL);
  ASSERT_TRUE(StartServer());
  v1::Allocation again;
  ASSERT_TRUE(
      Allocate(Alternatives("set", "", {"NVIDIA L4", "nvidia-tesla-t4"}, 2),
               &again)
          .ok());
  EXPECT_EQ(again.DebugString(), c.DebugString());
  ASSERT_TRUE(Allocate(plain, &again).ok());
  EXPECT_EQ(again.DebugString(), any.DebugString());
  s = Allocate(AllocateReq("set", "T4", 2));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(s.error_message(),
              HasSubstr("2 x nvidia-l4 or nvidia-tesla-t4 device"));
}

}  // namespace
}  // namespace accelsched
