// Explain's per-node account (AccountNodes): why each node cannot serve a
// request, from the cycle's filters in the account and its placement
// plugin's word on the node's units, and the summary counting nodes by their
// first reason. Its text is the old matcher's ExplainNodes': the cases below
// are that function's, on bare indexes, through the default profile.
#include "core/framework/diagnosis.h"

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/snapshot.h"
#include "core/matching/match_spec.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

const absl::Time kNow = absl::FromUnixSeconds(1000);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};
const PoolKey kTpu2x2x2{DeviceClass::kGoogleTpu, "tpu-v5p-slice", "2x2x2"};

// A node's reasons as the account gives them.
struct NodeReasons {
  std::string node;
  std::vector<std::string> reasons;
  bool operator==(const NodeReasons&) const = default;
};
void PrintTo(const NodeReasons& v, std::ostream* os) {
  *os << v.node << ": [";
  for (const std::string& r : v.reasons) *os << "\"" << r << "\" ";
  *os << "]";
}

// A bare index and its nodes (heard from in the last 5 minutes at kNow),
// and the account of a request over them through the default profile.
class DiagnosisTest : public testing::Test {
 protected:
  DiagnosisTest() : holds_(nullptr, nullptr, Holds::Standing::kScratch) {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(), DefaultProfile(ProfileOptions{}));
    EXPECT_TRUE(fw.ok()) << fw.status();
    framework_ = *std::move(fw);
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
    snapshot_.heartbeat_timeout = absl::Minutes(5);
  }

  // `name` with `units` units of `pool`, the first `held` of them held,
  // labelled `labels`.
  Node& AddNode(const std::string& name, int units, int held = 0,
                const PoolKey& pool = kT4, Labels labels = {}) {
    Node& n = nodes_[name];
    n.name = name;
    n.last_heartbeat = kNow;
    n.labels = std::move(labels);
    for (int g = 0; g < units; ++g) {
      Unit u;
      u.key = absl::StrCat(name, "-gpu", g);
      u.pool = pool;
      u.home = name;
      u.hosts = {name};
      u.devices = {{name, u.key, "", ""}};
      u.order = g;
      index_.Put(std::move(u));
      if (g < held) index_.SetHolder(absl::StrCat(name, "-gpu", g), "x");
    }
    return n;
  }

  // The account of a request for `spec` (as asked; `narrowed`: as a
  // PreFilter narrowed it), prepared as Explain's cycle is.
  Explanation Account(const MatchSpec& spec,
                      std::optional<MatchSpec> narrowed = std::nullopt) {
    CycleState cycle(CycleMode::kExplain, snapshot_, spec, request_, &holds_,
                     absl::InfiniteFuture());
    if (narrowed.has_value()) cycle.Narrow(*std::move(narrowed));
    framework_->Prepare(cycle);
    return AccountNodes(*framework_, cycle);
  }

  static std::vector<NodeReasons> Verdicts(const Explanation& e) {
    std::vector<NodeReasons> out;
    for (const NodeVerdict& v : e.nodes) out.push_back({v.node, v.reasons});
    return out;
  }

  CapacityIndex index_;
  NodeMap nodes_;
  Snapshot snapshot_;
  std::unique_ptr<const Framework> framework_;
  Holds holds_;
  Allocation request_;
};

// Each reason a node of whole units may have, one node each; the summary
// counts them in order of count, then of name.
TEST_F(DiagnosisTest, EachNodeSaysWhyItCannotServe) {
  const Labels zone_a = {{"zone", "a"}};
  AddNode("free", 2, 0, kT4, zone_a);
  AddNode("busy", 2, 2, kT4, zone_a);
  AddNode("one", 2, 1, kT4, zone_a);
  AddNode("cordoned", 2, 0, kT4, zone_a).schedulable = false;
  AddNode("stale", 2, 0, kT4, zone_a).last_heartbeat = kNow - absl::Minutes(10);
  AddNode("l4", 2, 0, kL4, zone_a);
  AddNode("lean", 2, 0, kT4, zone_a);
  index_.SetAllocatable("lean", NodeResources{1000, int64_t{1} << 30, 0});
  AddNode("zone-b", 2, 0, kT4, {{"zone", "b"}});
  MatchSpec spec = MatchSpec::ForPool(kT4, 2, zone_a);
  spec.pod_resources = NodeResources{2000, 0, 1};
  const Explanation e = Account(spec);
  EXPECT_EQ(e.available, 1);
  EXPECT_THAT(
      Verdicts(e),
      ElementsAre(
          NodeReasons{"busy", {"no free nvidia-tesla-t4 device"}},
          NodeReasons{"cordoned", {"cordoned"}},
          NodeReasons{"l4", {"no nvidia-tesla-t4 device"}},
          NodeReasons{"lean",
                  {"insufficient cpu_milli (1000 of 1000 cpu_milli free, the "
                   "request needs 2000)"}},
          NodeReasons{"one",
                  {"too few free nvidia-tesla-t4 devices (1 free, 2 "
                   "requested)"}},
          NodeReasons{"stale", {"stale heartbeat"}},
          NodeReasons{"zone-b", {"node_selector mismatch"}}));
  EXPECT_EQ(e.summary,
            "1/8 nodes available: 1 cordoned, 1 insufficient cpu_milli, 1 no "
            "free nvidia-tesla-t4 device, 1 no nvidia-tesla-t4 device, 1 "
            "node_selector mismatch, 1 stale heartbeat, 1 too few free "
            "nvidia-tesla-t4 devices");
}

