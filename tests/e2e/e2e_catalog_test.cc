// End-to-end: the real accelschedd process, a real SQLite file, a real gRPC
// channel.
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "accelsched/v1/accelsched.grpc.pb.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"

namespace accelsched {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(E2eTest, ReflectionListsTheServicesAndHealthIsServing) {
  ASSERT_TRUE(StartServer());
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const char* service : {"", "accelsched.v1.AcceleratorScheduler"}) {
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = health->Check(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING)
        << service;
  }

  namespace refl = grpc::reflection::v1alpha;
  auto reflection = refl::ServerReflection::NewStub(channel_);
  grpc::ClientContext ctx;
  auto stream = reflection->ServerReflectionInfo(&ctx);
  refl::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  refl::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::set<std::string> names;
  for (const auto& s : resp.list_services_response().service())
    names.insert(s.name());
  EXPECT_THAT(names,
              IsSupersetOf({"accelsched.v1.AcceleratorScheduler",
                            "grpc.health.v1.Health",
                            "grpc.reflection.v1alpha.ServerReflection"}));
  // `grpcurl describe` needs the descriptors themselves, for ours and for
  // health.
  for (const char* symbol :
       {"accelsched.v1.AcceleratorScheduler", "grpc.health.v1.Health"}) {
    refl::ServerReflectionRequest describe;
    describe.set_file_containing_symbol(symbol);
    ASSERT_TRUE(stream->Write(describe));
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_GT(resp.file_descriptor_response().file_descriptor_proto_size(), 0)
        << symbol;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(E2eTest, CatalogSurvivesRestartAndKill) {
  ASSERT_TRUE(StartServer());
  v1::Node stored;
  ASSERT_TRUE(Register(GpuNode(), &stored).ok());
  EXPECT_EQ(stored.devices(0).canonical_model(), "nvidia-tesla-a100");
  EXPECT_TRUE(stored.schedulable());
  ASSERT_TRUE(Register(TpuHost("tpu-host-a", "chip-a")).ok());
  ASSERT_TRUE(Register(TpuHost("tpu-host-b", "chip-b")).ok());

  v1::SetNodeSchedulableRequest cordon;
  cordon.set_name("tpu-host-b");
  v1::Node cordoned;
  ASSERT_TRUE(Call(&v1::AcceleratorScheduler::Stub::SetNodeSchedulable, cordon,
                   &cordoned)
                  .ok());
  EXPECT_FALSE(cordoned.schedulable());
  v1::HeartbeatRequest hb;
  hb.set_name("gpu-node-1");
  hb.add_unhealthy_device_ids("GPU-0001");
  v1::HeartbeatResponse hb_resp;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::Heartbeat, hb, &hb_resp).ok());

  const v1::ListNodesResponse before = ListAll();
  ASSERT_EQ(before.nodes_size(), 3);
  EXPECT_EQ(ListAll("pool=tpu").nodes_size(), 2);
  EXPECT_EQ(ListAll("pool=tpu,pool!=tpu").nodes_size(), 0);
  const v1::GetCapacityResponse capacity = Capacity();
  // A100 whole (unhealthy), A100 1g.5gb x7, v5p 2x2x2 x1.
  ASSERT_EQ(capacity.entries_size(), 3) << capacity.DebugString();
  EXPECT_EQ(capacity.entries(0).partition(), "");
  EXPECT_EQ(capacity.entries(0).unhealthy(), 1);
  EXPECT_EQ(capacity.entries(1).partition(), "1g.5gb");
  EXPECT_EQ(capacity.entries(1).free(), 7);
  EXPECT_EQ(capacity.entries(2).model(), "tpu-v5p-slice");
  EXPECT_EQ(capacity.entries(2).free(), 1);

  // Clean restart.
  EXPECT_EQ(server_->Stop(SIGTERM), 0);
  EXPECT_THAT(server_->output(), HasSubstr("accelschedd: stopped"));
  ASSERT_TRUE(StartServer());
  EXPECT_TRUE(MessageDifferencer::Equals(ListAll(), before));
  EXPECT_TRUE(MessageDifferencer::Equals(Capacity(), capacity));

