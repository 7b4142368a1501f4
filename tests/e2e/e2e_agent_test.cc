// The real accelsched-agent, loading the fake libnvidia-ml (tests/fake_nvml)
// through --nvml_library, against the real server: discovery reaches the
// catalog, capacity and metrics; a MIG re-layout, a lost GPU, health errors
// and changing readings are picked up without restarting anything; the
// server restarts under the agent.
#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"
#include "tests/support/test_certificates.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kNode[] = "gpu-node-1";

// An H100 used as a whole GPU, and an A100 in MIG mode with a 1g.5gb and a
// 3g.20gb instance.
constexpr char kTwoGpus[] =
    "gpu uuid=GPU-h100 name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
    "used_mib=512 util=35 temp=41 power_mw=250000\n"
    "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 mig=1 "
    "used_mib=40 temp=38 power_mw=90000\n"
    "mig gpu=1 uuid=MIG-a profile=0 mem_mib=4864 start=0 gi=1 used_mib=10\n"
    "mig gpu=1 uuid=MIG-b profile=2 mem_mib=20096 start=4 gi=2 used_mib=30\n";

// The same GPUs after `nvidia-smi mig -dgi` and seven `-cgi 1g.5gb` on the
// A100: seven new slices.
std::string SevenSliceLayout() {
  std::string layout =
      "gpu uuid=GPU-h100 name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559\n"
      "gpu uuid=GPU-a100 name=\"NVIDIA A100-SXM4-40GB\" memory_mib=40960 "
      "mig=1\n";
  for (int i = 0; i < 7; ++i) {
    absl::StrAppend(&layout, "mig gpu=1 uuid=MIG-new-", i,
                    " profile=0 mem_mib=4864 start=", i, " gi=", 10 + i, "\n");
  }
  return layout;
}

class AgentE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    ::setenv("FAKE_NVML_SCENARIO", scenario_.c_str(), 1);
    std::filesystem::create_directories(empty_);
    SetScenario(kTwoGpus);
  }

  // Replaces the machine the fake NVML describes (atomically: the agent
  // never reads half a file).
  void SetScenario(const std::string& text) {
    std::ofstream(scenario_ + ".tmp") << text;
    std::filesystem::rename(scenario_ + ".tmp", scenario_);
  }

  std::vector<std::string> AgentFlags() {
    return {"--server=" + server_->grpc_address(),
            std::string("--node_name=") + kNode,
            "--interval=50ms",
            "--max_backoff=200ms",
            std::string("--nvml_library=") + FAKE_NVML_PATH,
            "--sys_dir=" + empty_,
            "--dev_dir=" + empty_};
  }

  [[nodiscard]] testing::AssertionResult StartAgent(
      std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = AgentFlags();
    flags.insert(flags.end(), extra.begin(), extra.end());
    auto agent = ServerProcess::StartProgram(ACCELSCHED_AGENT_PATH, flags,
                                             "registered node");
    if (!agent.ok()) {
      return testing::AssertionFailure() << agent.status();
    }
    agent_ = std::move(*agent);
    return testing::AssertionSuccess();
  }

  absl::StatusOr<v1::Node> GetNode() {
    v1::GetNodeRequest req;
    req.set_name(kNode);
    v1::Node node;
    grpc::Status s = Call(&v1::AcceleratorScheduler::Stub::GetNode, req, &node);
    if (!s.ok()) return absl::UnknownError(s.error_message());
    return node;
  }

  // Polls GetNode until `done` holds for it (the agent reports every 50ms);
  // false after 20 s, with the last node printed.
  template <typename Pred>
  testing::AssertionResult NodeBecomes(Pred done) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    absl::StatusOr<v1::Node> node;
    while (absl::Now() < deadline) {
      node = GetNode();
      if (node.ok() && done(*node)) return testing::AssertionSuccess();
      absl::SleepFor(absl::Milliseconds(20));
    }
    return testing::AssertionFailure()
           << "last GetNode: "
           << (node.ok() ? node->DebugString() : node.status().ToString())
           << "\nagent printed:\n"
           << (agent_ ? agent_->output() : "");
  }

  // Waits up to 20 s for the agent to print `marker`.
  testing::AssertionResult AgentPrinted(const std::string& marker) {
    if (agent_->WaitForOutput(marker, absl::Seconds(20))) {
      return testing::AssertionSuccess();
    }
    return testing::AssertionFailure()
           << "the agent never printed \"" << marker << "\":\n"
           << agent_->output();
  }

  static const v1::Device* Find(const v1::Node& node, const std::string& id) {
    for (const v1::Device& d : node.devices()) {
      if (d.id() == id) return &d;
    }
    return nullptr;
  }

  int64_t Total(const std::string& model, const std::string& partition) {
    const v1::GetCapacityResponse capacity = Capacity();
    for (const v1::CapacityEntry& e : capacity.entries()) {
      if (e.model() == model && e.partition() == partition) return e.total();
    }
    return 0;
  }

  // The allocation of `request_id`, or one with an empty id.
  v1::Allocation AllocationOf(const std::string& request_id) {
    v1::GetAllocationRequest req;
    req.set_request_id(request_id);
    v1::Allocation a;
    grpc::Status s =
        Call(&v1::AcceleratorScheduler::Stub::GetAllocation, req, &a);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return a;
  }

  // Polls GetAllocation until `request_id` is ACTIVE; false after 20 s.
  testing::AssertionResult BecomesActive(const std::string& request_id) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    v1::Allocation a;
    while (absl::Now() < deadline) {
      a = AllocationOf(request_id);
      if (a.state() == v1::ACTIVE) return testing::AssertionSuccess();
      absl::SleepFor(absl::Milliseconds(20));
    }
    return testing::AssertionFailure()
           << "last: " << a.DebugString() << "\nagent printed:\n"
           << (agent_ ? agent_->output() : "");
  }

  // The fake NVML's counters of what was created and destroyed.
  std::string FakeStats() {
    std::ifstream in(scenario_);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("stats ", 0) == 0) return line;
    }
    return "";
  }

  std::string scenario_ = dir_.File("scenario");
  std::string empty_ = dir_.File("empty");
  std::unique_ptr<ServerProcess> agent_;
};

