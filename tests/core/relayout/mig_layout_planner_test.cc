#include "core/relayout/mig_layout_planner.h"

#include <algorithm>
#include <string>
#include <vector>

#include "config/accelerator_types_file.h"
#include "core/accelerators/accelerator_type_set.h"
#include "core/model/mig_plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

const MigGeometry& Mig(absl::string_view model) {
  static const auto registry = BuiltinAcceleratorTypes();
  const AcceleratorType* t = registry->Find(model);
  EXPECT_NE(t, nullptr) << model;
  return t->mig;
}

MigSliceState Free(std::string profile, int start) {
  return MigSliceState{
      MigSlice{"MIG-" + profile + "@" + std::to_string(start), profile, start},
      false};
}

MigSliceState Pinned(std::string profile, int start) {
  MigSliceState s = Free(std::move(profile), start);
  s.pinned = true;
  return s;
}

// The H100's seven 1g.10gb slices, laid out by hand at starts 0 to 6.
std::vector<MigSliceState> SevenSmall() {
  std::vector<MigSliceState> out;
  for (int i = 0; i < 7; ++i) out.push_back(Free("1g.10gb", i));
  return out;
}

// Every planned layout is one NVIDIA's rules allow (the registry's starts,
// no overlap, compute and instance limits).
void ExpectValid(const MigGeometry& g, const MigLayoutPlan& plan) {
  std::vector<MigPlacement> placements;
  for (const MigSlice& s : plan.layout) {
    placements.push_back(MigPlacement{s.profile, s.start});
  }
  EXPECT_TRUE(ValidateMigLayout(g, "gpu", placements).ok())
      << DescribeMigLayout(plan.layout);
}

