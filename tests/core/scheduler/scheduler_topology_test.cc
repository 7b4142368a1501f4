// Topology levels through the scheduler (fake store and clock): the
// request's required_topology and preferred_topology against
// --topology_levels, the refusal of a gang no domain could ever hold, and
// the fewest preferred domains.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "config/accelerator_types_file.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kBlock[] = "example.com/block";
constexpr char kRack[] = "example.com/rack";
constexpr char kNvl[] = "example.com/nvlink-domain";

Scheduler::Options Opts() {
  Scheduler::Options o;
  o.heartbeat_timeout = absl::ZeroDuration();
  o.topology_levels = {kBlock, kRack, kNvl};
  return o;
}

class SchedulerTopologyTest : public testing::Test {
 protected:
  SchedulerTopologyTest()
      : s_(&store_, &clock_, BuiltinAcceleratorTypes(), Opts()) {}

  // `n` nodes of 8 T4s in `rack` of `block`, named <rack>-0, <rack>-1, ...
  void AddRack(const std::string& block, const std::string& rack, int n) {
    for (int i = 0; i < n; ++i) {
      const std::string name = absl::StrCat(rack, "-", i);
      std::vector<Device> gpus;
      for (int g = 0; g < 8; ++g) {
        gpus.push_back(Gpu(absl::StrCat(name, "-gpu", g), "T4", g));
      }
      ASSERT_OK(s_.RegisterNode(
          MakeNode(name, std::move(gpus),
                   {{kBlock, block}, {kRack, rack}, {kNvl, name}})));
    }
  }
  static AllocationRequest Gang(const std::string& id, int replicas) {
    AllocationRequest r = Want(id, "T4", 8);
    r.replicas = replicas;
    return r;
  }
  static std::set<std::string> Nodes(const Allocation& a) {
    std::set<std::string> nodes;
    for (const AllocatedDevice& d : a.devices) nodes.insert(d.node);
    return nodes;
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  BlockingScheduler s_;
};

TEST_F(SchedulerTopologyTest, BadLevelsNameTheField) {
  AddRack("b1", "r1", 2);
  struct Case {
    AllocationRequest request;
    const char* field;
    const char* says;
  };
  std::vector<Case> cases;
  AllocationRequest unknown = Gang("a", 2);
  unknown.required_topology = "zone";
  cases.push_back({unknown, "required_topology",
                   "not one of the server's --topology_levels "
                   "(example.com/block,example.com/rack,"
                   "example.com/nvlink-domain)"});
  AllocationRequest pref = Gang("a", 2);
  pref.preferred_topology = "kubernetes.io/hostname";
  cases.push_back({pref, "preferred_topology", "not one of"});
  AllocationRequest wider = Gang("a", 2);
  wider.required_topology = kRack;
  wider.preferred_topology = kBlock;
  cases.push_back(
      {wider, "preferred_topology", "is not narrower than the required level"});
  AllocationRequest same = wider;
  same.preferred_topology = kRack;
  cases.push_back({same, "preferred_topology", "not narrower"});
  // A topology_key that is a level is the required one.
  AllocationRequest by_key = Gang("a", 2);
  by_key.topology_key = kRack;
  by_key.preferred_topology = kBlock;
  cases.push_back({by_key, "preferred_topology",
                   "\"example.com/block\" is not narrower than the required "
                   "level \"example.com/rack\""});
  AllocationRequest key = Gang("a", 2);
  key.required_topology = kRack;
  key.topology_key = kBlock;
  cases.push_back({key, "required_topology", "differs from topology_key"});
  for (const Case& c : cases) {
    EXPECT_THAT(s_.Allocate(c.request).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         testing::AllOf(HasSubstr(c.field), HasSubstr(c.says))))
        << c.field;
  }
  // Nothing was stored, and the same label in both is one request.
  EXPECT_THAT(s_.GetAllocation({"", "a"}).status(),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  AllocationRequest both = Gang("a", 2);
  both.required_topology = kRack;
  both.topology_key = kRack;
  ASSERT_OK_AND_ASSIGN(Allocation a, s_.Allocate(both));
  EXPECT_EQ(a.state, AllocationState::kActive);
  EXPECT_EQ(a.topology_key, kRack);
}

TEST_F(SchedulerTopologyTest, AServerWithoutLevelsRefusesThem) {
  FakeStore store;
  BlockingScheduler plain(&store, &clock_, BuiltinAcceleratorTypes(),
                          Scheduler::Options());
  AllocationRequest r = Gang("a", 2);
  r.preferred_topology = kRack;
  EXPECT_THAT(plain.Allocate(r).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("preferred_topology \"example.com/rack\" is "
                                 "not a topology level: the server has no "
                                 "--topology_levels")));
}

