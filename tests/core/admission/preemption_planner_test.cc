// Victim choice on its own: live allocations in a real allocation book, the
// planner asked directly; nothing is preempted (the pass does that).
#include "core/admission/preemption_planner.h"

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/admission/reservation_planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/admission_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class PreemptionPlannerTest : public AdmissionFixture {
 protected:
  // Nothing held from a last pass.
  ReservationPlanner NoHolds() {
    return ReservationPlanner(ctx_, [](absl::string_view) { return false; });
  }
};

struct VictimCase {
  const char* name;
  std::vector<std::pair<std::string, int>> nodes;  // name, T4 GPUs
  std::map<std::string, TenantPolicy> tenants;
  std::vector<AdmissionFixture::Live> live;
  int count;                         // the request's units
  int priority;                      // the request's
  std::vector<std::string> victims;  // empty: no choice
  std::string node;

  friend void PrintTo(const VictimCase& c, std::ostream* os) { *os << c.name; }
};

class VictimChoiceTest : public PreemptionPlannerTest,
                         public testing::WithParamInterface<VictimCase> {};

TEST_P(VictimChoiceTest, ChoosesTheseVictims) {
  const VictimCase& c = GetParam();
  for (const auto& [name, gpus] : c.nodes) AddNode(name, gpus);
  SetTenants(c.tenants);
  for (const Live& l : c.live) AddLive(l);
  const Allocation& p = AddPending("p-1", "t", c.count, c.priority);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  std::optional<VictimChoice> choice =
      planner.ChooseVictims("p-1", p, SpecOf(p));
  if (c.victims.empty()) {
    EXPECT_EQ(choice, std::nullopt);
    return;
  }
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAreArray(c.victims));
  EXPECT_EQ(choice->node, c.node);
}

using L = AdmissionFixture::Live;

TenantPolicy Unpreemptible() {
  TenantPolicy p;
  p.preemptible = false;
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Victims, VictimChoiceTest,
    testing::Values(
        VictimCase{"FewestVictimsWin",
                   {{"n1", 2}, {"n2", 2}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n1"},
                    L{.id = "x-2", .tenant = "x", .node = "n1"},
                    L{.id = "x-3", .tenant = "x", .node = "n2", .units = 2}},
                   2,
                   5,
                   {"x-3"},
                   "n2"},
        VictimCase{"ThenTheLowestVictimPriority",
                   {{"n1", 2}, {"n2", 2}},
                   {},
                   {L{.id = "x-1",
                      .tenant = "x",
                      .node = "n1",
                      .units = 2,
                      .priority = 1},
                    L{.id = "x-2", .tenant = "x", .node = "n2", .units = 2}},
                   2,
                   5,
                   {"x-2"},
                   "n2"},
        VictimCase{"ThenTheNodeName",
                   {{"n1", 2}, {"n2", 2}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n2", .units = 2},
                    L{.id = "x-2", .tenant = "x", .node = "n1", .units = 2}},
                   2,
                   5,
                   {"x-2"},
                   "n1"},
        VictimCase{"LowestPriorityGoesFirstOnANode",
                   {{"n1", 4}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n1", .priority = 2},
                    L{.id = "x-2", .tenant = "x", .node = "n1", .priority = 1},
                    L{.id = "x-3", .tenant = "x", .node = "n1", .priority = 3},
                    L{.id = "x-4", .tenant = "x", .node = "n1"}},
                   2,
                   5,
                   {"x-4", "x-2"},
                   "n1"},
        VictimCase{"MostRecentlyAdmittedGoesFirst",
                   {{"n1", 2}},
                   {},
                   {L{.id = "x-1",
                      .tenant = "x",
                      .node = "n1",
                      .admitted_ago = absl::Minutes(5)},
                    L{.id = "x-2",
                      .tenant = "x",
                      .node = "n1",
                      .admitted_ago = absl::Minutes(50)}},
                   1,
                   1,
                   {"x-1"},
                   "n1"},
        VictimCase{"AdmittedTogetherTheLaterIdGoesFirst",
                   {{"n1", 2}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n1"},
                    L{.id = "x-2", .tenant = "x", .node = "n1"}},
                   1,
                   1,
                   {"x-2"},
                   "n1"},
        VictimCase{"FreeUnitsCount",
                   {{"n1", 3}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n1"},
                    L{.id = "x-2", .tenant = "x", .node = "n1"}},
                   2,
                   1,
                   {"x-2"},
                   "n1"},
        VictimCase{"TheSamePriorityIsNoVictim",
                   {{"n1", 2}},
                   {},
                   {L{.id = "x-1",
                      .tenant = "x",
                      .node = "n1",
                      .units = 2,
                      .priority = 5}},
                   1,
                   5,
                   {},
                   ""},
        VictimCase{"AnUnpreemptibleTenantIsNoVictim",
                   {{"n1", 2}},
                   {{"keep", Unpreemptible()}},
                   {L{.id = "x-1", .tenant = "keep", .node = "n1", .units = 2}},
                   1,
                   5,
                   {},
                   ""},
        VictimCase{"NoneWhenEvenAllLowerOnesWouldNotDo",
                   {{"n1", 2}, {"n2", 2}},
                   {},
                   {L{.id = "x-1", .tenant = "x", .node = "n1"},
                    L{.id = "x-2", .tenant = "x", .node = "n1", .priority = 9},
                    L{.id = "x-3", .tenant = "x", .node = "n2", .priority = 9},
                    L{.id = "x-4", .tenant = "x", .node = "n2"}},
                   2,
                   5,
                   {},
                   ""}),
    [](const testing::TestParamInfo<VictimCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(PreemptionPlannerTest, WhatThisPassAdmittedIsNoVictim) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  // Not yet admitted by this pass: x-1 is the victim.
  std::optional<VictimChoice> before =
      planner.ChooseVictims("p-1", p, SpecOf(p));
  ASSERT_TRUE(before.has_value());
  EXPECT_THAT(before->victims, testing::ElementsAre("x-1"));
  PreemptionPlanner fresh(ctx_, reservations);
  fresh.NoteAdmitted("x-1");
  EXPECT_EQ(fresh.ChooseVictims("p-1", p, SpecOf(p)), std::nullopt);
}

TEST_F(PreemptionPlannerTest, GangsWait) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n2", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  MatchSpec gang = SpecOf(p);
  gang.replicas = 2;
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  EXPECT_EQ(planner.ChooseVictims("p-1", p, gang), std::nullopt);
  // One replica would preempt.
  EXPECT_TRUE(planner.ChooseVictims("p-1", p, SpecOf(p)).has_value());
}

