#include "core/tpu_topology.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

// Walks every topology of every generation.
TEST(TpuTopologyTest, EveryTopologyHasTheGenerationsShapeAndWholeHosts) {
  for (const TpuGeneration& gen : AllTpuGenerations()) {
    for (absl::string_view t : gen.topologies) {
      std::vector<std::string> dims = absl::StrSplit(t, 'x');
      EXPECT_EQ(static_cast<int>(dims.size()), gen.dimensions)
          << gen.name << " " << t;
      EXPECT_TRUE(HasTopology(gen, t));
      const int chips = TopologyChips(t);
      int product = 1;
      for (const std::string& d : dims) product *= std::stoi(d);
      EXPECT_EQ(chips, product) << t;
      const int hosts = TopologyHosts(gen, t);
      EXPECT_GE(hosts, 1);
      EXPECT_EQ(chips % hosts, 0)
          << gen.name << " " << t << " splits unevenly over hosts";
    }
  }
}

TEST(TpuTopologyTest, GenerationsListTheGkeTopologies) {
  const std::vector<std::string> k2d = {"1x1", "2x2", "2x4",  "4x4",
                                        "4x8", "8x8", "8x16", "16x16"};
  const std::vector<std::string> kV5p = {
      "2x2x1", "2x2x2",  "2x4x4",   "4x4x4",    "4x4x8",   "4x8x8",
      "8x8x8", "8x8x16", "8x16x16", "16x16x16", "16x16x24"};
  auto names = [](absl::string_view gen) {
    const TpuGeneration* g = FindTpuGeneration(gen);
    EXPECT_NE(g, nullptr) << gen;
    return std::vector<std::string>(g->topologies.begin(), g->topologies.end());
  };
  EXPECT_EQ(names("v5e"), k2d);
  EXPECT_EQ(names("v6e"), k2d);
  EXPECT_EQ(names("v5p"), kV5p);
}

TEST(TpuTopologyTest, ChipAndHostCounts) {
  const TpuGeneration& v5e = *FindTpuGeneration("v5e");
  const TpuGeneration& v5p = *FindTpuGeneration("v5p");
  EXPECT_EQ(TopologyChips("2x4"), 8);
  EXPECT_EQ(TopologyHosts(v5e, "2x4"), 1);
  EXPECT_EQ(TopologyHosts(v5e, "4x4"), 4);
  EXPECT_EQ(TopologyHosts(v5e, "16x16"), 64);
  EXPECT_EQ(TopologyChips("2x2x1"), 4);
  EXPECT_EQ(TopologyHosts(v5p, "2x2x1"), 1);
  EXPECT_EQ(TopologyHosts(v5p, "2x2x2"), 2);
  EXPECT_EQ(TopologyChips("16x16x24"), 6144);
}

TEST(TpuTopologyTest, MalformedAndForeignTopologies) {
  for (const char* bad :
       {"", "4", "x", "2x", "2xx4", "0x4", "-2x4", "2x4x4x4", "axb"}) {
    EXPECT_EQ(TopologyChips(bad), 0) << bad;
  }
  EXPECT_FALSE(HasTopology(*FindTpuGeneration("v5e"), "2x2x1"));
  EXPECT_FALSE(HasTopology(*FindTpuGeneration("v5p"), "2x4"));
  EXPECT_FALSE(HasTopology(*FindTpuGeneration("v6e"), "3x3"));
  EXPECT_EQ(FindTpuGeneration("v4"), nullptr);
}

}  // namespace
}  // namespace accelsched
