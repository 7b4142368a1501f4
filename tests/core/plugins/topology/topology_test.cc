// The topology plugin: the placement of gangs (replicas groups, each on its
// own node, all of one pool; within a required topology domain; over the
// fewest preferred domains), its filter of nodes without the required
// label, WhyNot, and the check of new gangs no domain could ever hold
// (CheckGangDomains, its PostFilter).
#include "core/plugins/topology/topology.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/plugins/index_placer.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kTpu2x2x2{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2"};

Unit T4(const std::string& key, const std::string& node, int order) {
  Unit u;
  u.key = key;
  u.pool = kT4;
  u.home = node;
  u.hosts = {node};
  u.devices = {{node, key, "", ""}};
  u.order = order;
  return u;
}

Node Healthy(const std::string& name, Labels labels = {}) {
  Node n;
  n.name = name;
  n.last_heartbeat = kNow;
  n.labels = std::move(labels);
  return n;
}

// Four two-host TPU slices, slice-i on a-i (its home) and b-i; the first
// `cordoned` have their b- host cordoned.
void AddTwoHostSlices(CapacityIndex& index, NodeMap& nodes, int cordoned) {
  for (int i = 0; i < 4; ++i) {
    const std::string home = absl::StrCat("a-", i);
    const std::string other = absl::StrCat("b-", i);
    nodes[home] = Healthy(home);
    nodes[other] = Healthy(other);
    if (i < cordoned) nodes[other].schedulable = false;
    const std::string key = TpuUnitKey(absl::StrCat("slice-", i));
    Unit u;
    u.key = key;
    u.pool = kTpu2x2x2;
    u.home = home;
    u.hosts = {home, other};
    u.devices = {{home, "chip-a", "", ""}, {other, "chip-b", "", ""}};
    index.Put(std::move(u));
  }
}

std::vector<std::string> Homes(const std::optional<Groups>& groups) {
  std::vector<std::string> homes;
  if (!groups.has_value()) return homes;
  for (const auto& group : *groups) homes.push_back(group.front()->home);
  return homes;
}

MatchSpec Gang(int count, int replicas, std::string topology_key = "",
               std::string preferred = "") {
  MatchSpec spec = MatchSpec::ForPool(kT4, count);
  spec.replicas = replicas;
  spec.topology_key = std::move(topology_key);
  spec.preferred_topology = std::move(preferred);
  return spec;
}

// A bare index and its nodes, with cycles of new requests over them through
// the default profile and holds of the test's own (a scratch copy, which
// Hold may change).
class TopologyTest : public testing::Test {
 protected:
  TopologyTest()
      : framework_(MakeFramework()),
        holds_(nullptr, nullptr, Holds::Standing::kScratch),
        session_(*framework_, snapshot_, holds_, statement_) {
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
    snapshot_.heartbeat_timeout = absl::Minutes(5);
  }

  static std::unique_ptr<const Framework> MakeFramework() {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(),
        DefaultProfile(ProfileOptions{Packing::kBestFit, false}));
    EXPECT_TRUE(fw.ok()) << fw.status();
    return *std::move(fw);
  }

  // `name` with 8 T4s, all but `free` held, labelled `labels`.
  void AddNode(const std::string& name, int free, Labels labels = {}) {
    nodes_[name] = Healthy(name, std::move(labels));
    for (int g = 0; g < 8; ++g) {
      const std::string key = absl::StrCat(name, "-", g);
      index_.Put(T4(key, name, g));
      if (g >= free) index_.SetHolder(key, "held-" + name);
    }
  }

  // A prepared cycle of a new request for `spec` (kept for the cycle).
  std::unique_ptr<CycleState> Cycle(
      const MatchSpec& spec, absl::Time ends_at = absl::InfiniteFuture()) {
    specs_.push_back(std::make_unique<MatchSpec>(spec));
    auto cycle = std::make_unique<CycleState>(CycleMode::kAllocate, snapshot_,
                                              *specs_.back(), request_, &holds_,
                                              ends_at);
    framework_->Prepare(*cycle);
    return cycle;
  }

  std::optional<Groups> Place(const MatchSpec& spec,
                              absl::Time ends_at = absl::InfiniteFuture()) {
    std::unique_ptr<CycleState> cycle = Cycle(spec, ends_at);
    EXPECT_EQ(framework_->plugins().PlacerFor(*cycle), &plugin());
    return framework_->Place(session_, *cycle);
  }

  const TopologyPlugin& plugin() const {
    return dynamic_cast<const TopologyPlugin&>(
        *framework_->plugins().Find(TopologyPlugin::kName));
  }

  CapacityIndex index_;
  NodeMap nodes_;
  Snapshot snapshot_;
  std::unique_ptr<const Framework> framework_;
  Holds holds_;
  DryStatement statement_;
  Session session_;
  Allocation request_;
  std::vector<std::unique_ptr<MatchSpec>> specs_;
};