// An H100 in MIG mode laid out by hand as seven 1g.10gb slices.
std::string SevenSmallH100() {
  std::string text =
      "gpu uuid=GPU-h100 name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
      "mig=1\n";
  for (int i = 0; i < 7; ++i) {
    absl::StrAppend(&text, "mig gpu=0 uuid=MIG-", i,
                    " profile=0 mem_mib=9856 start=", i, " gi=", i + 1, "\n");
  }
  return text;
}

v1::AllocateRequest QueuedThreeG(const std::string& request_id) {
  v1::AllocateRequest req;
  req.set_request_id(request_id);
  req.mutable_accelerator()->set_device("nvidia-h100");
  req.mutable_accelerator()->set_partition_size("3g.40gb");
  req.set_queue(true);
  return req;
}

// Issue 33 end to end: the server plans, the agent applies through NVML
// (the fake's), re-registers, and the request is admitted on the new slice;
// a kill -9 of the server between plan and apply loses nothing.
TEST_F(AgentE2eTest, AReLayoutPlannedByTheServerIsAppliedByTheAgent) {
  SetScenario(SevenSmallH100());
  ASSERT_TRUE(StartServer({"--sweep_interval=100ms"}));
  const int port = server_->grpc_port();
  ASSERT_TRUE(StartAgent({"--allow_mig_relayout"}));
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    auto label = n.labels().find("accelsched.io/mig-relayout");
    return label != n.labels().end() && label->second == "enabled" &&
           n.devices_size() == 1 && n.devices(0).mig_slices_size() == 7;
  }));
  // The agent is stopped before anything is planned: the plan waits for it.
  EXPECT_EQ(agent_->Stop(SIGKILL), 128 + SIGKILL);
  v1::Allocation pending;
  ASSERT_TRUE(Allocate(QueuedThreeG("big"), &pending).ok());
  EXPECT_EQ(pending.state(), v1::PENDING);
  ASSERT_TRUE(NodeBecomes(
      [](const v1::Node& n) { return n.devices(0).has_mig_plan(); }));
  v1::MigLayout plan = GetNode()->devices(0).mig_plan();
  EXPECT_EQ(plan.generation(), 1u);
  EXPECT_EQ(plan.allocation_id(), pending.id());
  ASSERT_EQ(plan.slices_size(), 5);
  EXPECT_EQ(plan.slices(4).profile(), "3g.40gb");
  EXPECT_EQ(plan.slices(4).start(), 4);
  EXPECT_EQ(plan.slices(4).id(), "");
  EXPECT_EQ(AllocationOf("big").pending_reason(),
            "waiting for the MIG re-layout of GPU-h100 on gpu-node-1");
  // GetNode shows the plan once the admission pass queued its write, not
  // once that write is durable; a write acknowledged after it is durable
  // only once the plan's is (writes commit in the order they were queued).
  // Without this, a kill -9 under load forgot the plan and the restarted
  // server planned again under generation 2 (CI, AddressSanitizer tree).
  v1::RenewLeaseRequest renew;
  renew.set_allocation_id(pending.id());
  v1::Allocation renewed;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::RenewLease, renew, &renewed).ok());

  // kill -9 of the server: the plan is durable, and the slices it destroys
  // are still not handed out after the restart.
  EXPECT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(StartServer(
      {absl::StrCat("--listen=127.0.0.1:", port), "--sweep_interval=100ms"}));
  ASSERT_TRUE(NodeBecomes([&](const v1::Node& n) {
    return n.devices(0).mig_plan().generation() == 1;
  }));
  int64_t free_small = -1;
  const v1::GetCapacityResponse capacity = Capacity();
  for (const v1::CapacityEntry& e : capacity.entries()) {
    if (e.partition() == "1g.10gb") free_small = e.free();
  }
  EXPECT_EQ(free_small, 4);

  // The agent comes back, learns the plan from its heartbeat and applies it.
  ASSERT_TRUE(StartAgent({"--allow_mig_relayout"}));
  ASSERT_TRUE(BecomesActive("big"));
  const v1::Allocation admitted = AllocationOf("big");
  ASSERT_EQ(admitted.devices_size(), 1);
  EXPECT_EQ(admitted.devices(0).profile(), "3g.40gb");
  const v1::Node node = *GetNode();
  EXPECT_FALSE(node.devices(0).has_mig_plan());
  ASSERT_EQ(node.devices(0).mig_slices_size(), 5);
  EXPECT_EQ(node.devices(0).mig_slices(4).id(),
            admitted.devices(0).mig_slice_id());
  // The DRA claim pins the new slice by its new MIG UUID.
  EXPECT_THAT(admitted.placement().resource_claim(),
              HasSubstr(absl::StrCat(
                  "uuid == \\\"", admitted.devices(0).mig_slice_id(), "\\\"")));
  // Done once: three instances destroyed, one made.
  EXPECT_THAT(FakeStats(), HasSubstr("gi_created=1 gi_destroyed=3"));
}

