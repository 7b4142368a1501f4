// Holds on their own: what a pass takes over from the last one, what each
// kind of hold yields to, victims' nodes held for their preemptor, holds
// for a MIG re-layout planned ahead, and what a pass leaves for the next
// (each held request's start). Leases in a real allocation book; the holds
// are made through Holds directly (the backfill walk that makes most of
// them is tested with its plugin, tests/core/plugins/backfill).
#include "core/framework/holds.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::string HoldsFrom(const std::string& nodes, absl::Time start) {
  return absl::StrCat("; holds ", nodes, " from ", absl::FormatTime(start));
}

bool NoneWaiting(absl::string_view) { return false; }
bool AllWaiting(absl::string_view) { return true; }

class HoldsTest : public FrameworkFixture {
 protected:
  // node -> (held for, start) of `pool`'s holds.
  using HeldMap = std::map<std::string, std::pair<std::string, absl::Time>>;
  static HeldMap Held(const Reservations& r,
                      const PoolKey& pool = GpuPool(kT4)) {
    HeldMap out;
    auto p = r.find(pool);
    if (p == r.end()) return out;
    for (const auto& [node, res] : p->second) {
      out[node] = {res.held_for, res.start};
    }
    return out;
  }
};

TEST_F(HoldsTest, NominatedHoldsOfWaitingHoldersAreKept) {
  AddNode("n1", 2);
  ReservationState previous;
  auto& pool = previous.reservations[GpuPool(kT4)];
  pool["n1"] = Reservation{T0(), "p-1", /*nominated=*/true, 5};
  pool["n2"] = Reservation{T0(), "p-2", /*nominated=*/true, 5};
  pool["n3"] = Reservation{T0(), "p-3", /*nominated=*/false, 5};
  Holds holds(&book_, &previous, /*refresh=*/true,
              [](absl::string_view id) { return id != "p-2"; });
  EXPECT_THAT(holds.kept_preemptors(), ElementsAre("p-1"));
  EXPECT_EQ(Held(holds.reservations()), (HeldMap{{"n1", {"p-1", T0()}}}));
}

// The backfill walk's memory of what was looked for in vain stands until
// the refresh, whoever asks next; the rest of it is made afresh.
TEST_F(HoldsTest, WalksLookedForInVainAreKeptUntilTheRefresh) {
  ReservationState previous;
  previous.unplaced = {"p-1"};
  previous.unplaced_walks = {"walk"};
  previous.walk_holds = {{"other", "p-2"}};
  Holds between(&book_, &previous, /*refresh=*/false, AllWaiting);
  EXPECT_THAT(between.memory().unplaced_walks, UnorderedElementsAre("walk"));
  EXPECT_THAT(between.memory().unplaced, IsEmpty());
  EXPECT_THAT(between.memory().walk_holds, IsEmpty());
  Holds refreshed(&book_, &previous, /*refresh=*/true, AllWaiting);
  EXPECT_THAT(refreshed.memory().unplaced_walks, IsEmpty());
}

// A backfill hold never yields; a nominated one or one planned ahead yields
// to a higher priority only; a request's own hold is never held for
// another. Given no priority, HoldForOther sees every hold of another,
// whatever it yields to.
struct OtherCase {
  const char* name;
  Reservation hold;  // on n1's T4s
  std::string requester;
  int priority;
  bool held_against_priority;  // HoldForOther given `priority`
  bool held_for_other;         // HoldForOther given no priority

  friend void PrintTo(const OtherCase& c, std::ostream* os) { *os << c.name; }
};

class ForOtherTest : public HoldsTest,
                     public testing::WithParamInterface<OtherCase> {};

TEST_P(ForOtherTest, SaysWhetherTheNodeIsHeldForAnother) {
  const OtherCase& c = GetParam();
  AddNode("n1", 2);
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  holds.Hold(GpuPool(kT4), "n1", c.hold);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kT4), "n1", c.requester, c.priority) !=
                nullptr,
            c.held_against_priority);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kT4), "n1", c.requester, std::nullopt) !=
                nullptr,
            c.held_for_other);
  // Another pool, or another node, is not held at all.
  EXPECT_EQ(holds.HoldForOther(GpuPool(kL4), "n1", c.requester, 0), nullptr);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kT4), "n2", c.requester, std::nullopt),
            nullptr);
}

