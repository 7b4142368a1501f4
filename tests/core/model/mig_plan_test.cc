#include "core/model/mig_plan.h"

#include <vector>

#include "gtest/gtest.h"

namespace accelsched {
namespace {

// Seven 1g.10gb planned into four and a 3g.40gb at 4.
const std::vector<MigSlice> kBefore = {
    {"MIG-0", "1g.10gb", 0}, {"MIG-1", "1g.10gb", 1}, {"MIG-2", "1g.10gb", 2},
    {"MIG-3", "1g.10gb", 3}, {"MIG-4", "1g.10gb", 4}, {"MIG-5", "1g.10gb", 5},
    {"MIG-6", "1g.10gb", 6}};

MigPlan Plan() {
  MigPlan plan;
  plan.slices = {{"MIG-0", "1g.10gb", 0},
                 {"MIG-1", "1g.10gb", 1},
                 {"MIG-2", "1g.10gb", 2},
                 {"MIG-3", "1g.10gb", 3},
                 {"", "3g.40gb", 4}};
  plan.generation = 1;
  return plan;
}

TEST(MigPlanTest, TheLayoutBeforeIsInProgress) {
  EXPECT_EQ(ProgressOf(Plan(), kBefore, kBefore), MigPlanProgress::kInProgress);
}

TEST(MigPlanTest, PartWayIsInProgress) {
  std::vector<MigSlice> now(kBefore.begin(), kBefore.begin() + 5);
  EXPECT_EQ(ProgressOf(Plan(), kBefore, now), MigPlanProgress::kInProgress);
}

TEST(MigPlanTest, ThePlannedLayoutWithNewIdsIsApplied) {
  std::vector<MigSlice> now(kBefore.begin(), kBefore.begin() + 4);
  now.push_back({"MIG-new", "3g.40gb", 4});
  EXPECT_EQ(ProgressOf(Plan(), kBefore, now), MigPlanProgress::kApplied);
}

TEST(MigPlanTest, ASliceThePlanDoesNotExplainBreaksIt) {
  std::vector<MigSlice> now(kBefore.begin(), kBefore.begin() + 4);
  now.push_back({"MIG-x", "2g.20gb", 4});
  EXPECT_EQ(ProgressOf(Plan(), kBefore, now), MigPlanProgress::kBroken);
}

TEST(MigPlanTest, PlannedAwayAreTheSlicesNotInThePlan) {
  const std::vector<MigSlice> away = PlannedAway(Plan(), kBefore);
  EXPECT_EQ(DescribeMigLayout(away), "1g.10gb@4 1g.10gb@5 1g.10gb@6");
}

}  // namespace
}  // namespace accelsched