// A gang is chosen from the nodes' eligibility and labels, and units are
// taken for the chosen ones only: a node whose unit cannot serve after all
// (another host of its slice cordoned) is left out and the choice made
// again, here twice, so that the gang lands on the two slices that serve.
TEST(TopologyGangTest,
     ANodeWhoseUnitsDoNotServeIsLeftOutAndTheChoiceMadeAgain) {
  const PoolKey tpu = kTpu2x2x2;
  CapacityIndex index;
  NodeMap nodes;
  AddTwoHostSlices(index, nodes, 2);
  MatchSpec spec = MatchSpec::ForPool(tpu, 1);
  spec.replicas = 2;
  IndexPlacer placer(&index, &nodes, {Packing::kBestFit, absl::Minutes(5)});
  std::optional<Groups> groups = placer.Place(spec, kNow);
  ASSERT_TRUE(groups.has_value());
  EXPECT_THAT(Homes(groups), ElementsAre("a-2", "a-3"));
  // With a third group there are not enough slices that serve.
  spec.replicas = 3;
  EXPECT_FALSE(placer.Place(spec, kNow).has_value());
}

// A node held for another request is not a candidate of a gang.
TEST_F(TopologyTest, ANodeHeldForAnotherIsPassedOver) {
  for (const char* name : {"n1", "n2", "n3"}) {
    nodes_[name] = Healthy(name);
    for (int g = 0; g < 2; ++g) {
      index_.Put(T4(absl::StrCat(name, "-gpu", g), name, g));
    }
  }
  holds_.Hold(kT4, "n1", Reservation{absl::FromUnixSeconds(2000), "other"});
  // The request's lease ends past the hold's start.
  std::optional<Groups> groups = Place(Gang(2, 2), absl::FromUnixSeconds(5000));
  ASSERT_TRUE(groups.has_value());
  EXPECT_THAT(Homes(groups), ElementsAre("n2", "n3"));
}

// Within a domain of the required level the nodes with the fewest free
// units that fit; across domains the one that leaves the fewest free on its
// nodes that could take a group, then the name. A node without the label
// is in no domain.
TEST_F(TopologyTest, TheDomainLeavingTheFewestFreeWins) {
  AddNode("n1", 2, {{"rack", "r1"}});
  AddNode("n2", 5, {{"rack", "r1"}});
  AddNode("n3", 3, {{"rack", "r2"}});
  AddNode("n4", 3, {{"rack", "r2"}});
  AddNode("n5", 2);
  struct Case {
    std::string name;
    MatchSpec spec;
    std::vector<std::string> homes;  // empty: none fits
  };
  for (const Case& c : std::vector<Case>{
           // r1 leaves 2 + 5 - 4 = 3, r2 3 + 3 - 4 = 2.
           {"two of two in one rack", Gang(2, 2, "rack"), {"n3", "n4"}},
           // Only n2 has 4 free: no rack has two such nodes.
           {"two of four in one rack", Gang(4, 2, "rack"), {}},
           // No level: every node is of one domain, fewest free first.
           {"two of two anywhere", Gang(2, 2), {"n1", "n5"}},
           {"three of three anywhere", Gang(3, 3), {"n3", "n4", "n2"}},
           {"three of two in one rack", Gang(2, 3, "rack"), {}},
       }) {
    EXPECT_EQ(Homes(Place(c.spec)), c.homes) << c.name;
  }
  // Each group its node's units in best-fit order.
  std::optional<Groups> groups = Place(Gang(2, 2, "rack"));
  ASSERT_TRUE(groups.has_value());
  std::vector<std::string> keys;
  for (const auto& group : *groups) {
    for (const Unit* u : group) keys.push_back(u->key);
  }
  EXPECT_THAT(keys, ElementsAre("n3-0", "n3-1", "n4-0", "n4-1"));
}

