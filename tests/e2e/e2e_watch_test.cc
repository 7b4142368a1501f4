// WatchEvents on gRPC's callback API, end to end against the real server:
// filters, refused filters, a stream freed as soon as its client cancels, no
// thread per watcher, and open streams ended when the server stops.
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/e2e_fixture.h"
#include "tests/support/http_client.h"

namespace accelsched {
namespace {

using Stub = v1::AcceleratorScheduler::Stub;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Node ModelNode(const std::string& name, const std::string& model,
                   int gpus) {
  v1::Node n;
  n.set_name(name);
  for (int i = 0; i < gpus; ++i) {
    AddGpu(&n, absl::StrCat(name, "-GPU-", i), model, i);
  }
  return n;
}

// One open stream, read with the synchronous client.
struct Watch {
  explicit Watch(Stub& stub, const v1::WatchEventsRequest& req = {}) {
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(60));
    reader = stub.WatchEvents(&ctx, req);
  }
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<v1::Event>> reader;
};

// "ALLOCATED r1" for an allocation event (its request id), "NODE_REMOVED n2"
// for a catalog event (its node).
std::string Describe(const v1::Event& e) {
  return absl::StrCat(
      v1::Event::Type_Name(e.type()), " ",
      e.has_allocation() ? e.allocation().request_id() : e.node());
}

// Reads until an event described as `last` (inclusive).
std::vector<std::string> ReadThrough(Watch& w, const std::string& last) {
  std::vector<std::string> out;
  v1::Event e;
  while (w.reader->Read(&e)) {
    out.push_back(Describe(e));
    if (out.back() == last) break;
  }
  return out;
}

class E2eWatchTest : public E2eTest {
 public:
  double Gauge(const std::string& name) {
    absl::StatusOr<std::string> body =
        HttpGet(server_->metrics_port(), "/metrics");
    return body.ok() ? SampleValue(*body, name) : -1;
  }
  // Waits (up to 20 s) until the server counts `n` watchers: a stream is
  // subscribed once its handler ran, a cancelled one gone once freed.
  [[nodiscard]] bool AwaitWatchers(int n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (Gauge("accelsched_watchers") == n) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }
  int64_t ServerThreads() {
    std::ifstream status(absl::StrCat("/proc/", server_->pid(), "/status"));
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Threads:", 0) == 0) return std::stoll(line.substr(8));
    }
    return -1;
  }
  v1::AllocateRequest Req(const std::string& id, const std::string& model,
                          const std::string& tenant) {
    v1::AllocateRequest r = AllocateReq(id, model);
    r.set_tenant(tenant);
    return r;
  }
  void Release(const std::string& request_id) {
    v1::ReleaseRequest req;
    req.set_request_id(request_id);
    v1::Allocation resp;
    EXPECT_TRUE(Call(&Stub::Release, req, &resp).ok());
  }
};

// Each filter narrows the stream; events arrive in commit order. Every watch
// ends with an event it matches, so an event it should not have had would
// show up before it.
TEST_F(E2eWatchTest, FiltersSelectTheEventsOfATenantARequestOrANode) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(ModelNode("n1", "T4", 2)).ok());
  ASSERT_TRUE(Register(ModelNode("n2", "L4", 2)).ok());
  v1::WatchEventsRequest by_tenant, by_request, by_node;
  by_tenant.set_tenant("a");
  by_request.set_request_id("r2");
  by_node.set_node("n2");
  Watch all(*stub_), tenant(*stub_, by_tenant), request(*stub_, by_request),
      node(*stub_, by_node);
  ASSERT_TRUE(AwaitWatchers(4));

  ASSERT_TRUE(Allocate(Req("r1", "T4", "a")).ok());
  ASSERT_TRUE(Allocate(Req("r2", "L4", "b")).ok());
  Release("r1");
  v1::SetNodeSchedulableRequest cordon;
  cordon.set_name("n2");
  cordon.set_schedulable(false);
  v1::Node cordoned;
  ASSERT_TRUE(Call(&Stub::SetNodeSchedulable, cordon, &cordoned).ok());
  ASSERT_TRUE(Allocate(Req("r3", "T4", "a")).ok());  // on n1
  Release("r2");

  // Each watch's last event comes after the catalog event: one it should
  // not get would show up before it.
  EXPECT_THAT(ReadThrough(all, "RELEASED r2"),
              ElementsAre("ALLOCATED r1", "ALLOCATED r2", "RELEASED r1",
                          "NODE_SCHEDULABLE_CHANGED n2", "ALLOCATED r3",
                          "RELEASED r2"));
  EXPECT_THAT(ReadThrough(tenant, "ALLOCATED r3"),
              ElementsAre("ALLOCATED r1", "RELEASED r1", "ALLOCATED r3"));
  EXPECT_THAT(ReadThrough(request, "RELEASED r2"),
              ElementsAre("ALLOCATED r2", "RELEASED r2"));
  EXPECT_THAT(ReadThrough(node, "RELEASED r2"),
              ElementsAre("ALLOCATED r2", "NODE_SCHEDULABLE_CHANGED n2",
                          "RELEASED r2"));
}