// The summary puts the most common first reason first.
TEST_F(DiagnosisTest, TheSummaryCountsNodesByTheirFirstReason) {
  AddNode("a", 1, 1);
  AddNode("b", 1, 1);
  AddNode("c", 1).schedulable = false;
  AddNode("d", 1);
  const Explanation e = Account(MatchSpec::ForPool(kT4, 1));
  EXPECT_EQ(e.available, 1);
  EXPECT_EQ(e.summary,
            "1/4 nodes available: 2 no free nvidia-tesla-t4 device, 1 "
            "cordoned");
  EXPECT_EQ(Account(MatchSpec::ForPool(kT4, 1, {{"zone", "a"}})).summary,
            "0/4 nodes available: 4 node_selector mismatch");
}

// The old account's order: the node's own eligibility (the first of
// selector, cordon and heartbeat that refuses it, alone), then its CPU and
// memory, then its units. A node both mismatched and cordoned is
// mismatched only.
TEST_F(DiagnosisTest, ANodeMismatchedAndCordonedIsMismatchedOnly) {
  AddNode("mismatched-cordoned", 2, 0, kT4, {{"zone", "b"}}).schedulable =
      false;
  const Explanation e = Account(MatchSpec::ForPool(kT4, 2, {{"zone", "a"}}));
  EXPECT_THAT(Verdicts(e), ElementsAre(NodeReasons{
                               "mismatched-cordoned",
                               {"node_selector mismatch"}}));
  EXPECT_EQ(e.summary, "0/1 nodes available: 1 node_selector mismatch");
}

// A node cordoned and short of CPU is cordoned first, and counted so.
TEST_F(DiagnosisTest, ACordonedNodeShortOfCpuIsCordonedFirst) {
  AddNode("cordoned-lean", 2, 2).schedulable = false;
  index_.SetAllocatable("cordoned-lean",
                        NodeResources{1000, int64_t{1} << 30, 0});
  MatchSpec spec = MatchSpec::ForPool(kT4, 2);
  spec.pod_resources = NodeResources{2000, 0, 1};
  const Explanation e = Account(spec);
  EXPECT_THAT(
      Verdicts(e),
      ElementsAre(NodeReasons{
          "cordoned-lean",
          {"cordoned",
           "insufficient cpu_milli (1000 of 1000 cpu_milli free, the "
           "request needs 2000)",
           "no free nvidia-tesla-t4 device"}}));
  EXPECT_EQ(e.summary, "0/1 nodes available: 1 cordoned");
}

// Several models: the unit named with its model, each requested model the
// node lacks after its own shortfalls (in model order, those no node has
// too), and a node with none of them named for the whole request.
TEST_F(DiagnosisTest, SeveralModelsNameWhatEachNodeLacks) {
  AddNode("t-busy", 2, 2, kT4);
  AddNode("l-one", 2, 1, kL4);
  AddNode("empty", 0);
  AddNode("t-free", 2, 0, kT4);
  MatchSpec spec;
  spec.requested_models = {kL4.model, kT4.model, "nvidia-h100"};
  spec.count = 2;
  const Explanation e = Account(spec);
  EXPECT_EQ(e.available, 1);
  EXPECT_THAT(
      Verdicts(e),
      ElementsAre(
          NodeReasons{"empty",
                  {"no nvidia-l4, nvidia-tesla-t4 or nvidia-h100 device"}},
          NodeReasons{"l-one",
                  {"too few free nvidia-l4 devices (1 free, 2 requested)",
                   "no nvidia-h100 device", "no nvidia-tesla-t4 device"}},
          NodeReasons{"t-busy",
                  {"no free nvidia-tesla-t4 device", "no nvidia-h100 device",
                   "no nvidia-l4 device"}}));
  EXPECT_EQ(e.summary,
            "1/4 nodes available: 1 no free nvidia-tesla-t4 device, 1 no "
            "nvidia-l4, nvidia-tesla-t4 or nvidia-h100 device, 1 too few free "
            "nvidia-l4 devices");
}