// The agent's refusals reach the server, which drops the plan of that
// generation and plans again after the back-off; the next generation
// finishes what the first left half done.
TEST_F(AgentE2eTest, AFailedReLayoutIsReportedDroppedAndPlannedAgain) {
  // Creating the 3g fails once, after the three 1g are destroyed.
  SetScenario(SevenSmallH100() +
              "fail call=nvmlDeviceCreateGpuInstanceWithPlacement error=23 "
              "gpu=0 start=4 times=1\n");
  ASSERT_TRUE(
      StartServer({"--sweep_interval=100ms", "--mig_relayout_timeout=2s"}));
  // Plans last 2 s here: the agent starts any not yet past its deadline.
  ASSERT_TRUE(StartAgent({"--allow_mig_relayout", "--mig_relayout_margin=0s"}));
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    return n.labels().count("accelsched.io/mig-relayout") == 1;
  }));
  ASSERT_TRUE(Allocate(QueuedThreeG("big")).ok());
  ASSERT_TRUE(AgentPrinted("nvmlDeviceCreateGpuInstanceWithPlacement"));
  ASSERT_TRUE(BecomesActive("big"));
  const v1::Node node = *GetNode();
  EXPECT_FALSE(node.devices(0).has_mig_plan());
  EXPECT_EQ(node.devices(0).mig_slices_size(), 5);
  // The second plan found the three 1g gone and only made the 3g.
  EXPECT_THAT(FakeStats(), HasSubstr("gi_created=1 gi_destroyed=3"));
}

