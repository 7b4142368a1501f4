#include "core/accelerators/tpu_topology.h"

#include <optional>
#include <string>
#include <vector>

#include "config/accelerator_types_file.h"
#include "core/accelerators/accelerator_type_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

const AcceleratorType& Type(absl::string_view model) {
  static const auto registry = BuiltinAcceleratorTypes();
  const AcceleratorType* t = registry->Find(model);
  EXPECT_NE(t, nullptr) << model;
  return *t;
}

std::vector<std::string> Names(const AcceleratorType& t) {
  std::vector<std::string> out;
  for (const TpuTopology& topology : t.tpu_topologies) {
    out.push_back(topology.topology);
  }
  return out;
}

// Walks every listed topology of every built-in TPU type: a shape of up to one
// VM's chips (8 on v5e and v6e, 4 elsewhere) is one VM, larger ones take 4
// chips per VM (GKE's machine types; config/accelerator_types.textproto).
TEST(TpuTopologyTest, EveryListedShapeSpansTheVmsGkeGivesIt) {
  int tpu_types = 0;
  for (const AcceleratorType& t : BuiltinAcceleratorTypes()->types()) {
    if (!t.is_tpu()) continue;
    ++tpu_types;
    const bool eight_chip_vms =
        TopologyDimensions(t.tpu_topologies.front().topology).size() == 2;
    const int single_host = eight_chip_vms ? 8 : 4;
    for (const TpuTopology& topology : t.tpu_topologies) {
      const int hosts = topology.chips <= single_host ? 1 : topology.chips / 4;
      EXPECT_EQ(topology.hosts, hosts)
          << t.canonical_model << " " << topology.topology;
    }
    for (const TpuTopologyRule& rule : t.tpu_topology_rules) {
      EXPECT_EQ(rule.chips_per_host, 4) << t.canonical_model;
    }
  }
  EXPECT_GE(tpu_types, 6);
}

// flytekit's slice constants (V5E, V5P, V6E) are the listed shapes, and v5p
// adds v5p-32 (2x2x4).
TEST(TpuTopologyTest, ListedShapesAreFlytekitsAndGoogles) {
  const std::vector<std::string> k2d = {"1x1", "2x2", "2x4",  "4x4",
                                        "4x8", "8x8", "8x16", "16x16"};
  const std::vector<std::string> kV5p = {
      "2x2x1", "2x2x2", "2x2x4",  "2x4x4",   "4x4x4",    "4x4x8",
      "4x8x8", "8x8x8", "8x8x16", "8x16x16", "16x16x16", "16x16x24"};
  EXPECT_EQ(Names(Type("tpu-v5-lite-podslice")), k2d);
  EXPECT_EQ(Names(Type("tpu-v6e-slice")), k2d);
  EXPECT_EQ(Names(Type("tpu-v5p-slice")), kV5p);
}

TEST(TpuTopologyTest, ChipAndHostCounts) {
  EXPECT_EQ(TopologyChips("2x4"), 8);
  EXPECT_EQ(TopologyChips("2x2x1"), 4);
  EXPECT_EQ(TopologyChips("16x16x24"), 6144);
  EXPECT_EQ(TopologyDimensions("2x2x4"), (std::vector<int>{2, 2, 4}));
  const AcceleratorType& v5e = Type("tpu-v5-lite-podslice");
  EXPECT_EQ(v5e.FindTopology("2x4")->hosts, 1);
  EXPECT_EQ(v5e.FindTopology("4x4")->hosts, 4);
  EXPECT_EQ(v5e.FindTopology("16x16")->hosts, 64);
  const AcceleratorType& v5p = Type("tpu-v5p-slice");
  EXPECT_EQ(v5p.FindTopology("2x2x1")->hosts, 1);
  EXPECT_EQ(v5p.FindTopology("2x2x2")->hosts, 2);
}