  // A change acknowledged just before kill -9 is there after restart.
  v1::RemoveNodeRequest remove;
  remove.set_name("gpu-node-1");
  v1::RemoveNodeResponse removed;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::RemoveNode, remove, &removed).ok());
  server_->Stop(SIGKILL);
  ASSERT_TRUE(StartServer());
  EXPECT_EQ(ListAll().nodes_size(), 2);
  v1::GetNodeRequest get;
  get.set_name("gpu-node-1");
  v1::Node node;
  EXPECT_EQ(
      Call(&v1::AcceleratorScheduler::Stub::GetNode, get, &node).error_code(),
      grpc::StatusCode::NOT_FOUND);
  get.set_name("tpu-host-b");
  ASSERT_TRUE(Call(&v1::AcceleratorScheduler::Stub::GetNode, get, &node).ok());
  EXPECT_FALSE(node.schedulable());
}

// GPU sharing through the real server: a GPU's sharing mode is refused where
// it cannot apply; shares go best fit per GPU, never past a GPU's compute nor
// onto a GPU of another group's shares,
// whole requests are kept off shared GPUs, each share is placed on its GPU's
// claim with its MPS limits, and all of it is as before after a kill -9.
TEST_F(E2eTest, SharesArePlacedOnTheirGpusClaimAndSurviveAKill) {
  ASSERT_TRUE(StartServer());
  v1::Node node;
  node.set_name("share-node");
  AddGpu(&node, "GPU-S0", "T4", 0)->set_sharing(v1::MPS);
  AddGpu(&node, "GPU-S1", "T4", 1)->set_sharing(v1::TIME_SLICING);
  AddGpu(&node, "GPU-S2", "T4", 2);
  v1::Node bad = node;
  AddMigA100(&bad, "GPU-M", 3, "MIG-M-")->set_sharing(v1::MPS);
  grpc::Status refused = Register(bad);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(refused.error_message(), HasSubstr("node.devices[3].sharing"));
  v1::Node unknown = node;
  unknown.mutable_devices(0)->set_sharing(static_cast<v1::GpuSharing>(7));
  EXPECT_EQ(Register(unknown).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Register(node).ok());

  auto share = [](const std::string& id, int milli,
                  const std::string& group = "") {
    v1::AllocateRequest r = AllocateReq(id, "T4");
    r.mutable_share()->set_compute_milli(milli);
    r.mutable_share()->set_group(group);
    return r;
  };
  v1::Allocation bad_share;
  grpc::Status s = Allocate(share("bad", 1001), &bad_share);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("share.compute_milli"));

  // Equal GPUs: the first by key. 530 milli are left on GPU-S0.
  v1::Allocation a1;
  ASSERT_TRUE(Allocate(share("share-1", 470), &a1).ok());
  ASSERT_EQ(a1.devices_size(), 1);
  EXPECT_EQ(a1.devices(0).device_id(), "GPU-S0");
  EXPECT_EQ(a1.devices(0).share().compute_milli(), 470);
  const int64_t memory = (int64_t{40} << 30) * 470 / 1000;
  EXPECT_EQ(a1.devices(0).share().memory_bytes(), memory);
  EXPECT_EQ(a1.placement().resource_name(), "nvidia.com/gpu");
  EXPECT_EQ(a1.placement().resource_count(), 1);
  EXPECT_THAT(a1.placement().env(),
              testing::UnorderedElementsAre(
                  testing::Pair("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "47"),
                  testing::Pair("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
                                absl::StrCat("0=", memory >> 20, "M"))));
  EXPECT_THAT(
      a1.placement().resource_claim(),
      HasSubstr(R"("metadata":{"name":"accelsched-share-mps-gpu-s0"})"));
  EXPECT_THAT(a1.placement().resource_claim(),
              HasSubstr(R"("sharing":{"strategy":"MPS"})"));
  // 600 does not fit in GPU-S0's 530: GPU-S1, time-sliced, no MPS limits;
  // the shares on GPU-S1 are now of group "ns-b" only.
  v1::Allocation a2;
  ASSERT_TRUE(Allocate(share("share-2", 600, "ns-b"), &a2).ok());
  EXPECT_EQ(a2.devices(0).device_id(), "GPU-S1");
  EXPECT_EQ(a2.devices(0).share().group(), "ns-b");
  EXPECT_THAT(a2.placement().env(), testing::IsEmpty());
  EXPECT_THAT(a2.placement().resource_claim(),
              HasSubstr(R"("strategy":"TimeSlicing")"));
  // Best fit: 500 goes where 530 are free, not 400; the same claim.
  v1::Allocation a3;
  ASSERT_TRUE(Allocate(share("share-3", 500), &a3).ok());
  EXPECT_EQ(a3.devices(0).device_id(), "GPU-S0");
  EXPECT_EQ(a3.placement().resource_claim(), a1.placement().resource_claim());
  // A whole GPU goes where no share is.
  v1::Allocation whole;
  ASSERT_TRUE(Allocate(AllocateReq("whole-1", "T4"), &whole).ok());
  EXPECT_EQ(whole.devices(0).device_id(), "GPU-S2");
  EXPECT_FALSE(whole.devices(0).has_share());
  v1::ExplainResponse explained;
  ASSERT_TRUE(Call(&v1::AcceleratorScheduler::Stub::Explain,
                   share("preview", 400, "ns-b"), &explained)
                  .ok());
  EXPECT_EQ(explained.would_allocate().devices(0).device_id(), "GPU-S1");

  server_->Stop(SIGKILL);
  ASSERT_TRUE(StartServer());
  v1::GetNodeRequest get;
  get.set_name("share-node");
  v1::Node stored;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::GetNode, get, &stored).ok());
  ASSERT_EQ(stored.devices_size(), 3);
  EXPECT_EQ(stored.devices(0).sharing(), v1::MPS);
  EXPECT_EQ(stored.devices(1).sharing(), v1::TIME_SLICING);
  EXPECT_EQ(stored.devices(2).sharing(), v1::GPU_SHARING_NONE);
  v1::GetAllocationRequest get_a1;
  get_a1.set_allocation_id(a1.id());
  v1::Allocation reloaded;
  ASSERT_TRUE(
      Call(&v1::AcceleratorScheduler::Stub::GetAllocation, get_a1, &reloaded)
          .ok());
  EXPECT_EQ(reloaded.devices(0).share().compute_milli(), 470);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
      reloaded.placement(), a1.placement()))
      << reloaded.placement().DebugString();
  const v1::GetCapacityResponse capacity = Capacity();
  ASSERT_EQ(capacity.entries_size(), 1) << capacity.DebugString();
  const v1::CapacityEntry& t4 = capacity.entries(0);
  EXPECT_EQ(t4.free(), 0);
  EXPECT_EQ(t4.free_compute_milli(), 30 + 400);
  // The shares came back, with their group: 450 fits no GPU, 400 fits
  // GPU-S1 exactly, for group "ns-b" only.
  v1::Allocation more;
  s = Allocate(share("share-4", 450), &more);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  s = Allocate(share("share-5", 400), &more);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  ASSERT_TRUE(Allocate(share("share-6", 400, "ns-b"), &more).ok());
  EXPECT_EQ(more.devices(0).device_id(), "GPU-S1");
  s = Allocate(share("bad-group", 100, "Not A Namespace"), &more);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("share.group"));
}