// Holds for "h" (their start is not read).
Reservation Backfill() { return Reservation{absl::UnixEpoch(), "h"}; }
Reservation Nominated(int priority) {
  return Reservation{absl::UnixEpoch(), "h", /*nominated=*/true, priority};
}
Reservation Ahead(int priority) {
  return Reservation{absl::UnixEpoch(), "h", /*nominated=*/false, priority,
                     /*ahead=*/true};
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ForOtherTest,
    testing::Values(
        OtherCase{"BackfillAgainstAnyPriority", Backfill(), "p", 100, true,
                  true},
        OtherCase{"NominatedAgainstItsPriority", Nominated(5), "p", 5, true,
                  true},
        OtherCase{"NominatedYieldsToAHigherOne", Nominated(5), "p", 6, false,
                  true},
        OtherCase{"AheadAgainstItsPriority", Ahead(3), "p", 3, true, true},
        OtherCase{"AheadYieldsToAHigherOne", Ahead(3), "p", 4, false, true},
        OtherCase{"ItsOwnHold", Nominated(5), "h", 0, false, false}),
    [](const testing::TestParamInfo<OtherCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(HoldsTest, ANominatedHoldYieldsToAHigherPriorityOnly) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  ReservationState previous;
  previous.reservations[GpuPool(kT4)]["n1"] =
      Reservation{T0(), "p-1", /*nominated=*/true, 5};
  Holds holds(&book_, &previous, /*refresh=*/true, AllWaiting);
  // p-2's backfill hold of n2, from now (the walk's; backfill_test).
  holds.Hold(GpuPool(kT4), "n2", Reservation{T0(), "p-2"});
  EXPECT_NE(holds.HoldForOther(GpuPool(kT4), "n1", "p-9", 5), nullptr);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kT4), "n1", "p-9", 6), nullptr);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kT4), "n1", "p-1", 0), nullptr);
  EXPECT_NE(holds.HoldForOther(GpuPool(kT4), "n2", "p-9", 100), nullptr);
  EXPECT_EQ(holds.HoldForOther(GpuPool(kL4), "n1", "p-9", 0), nullptr);
}

// Release drops every hold of the request, in every pool, and what it held
// ahead; the others stay. What it held passes to no other this pass
// (WasReleased, which the backfill walk reads).
TEST_F(HoldsTest, ReleaseDropsEveryHoldOfTheRequestOnly) {
  AddNode("n1", 2);
  AddNode("n2", 2, kL4);
  AddNode("n3", 2);
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  holds.Hold(GpuPool(kT4), "n1", Reservation{T0(), "p-1"});
  holds.HoldAhead("p-1", 0, "n2", {GpuPool(kL4)}, T0() + absl::Hours(1),
                  " ahead");
  holds.Hold(GpuPool(kT4), "n3", Reservation{T0(), "p-2"});
  ASSERT_NE(holds.KeptAhead("p-1"), "");
  holds.Release("p-1");
  EXPECT_EQ(Held(holds.reservations()), (HeldMap{{"n3", {"p-2", T0()}}}));
  EXPECT_FALSE(holds.reservations().contains(GpuPool(kL4)));
  EXPECT_EQ(holds.KeptAhead("p-1"), "");
  EXPECT_TRUE(holds.WasReleased("p-1"));
  EXPECT_FALSE(holds.WasReleased("p-2"));
}

// Holds for a MIG re-layout planned ahead are kept as made between
// refreshes while their holder waits (with their reason), not at a refresh;
// they yield to a higher priority. (That the backfill walk never takes them
// over: backfill_test.)
TEST_F(HoldsTest, HoldsPlannedAheadAreKeptBetweenRefreshesOnly) {
  AddNode("n1", 2);
  Holds first(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  EXPECT_EQ(
      first.HoldAhead("a-1", 3, "n1", {GpuPool(kT4)}, T0() + absl::Hours(1),
                      " for a re-layout"),
      absl::StrCat(HoldsFrom("n1", T0() + absl::Hours(1)), " for a re-layout"));
  const ReservationState previous = first.Take();
  Holds kept(&book_, &previous, /*refresh=*/false, AllWaiting);
  EXPECT_EQ(Held(kept.reservations()),
            (HeldMap{{"n1", {"a-1", T0() + absl::Hours(1)}}}));
  EXPECT_EQ(
      kept.KeptAhead("a-1"),
      absl::StrCat(HoldsFrom("n1", T0() + absl::Hours(1)), " for a re-layout"));
  EXPECT_TRUE(kept.kept_preemptors().empty());  // not a preemptor
  EXPECT_NE(kept.HoldForOther(GpuPool(kT4), "n1", "p-9", 3), nullptr);
  EXPECT_EQ(kept.HoldForOther(GpuPool(kT4), "n1", "p-9", 4), nullptr);
  // A holder no longer waiting, or a refresh: not kept.
  Holds gone(&book_, &previous, /*refresh=*/false, NoneWaiting);
  EXPECT_TRUE(Held(gone.reservations()).empty());
  EXPECT_EQ(gone.KeptAhead("a-1"), "");
  Holds refreshed(&book_, &previous, /*refresh=*/true, AllWaiting);
  EXPECT_TRUE(Held(refreshed.reservations()).empty());
}

// A preemptor of higher priority that takes over a node held for another
// (a hold planned ahead, or a nominated one) holds it from its victim's
// grace end, as its own: not from the other's start.
TEST_F(HoldsTest, APreemptorTakesOverALowerHoldWhole) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  holds.HoldAhead("a-1", 0, "n1", {GpuPool(kT4)}, T0() + absl::Hours(5), "");
  holds.HoldVictimNodes(catalog_.index(), "p-1", 7,
                        book_.tallies().VictimsOf("p-1"));
  EXPECT_EQ(Held(holds.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Seconds(30)}}}));
  const Reservation& r = holds.reservations().at(GpuPool(kT4)).at("n1");
  EXPECT_TRUE(r.nominated);
  EXPECT_FALSE(r.ahead);
  EXPECT_EQ(r.priority, 7);
}