// Refused at once, naming the level and its largest domain: waiting would
// not help. The same gang in a wider level fits.
TEST_F(SchedulerTopologyTest, AGangNoDomainCouldEverHoldIsRefused) {
  AddRack("b1", "r1", 2);
  AddRack("b1", "r2", 3);
  AllocationRequest r = Gang("a", 4);
  r.required_topology = kRack;
  r.queue = true;
  EXPECT_THAT(
      s_.Allocate(r).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("no domain of topology level example.com/rack could "
                         "ever hold 4 groups of 8 nvidia-tesla-t4 devices: the "
                         "largest, example.com/rack=r2, has 3 nodes that "
                         "could")));
  EXPECT_THAT(s_.GetAllocation({"", "a"}).status(),
              StatusIs(absl::StatusCode::kNotFound, testing::_));
  ASSERT_OK_AND_ASSIGN(ExplainResult explained, s_.Explain(r));
  EXPECT_FALSE(explained.feasible);
  EXPECT_THAT(explained.explanation.summary,
              HasSubstr("; no domain of topology level example.com/rack could "
                        "ever hold 4 groups"));
  // topology_key means the same.
  r.required_topology.clear();
  r.topology_key = kRack;
  EXPECT_THAT(s_.Allocate(r).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("example.com/rack=r2")));
  r.topology_key.clear();
  r.required_topology = kBlock;
  // Nodes the selector rules out never count: r2 alone is too small.
  AllocationRequest selected = r;
  selected.node_selector = {{kRack, "r2"}};
  EXPECT_THAT(s_.Allocate(selected).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the largest, example.com/block=b1, has 3 "
                                 "nodes that could")));
  ASSERT_OK_AND_ASSIGN(Allocation a, s_.Allocate(r));
  EXPECT_EQ(a.state, AllocationState::kActive);
}

// Block b1 has racks of 3, 2 and 1 nodes. A gang of 4 that must stay in one
// block and prefers one rack takes the largest rack (no rack holds 4), then
// the smallest that holds the rest: two racks, nothing left free in them.
// Without the preference it takes the nodes in name order.
TEST_F(SchedulerTopologyTest, APreferredLevelTakesTheFewestDomains) {
  AddRack("b1", "r1", 3);
  AddRack("b1", "r2", 2);
  AddRack("b1", "r3", 1);
  AddRack("b2", "r4", 3);
  AllocationRequest plain = Gang("plain", 4);
  plain.required_topology = kBlock;
  ASSERT_OK_AND_ASSIGN(Allocation before, s_.Allocate(plain));
  EXPECT_THAT(Nodes(before), ElementsAre("r1-0", "r1-1", "r1-2", "r2-0"));
  ASSERT_OK(s_.Release({"", "plain"}));
  AllocationRequest preferred = Gang("preferred", 4);
  preferred.required_topology = kBlock;
  preferred.preferred_topology = kRack;
  ASSERT_OK_AND_ASSIGN(Allocation a, s_.Allocate(preferred));
  EXPECT_THAT(Nodes(a), ElementsAre("r1-0", "r1-1", "r1-2", "r3-0"));
  EXPECT_EQ(a.preferred_topology, kRack);
  // Two groups that prefer one rack: r2 holds them exactly (r4 would leave
  // one node of its rack free).
  AllocationRequest pair = Gang("pair", 2);
  pair.preferred_topology = kRack;
  ASSERT_OK_AND_ASSIGN(Allocation p, s_.Allocate(pair));
  EXPECT_THAT(Nodes(p), ElementsAre("r2-0", "r2-1"));
  // Never refused for the preference: three groups across what is left.
  AllocationRequest spread = Gang("spread", 3);
  spread.preferred_topology = kNvl;
  ASSERT_OK_AND_ASSIGN(Allocation w, s_.Allocate(spread));
  EXPECT_THAT(Nodes(w), ElementsAre("r4-0", "r4-1", "r4-2"));
}

// Fewer preferred domains win over less left free: block b1 holds a gang of
// 4 exactly, in two racks; b2 holds it in one rack of 5, one node left over.
TEST_F(SchedulerTopologyTest, FewerPreferredDomainsBeatLessLeftOver) {
  AddRack("b1", "r1", 2);
  AddRack("b1", "r2", 2);
  AddRack("b2", "r3", 5);
  AllocationRequest r = Gang("a", 4);
  r.required_topology = kBlock;
  r.preferred_topology = kRack;
  ASSERT_OK_AND_ASSIGN(Allocation a, s_.Allocate(r));
  EXPECT_THAT(Nodes(a), ElementsAre("r3-0", "r3-1", "r3-2", "r3-3"));
  // With the block alone required, the one that strands nothing.
  AllocationRequest b = Gang("b", 4);
  b.required_topology = kBlock;
  ASSERT_OK(s_.Release({"", "a"}));
  ASSERT_OK_AND_ASSIGN(Allocation c, s_.Allocate(b));
  EXPECT_THAT(Nodes(c), ElementsAre("r1-0", "r1-1", "r2-0", "r2-1"));
}

}  // namespace
}  // namespace accelsched