TEST_F(AgentE2eTest, DiscoveredGpusMigSlicesAndReadingsReachTheCatalog) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent({"--labels=pool=a,zone=z1"}));
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    return h100 != nullptr && h100->has_stats();
  }));
  v1::Node node = *GetNode();
  EXPECT_EQ(node.labels().at("pool"), "a");
  EXPECT_EQ(node.labels().at("zone"), "z1");
  ASSERT_EQ(node.devices_size(), 2);
  const v1::Device* h100 = Find(node, "GPU-h100");
  EXPECT_EQ(h100->model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(h100->canonical_model(), "nvidia-h100");
  EXPECT_EQ(h100->memory_bytes(), 81559ull << 20);
  EXPECT_TRUE(h100->healthy());
  EXPECT_DOUBLE_EQ(h100->stats().utilization(), 0.35);
  EXPECT_EQ(h100->stats().memory_used_bytes(), int64_t{512} << 20);
  EXPECT_DOUBLE_EQ(h100->stats().temperature_celsius(), 41);
  EXPECT_DOUBLE_EQ(h100->stats().power_watts(), 250);
  EXPECT_GT(h100->stats().time().seconds(), 0);
  const v1::Device* a100 = Find(node, "GPU-a100");
  EXPECT_EQ(a100->canonical_model(), "nvidia-tesla-a100");
  EXPECT_TRUE(a100->mig_enabled());
  ASSERT_EQ(a100->mig_slices_size(), 2);
  EXPECT_EQ(a100->mig_slices(0).profile(), "1g.5gb");
  EXPECT_EQ(a100->mig_slices(1).profile(), "3g.20gb");
  EXPECT_EQ(a100->mig_slices(1).start(), 4);
  EXPECT_EQ(a100->mig_slices(1).stats().memory_used_bytes(), int64_t{30} << 20);

  EXPECT_EQ(Total("nvidia-h100", ""), 1);
  EXPECT_EQ(Total("nvidia-tesla-a100", "1g.5gb"), 1);
  EXPECT_EQ(Total("nvidia-tesla-a100", "3g.20gb"), 1);

  // A new reading replaces the last.
  SetScenario(absl::StrReplaceAll(kTwoGpus, {{"util=35", "util=90"}}));
  EXPECT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* d = Find(n, "GPU-h100");
    return d != nullptr && d->stats().utilization() == 0.9;
  }));
}

// NVIDIA/k8s-device-plugin#546's board as the fake NVML describes it:
// NVLink pairs (0,2), (1,3), (4,5), (6,7) of 12 links, GPUs 0-3 on CPU 0,
// and (the scenario's assumption) PCIe switches (0,1), (2,3), (4,5), (6,7).
std::string NvLinkPairsBoard() {
  std::string text;
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&text, "gpu uuid=GPU-", i,
                    " name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
                    "pcie_switch=",
                    i / 2, " numa=", i / 4, "\n");
  }
  return text +
         "nvlink a=0 b=2 links=12\nnvlink a=1 b=3 links=12\n"
         "nvlink a=4 b=5 links=12\nnvlink a=6 b=7 links=12\n";
}