TEST_F(E2eTest, BadInputIsRejectedNamingTheFieldAndChangesNothing) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(GpuNode()).ok());
  const v1::ListNodesResponse before = ListAll();

  struct Case {
    const char* what;
    std::function<void(v1::Node&)> mutate;
    const char* message;
  };
  const Case kCases[] = {
      {"unknown model",
       [](v1::Node& n) { n.mutable_devices(0)->set_model("nvidia-z9000"); },
       "node.devices[0].model \"nvidia-z9000\""},
      {"empty name", [](v1::Node& n) { n.set_name(""); },
       "node.name is required"},
      {"long id",
       [](v1::Node& n) { n.mutable_devices(0)->set_id(std::string(200, 'x')); },
       "node.devices[0].id is 200 characters"},
      {"device of another node",
       [](v1::Node& n) {
         n.set_name("gpu-node-2");
         n.mutable_devices()->DeleteSubrange(1, 1);
       },
       "node.devices[0].id \"GPU-0001\" is already registered on node "
       "\"gpu-node-1\""},
      {"MIG on a T4",
       [](v1::Node& n) { n.mutable_devices(1)->set_model("nvidia-tesla-t4"); },
       "node.devices[1].mig_enabled is set but nvidia-tesla-t4 has no MIG "
       "support"},
      {"overlapping MIG",
       [](v1::Node& n) {
         n.mutable_devices(1)->mutable_mig_slices(1)->set_start(0);
       },
       "node.devices[1].mig_slices[1] 1g.5gb at start 0 overlaps"},
      {"TPU chip without slice",
       [](v1::Node& n) {
         v1::Device* d = AddGpu(&n, "chip-x", "V5E", 9);
         d->set_tpu_topology("2x4");
       },
       "node.devices[2].tpu_slice_id is required"},
      {"TPU topology of another generation",
       [](v1::Node& n) {
         v1::Device* d = AddGpu(&n, "chip-x", "V5E", 9);
         d->set_tpu_slice_id("s");
         d->set_tpu_topology("2x2x1");
       },
       "node.devices[2].tpu_topology \"2x2x1\" is not a topology of "
       "tpu-v5-lite-podslice"},
      {"bad device class",
       [](v1::Node& n) {
         n.mutable_devices(0)->set_device_class(
             static_cast<v1::DeviceClass>(42));
       },
       "node.devices[0].device_class 42"},
  };
  for (const Case& c : kCases) {
    v1::Node n = GpuNode();
    n.mutable_devices(0)->set_model(
        "A100");  // a harmless change, so a bug would show
    c.mutate(n);
    grpc::Status s = Register(n);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.what;
    EXPECT_THAT(s.error_message(), HasSubstr(c.message)) << c.what;
  }
  v1::RegisterNodeRequest empty;
  v1::Node out;
  grpc::Status s =
      Call(&v1::AcceleratorScheduler::Stub::RegisterNode, empty, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "node is required");

  v1::GetNodeRequest get;
  get.set_name("Not A Name");
  EXPECT_EQ(
      Call(&v1::AcceleratorScheduler::Stub::GetNode, get, &out).error_code(),
      grpc::StatusCode::INVALID_ARGUMENT);
  get.set_name("absent");
  EXPECT_EQ(
      Call(&v1::AcceleratorScheduler::Stub::GetNode, get, &out).error_code(),
      grpc::StatusCode::NOT_FOUND);
  v1::ListNodesRequest list;
  list.set_label_selector("a b");
  v1::ListNodesResponse list_resp;
  s = Call(&v1::AcceleratorScheduler::Stub::ListNodes, list, &list_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("label_selector"));
  v1::HeartbeatRequest hb;
  hb.set_name("gpu-node-1");
  hb.add_unhealthy_device_ids("GPU-nope");
  v1::HeartbeatResponse hb_resp;
  s = Call(&v1::AcceleratorScheduler::Stub::Heartbeat, hb, &hb_resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("unhealthy_device_ids[0]"));
  v1::RemoveNodeRequest remove;
  v1::RemoveNodeResponse removed;
  s = Call(&v1::AcceleratorScheduler::Stub::RemoveNode, remove, &removed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("name is required"));

  EXPECT_TRUE(MessageDifferencer::Equals(ListAll(), before));
}

