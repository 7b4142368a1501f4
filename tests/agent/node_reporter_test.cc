// NodeReporter against an in-process fake AcceleratorScheduler: what it
// registers and when it registers again (here: a changed allocatable).
#include "agent/node_reporter.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/support/recording_scheduler.h"
#include "tests/support/status_matchers.h"

namespace accelsched::agent {
namespace {

class NodeReporterTest : public testing::Test {
 protected:
  NodeReporterTest() {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    NodeReporter::Options options;
    options.node_name = "gpu-node-1";
    options.labels = {{"pool", "h100"}};
    options.rpc_timeout = absl::Seconds(5);
    reporter_ = std::make_unique<NodeReporter>(
        v1::AcceleratorScheduler::NewStub(
            server_->InProcessChannel(grpc::ChannelArguments())),
        options);
  }
  ~NodeReporterTest() override { server_->Shutdown(); }

  static Observation Seen(std::optional<v1::NodeResources> allocatable) {
    Observation seen;
    v1::Device gpu;
    gpu.set_id("GPU-1");
    gpu.set_device_class(v1::NVIDIA_GPU);
    gpu.set_model("NVIDIA H100 80GB HBM3");
    seen.devices.push_back(gpu);
    seen.allocatable = std::move(allocatable);
    return seen;
  }

  static v1::NodeResources Resources(int64_t cpu_milli, int64_t memory_bytes,
                                     int32_t pods) {
    v1::NodeResources r;
    r.set_cpu_milli(cpu_milli);
    r.set_memory_bytes(memory_bytes);
    r.set_pods(pods);
    return r;
  }

  RecordingScheduler service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<NodeReporter> reporter_;
};

TEST_F(NodeReporterTest, NodeOfCarriesAllocatableWhenSet) {
  const v1::Node with = reporter_->NodeOf(Seen(Resources(7910, 1 << 30, 110)));
  ASSERT_TRUE(with.has_allocatable());
  EXPECT_EQ(with.allocatable().cpu_milli(), 7910);
  EXPECT_EQ(with.allocatable().memory_bytes(), 1 << 30);
  EXPECT_EQ(with.allocatable().pods(), 110);
  EXPECT_FALSE(reporter_->NodeOf(Seen(std::nullopt)).has_allocatable());
}

TEST_F(NodeReporterTest, AChangedAllocatableRegistersAgain) {
  ASSERT_OK(reporter_->Report(Seen(Resources(8000, 64LL << 30, 110))));
  ASSERT_EQ(service_.registered().size(), 1u);
  EXPECT_EQ(service_.registered()[0].allocatable().cpu_milli(), 8000);
  EXPECT_EQ(service_.registered()[0].devices_size(), 1);
  EXPECT_EQ(service_.heartbeats().size(), 1u);

  // Unchanged: a heartbeat only.
  ASSERT_OK(reporter_->Report(Seen(Resources(8000, 64LL << 30, 110))));
  EXPECT_EQ(service_.registered().size(), 1u);
  EXPECT_EQ(service_.heartbeats().size(), 2u);

  // Each resource on its own registers again.
  ASSERT_OK(reporter_->Report(Seen(Resources(7000, 64LL << 30, 110))));
  ASSERT_EQ(service_.registered().size(), 2u);
  EXPECT_EQ(service_.registered()[1].allocatable().cpu_milli(), 7000);
  ASSERT_OK(reporter_->Report(Seen(Resources(7000, 60LL << 30, 110))));
  ASSERT_OK(reporter_->Report(Seen(Resources(7000, 60LL << 30, 64))));
  ASSERT_EQ(service_.registered().size(), 4u);
  EXPECT_EQ(service_.registered()[3].allocatable().pods(), 64);

  // Gone (--allocatable=none after a restart, say) and back.
  ASSERT_OK(reporter_->Report(Seen(std::nullopt)));
  ASSERT_EQ(service_.registered().size(), 5u);
  EXPECT_FALSE(service_.registered()[4].has_allocatable());
  ASSERT_OK(reporter_->Report(Seen(std::nullopt)));
  EXPECT_EQ(service_.registered().size(), 5u);
  // All zero is a value (nothing for pods), not "unset".
  ASSERT_OK(reporter_->Report(Seen(Resources(0, 0, 0))));
  ASSERT_EQ(service_.registered().size(), 6u);
  EXPECT_TRUE(service_.registered()[5].has_allocatable());
  EXPECT_EQ(reporter_->registrations(), 6);
  EXPECT_EQ(service_.heartbeats().size(), 8u);
}

}  // namespace
}  // namespace accelsched::agent