// Shapes past the common list: v5p-32 (2x2x4), Google's multiple-of-4 rule for
// v4 and v5p up to their maximum sizes, and Ironwood (tpu7x).
TEST(TpuTopologyTest, ShapesBeyondTheCommonListFollowTheRules) {
  struct Case {
    const char* model;
    const char* topology;
    int chips, hosts;  // 0: not a shape of the model
  };
  const Case kCases[] = {
      {"tpu-v5p-slice", "2x2x4", 16, 4},
      {"tpu-v5p-slice", "4x4x12", 192, 48},
      {"tpu-v5p-slice", "12x12x12", 1728, 432},
      {"tpu-v5p-slice", "16x16x24", 6144, 1536},
      {"tpu-v5p-slice", "16x16x28", 0, 0},  // past the 6144-chip maximum
      {"tpu-v5p-slice", "4x12x4", 0, 0},    // not A <= B <= C
      {"tpu-v5p-slice", "2x2x3", 0, 0},
      {"tpu-v4-podslice", "2x2x1", 4, 1},
      {"tpu-v4-podslice", "4x4x4", 64, 16},
      {"tpu-v4-podslice", "16x16x16", 4096, 1024},
      {"tpu-v4-podslice", "16x16x20", 0, 0},  // past the 4096-chip pod
      {"tpu7x", "1x1x1", 1, 1},
      {"tpu7x", "2x2x1", 4, 1},
      {"tpu7x", "8x12x16", 1536, 384},
      {"tpu7x", "16x24x24", 9216, 2304},
      {"tpu-v6e-slice", "4x4", 16, 4},
      {"tpu-v6e-slice", "4x4x4", 0, 0},
  };
  for (const Case& c : kCases) {
    const std::optional<TpuTopology> t = Type(c.model).FindTopology(c.topology);
    if (c.chips == 0) {
      EXPECT_FALSE(t) << c.model << " " << c.topology;
      continue;
    }
    ASSERT_TRUE(t) << c.model << " " << c.topology;
    EXPECT_EQ(t->chips, c.chips) << c.model << " " << c.topology;
    EXPECT_EQ(t->hosts, c.hosts) << c.model << " " << c.topology;
  }
  EXPECT_THAT(Type("tpu-v5p-slice").TopologyNames(),
              HasSubstr("16x16x24, AxBxC (A <= B <= C) of multiples of 4 up "
                        "to 6144 chips"));
}

TEST(TpuTopologyTest, RulesMustDescribeWholeHosts) {
  EXPECT_OK(ValidateTpuTopologyRules({{4, 6144, 4, true}}));
  EXPECT_THAT(ValidateTpuTopologyRules({{0, 64, 4, true}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tpu_topology_rules[0].dimension_multiple")));
  EXPECT_THAT(ValidateTpuTopologyRules({{4, 32, 4, true}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("max_chips 32 is below the 64 chips")));
  EXPECT_THAT(ValidateTpuTopologyRules({{4, 64, 3, true}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("chips_per_host 3 does not divide")));
  // A listed shape that a rule also gives must agree with it.
  AcceleratorType t;
  t.canonical_model = "tpu-x";
  t.device_class = DeviceClass::kGoogleTpu;
  t.tpu_topologies = {{"4x4x4", 64, 8}};
  t.tpu_topology_rules = {{4, 4096, 4, true}};
  EXPECT_THAT(NormalizeAndValidateType(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tpu_topologies[0].hosts 8 for 4x4x4, but a "
                                 "rule gives 16")));
}

TEST(TpuTopologyTest, MalformedTopologies) {
  for (const char* bad : {"", "4", "x", "2x", "2xx4", "0x4", "-2x4", "+2x4",
                          " 2x4", "2x4x4x4", "axb", "1025x1", "02x4"}) {
    EXPECT_EQ(TopologyChips(bad), 0) << bad;
  }
  EXPECT_FALSE(Type("tpu-v5-lite-podslice").FindTopology("2x2x1"));
  EXPECT_FALSE(Type("tpu-v5p-slice").FindTopology("2x4"));
  EXPECT_FALSE(Type("tpu-v6e-slice").FindTopology("3x3"));
}

TEST(TpuTopologyTest, InconsistentTablesAreRefusedNamingTheField) {
  struct Case {
    std::vector<TpuTopology> topologies;
    const char* error;
  };
  const Case kCases[] = {
      {{{"2x", 2, 1}}, "tpu_topologies[0].topology \"2x\" is not of the form"},
      {{{"2x2", 4, 1}, {"2x2", 4, 1}},
       "tpu_topologies[1].topology \"2x2\" is "
       "listed twice"},
      {{{"2x2", 4, 1}, {"2x2x1", 4, 1}},
       "tpu_topologies[1].topology \"2x2x1\" "
       "has 3 dimensions; 2x2 has 2"},
      {{{"2x4", 6, 1}}, "tpu_topologies[0].chips 6 is not the 8 chips of 2x4"},
      {{{"2x4", 8, 3}}, "tpu_topologies[0].hosts 3 does not divide"},
      {{{"2x4", 8, 0}}, "tpu_topologies[0].hosts 0"},
  };
  for (const Case& c : kCases) {
    EXPECT_THAT(
        ValidateTpuTopologies(c.topologies),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)));
  }
  EXPECT_OK(ValidateTpuTopologies({{"2x2x4", 16, 4}, {"4x4x4", 64, 16}}));
}

}  // namespace
}  // namespace accelsched