TEST(MigLayoutPlannerTest, SevenSmallSlicesMakeRoomForAThreeGDestroyingThree) {
  const MigGeometry& g = Mig("nvidia-h100");
  const std::vector<MigDemand> mix = {{"3g.40gb", 1}};
  auto plan = PlanMigLayout(g, SevenSmall(), "3g.40gb", 1, mix);
  ASSERT_TRUE(plan.has_value());
  ExpectValid(g, *plan);
  // 3g.40gb starts at 0 or 4 (4 slots); at 4 it takes slots 4-7, where only
  // three 1g slices lie (slot 7 holds none).
  EXPECT_EQ(DescribeMigLayout(plan->layout),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  EXPECT_EQ(plan->destroyed, 3);
  EXPECT_EQ(plan->created, 1);
  EXPECT_EQ(plan->targets, 1);
  // The kept slices keep their ids; the new one has none yet.
  EXPECT_EQ(plan->layout[0].id, "MIG-1g.10gb@0");
  EXPECT_EQ(plan->layout[4].id, "");
}

TEST(MigLayoutPlannerTest, PinnedSlicesStayAndDecideWhereTheNewOneGoes) {
  const MigGeometry& g = Mig("nvidia-h100");
  std::vector<MigSliceState> now = SevenSmall();
  now[5].pinned = true;  // 1g.10gb@5 is allocated
  auto plan = PlanMigLayout(g, now, "3g.40gb", 1, {});
  ASSERT_TRUE(plan.has_value());
  ExpectValid(g, *plan);
  EXPECT_EQ(DescribeMigLayout(plan->layout),
            "3g.40gb@0 1g.10gb@4 1g.10gb@5 1g.10gb@6");
  EXPECT_EQ(plan->destroyed, 4);
  EXPECT_EQ(plan->layout[2].id, "MIG-1g.10gb@5");
}

TEST(MigLayoutPlannerTest, NoRoomWhenPinnedSlicesBlockEveryStart) {
  const MigGeometry& g = Mig("nvidia-h100");
  std::vector<MigSliceState> now = SevenSmall();
  now[1].pinned = true;  // blocks 3g at 0
  now[6].pinned = true;  // blocks 3g at 4
  EXPECT_FALSE(PlanMigLayout(g, now, "3g.40gb", 1, {}).has_value());
  // Nor a profile the GPU does not have.
  EXPECT_FALSE(PlanMigLayout(g, SevenSmall(), "1g.5gb", 1, {}).has_value());
}

TEST(MigLayoutPlannerTest, EmptySpaceIsUsedBeforeAnythingIsDestroyed) {
  const MigGeometry& g = Mig("nvidia-h100");
  // 1g.10gb at 0-2 are in use and a 3g at 4 is free: slot 3 and one
  // compute slice are spare, room for one more 1g.10gb without destroying
  // the 3g.
  std::vector<MigSliceState> now = {Pinned("1g.10gb", 0), Pinned("1g.10gb", 1),
                                    Pinned("1g.10gb", 2), Free("3g.40gb", 4)};
  auto plan = PlanMigLayout(g, now, "1g.10gb", 1, {{"1g.10gb", 1}});
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->destroyed, 0);
  EXPECT_EQ(DescribeMigLayout(plan->layout),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
}

TEST(MigLayoutPlannerTest, AsksForMoreWhenTheRequestNeedsSeveral) {
  const MigGeometry& g = Mig("nvidia-h100");
  auto plan = PlanMigLayout(g, SevenSmall(), "3g.40gb", 2, {});
  ASSERT_TRUE(plan.has_value());
  ExpectValid(g, *plan);
  EXPECT_EQ(plan->targets, 2);
  EXPECT_EQ(DescribeMigLayout(plan->layout), "3g.40gb@0 3g.40gb@4");
  EXPECT_EQ(plan->destroyed, 7);
}

TEST(MigLayoutPlannerTest, TheMixDecidesWhatTheFreedSpaceBecomes) {
  const MigGeometry& g = Mig("nvidia-h100");
  // One 7g.80gb, free: a 2g.20gb request destroys it either way. What the
  // other five compute slices become is the mix's to decide: with 3g
  // wanted, a 3g.40gb at 4 (usable as is) beats leaving the space empty
  // only by usefulness, never by destroying less.
  const std::vector<MigSliceState> now = {Free("7g.80gb", 0)};
  auto plan = PlanMigLayout(g, now, "2g.20gb", 1, {{"3g.40gb", 1}});
  ASSERT_TRUE(plan.has_value());
  ExpectValid(g, *plan);
  EXPECT_EQ(plan->destroyed, 1);
  // Empty slots where a 3g fits count as usable for 3g: no slice is created
  // that the mix does not need.
  EXPECT_EQ(plan->created, 1);
  EXPECT_EQ(plan->layout.front().profile, "2g.20gb");
  // The 2g goes where it leaves slots 4-7 whole for a 3g: nothing
  // stranded for the mix's 3g requests beyond the spare compute a 3g
  // cannot use (5 free compute, 3 usable).
  EXPECT_EQ(plan->layout.front().start, 0);
  EXPECT_NEAR(plan->fragmentation_after, 2.0, 1e-9);
}

TEST(MigLayoutPlannerTest, FragmentationCountsWhatEachProfileCannotUse) {
  const MigGeometry& g = Mig("nvidia-h100");
  // Seven free 1g.10gb: all usable by 1g; none by 3g (no empty slot holds
  // one, and no compute is spare).
  std::vector<MigSlice> layout;
  for (int i = 0; i < 7; ++i) {
    layout.push_back(MigSlice{"", "1g.10gb", i});
  }
  const std::vector<bool> free(7, true);
  EXPECT_NEAR(MigFragmentation(g, layout, free, {{"1g.10gb", 1}}), 0, 1e-9);
  EXPECT_NEAR(MigFragmentation(g, layout, free, {{"3g.40gb", 1}}), 7, 1e-9);
  EXPECT_NEAR(
      MigFragmentation(g, layout, free, {{"1g.10gb", 1}, {"3g.40gb", 1}}), 3.5,
      1e-9);
  EXPECT_NEAR(MigFragmentation(g, layout, free, {}), 0, 1e-9);
  // An empty GPU: every profile fits in its empty slots.
  EXPECT_NEAR(MigFragmentation(g, {}, {}, {{"3g.40gb", 1}}), 1, 1e-9);
  EXPECT_NEAR(MigFragmentation(g, {}, {}, {{"7g.80gb", 1}}), 0, 1e-9);
}

TEST(MigLayoutPlannerTest, EveryPlanOnEveryMigTypeIsValid) {
  const auto registry = BuiltinAcceleratorTypes();
  int plans = 0;
  for (const AcceleratorType& t : registry->types()) {
    if (!t.has_mig()) continue;
    // From a GPU holding one free instance of each profile that fits, left
    // to right, every profile is planned for.
    std::vector<MigSliceState> now;
    std::vector<MigPlacement> placed;
    for (const MigProfile& p : t.mig.profiles) {
      for (int s : p.starts) {
        placed.push_back(MigPlacement{p.name, s});
        if (ValidateMigLayout(t.mig, "gpu", placed).ok()) {
          now.push_back(Free(p.name, s));
          break;
        }
        placed.pop_back();
      }
    }
    for (const MigProfile& p : t.mig.profiles) {
      // A free slice of the profile is taken as it is, never planned for.
      if (std::any_of(now.begin(), now.end(), [&](const MigSliceState& s) {
            return s.slice.profile == p.name;
          })) {
        continue;
      }
      auto plan = PlanMigLayout(t.mig, now, p.name, 1, {});
      ASSERT_TRUE(plan.has_value()) << t.canonical_model << " " << p.name;
      ExpectValid(t.mig, *plan);
      ++plans;
    }
  }
  EXPECT_GT(plans, 15);
}

}  // namespace
}  // namespace accelsched