TEST_F(PreemptionPlannerTest, ANodeHeldForAHigherPreemptorIsPassedBy) {
  AddNode("n1", 3);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n1"});
  AddLive(
      {.id = "x-3", .tenant = "x", .node = "n2", .units = 2, .priority = 1});
  Preempted("x-2", "q-1");
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  {
    ReservationPlanner reservations = NoHolds();
    PreemptionPlanner planner(ctx_, reservations);
    std::optional<VictimChoice> choice =
        planner.ChooseVictims("p-1", p, SpecOf(p));
    ASSERT_TRUE(choice.has_value());
    EXPECT_THAT(choice->victims, ElementsAre("x-1"));
    EXPECT_EQ(choice->node, "n1");
  }
  ReservationPlanner reservations = NoHolds();
  reservations.HoldVictimNodes("q-1", 9, book_.VictimsOf("q-1"));
  PreemptionPlanner planner(ctx_, reservations);
  std::optional<VictimChoice> choice =
      planner.ChooseVictims("p-1", p, SpecOf(p));
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("x-3"));
  EXPECT_EQ(choice->node, "n2");
}

// a borrows one T4 of cohort c (3 of its nominal 2); x, outside the cohort,
// holds one at a lower priority than b's request.
class ReclaimTest : public PreemptionPlannerTest {
 protected:
  void SetUp() override {
    AddNode("n1", 4);
    TenantPolicy quota;
    quota.cohort = "c";
    quota.quotas[GpuPool(kT4)] = Quota{2000, std::nullopt};
    SetTenants({{"a", quota}, {"b", quota}});
    AddLive({.id = "a-1",
             .tenant = "a",
             .node = "n1",
             .units = 2,
             .admitted_ago = absl::Hours(2)});
    AddLive({.id = "a-2",
             .tenant = "a",
             .node = "n1",
             .admitted_ago = absl::Hours(1)});
    AddLive({.id = "x-1", .tenant = "x", .node = "n1", .priority = -1});
  }
};

TEST_F(ReclaimTest, BorrowersGoFirst) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  std::optional<VictimChoice> choice =
      planner.ChooseVictims("b-1", b, SpecOf(b));
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("a-2"));
}

TEST_F(ReclaimTest, NoMoreOfABorrowerIsTakenThanItBorrows) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  std::optional<VictimChoice> choice = planner.ChooseVictims(
      "b-1", b, SpecOf(b), /*borrowed_only=*/true, /*quota_milli=*/1000);
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("a-2"));
  // Two units back would take a-1 too, beyond what a borrows; x-1 is no
  // borrower.
  EXPECT_EQ(planner.ChooseVictims("b-1", b, SpecOf(b), /*borrowed_only=*/true,
                                  /*quota_milli=*/2000),
            std::nullopt);
}

TEST_F(ReclaimTest, ReclaimVictimsComeFromBorrowersOnly) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  EXPECT_THAT(planner.ChooseReclaimVictims(b, Reclaim{GpuPool(kT4), 1000}),
              ElementsAre("a-2"));
  // a borrows one: a-1 is not taken as well, and one is not enough.
  EXPECT_THAT(planner.ChooseReclaimVictims(b, Reclaim{GpuPool(kT4), 2000}),
              IsEmpty());
  EXPECT_THAT(planner.ChooseReclaimVictims(b, Reclaim{GpuPool(kL4), 1000}),
              IsEmpty());
}

TEST_F(ReclaimTest, ABorrowerOfTheSameTenantIsNotReclaimedFrom) {
  const Allocation& a = AddPending("a-3", "a", 1, 0);
  ReservationPlanner reservations = NoHolds();
  PreemptionPlanner planner(ctx_, reservations);
  // Only x-1, of lower priority, may go.
  std::optional<VictimChoice> choice =
      planner.ChooseVictims("a-3", a, SpecOf(a));
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("x-1"));
  EXPECT_THAT(planner.ChooseReclaimVictims(a, Reclaim{GpuPool(kT4), 1000}),
              IsEmpty());
}

}  // namespace
}  // namespace accelsched
