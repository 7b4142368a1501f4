// Shared fixture for end-to-end tests: the real accelschedd on a real SQLite
// file, reached over a real gRPC channel.
#ifndef ACCELSCHED_TESTS_SUPPORT_E2E_FIXTURE_H_
#define ACCELSCHED_TESTS_SUPPORT_E2E_FIXTURE_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "accelsched/v1/accelsched.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"

namespace accelsched {

// Members are public so that helpers outside the test bodies can drive the
// server too.
class E2eTest : public testing::Test {
 public:
  // Starts accelschedd on db_ and connects to it. Use as
  // ASSERT_TRUE(StartServer(...)): on failure nothing is connected, and the
  // result says what the process printed.
  [[nodiscard]] testing::AssertionResult StartServer(
      const std::vector<std::string>& flags = {}) {
    auto server = ServerProcess::Start(db_, flags);
    if (!server.ok()) {
      return testing::AssertionFailure()
             << "accelschedd did not start: " << server.status();
    }
    server_ = std::move(*server);
    channel_ = grpc::CreateChannel(server_->grpc_address(),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::AcceleratorScheduler::NewStub(channel_);
    return testing::AssertionSuccess();
  }

  // Runs one unary call with a deadline.
  template <typename Req, typename Resp, typename Method>
  grpc::Status Call(Method method, const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    return ((*stub_).*method)(&ctx, req, resp);
  }

  grpc::Status Register(const v1::Node& node, v1::Node* out = nullptr) {
    v1::RegisterNodeRequest req;
    *req.mutable_node() = node;
    v1::Node resp;
    grpc::Status s =
        Call(&v1::AcceleratorScheduler::Stub::RegisterNode, req, &resp);
    if (out != nullptr) *out = resp;
    return s;
  }

  v1::ListNodesResponse ListAll(const std::string& selector = "") {
    v1::ListNodesRequest req;
    req.set_label_selector(selector);
    v1::ListNodesResponse resp;
    grpc::Status s =
        Call(&v1::AcceleratorScheduler::Stub::ListNodes, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  v1::GetCapacityResponse Capacity() {
    v1::GetCapacityResponse resp;
    grpc::Status s = Call(&v1::AcceleratorScheduler::Stub::GetCapacity,
                          v1::GetCapacityRequest(), &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Allocate with a deadline; `out` may be null.
  grpc::Status Allocate(const v1::AllocateRequest& req,
                        v1::Allocation* out = nullptr) {
    v1::Allocation resp;
    grpc::Status s =
        Call(&v1::AcceleratorScheduler::Stub::Allocate, req, &resp);
    if (out != nullptr) *out = resp;
    return s;
  }

  TempDir dir_;
  std::string db_ = dir_.File("accelsched.db");
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::AcceleratorScheduler::Stub> stub_;
};

inline v1::Device* AddGpu(v1::Node* n, const std::string& id,
                          const std::string& model, int index) {
  v1::Device* d = n->add_devices();
  d->set_id(id);
  d->set_model(model);
  d->set_index(index);
  d->set_healthy(true);
  d->set_memory_bytes(40ULL << 30);
  return d;
}

// An A100 in MIG mode split into seven 1g.5gb slices, "<slice_prefix><start>".
inline v1::Device* AddMigA100(v1::Node* n, const std::string& id, int index,
                              const std::string& slice_prefix) {
  v1::Device* mig = AddGpu(n, id, "nvidia-tesla-a100", index);
  mig->set_mig_enabled(true);
  for (int i = 0; i < 7; ++i) {
    v1::MigSlice* s = mig->add_mig_slices();
    s->set_id(slice_prefix + std::to_string(i));
    s->set_profile("1g.5gb");
    s->set_start(i);
  }
  return mig;
}

inline v1::Node GpuNode() {
  v1::Node n;
  n.set_name("gpu-node-1");
  (*n.mutable_labels())["pool"] = "a100";
  (*n.mutable_labels())["kubernetes.io/hostname"] = "gpu-node-1";
  AddGpu(&n, "GPU-0001", "NVIDIA A100-SXM4-40GB", 0);
  AddMigA100(&n, "GPU-0002", 1, "MIG-0002-");
  return n;
}

inline v1::AllocateRequest AllocateReq(const std::string& request_id,
                                       const std::string& device, int count = 1,
                                       const std::string& partition = "") {
  v1::AllocateRequest r;
  r.set_request_id(request_id);
  r.mutable_accelerator()->set_device(device);
  if (!partition.empty())
    r.mutable_accelerator()->set_partition_size(partition);
  r.set_count(count);
  return r;
}

inline v1::Node TpuHost(const std::string& name, const std::string& prefix) {
  v1::Node n;
  n.set_name(name);
  (*n.mutable_labels())["pool"] = "tpu";
  for (int i = 0; i < 4; ++i) {
    v1::Device* d = AddGpu(&n, prefix + std::to_string(i), "tpu-v5p-slice", i);
    d->set_device_class(v1::GOOGLE_TPU);
    d->set_tpu_slice_id("v5p-slice-1");
    d->set_tpu_topology("2x2x2");
  }
  return n;
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_E2E_FIXTURE_H_