// Issue 34's GPU links end to end: the agent reads them from NVML (the
// fake's), the server keeps them, and requests of several GPUs take the
// best-linked sets, as Explain says.
TEST_F(AgentE2eTest, GpuLinksReadByTheAgentChooseTheGpus) {
  SetScenario(NvLinkPairsBoard());
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 8; }));
  const v1::Node registered = *GetNode();
  const v1::Device* gpu0 = Find(registered, "GPU-0");
  ASSERT_NE(gpu0, nullptr);
  std::vector<std::string> links;
  for (const v1::DeviceLink& l : gpu0->links()) {
    links.push_back(
        absl::StrCat(l.peer_device_id(), " ", l.kind(), " ", l.count()));
  }
  EXPECT_THAT(links,
              testing::ElementsAre("GPU-1 PCIE_SWITCH 0", "GPU-2 NVLINK 12",
                                   "GPU-3 SAME_NUMA 0"));
  // Not in ListNodes pages.
  v1::ListNodesResponse page = ListAll();
  ASSERT_EQ(page.nodes_size(), 1);
  ASSERT_EQ(page.nodes(0).devices_size(), 8);
  for (const v1::Device& d : page.nodes(0).devices()) {
    EXPECT_EQ(d.links_size(), 0) << d.id();
  }
  auto devices = [](const v1::Allocation& a) {
    std::vector<std::string> ids;
    for (const v1::AllocatedDevice& d : a.devices()) {
      ids.push_back(d.device_id());
    }
    return ids;
  };
  // In index order these would be GPU 0, GPU 1, then GPUs 2 and 3, which
  // share no NVLink. With links (SchedulerLinksTest has the arithmetic): one
  // GPU whose switch is its pair's, then its partner (whose pair is broken
  // already), then whole pairs.
  v1::Allocation a;
  ASSERT_TRUE(Allocate(AllocateReq("one", "H100", 1), &a).ok());
  EXPECT_THAT(devices(a), testing::ElementsAre("GPU-4"));
  ASSERT_TRUE(Allocate(AllocateReq("two", "H100", 1), &a).ok());
  EXPECT_THAT(devices(a), testing::ElementsAre("GPU-5"));
  ASSERT_TRUE(Allocate(AllocateReq("pair-1", "H100", 2), &a).ok());
  EXPECT_THAT(devices(a), testing::ElementsAre("GPU-6", "GPU-7"));
  v1::ExplainResponse explain;
  ASSERT_TRUE(Call(&v1::AcceleratorScheduler::Stub::Explain,
                   AllocateReq("pair-2", "H100", 2), &explain)
                  .ok());
  EXPECT_THAT(explain.summary(),
              HasSubstr("GPUs 0, 2 of gpu-node-1 (all NVLinked, 12 NVLinks "
                        "among them): the best-linked 2 of its 4 free GPUs"));
  ASSERT_TRUE(Allocate(AllocateReq("pair-2", "H100", 2), &a).ok());
  EXPECT_THAT(devices(a), testing::ElementsAre("GPU-0", "GPU-2"));

  // A link a client makes up is refused, naming the field.
  v1::Node node = *GetNode();
  node.mutable_devices(0)->mutable_links(0)->set_kind("INFINIBAND");
  grpc::Status refused = Register(node);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(),
              HasSubstr("node.devices[0].links[0].kind \"INFINIBAND\""));
}

TEST_F(AgentE2eTest, MigRelayoutAndLostGpuReRegisterWithoutRestart) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 2; }));
  const pid_t agent_pid = agent_->pid();

  // nvidia-smi mig -dgi; -cgi 1g.5gb x7 on the A100: seven new slices.
  const std::string relayout = SevenSliceLayout();
  SetScenario(relayout);
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* a100 = Find(n, "GPU-a100");
    return a100 != nullptr && a100->mig_slices_size() == 7;
  }));
  EXPECT_EQ(Total("nvidia-tesla-a100", "1g.5gb"), 7);
  EXPECT_EQ(Total("nvidia-tesla-a100", "3g.20gb"), 0);

  // The H100 is allocated, then falls off the bus: the agent registers the
  // node without it and the server keeps it, unhealthy, while allocated.
  v1::AllocateRequest req;
  req.set_request_id("job-1");
  req.mutable_accelerator()->set_device("nvidia-h100");
  req.mutable_accelerator()->set_unpartitioned(true);
  v1::Allocation allocation;
  ASSERT_TRUE(Allocate(req, &allocation).ok());
  SetScenario(absl::StrReplaceAll(
      relayout, {{"memory_mib=81559", "memory_mib=81559 lost=1"}}));
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    return h100 != nullptr && !h100->healthy();
  }));
  v1::ReleaseRequest release;
  release.set_allocation_id(allocation.id());
  v1::Allocation released;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::Release, release, &released).ok());
  EXPECT_TRUE(NodeBecomes(
      [](const v1::Node& n) { return Find(n, "GPU-h100") == nullptr; }));
  EXPECT_EQ(agent_->pid(), agent_pid);
  EXPECT_EQ(kill(agent_pid, 0), 0) << "the agent is still running";
}

TEST_F(AgentE2eTest, RefusedRelayoutKeepsTheNodeLiveUntilTheSliceIsFree) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 2; }));
  v1::AllocateRequest req;
  req.set_request_id("on-the-slice");
  req.mutable_accelerator()->set_device("nvidia-tesla-a100");
  req.mutable_accelerator()->set_partition_size("3g.20gb");
  v1::Allocation allocation;
  ASSERT_TRUE(Allocate(req, &allocation).ok());
  // An operator re-lays the A100 out under a running job: the server refuses
  // to change a device in place while it is allocated.
  const std::string relayout = SevenSliceLayout();
  SetScenario(relayout);
  ASSERT_TRUE(AgentPrinted("FAILED_PRECONDITION: RegisterNode"));
  // The agent keeps the node live on the layout the server has.
  const v1::Node refused = *GetNode();
  EXPECT_TRUE(NodeBecomes([&](const v1::Node& n) {
    return n.last_heartbeat() > refused.last_heartbeat();
  }));
  EXPECT_EQ(Find(*GetNode(), "GPU-a100")->mig_slices_size(), 2);
  // Once the job is done, the next pass registers the new layout.
  v1::ReleaseRequest release;
  release.set_allocation_id(allocation.id());
  v1::Allocation released;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::Release, release, &released).ok());
  EXPECT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* a100 = Find(n, "GPU-a100");
    return a100 != nullptr && a100->mig_slices_size() == 7;
  }));
}

