// Hardening through the real server: admin token, TLS and mutual TLS with
// certificates made by openssl at test time, a full disk, a read-only database,
// clients that give up mid-call, a watcher that stops reading, and oversized
// requests.
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/test_certificates.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;
using Stub = v1::AcceleratorScheduler::Stub;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

v1::Node SmallNode(const std::string& name, const std::string& prefix,
                   int gpus) {
  v1::Node n;
  n.set_name(name);
  for (int i = 0; i < gpus; ++i) AddGpu(&n, absl::StrCat(prefix, i), "T4", i);
  return n;
}

grpc::Status RegisterWith(Stub& stub, const v1::Node& node,
                          const std::string& token) {
  grpc::ClientContext ctx;
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
  v1::RegisterNodeRequest req;
  *req.mutable_node() = node;
  v1::Node resp;
  return stub.RegisterNode(&ctx, req, &resp);
}

TEST_F(E2eTest, AdminTokenGuardsCatalogChangesOnly) {
  const std::string token_file = dir_.File("admin.token");
  std::ofstream(token_file) << "s3cret-admin-token\n";
  ASSERT_TRUE(StartServer({"--admin_token_file=" + token_file}));
  const v1::Node node = SmallNode("n1", "GPU-", 2);
  grpc::Status s = RegisterWith(*stub_, node, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(s.error_message(), HasSubstr("authorization: Bearer <token>"));
  s = RegisterWith(*stub_, node, "s3cret-admin-tokeX");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  s = RegisterWith(*stub_, node, "s3cret");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(ListAll().nodes_size(), 0);  // nothing changed
  ASSERT_TRUE(RegisterWith(*stub_, node, "s3cret-admin-token").ok());
  // Heartbeat, cordon and removal are admin calls too; reads and allocation are
  // not.
  v1::HeartbeatRequest hb;
  hb.set_name("n1");
  v1::HeartbeatResponse hb_resp;
  EXPECT_EQ(Call(&Stub::Heartbeat, hb, &hb_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  v1::RemoveNodeRequest remove;
  remove.set_name("n1");
  v1::RemoveNodeResponse removed;
  EXPECT_EQ(Call(&Stub::RemoveNode, remove, &removed).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(ListAll().nodes_size(), 1);
  EXPECT_TRUE(Allocate(AllocateReq("job", "T4")).ok());

  std::string output;
  EXPECT_EQ(ServerProcess::RunToExit(
                {"--db=" + dir_.File("x.db"), "--listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0",
                 "--admin_token_file=" + dir_.File("missing")},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr("cannot read --admin_token_file"));
}

std::unique_ptr<Stub> TlsStub(const ServerProcess& server, const TempDir& dir,
                              bool with_client_cert) {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = Slurp(dir.File("ca.pem"));
  if (with_client_cert) {
    ssl.pem_private_key = Slurp(dir.File("client.key"));
    ssl.pem_cert_chain = Slurp(dir.File("client.pem"));
  }
  return v1::AcceleratorScheduler::NewStub(
      grpc::CreateChannel(server.grpc_address(), grpc::SslCredentials(ssl)));
}

TEST_F(E2eTest, MutualTlsMakesAClientCertificateTheAdminCredential) {
  ASSERT_NO_FATAL_FAILURE(MakeCertificates(dir_));
  auto server = ServerProcess::Start(db_, MutualTlsServerFlags(dir_));
  ASSERT_TRUE(server.ok()) << server.status();
  auto anonymous = TlsStub(**server, dir_, false);
  auto admin = TlsStub(**server, dir_, true);
  const v1::Node node = SmallNode("n1", "GPU-", 2);
  EXPECT_EQ(RegisterWith(*anonymous, node, "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::Status s = RegisterWith(*admin, node, "");
  ASSERT_TRUE(s.ok()) << s.error_message();
  // A certificate-less client may still allocate over TLS.
  grpc::ClientContext ctx;
  v1::Allocation a;
  s = anonymous->Allocate(&ctx, AllocateReq("job", "T4"), &a);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // Plaintext does not get in.
  auto plain = v1::AcceleratorScheduler::NewStub(grpc::CreateChannel(
      (*server)->grpc_address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext plain_ctx;
  plain_ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(3));
  v1::Node got;
  v1::GetNodeRequest get;
  get.set_name("n1");
  EXPECT_EQ(plain->GetNode(&plain_ctx, get, &got).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  std::string output;
  EXPECT_EQ(ServerProcess::RunToExit(
                {"--db=" + dir_.File("y.db"), "--listen=127.0.0.1:0",
                 "--metrics_listen=127.0.0.1:0",
                 "--tls_cert=" + dir_.File("server.pem")},
                &output),
            1);
  EXPECT_THAT(output, HasSubstr("--tls_cert and --tls_key go together"));
}

TEST_F(E2eTest, FullDiskFailsTheWriteCleanlyAndTheServerKeepsServing) {
  ASSERT_TRUE(StartServer({"--max_db_pages=48"}));
  std::vector<std::string> acknowledged;
  grpc::Status last;
  for (int i = 0; i < 200; ++i) {
    const std::string name = absl::StrCat("node-", i);
    last = Register(SmallNode(name, name + "-gpu-", 8));
    if (!last.ok()) break;
    acknowledged.push_back(name);
  }
  ASSERT_FALSE(last.ok()) << "48 pages should not hold 200 nodes";
  EXPECT_EQ(last.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(last.error_message(), HasSubstr("full"));
  ASSERT_GT(acknowledged.size(), 0u);
  // Still serving, with exactly what was acknowledged.
  v1::ListNodesRequest list;
  list.set_page_size(1000);
  v1::ListNodesResponse listed;
  ASSERT_TRUE(Call(&Stub::ListNodes, list, &listed).ok());
  EXPECT_EQ(static_cast<size_t>(listed.nodes_size()), acknowledged.size());
  listed.Clear();
  EXPECT_TRUE(Allocate(AllocateReq("job", "T4")).ok() ||
              Allocate(AllocateReq("job", "T4")).error_code() ==
                  grpc::StatusCode::RESOURCE_EXHAUSTED);
  server_->Stop(SIGTERM);
  ASSERT_TRUE(StartServer());  // no cap: the file is intact and holds what was
                               // acknowledged
  ASSERT_TRUE(Call(&Stub::ListNodes, list, &listed).ok());
  EXPECT_EQ(static_cast<size_t>(listed.nodes_size()), acknowledged.size());
  EXPECT_TRUE(Register(SmallNode("after", "after-gpu-", 8)).ok());
}

TEST_F(E2eTest, ReadOnlyDatabaseIsAClearErrorAndLeftUntouched) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(SmallNode("n1", "GPU-", 2)).ok());
  server_->Stop(SIGTERM);
  const std::string before = Slurp(db_);
  // The file belongs to root and nobody else may write it or its directory.
  std::string output;
  const int rc = ServerProcess::RunProgramToExit(
      "/usr/bin/setpriv",
      {"--reuid=65534", "--regid=65534", "--clear-groups",
       ServerProcess::ServerPath(), "--db=" + db_, "--listen=127.0.0.1:0",
       "--metrics_listen=127.0.0.1:0"},
      &output);
  EXPECT_EQ(rc, 1) << output;
  EXPECT_THAT(output, HasSubstr("database"));
  EXPECT_THAT(output, testing::AnyOf(HasSubstr("readonly"),
                                     HasSubstr("unable to open")));
  EXPECT_EQ(Slurp(db_), before);
  ASSERT_TRUE(StartServer());
  EXPECT_EQ(ListAll().nodes_size(), 1);
}

TEST_F(E2eTest, ClientsThatGiveUpMidCallLeaveAConsistentState) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(SmallNode("n1", "GPU-", 8)).ok());
  std::vector<std::thread> threads;
  std::atomic<int> gave_up{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::microseconds(50 + 100 * (i % 5)));
        v1::Allocation a;
        grpc::Status s = stub_->Allocate(
            &ctx, AllocateReq(absl::StrCat(t, "-", i), "T4"), &a);
        if (!s.ok()) ++gave_up;
        if (s.ok() || s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
          // Whatever happened, the retry tells the truth, and then we release.
          v1::Allocation got;
          if (Allocate(AllocateReq(absl::StrCat(t, "-", i), "T4"), &got).ok()) {
            if (s.ok()) {
              EXPECT_EQ(got.id(), a.id());
            }
            v1::ReleaseRequest release;
            release.set_allocation_id(got.id());
            v1::Allocation released;
            EXPECT_TRUE(Call(&Stub::Release, release, &released).ok());
          }
        }
      }
    });
  }
  // A client that cancels a WatchEvents stream straight away.
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    auto stream = stub_->WatchEvents(&ctx, v1::WatchEventsRequest());
    ctx.TryCancel();
  }
  for (auto& th : threads) th.join();
  EXPECT_GT(gave_up.load(), 0);
  // Nothing is left allocated, and the counts add up.
  const v1::GetCapacityResponse capacity = Capacity();
  ASSERT_EQ(capacity.entries_size(), 1);
  EXPECT_EQ(capacity.entries(0).free(), 8) << capacity.DebugString();
  EXPECT_EQ(capacity.entries(0).allocated(), 0);
}

TEST_F(E2eTest, AWatcherThatStopsReadingIsDroppedAndDoesNotSlowAllocate) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(SmallNode("n1", "GPU-", 4)).ok());
  // A client that grants little HTTP/2 window, so that its not reading stalls
  // the server's writes instead of filling the client's transport buffers.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 8192);
  auto slow = v1::AcceleratorScheduler::NewStub(grpc::CreateCustomChannel(
      server_->grpc_address(), grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext watch_ctx;
  watch_ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(120));
  auto watch = slow->WatchEvents(&watch_ctx, v1::WatchEventsRequest());
  // Never read while 3,000 events (more than the 1,024 buffered) happen.
  const absl::Time start = absl::Now();
  for (int i = 0; i < 1500; ++i) {
    v1::Allocation a;
    ASSERT_TRUE(Allocate(AllocateReq(absl::StrCat("r", i), "T4"), &a).ok());
    v1::ReleaseRequest release;
    release.set_allocation_id(a.id());
    v1::Allocation released;
    ASSERT_TRUE(Call(&Stub::Release, release, &released).ok());
  }
  const absl::Duration took = absl::Now() - start;
  EXPECT_LT(took, absl::Seconds(60));
  // Reading now drains what was in flight and then ends with the drop.
  v1::Event event;
  int read = 0;
  while (watch->Read(&event)) ++read;
  grpc::Status s = watch->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("watcher fell behind"));
  EXPECT_LT(read, 3000);
  std::printf(
      "3000 calls in %s with a stalled watcher; it got %d events, then: %s\n",
      absl::FormatDuration(took).c_str(), read, s.error_message().c_str());
}

TEST_F(E2eTest, OversizedRequestsAreRefused) {
  ASSERT_TRUE(StartServer());
  v1::Node huge = SmallNode("n1", "GPU-", 1);
  (*huge.mutable_labels())["big"] = std::string(5 << 20, 'x');
  grpc::Status s = Register(huge);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  v1::AllocateRequest long_device = AllocateReq("r", std::string(300, 'a'));
  s = Allocate(long_device);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(),
              HasSubstr("accelerator.device is 300 characters long"));
  v1::ListNodesRequest list;
  list.set_label_selector(std::string(5000, 'a'));
  v1::ListNodesResponse listed;
  s = Call(&Stub::ListNodes, list, &listed);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(ListAll().nodes_size(), 0);
}

}  // namespace
}  // namespace accelsched
