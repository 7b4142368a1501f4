// The node_drain plugin: a node labelled accelsched.io/drain=true takes no
// new work, in the default profile's placements and in Explain's account.
#include "core/plugins/node_drain/node_drain.h"

#include <string>
#include <vector>

#include "core/framework/diagnosis.h"
#include "core/plugins/index_placer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

class NodeDrainTest : public FrameworkFixture {};

struct LabelCase {
  const char* name;
  Labels labels;
  const char* reason;  // nullptr: the node passes
};

class NodeDrainLabelTest : public NodeDrainTest,
                           public testing::WithParamInterface<LabelCase> {};

TEST_P(NodeDrainLabelTest, OnlyTrueDrains) {
  const LabelCase& c = GetParam();
  AddNode("n1", 1, kT4, c.labels);
  auto s = NewSession();
  const Allocation& p = AddPending("p-1", "t");
  const MatchSpec spec = MatchSpec::Of(p);
  auto cycle = Cycle(*s, p, spec);
  const NodeDrainPlugin plugin;
  const char* why =
      plugin.Filter(*cycle, NodeView{"n1", &catalog_.nodes().at("n1")});
  if (c.reason == nullptr) {
    EXPECT_EQ(why, nullptr);
  } else {
    ASSERT_NE(why, nullptr);
    EXPECT_STREQ(why, c.reason);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Labels, NodeDrainLabelTest,
    testing::Values(LabelCase{"None", {}, nullptr},
                    LabelCase{"True", {{kDrainLabel, "true"}}, "draining"},
                    LabelCase{"False", {{kDrainLabel, "false"}}, nullptr},
                    LabelCase{"Other", {{kDrainLabel, "yes"}}, nullptr},
                    LabelCase{"OtherKey", {{"drain", "true"}}, nullptr}),
    [](const testing::TestParamInfo<LabelCase>& info) {
      return std::string(info.param.name);
    });

// Registered in the default profile: placements pass a drained node by, and
// Explain's account counts it, with no other plugin told of it.
TEST_F(NodeDrainTest, TheDefaultProfilePassesADrainedNodeBy) {
  // n1 is the best fit for one GPU (fewest free), but drained.
  AddNode("n1", 1, kT4, {{kDrainLabel, "true"}});
  AddNode("n2", 2);
  for (Packing packing : {Packing::kBestFit, Packing::kFragmentation,
                          Packing::kFirstFit, Packing::kSpread}) {
    IndexPlacer placer(&catalog_.index(), &catalog_.nodes(), {packing});
    std::optional<UnitGroup> units =
        placer.PlaceOne(MatchSpec::ForPool(GpuPool(kT4), 1), T0());
    ASSERT_TRUE(units.has_value()) << PackingName(packing);
    EXPECT_EQ(units->front()->home, "n2") << PackingName(packing);
  }
  // Drain n2 too: nothing fits, and the account says why.
  AddNode("n2", 2, kT4, {{kDrainLabel, "true"}});
  IndexPlacer placer(&catalog_.index(), &catalog_.nodes(), {});
  EXPECT_EQ(placer.PlaceOne(MatchSpec::ForPool(GpuPool(kT4), 1), T0()),
            std::nullopt);
  auto s = NewSession();
  const Allocation& p = AddPending("p-1", "t");
  const MatchSpec spec = MatchSpec::Of(p);
  auto cycle = Cycle(*s, p, spec, CycleMode::kExplain);
  const Explanation account = AccountNodes(*framework_, *cycle);
  EXPECT_EQ(account.summary, "0/2 nodes available: 2 draining");
  ASSERT_EQ(account.nodes.size(), 2u);
  EXPECT_THAT(account.nodes[0].reasons, ElementsAre("draining"));
}

}  // namespace
}  // namespace accelsched