TEST_F(AgentE2eTest, ARemovedNodeIsRegisteredAgain) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 2; }));
  // An operator removes the node (as one may delete a Node object): the
  // agent's next heartbeat is NOT_FOUND and it registers the node again, as
  // a kubelet re-creates its Node.
  v1::RemoveNodeRequest remove;
  remove.set_name(kNode);
  v1::RemoveNodeResponse removed;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::RemoveNode, remove, &removed).ok());
  ASSERT_TRUE(AgentPrinted("NOT_FOUND: Heartbeat"));
  EXPECT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    return n.devices_size() == 2 && h100 != nullptr && h100->has_stats();
  }));
}

TEST_F(AgentE2eTest, HealthErrorsMakeDevicesUnhealthyAndRecover) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 2; }));
  // Pages pending retirement on the H100, a critical XID on the A100.
  SetScenario(absl::StrReplaceAll(
      kTwoGpus,
      {{"util=35", "util=35 retired_pending=1"}, {"mig=1", "mig=1 xid=79"}}));
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    return n.devices_size() == 2 && !n.devices(0).healthy() &&
           !n.devices(1).healthy();
  }));
  v1::GetCapacityResponse capacity = Capacity();
  for (const v1::CapacityEntry& e : capacity.entries()) {
    EXPECT_EQ(e.free(), 0) << e.DebugString();
  }
  // The pending pages clear (after a reset); the XID holds until the agent
  // restarts.
  SetScenario(kTwoGpus);
  EXPECT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    const v1::Device* a100 = Find(n, "GPU-a100");
    return h100 != nullptr && a100 != nullptr && h100->healthy() &&
           !a100->healthy();
  }));
}

TEST_F(AgentE2eTest, ServerRestartsUnderTheAgent) {
  ASSERT_TRUE(StartServer());
  const int port = server_->grpc_port();
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    return h100 != nullptr && h100->has_stats();
  }));
  EXPECT_EQ(server_->Stop(SIGKILL), 128 + SIGKILL);
  ASSERT_TRUE(AgentPrinted("UNAVAILABLE"));
  // The same port and database: the agent retries with backoff meanwhile.
  ASSERT_TRUE(StartServer({absl::StrCat("--listen=127.0.0.1:", port)}));
  // Readings are kept in memory only, so the restarted server has none until
  // the agent's next heartbeat; the node itself (durable) was never lost.
  EXPECT_TRUE(NodeBecomes([&](const v1::Node& n) {
    const v1::Device* h100 = Find(n, "GPU-h100");
    return h100 != nullptr && h100->has_stats();
  }));
  EXPECT_TRUE(AgentPrinted("reporting again"));
}

TEST_F(AgentE2eTest, MetricsAggregatePerNodeAndModelOrPerDeviceOnRequest) {
  ASSERT_TRUE(StartServer({"--metrics_per_device"}));
  SetScenario(absl::StrCat(
      kTwoGpus,
      "gpu uuid=GPU-h100-b name=\"NVIDIA H100 80GB HBM3\" memory_mib=81559 "
      "used_mib=1024 util=65 temp=50 power_mw=300000\n"));
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* d = Find(n, "GPU-h100-b");
    return d != nullptr && d->has_stats();
  }));
  absl::StatusOr<std::string> body =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status();
  const std::string labels = "{model=\"nvidia-h100\",node=\"gpu-node-1\"}";
  EXPECT_THAT(*body, HasSubstr("accelsched_node_device_utilization_ratio" +
                               labels + " 0.5\n"));
  EXPECT_THAT(*body, HasSubstr("accelsched_node_device_memory_used_bytes" +
                               labels + " 1610612736\n"));
  EXPECT_THAT(*body, HasSubstr("accelsched_node_device_power_watts" + labels +
                               " 550\n"));
  EXPECT_THAT(*body,
              HasSubstr("accelsched_node_device_max_temperature_celsius" +
                        labels + " 50\n"));
  EXPECT_THAT(*body,
              HasSubstr("accelsched_node_devices_reporting" + labels + " 2\n"));
  EXPECT_THAT(*body, HasSubstr("accelsched_device_utilization_ratio{device="
                               "\"GPU-h100-b\",model=\"nvidia-h100\",node="
                               "\"gpu-node-1\",partition=\"\"} 0.65\n"));
  EXPECT_THAT(*body, HasSubstr("accelsched_device_memory_used_bytes{device="
                               "\"MIG-b\",model=\"nvidia-tesla-a100\",node="
                               "\"gpu-node-1\",partition=\"3g.20gb\"} "
                               "31457280\n"));
}