// With a preferred level, as few of its domains as hold the gang (a node
// without the label is a domain of its own): the largest while none of the
// rest holds what remains, then the smallest that does.
TEST_F(TopologyTest, APreferredLevelTakesTheFewestDomains) {
  AddNode("p1", 4, {{"rack", "r1"}});
  AddNode("p2", 4, {{"rack", "r1"}});
  AddNode("p3", 2, {{"rack", "r2"}});
  AddNode("p4", 2);
  struct Case {
    std::string name;
    MatchSpec spec;
    std::vector<std::string> homes;
  };
  for (const Case& c : std::vector<Case>{
           // Fewest free first, whatever the racks.
           {"no preference", Gang(2, 2), {"p3", "p4"}},
           {"one rack holds both", Gang(2, 2, "", "rack"), {"p1", "p2"}},
           // r1 whole, then the smallest that holds the last: r2 and p4
           // alone hold one each; r2's node comes first in free order.
           {"three over two racks", Gang(2, 3, "", "rack"), {"p1", "p2", "p3"}},
           {"three without a preference", Gang(2, 3), {"p3", "p4", "p1"}},
       }) {
    EXPECT_EQ(Homes(Place(c.spec)), c.homes) << c.name;
  }
}

// The filter: with a level, a node without its label (or a host not
// registered) takes no part; without one the plugin is not prepared. The
// per-node account leaves it out.
TEST_F(TopologyTest, FilterRefusesNodesWithoutTheLevelsLabel) {
  nodes_["labelled"] = Healthy("labelled", {{"rack", "r1"}});
  nodes_["bare"] = Healthy("bare", {{"zone", "z1"}});
  const TopologyPlugin& p = plugin();
  EXPECT_EQ(p.kind(), FilterPlugin::Kind::kGate);
  EXPECT_FALSE(p.in_account());
  std::unique_ptr<CycleState> none = Cycle(Gang(1, 2));
  EXPECT_FALSE(p.Prepare(*none));
  std::unique_ptr<CycleState> rack = Cycle(Gang(1, 2, "rack"));
  EXPECT_TRUE(p.Prepare(*rack));
  struct Case {
    std::string node;
    const Node* view;
    const char* why;
  };
  for (const Case& c : std::vector<Case>{
           {"labelled", &nodes_["labelled"], nullptr},
           {"bare", &nodes_["bare"], "no topology domain label"},
           {"unregistered", nullptr, "no topology domain label"},
       }) {
    const char* why = p.Filter(*rack, NodeView{c.node, c.view, nullptr, {}});
    EXPECT_STREQ(why, c.why) << c.node;
  }
}

TEST_F(TopologyTest, WhyNotNamesTheGangAndItsLevel) {
  AddNode("n1", 2, {{"rack", "r1"}});
  AddNode("n2", 1, {{"rack", "r1"}});
  std::unique_ptr<CycleState> cycle = Cycle(Gang(2, 3, "rack"));
  EXPECT_EQ(plugin().WhyNot(session_, *cycle),
            "no 3 nodes sharing one rack with 2 free nvidia-tesla-t4 devices "
            "each (3 free of 16)");
  MatchSpec pod = Gang(1, 4);
  pod.pod_resources = NodeResources{500, 1024, 1};
  cycle = Cycle(pod);
  EXPECT_EQ(plugin().WhyNot(session_, *cycle),
            "no 4 nodes with 1 free nvidia-tesla-t4 device and room for the "
            "pod (500 cpu_milli, 1024 memory_bytes) each (3 free of 16)");
}

