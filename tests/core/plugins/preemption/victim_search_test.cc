// Victim choice on its own: live allocations in a real allocation book, the
// search asked directly in a pass's session; nothing is preempted (the
// preemption and reclaim plugins do that).
#include "core/plugins/preemption/victim_search.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class VictimSearchTest : public FrameworkFixture {
 protected:
  // A prepared cycle of pending `p` for `spec` (kept for the cycle, which
  // points to it) in `s`.
  std::unique_ptr<CycleState> CycleOf(PassSession& s, const Allocation& p,
                                      const MatchSpec& spec) {
    return Cycle(s, p, specs_.emplace_back(spec));
  }
  std::unique_ptr<CycleState> CycleOf(PassSession& s, const Allocation& p) {
    return CycleOf(s, p, MatchSpec::Of(p));
  }

  std::deque<MatchSpec> specs_;
};

struct VictimCase {
  const char* name;
  std::vector<std::pair<std::string, int>> nodes;  // name, T4 GPUs
  std::map<std::string, TenantPolicy> tenants;
  std::vector<FrameworkFixture::Live> live;
  int count;                         // the request's units
  int priority;                      // the request's
  std::vector<std::string> victims;  // empty: no choice
  std::string node;

  friend void PrintTo(const VictimCase& c, std::ostream* os) { *os << c.name; }
};

class VictimChoiceTest : public VictimSearchTest,
                         public testing::WithParamInterface<VictimCase> {};

TEST_P(VictimChoiceTest, ChoosesTheseVictims) {
  const VictimCase& c = GetParam();
  for (const auto& [name, gpus] : c.nodes) AddNode(name, gpus);
  SetTenants(c.tenants);
  for (const Live& l : c.live) AddLive(l);
  const Allocation& p = AddPending("p-1", "t", c.count, c.priority);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
  VictimSearch search(s->session);
  std::optional<VictimChoice> choice =
      search.ChooseVictims(*cycle, "p-1", p, cycle->spec());
  if (c.victims.empty()) {
    EXPECT_FALSE(choice.has_value());
    return;
  }
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAreArray(c.victims));
  EXPECT_EQ(choice->node, c.node);
}

using L = FrameworkFixture::Live;

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

TEST_F(VictimSearchTest, WhatThisSessionPlacedIsNoVictim) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  {
    // Not yet placed in this session: x-1 is the victim.
    std::unique_ptr<PassSession> s = NewSession();
    std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
    VictimSearch search(s->session);
    std::optional<VictimChoice> before =
        search.ChooseVictims(*cycle, "p-1", p, cycle->spec());
    ASSERT_TRUE(before.has_value());
    EXPECT_THAT(before->victims, ElementsAre("x-1"));
  }
  std::unique_ptr<PassSession> s = NewSession();
  s->session.NotePlaced("x-1");
  std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
  VictimSearch search(s->session);
  EXPECT_FALSE(
      search.ChooseVictims(*cycle, "p-1", p, cycle->spec()).has_value());
}

TEST_F(VictimSearchTest, GangsWait) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n2", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  MatchSpec gang = MatchSpec::Of(p);
  gang.replicas = 2;
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> gang_cycle = CycleOf(*s, p, gang);
  std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
  VictimSearch search(s->session);
  EXPECT_FALSE(search.ChooseVictims(*gang_cycle, "p-1", p, gang_cycle->spec())
                   .has_value());
  // One replica would preempt.
  EXPECT_TRUE(
      search.ChooseVictims(*cycle, "p-1", p, cycle->spec()).has_value());
}

TEST_F(VictimSearchTest, ANodeHeldForAHigherPreemptorIsPassedBy) {
  AddNode("n1", 3);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n1"});
  AddLive(
      {.id = "x-3", .tenant = "x", .node = "n2", .units = 2, .priority = 1});
  Preempted("x-2", "q-1");
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  {
    std::unique_ptr<PassSession> s = NewSession();
    std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
    VictimSearch search(s->session);
    std::optional<VictimChoice> choice =
        search.ChooseVictims(*cycle, "p-1", p, cycle->spec());
    ASSERT_TRUE(choice.has_value());
    EXPECT_THAT(choice->victims, ElementsAre("x-1"));
    EXPECT_EQ(choice->node, "n1");
  }
  std::unique_ptr<PassSession> s = NewSession();
  s->holds.HoldVictimNodes(catalog_.index(), "q-1", 9,
                           book_.tallies().VictimsOf("q-1"));
  std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
  VictimSearch search(s->session);
  std::optional<VictimChoice> choice =
      search.ChooseVictims(*cycle, "p-1", p, cycle->spec());
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("x-3"));
  EXPECT_EQ(choice->node, "n2");
}

// a borrows one T4 of cohort c (3 of its nominal 2); x, outside the cohort,
// holds one at a lower priority than b's request.
class ReclaimVictimsTest : public VictimSearchTest {
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

TEST_F(ReclaimVictimsTest, BorrowersGoFirst) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, b);
  VictimSearch search(s->session);
  std::optional<VictimChoice> choice =
      search.ChooseVictims(*cycle, "b-1", b, cycle->spec());
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("a-2"));
}

TEST_F(ReclaimVictimsTest, NoMoreOfABorrowerIsTakenThanItBorrows) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, b);
  VictimSearch search(s->session);
  std::optional<VictimChoice> choice =
      search.ChooseVictims(*cycle, "b-1", b, cycle->spec(),
                           /*borrowed_only=*/true, /*quota_milli=*/1000);
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("a-2"));
  // Two units back would take a-1 too, beyond what a borrows; x-1 is no
  // borrower.
  EXPECT_FALSE(search
                   .ChooseVictims(*cycle, "b-1", b, cycle->spec(),
                                  /*borrowed_only=*/true,
                                  /*quota_milli=*/2000)
                   .has_value());
}

TEST_F(ReclaimVictimsTest, ReclaimVictimsComeFromBorrowersOnly) {
  const Allocation& b = AddPending("b-1", "b", 1, 0);
  std::unique_ptr<PassSession> s = NewSession();
  VictimSearch search(s->session);
  EXPECT_THAT(search.ChooseReclaimVictims(b, Reclaim{GpuPool(kT4), 1000}),
              ElementsAre("a-2"));
  // a borrows one: a-1 is not taken as well, and one is not enough.
  EXPECT_THAT(search.ChooseReclaimVictims(b, Reclaim{GpuPool(kT4), 2000}),
              IsEmpty());
  EXPECT_THAT(search.ChooseReclaimVictims(b, Reclaim{GpuPool(kL4), 1000}),
              IsEmpty());
}

TEST_F(ReclaimVictimsTest, ABorrowerOfTheSameTenantIsNotReclaimedFrom) {
  const Allocation& a = AddPending("a-3", "a", 1, 0);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, a);
  VictimSearch search(s->session);
  // Only x-1, of lower priority, may go.
  std::optional<VictimChoice> choice =
      search.ChooseVictims(*cycle, "a-3", a, cycle->spec());
  ASSERT_TRUE(choice.has_value());
  EXPECT_THAT(choice->victims, ElementsAre("x-1"));
  EXPECT_THAT(search.ChooseReclaimVictims(a, Reclaim{GpuPool(kT4), 1000}),
              IsEmpty());
}

}  // namespace
}  // namespace accelsched