TEST_F(E2eWatchTest, MalformedFiltersAreRefusedNamingTheField) {
  ASSERT_TRUE(StartServer());
  struct Case {
    v1::WatchEventsRequest req;
    std::string field;
  };
  std::vector<Case> cases(3);
  cases[0].req.set_tenant(std::string("a\x01", 2));
  cases[0].field = "tenant";
  cases[1].req.set_request_id(std::string(300, 'r'));
  cases[1].field = "request_id";
  cases[2].req.set_node("Not A Node Name");
  cases[2].field = "node";
  for (const Case& c : cases) {
    Watch w(*stub_, c.req);
    v1::Event e;
    EXPECT_FALSE(w.reader->Read(&e));
    grpc::Status s = w.reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.field));
  }
  EXPECT_EQ(Gauge("accelsched_watchers"), 0);
}

// Watchers hold no thread: the server's thread count does not follow them,
// and a cancelled stream is unsubscribed and freed at once (not at its
// deadline or the next event).
TEST_F(E2eWatchTest, WatchersHoldNoThreadAndCancelledOnesAreFreed) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(Register(ModelNode("n1", "T4", 1)).ok());
  // One stream first, so that gRPC's threads for streaming exist.
  {
    Watch warm(*stub_);
    ASSERT_TRUE(AwaitWatchers(1));
    warm.ctx.TryCancel();
    ASSERT_TRUE(AwaitWatchers(0));
  }
  const int64_t before = ServerThreads();
  constexpr int kWatchers = 200;
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < kWatchers; ++i) {
    watches.push_back(std::make_unique<Watch>(*stub_));
  }
  ASSERT_TRUE(AwaitWatchers(kWatchers));
  const int64_t with = ServerThreads();
  std::printf("server threads: %lld before, %lld with %d watchers\n",
              static_cast<long long>(before), static_cast<long long>(with),
              kWatchers);
  EXPECT_LE(with, before + 2);
  // Every stream still delivers.
  ASSERT_TRUE(Allocate(AllocateReq("r1", "T4")).ok());
  for (auto& w : watches) {
    EXPECT_THAT(ReadThrough(*w, "ALLOCATED r1"), ElementsAre("ALLOCATED r1"));
  }
  for (auto& w : watches) w->ctx.TryCancel();
  EXPECT_TRUE(AwaitWatchers(0));
  for (auto& w : watches) {
    EXPECT_EQ(w->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
}

// SIGTERM ends open streams at once with UNAVAILABLE (a client watches again
// elsewhere), read or not, and connected clients that are between calls do
// not hold the server to its grace deadline (5 s): it stops in about the
// second its metrics endpoint takes.
TEST_F(E2eWatchTest, StoppingServerEndsOpenStreamsWithUnavailable) {
  ASSERT_TRUE(StartServer());
  ASSERT_TRUE(
      Register(ModelNode("n1", "T4", 1)).ok());  // a client between calls
  std::vector<std::unique_ptr<Watch>> watches;
  for (int i = 0; i < 3; ++i) {
    watches.push_back(std::make_unique<Watch>(*stub_));
  }
  ASSERT_TRUE(AwaitWatchers(3));
  // Two are read while the server stops, the third only afterwards.
  std::vector<grpc::Status> ended(watches.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < 2; ++i) {
    readers.emplace_back([&, i] {
      v1::Event e;
      while (watches[i]->reader->Read(&e)) {
      }
      ended[i] = watches[i]->reader->Finish();
    });
  }
  const absl::Time start = absl::Now();
  EXPECT_EQ(server_->Stop(SIGTERM), 0);
  const absl::Duration took = absl::Now() - start;
  std::printf("SIGTERM to exit with 3 watchers open: %s\n",
              absl::FormatDuration(took).c_str());
  EXPECT_LT(took, absl::Seconds(4)) << "waited for the grace deadline";
  for (auto& t : readers) t.join();
  v1::Event e;
  EXPECT_FALSE(watches[2]->reader->Read(&e));
  ended[2] = watches[2]->reader->Finish();
  for (const grpc::Status& s : ended) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_THAT(s.error_message(), HasSubstr("server is stopping"));
  }
}

}  // namespace
}  // namespace accelsched