TEST_F(HoldsTest, APreemptorHoldsItsVictimsNodesUntilGraceEnds) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n2", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  Preempted("x-2", "p-1", absl::Seconds(45));
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  holds.HoldVictimNodes(catalog_.index(), "p-1", 7,
                        book_.tallies().VictimsOf("p-1"));
  EXPECT_EQ(Held(holds.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Seconds(30)}},
                     {"n2", {"p-1", T0() + absl::Seconds(45)}}}));
  const Reservation& r = holds.reservations().at(GpuPool(kT4)).at("n1");
  EXPECT_TRUE(r.nominated);
  EXPECT_EQ(r.priority, 7);
  // Its pool has had its holder: a later waiting request holds nothing
  // (the walk: backfill_test).
  EXPECT_TRUE(holds.TurnTaken(GpuPool(kT4)));
  EXPECT_FALSE(holds.TakeTurn(GpuPool(kT4)));
}

// A node held this pass for an earlier request stays its, unless that hold
// yields to the preemptor (a backfill hold never does).
TEST_F(HoldsTest, APreemptorLeavesANodeHeldForAnotherThatDoesNotYield) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n2", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  Preempted("x-2", "p-1", absl::Seconds(30));
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  holds.Hold(GpuPool(kT4), "n1", Reservation{T0() + absl::Hours(1), "b-1"});
  holds.Hold(GpuPool(kT4), "n2",
             Reservation{T0(), "q-1", /*nominated=*/true, 9});
  holds.HoldVictimNodes(catalog_.index(), "p-1", 7,
                        book_.tallies().VictimsOf("p-1"));
  EXPECT_EQ(
      Held(holds.reservations()),
      (HeldMap{{"n1", {"b-1", T0() + absl::Hours(1)}}, {"n2", {"q-1", T0()}}}));
}

// Each held request's expected start (Allocation::estimated_start): a gang's
// when the last node it holds frees, a preemptor's when its last victim's
// grace ends, a reclaimer held from now when its victims end; a request
// that holds nothing has none.
TEST_F(HoldsTest, EachHolderStartsWhenItsLastHoldFrees) {
  AddNode("n1", 2, kL4);
  AddNode("n2", 2, kL4);
  AddNode("n3", 2);
  AddNode("n4", 2);
  AddLive({.id = "x-3",
           .tenant = "x",
           .node = "n3",
           .units = 2,
           .lease_left = absl::Hours(3)});
  AddLive({.id = "x-4",
           .tenant = "x",
           .node = "n4",
           .units = 1,
           .lease_left = absl::Hours(3)});
  Preempted("x-3", "p-2", absl::Seconds(45));
  Preempted("x-4", "p-3", absl::Seconds(20));
  Holds holds(&book_, nullptr, /*refresh=*/true, NoneWaiting);
  // A gang's two nodes, freeing at +1 h and +2 h.
  holds.Hold(GpuPool(kL4), "n1", Reservation{T0() + absl::Hours(1), "g-1"});
  holds.Hold(GpuPool(kL4), "n2", Reservation{T0() + absl::Hours(2), "g-1"});
  holds.HoldVictimNodes(catalog_.index(), "p-2", 7,
                        book_.tallies().VictimsOf("p-2"));  // n3
  // A reclaimer's hold of n4's free GPU, from now (the reclaim plugin's).
  holds.Hold(GpuPool(kT4), "n4",
             Reservation{T0(), "p-3", /*nominated=*/true, 0});
  const ReservationState state = holds.Take();
  EXPECT_EQ(state.starts, (absl::flat_hash_map<std::string, absl::Time>{
                              {"g-1", T0() + absl::Hours(2)},
                              {"p-2", T0() + absl::Seconds(45)},
                              {"p-3", T0() + absl::Seconds(20)}}));
}

}  // namespace
}  // namespace accelsched