TEST_F(AgentE2eTest, PerDeviceSeriesOnlyWhenAskedFor) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* d = Find(n, "GPU-h100");
    return d != nullptr && d->has_stats();
  }));
  absl::StatusOr<std::string> body =
      HttpGet(server_->metrics_port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_THAT(*body, HasSubstr("accelsched_node_device_utilization_ratio{"));
  EXPECT_THAT(*body, Not(HasSubstr("accelsched_device_utilization_ratio")));
}

TEST_F(AgentE2eTest, AdminTokenIsPresentedAndRequired) {
  const std::string token_file = dir_.File("token");
  std::ofstream(token_file) << "s3cret-token\n";
  ASSERT_TRUE(StartServer({"--admin_token_file=" + token_file}));
  // Without the token: refused, and the agent says so.
  auto refused = ServerProcess::StartProgram(ACCELSCHED_AGENT_PATH,
                                             AgentFlags(), "UNAUTHENTICATED");
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_FALSE(GetNode().ok());
  (*refused)->Stop(SIGTERM);
  ASSERT_TRUE(StartAgent({"--admin_token_file=" + token_file}));
  EXPECT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 2; }));
  EXPECT_EQ(agent_->Stop(SIGTERM), 0);
}

TEST_F(AgentE2eTest, MutualTlsClientCertificateIsTheAgentsCredential) {
  ASSERT_NO_FATAL_FAILURE(MakeCertificates(dir_));
  auto server = ServerProcess::Start(db_, MutualTlsServerFlags(dir_));
  ASSERT_TRUE(server.ok()) << server.status();
  std::vector<std::string> flags = {
      "--server=" + (*server)->grpc_address(),
      std::string("--node_name=") + kNode,
      "--interval=50ms",
      std::string("--nvml_library=") + FAKE_NVML_PATH,
      "--sys_dir=" + empty_,
      "--dev_dir=" + empty_,
      "--tls_ca=" + dir_.File("ca.pem")};
  // TLS without a client certificate: the catalog calls are refused.
  auto anonymous = ServerProcess::StartProgram(ACCELSCHED_AGENT_PATH, flags,
                                               "UNAUTHENTICATED");
  ASSERT_TRUE(anonymous.ok()) << anonymous.status();
  EXPECT_EQ((*anonymous)->Stop(SIGTERM), 0);
  // With one, signed by the server's client CA, the node registers.
  flags.push_back("--tls_cert=" + dir_.File("client.pem"));
  flags.push_back("--tls_key=" + dir_.File("client.key"));
  auto agent = ServerProcess::StartProgram(ACCELSCHED_AGENT_PATH, flags,
                                           "registered node gpu-node-1 with 2");
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ((*agent)->Stop(SIGTERM), 0);
}

TEST_F(AgentE2eTest, InventoryFileAddsDevicesNvmlCannotSee) {
  ASSERT_TRUE(StartServer());
  const std::string inventory = dir_.File("inventory.textproto");
  std::ofstream(inventory)
      << "devices { id: \"mi300x-0\" device_class: AMD_GPU model: "
         "\"amd-mi300x\" index: 0 }\n";
  ASSERT_TRUE(StartAgent({"--nvml_library=", "--inventory=" + inventory}));
  ASSERT_TRUE(
      NodeBecomes([](const v1::Node& n) { return n.devices_size() == 1; }));
  EXPECT_EQ(GetNode()->devices(0).canonical_model(), "amd-mi300x");
  EXPECT_EQ(Total("amd-mi300x", ""), 1);
}