// Any model: only the models a node has are worth a word.
TEST_F(DiagnosisTest, AnyModelNamesOnlyTheModelsANodeHas) {
  AddNode("t-busy", 1, 1, kT4);
  AddNode("l-free", 1, 0, kL4);
  const Explanation e = Account(MatchSpec{});
  EXPECT_EQ(e.available, 1);
  EXPECT_THAT(Verdicts(e), ElementsAre(NodeReasons{
                               "t-busy", {"no free nvidia-tesla-t4 device"}}));
}

// A multi-host slice counts on each of its hosts: its home says which other
// host cannot serve; that host is refused for itself only.
TEST_F(DiagnosisTest, ASliceWhoseOtherHostCannotServeIsNamed) {
  for (int i = 0; i < 2; ++i) {
    const std::string home = absl::StrCat("a-", i);
    const std::string other = absl::StrCat("b-", i);
    for (const std::string& n : {home, other}) {
      nodes_[n].name = n;
      nodes_[n].last_heartbeat = kNow;
    }
    Unit u;
    u.key = TpuUnitKey(absl::StrCat("slice-", i));
    u.pool = kTpu2x2x2;
    u.home = home;
    u.hosts = {home, other};
    u.devices = {{home, "chip-a", "", ""}, {other, "chip-b", "", ""}};
    index_.Put(std::move(u));
  }
  nodes_["b-0"].schedulable = false;
  const Explanation e = Account(MatchSpec::ForPool(kTpu2x2x2, 1));
  EXPECT_EQ(e.available, 2);
  EXPECT_THAT(Verdicts(e),
              ElementsAre(NodeReasons{"a-0",
                                  {"no free tpu-v5p-slice 2x2x2 slice "
                                   "(another host of slice slice-0 cannot "
                                   "serve)"}},
                          NodeReasons{"b-0", {"cordoned"}}));
  EXPECT_EQ(e.summary,
            "2/4 nodes available: 1 cordoned, 1 no free tpu-v5p-slice 2x2x2 "
            "slice");
}

// A share: the shares plugin's word on each node's GPUs.
TEST_F(DiagnosisTest, AShareSaysWhyTheClosestGpuDoesNotHoldIt) {
  for (const char* name : {"n1", "n2", "n3"}) {
    AddNode(name, 1);
  }
  for (const char* key : {"n1-gpu0", "n3-gpu0"}) {
    Unit u = *index_.Find(key);
    u.sharing = GpuSharing::kMps;
    u.memory_bytes = 1000;
    index_.Put(std::move(u));
  }
  index_.AddShare("n1-gpu0", GpuShare{600, 600, "ns-a"}, +1);
  MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  spec.share = GpuShare{470, 0, "ns-a"};
  const Explanation e = Account(spec);
  EXPECT_EQ(e.available, 1);
  EXPECT_THAT(
      Verdicts(e),
      ElementsAre(
          NodeReasons{"n1",
                  {"no nvidia-tesla-t4 device with the share free (n1-gpu0 "
                   "has 400 of 1000 milli free, the request needs 470)"}},
          NodeReasons{"n2", {"no nvidia-tesla-t4 device takes shares"}}));
  EXPECT_EQ(e.summary,
            "1/3 nodes available: 1 no nvidia-tesla-t4 device takes shares, "
            "1 no nvidia-tesla-t4 device with the share free");
}

// Holds for other requests and a gang's topology level are not reasons a
// node cannot serve: the account leaves their filters out.
TEST_F(DiagnosisTest, HoldsAndTopologyAreLeftOut) {
  AddNode("n1", 2);
  AddNode("n2", 2, 0, kT4, {{"rack", "r1"}});
  holds_.Hold(kT4, "n1", Reservation{kNow + absl::Hours(1), "other"});
  holds_.Hold(kT4, "n2", Reservation{kNow + absl::Hours(1), "other"});
  MatchSpec gang = MatchSpec::ForPool(kT4, 2);
  gang.replicas = 2;
  gang.topology_key = "rack";
  const Explanation e = Account(gang);
  EXPECT_EQ(e.available, 2);
  EXPECT_THAT(e.nodes, IsEmpty());
  EXPECT_EQ(e.summary, "2/2 nodes available");
}

// The account is of the request as it asked, not as a PreFilter narrowed
// it (quota's narrowing of its models).
TEST_F(DiagnosisTest, TheRequestIsAccountedAsItAsked) {
  AddNode("t", 1, 0, kT4);
  AddNode("l", 1, 1, kL4);
  MatchSpec spec;
  spec.requested_models = {kT4.model, kL4.model};
  MatchSpec narrowed = spec;
  narrowed.requested_models = {kL4.model};
  const Explanation e = Account(spec, narrowed);
  EXPECT_EQ(e.available, 1);
  EXPECT_THAT(e.nodes, ElementsAre(Field(&NodeVerdict::node, "l")));
  EXPECT_THAT(e.nodes[0].reasons,
              ElementsAre("no free nvidia-l4 device",
                          "no nvidia-tesla-t4 device"));
}

}  // namespace
}  // namespace accelsched