TEST_F(E2eTest, UnusableDatabaseOrPortExitsNonZeroWithAMessage) {
  std::string output;
  // Not a database: refused, and the file is left as it was.
  {
    std::ofstream out(db_, std::ios::binary);
    out << std::string(8192, 'z');
  }
  const std::string before = ReadFile(db_);
  EXPECT_EQ(ServerProcess::RunToExit({"--db=" + db_, "--listen=127.0.0.1:0",
                                      "--metrics_listen=127.0.0.1:0"},
                                     &output),
            1);
  EXPECT_THAT(output, HasSubstr("cannot open database"));
  EXPECT_EQ(ReadFile(db_), before);

  EXPECT_EQ(ServerProcess::RunToExit(
                {"--db=" + dir_.File("no/such/dir.db"), "--listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0"},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr("cannot open database"));

  // A port that is taken.
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  const std::string good_db = "--db=" + dir_.File("ok.db");
  EXPECT_EQ(ServerProcess::RunToExit(
                {good_db, "--listen=" + taken, "--metrics_listen=127.0.0.1:0"},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr("cannot serve gRPC on \"" + taken + "\""));
  EXPECT_EQ(ServerProcess::RunToExit(
                {good_db, "--listen=127.0.0.1:0", "--metrics_listen=" + taken},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr("cannot serve metrics on \"" + taken + "\""));
  close(fd);
}

}  // namespace
}  // namespace accelsched