TEST_F(AgentE2eTest, OncePrintsTheNodeAsJsonWithoutAServer) {
  std::string out;
  const int code = ServerProcess::RunProgramToExit(
      ACCELSCHED_AGENT_PATH,
      {std::string("--node_name=") + kNode,
       std::string("--nvml_library=") + FAKE_NVML_PATH, "--sys_dir=" + empty_,
       "--dev_dir=" + empty_, "--once"},
      &out);
  ASSERT_EQ(code, 0) << out;
  // stderr (the NVML line) comes first on the shared pipe.
  const std::string json = out.substr(out.find('{'));
  v1::Node node;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &node).ok())
      << json;
  EXPECT_EQ(node.name(), kNode);
  ASSERT_EQ(node.devices_size(), 2);
  EXPECT_EQ(node.devices(0).id(), "GPU-h100");
  EXPECT_TRUE(node.devices(0).healthy());
  EXPECT_DOUBLE_EQ(node.devices(0).stats().utilization(), 0.35);
  EXPECT_EQ(node.devices(1).mig_slices(1).profile(), "3g.20gb");

  // Without NVML a host has no NVIDIA GPUs, unless the driver is loaded
  // (DEV/nvidiactl): then the agent must not report the node without them.
  const std::vector<std::string> no_nvml = {
      "--node_name=n", "--nvml_library=" + dir_.File("none.so"),
      "--sys_dir=" + empty_, "--dev_dir=" + empty_, "--once"};
  EXPECT_EQ(
      ServerProcess::RunProgramToExit(ACCELSCHED_AGENT_PATH, no_nvml, &out), 0)
      << out;
  EXPECT_THAT(out, HasSubstr("no NVIDIA GPUs (cannot load"));
  std::ofstream(empty_ + "/nvidiactl") << "";
  EXPECT_EQ(
      ServerProcess::RunProgramToExit(ACCELSCHED_AGENT_PATH, no_nvml, &out), 1);
  EXPECT_THAT(out, HasSubstr("NOT_FOUND: cannot load"));
}

TEST_F(AgentE2eTest, HeartbeatStatsAreValidated) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(StartAgent());
  ASSERT_TRUE(NodeBecomes([](const v1::Node& n) {
    const v1::Device* d = Find(n, "GPU-h100");
    return d != nullptr && d->has_stats();
  }));
  EXPECT_EQ(agent_->Stop(SIGTERM), 0);
  const v1::Node before = *GetNode();
  auto heartbeat = [&](const std::string& id, double utilization) {
    v1::HeartbeatRequest req;
    req.set_name(kNode);
    (*req.mutable_device_stats())[id].set_utilization(utilization);
    v1::HeartbeatResponse resp;
    return Call(&v1::AcceleratorScheduler::Stub::Heartbeat, req, &resp);
  };
  grpc::Status s = heartbeat("GPU-h100", 57);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("device_stats[\"GPU-h100\"].utilization is 57"));
  s = heartbeat("GPU-other", 0.5);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("device_stats[\"GPU-other\"] is not a device or MIG "
                        "slice of node \"gpu-node-1\""));
  s = heartbeat("bad\nid", 0.5);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("device_stats[\"bad\\nid\"]"));
  v1::HeartbeatRequest flood;
  flood.set_name(kNode);
  for (int i = 0; i <= 8192; ++i) {
    (*flood.mutable_device_stats())[absl::StrCat("GPU-", i)];
  }
  v1::HeartbeatResponse resp;
  s = Call(&v1::AcceleratorScheduler::Stub::Heartbeat, flood, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("device_stats has 8193 entries; at most 8192"));
  // Refused heartbeats changed nothing.
  const v1::Node after = *GetNode();
  EXPECT_EQ(after.DebugString(), before.DebugString());
  // A MIG slice's stats are accepted; without a time the server stamps one.
  ASSERT_TRUE(heartbeat("MIG-a", 0).ok());
  const v1::Node stamped = *GetNode();
  EXPECT_GT(Find(stamped, "GPU-a100")->mig_slices(0).stats().time().seconds(),
            0);
  EXPECT_FALSE(Find(stamped, "GPU-h100")->has_stats())
      << "a heartbeat's stats replace the node's previous ones";
}

}  // namespace
}  // namespace accelsched