// For a gang with a level: refused for good when no domain has replicas
// nodes that could ever hold a group (allocated or not, matching its
// selector), naming the largest.
TEST_F(TopologyTest, CheckGangDomainsRefusesAGangNoDomainCouldEverHold) {
  AddNode("n1", 0, {{"rack", "r1"}, {"zone", "a"}});
  AddNode("n2", 0, {{"rack", "r1"}, {"zone", "b"}});
  AddNode("n3", 8, {{"rack", "r2"}, {"zone", "a"}});
  AddNode("n4", 8);
  index_.Put(T4("small-0", "small", 0));  // a node of 1, in r3
  nodes_["small"] = Healthy("small", {{"rack", "r3"}});
  auto with_selector = [](MatchSpec spec, Labels selector) {
    MatchSpec s = MatchSpec::ForPool(kT4, spec.count, std::move(selector));
    s.replicas = spec.replicas;
    s.topology_key = spec.topology_key;
    return s;
  };
  struct Case {
    std::string name;
    MatchSpec spec;
    std::string refusal;  // "" for OK
  };
  for (const Case& c : std::vector<Case>{
           {"not a gang", Gang(8, 1, "rack"), ""},
           {"no level", Gang(8, 9), ""},
           // r1's two nodes are held: they could hold it some day.
           {"r1 could", Gang(8, 2, "rack"), ""},
           {"more groups than r1 has nodes", Gang(8, 3, "rack"),
            "no domain of topology level rack could ever hold 3 groups of 8 "
            "nvidia-tesla-t4 devices: the largest, rack=r1, has 2 nodes that "
            "could"},
           // The selector leaves one node of r1, and r2's one: the first
           // by name.
           {"the selector's nodes only",
            with_selector(Gang(8, 2, "rack"), {{"zone", "a"}}),
            "no domain of topology level rack could ever hold 2 groups of 8 "
            "nvidia-tesla-t4 devices: the largest, rack=r1, has 1 node that "
            "could"},
           {"a level no node has", Gang(1, 2, "row"),
            "no domain of topology level row could ever hold 2 groups of 1 "
            "nvidia-tesla-t4 device: no node labelled row could hold one"},
       }) {
    const absl::Status s = CheckGangDomains(index_, nodes_, c.spec);
    if (c.refusal.empty()) {
      EXPECT_OK(s) << c.name;
    } else {
      EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition, c.refusal))
          << c.name;
    }
  }
}

// Its PostFilter, asked of new requests, refuses what CheckGangDomains
// refuses, and does nothing for the rest.
TEST_F(TopologyTest, PostFilterRefusesWhatCheckGangDomainsRefuses) {
  AddNode("n1", 8, {{"rack", "r1"}});
  const TopologyPlugin& p = plugin();
  EXPECT_TRUE(p.ForNewRequests());
  std::unique_ptr<CycleState> cycle = Cycle(Gang(8, 2, "rack"));
  PostFilterResult r = p.PostFilter(session_, *cycle, CycleFailure{});
  EXPECT_EQ(r.code, PostFilterResult::Code::kRefused);
  EXPECT_EQ(r.reason,
            "no domain of topology level rack could ever hold 2 groups of 8 "
            "nvidia-tesla-t4 devices: the largest, rack=r1, has 1 node that "
            "could");
  cycle = Cycle(Gang(8, 1, "rack"));
  r = p.PostFilter(session_, *cycle, CycleFailure{});
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_THAT(r.reason, IsEmpty());
}

TEST_F(TopologyTest, PlacesGangsOnly) {
  std::unique_ptr<CycleState> one = Cycle(Gang(2, 1));
  std::unique_ptr<CycleState> gang = Cycle(Gang(2, 2));
  EXPECT_FALSE(plugin().Places(*one));
  EXPECT_TRUE(plugin().Places(*gang));
}

}  // namespace
}  // namespace accelsched
