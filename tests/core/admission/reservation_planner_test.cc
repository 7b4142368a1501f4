// Backfill reservations on their own: leases in a real allocation book, the
// planner asked directly for the reservation a waiting head gets.
#include "core/admission/reservation_planner.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/admission_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::string HoldsFrom(const std::string& nodes, absl::Time start) {
  return absl::StrCat("; holds ", nodes, " from ", absl::FormatTime(start));
}

class ReservationPlannerTest : public AdmissionFixture {
 protected:
  static bool NoneWaiting(absl::string_view) { return false; }

  MatchSpec T4s(int count, int replicas = 1) {
    MatchSpec spec;
    spec.device_class = DeviceClass::kNvidiaGpu;
    spec.requested_models = {kT4};
    spec.count = count;
    spec.replicas = replicas;
    return spec;
  }
  // node -> (holder, start) of the T4 pool's reservations.
  using HeldMap = std::map<std::string, std::pair<std::string, absl::Time>>;
  static HeldMap Held(const Reservations& r) {
    HeldMap out;
    auto pool = r.find(GpuPool(kT4));
    if (pool == r.end()) return out;
    for (const auto& [node, res] : pool->second) {
      out[node] = {res.holder, res.start};
    }
    return out;
  }
};

struct ReserveCase {
  const char* name;
  std::vector<std::pair<std::string, int>> nodes;  // name, T4 GPUs
  std::vector<AdmissionFixture::Live> live;
  int count;
  int replicas;
  std::string holds;     // the nodes in the reason, "" for none
  absl::Duration start;  // after T0
  std::vector<std::string> reserved;

  friend void PrintTo(const ReserveCase& c, std::ostream* os) { *os << c.name; }
};

class ReserveTest : public ReservationPlannerTest,
                    public testing::WithParamInterface<ReserveCase> {};

TEST_P(ReserveTest, TheHeadHoldsTheNodesThatFreeFirst) {
  const ReserveCase& c = GetParam();
  for (const auto& [name, gpus] : c.nodes) AddNode(name, gpus);
  for (const Live& l : c.live) AddLive(l);
  ReservationPlanner planner(ctx_, NoneWaiting);
  const std::string reason =
      planner.Reserve("p-1", T4s(c.count, c.replicas), 0);
  if (c.holds.empty()) {
    EXPECT_EQ(reason, "");
    EXPECT_THAT(Held(*planner.reservations()), IsEmpty());
    return;
  }
  EXPECT_EQ(reason, HoldsFrom(c.holds, T0() + c.start));
  std::vector<std::string> reserved;
  for (const auto& [node, held] : Held(*planner.reservations())) {
    EXPECT_EQ(held.first, "p-1");
    EXPECT_EQ(held.second, T0() + c.start);
    reserved.push_back(node);
  }
  EXPECT_EQ(reserved, c.reserved);
}

using L = AdmissionFixture::Live;

INSTANTIATE_TEST_SUITE_P(
    Leases, ReserveTest,
    testing::Values(
        ReserveCase{"AFreeNodeFromNow",
                    {{"n1", 2}, {"n2", 2}},
                    {L{.id = "x-1", .tenant = "x", .node = "n1", .units = 2}},
                    2,
                    1,
                    "n2",
                    absl::ZeroDuration(),
                    {"n2"}},
        ReserveCase{"TheNodeWhoseLeaseEndsFirst",
                    {{"n1", 2}, {"n2", 2}},
                    {L{.id = "x-1",
                       .tenant = "x",
                       .node = "n1",
                       .units = 2,
                       .lease_left = absl::Hours(2)},
                     L{.id = "x-2",
                       .tenant = "x",
                       .node = "n2",
                       .units = 2,
                       .lease_left = absl::Hours(1)}},
                    2,
                    1,
                    "n2",
                    absl::Hours(1),
                    {"n2"}},
        ReserveCase{"UnitsAddUpOnANodeAcrossLeases",
                    {{"n1", 2}, {"n2", 2}},
                    {L{.id = "x-1",
                       .tenant = "x",
                       .node = "n1",
                       .lease_left = absl::Minutes(30)},
                     L{.id = "x-2",
                       .tenant = "x",
                       .node = "n1",
                       .lease_left = absl::Hours(3)},
                     L{.id = "x-3",
                       .tenant = "x",
                       .node = "n2",
                       .lease_left = absl::Hours(1)},
                     L{.id = "x-4",
                       .tenant = "x",
                       .node = "n2",
                       .lease_left = absl::Hours(2)}},
                    2,
                    1,
                    "n2",
                    absl::Hours(2),
                    {"n2"}},
        ReserveCase{"FreeUnitsCountTowardsALease",
                    {{"n1", 3}, {"n2", 2}},
                    {L{.id = "x-1",
                       .tenant = "x",
                       .node = "n1",
                       .units = 2,
                       .lease_left = absl::Hours(3)},
                     L{.id = "x-2",
                       .tenant = "x",
                       .node = "n2",
                       .units = 2,
                       .lease_left = absl::Hours(1)}},
                    3,
                    1,
                    "n1",
                    absl::Hours(3),
                    {"n1"}},
        ReserveCase{"AGangHoldsAsManyNodesAsReplicas",
                    {{"n1", 2}, {"n2", 2}, {"n3", 2}},
                    {L{.id = "x-1",
                       .tenant = "x",
                       .node = "n1",
                       .units = 2,
                       .lease_left = absl::Hours(1)},
                     L{.id = "x-2",
                       .tenant = "x",
                       .node = "n2",
                       .units = 2,
                       .lease_left = absl::Hours(3)},
                     L{.id = "x-3",
                       .tenant = "x",
                       .node = "n3",
                       .units = 2,
                       .lease_left = absl::Hours(2)}},
                    2,
                    2,
                    "n1 and 1 more",
                    absl::Hours(2),
                    {"n1", "n3"}},
        ReserveCase{"NothingWhenNoNodeCouldEverHoldIt",
                    {{"n1", 2}},
                    {L{.id = "x-1", .tenant = "x", .node = "n1", .units = 2}},
                    3,
                    1,
                    "",
                    absl::ZeroDuration(),
                    {}}),
    [](const testing::TestParamInfo<ReserveCase>& info) {
      return std::string(info.param.name);
    });

// Each pool the request may take has its own candidate: the earliest start
// wins, and on a tie the pool it names first.
TEST_F(ReservationPlannerTest, ThePoolThatFreesFirstWinsThenTheFirstNamed) {
  AddNode("n1", 2, kT4);
  AddNode("n2", 2, kL4);
  AddLive({.id = "x-1",
           .tenant = "x",
           .node = "n1",
           .units = 2,
           .lease_left = absl::Hours(2)});
  AddLive({.id = "x-2",
           .tenant = "x",
           .node = "n2",
           .units = 2,
           .lease_left = absl::Hours(1),
           .model = kL4});
  MatchSpec either = T4s(2);
  either.requested_models = {kT4, kL4};
  {
    ReservationPlanner planner(ctx_, NoneWaiting);
    EXPECT_EQ(planner.Reserve("p-1", either, 0),
              HoldsFrom("n2", T0() + absl::Hours(1)));
    EXPECT_THAT(Held(*planner.reservations()), IsEmpty());  // no T4 held
    EXPECT_EQ(planner.reservations()->at(GpuPool(kL4)).at("n2").holder, "p-1");
  }
  // Both free now: a tie.
  for (const char* id : {"x-1", "x-2"}) {
    book_.End(*book_.FindMutable(id), AllocationState::kReleased,
              kReasonReleased, T0());
  }
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", either, 0), HoldsFrom("n1", T0()));
  EXPECT_EQ(Held(*planner.reservations()), (HeldMap{{"n1", {"p-1", T0()}}}));
  EXPECT_FALSE(planner.reservations()->contains(GpuPool(kL4)));
}

// With the node's CPU accounted, a free T4 is not enough: the head needs
// 4000 cpu_milli, and n1's are held by x-1 until its lease ends. The walk
// counts the CPU each ended lease frees.
TEST_F(ReservationPlannerTest, TheHeadWaitsForTheCpuItsPodNeeds) {
  const NodeResources cores8{8000, int64_t{64} << 30, 0};
  for (const char* node : {"n1", "n2"}) {
    AddNode(node, 2, kT4, {}, cores8);
  }
  AddLive(L{.id = "x-1",
            .tenant = "x",
            .node = "n1",
            .units = 1,
            .lease_left = absl::Hours(2),
            .pod_resources = NodeResources{6000, 1 << 30, 1}});
  AddLive(L{.id = "y-1",
            .tenant = "y",
            .node = "n2",
            .units = 2,
            .lease_left = absl::Hours(3)});
  MatchSpec spec = T4s(1);
  spec.pod_resources = NodeResources{4000, 1 << 30, 1};
  {
    // n1 has a free T4 now but 2000 cpu_milli: it is n1 when x-1 ends, not
    // from now, and not n2 (3 h).
    ReservationPlanner planner(ctx_, NoneWaiting);
    EXPECT_EQ(planner.Reserve("p-1", spec, 0),
              HoldsFrom("n1", T0() + absl::Hours(2)));
  }
  // Without pod resources the free T4 serves from now.
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", T4s(1), 0), HoldsFrom("n1", T0()));
}

TEST_F(ReservationPlannerTest, OnlyThePoolsFirstWaitingRequestHolds) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
  EXPECT_EQ(planner.Reserve("p-2", T4s(1), 0), "");
  EXPECT_EQ(Held(*planner.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Hours(1)}}}));
  planner.Forget("p-1");
  EXPECT_THAT(Held(*planner.reservations()), IsEmpty());
}

TEST_F(ReservationPlannerTest, PastTheWalkLimitTheHolderWaitsForARefresh) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  const ReservationState previous{};
  ctx_.previous = &previous;
  ctx_.reservation_walk_limit = 1;
  ctx_.refresh_reservations = false;
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", T4s(2), 0), "");
  ReservationState state = planner.Take();
  EXPECT_THAT(state.reservations, IsEmpty());
  EXPECT_THAT(state.unplaced, UnorderedElementsAre("p-1"));

  // Until the refresh it stays unplaced, and still the pool's holder.
  ctx_.previous = &state;
  ReservationPlanner next(ctx_, NoneWaiting);
  EXPECT_EQ(next.Reserve("p-1", T4s(2), 0), "");
  EXPECT_EQ(next.Reserve("p-2", T4s(1), 0), "");
  EXPECT_THAT(next.Take().unplaced, UnorderedElementsAre("p-1"));

  // A refresh walks every lease.
  ctx_.refresh_reservations = true;
  ReservationPlanner refreshed(ctx_, NoneWaiting);
  EXPECT_EQ(refreshed.Reserve("p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(refreshed.Take().unplaced, IsEmpty());
}

TEST_F(ReservationPlannerTest, ARequestAskingWhatWasNotFoundWaitsToo) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  const ReservationState none{};
  ctx_.previous = &none;
  ctx_.reservation_walk_limit = 1;
  ctx_.refresh_reservations = false;
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", T4s(2), 0), "");
  const ReservationState cut = planner.Take();

  // Two passes on, with a walk limit that would find n1 (p-1 was admitted
  // elsewhere; a pass in between saw no request of that walk): p-2 asks the
  // same and is not walked for before the refresh.
  ctx_.reservation_walk_limit = 10;
  ctx_.previous = &cut;
  ReservationPlanner between(ctx_, NoneWaiting);
  EXPECT_EQ(between.Reserve("p-9", T4s(1), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
  const ReservationState passed = between.Take();
  ctx_.previous = &passed;
  ReservationPlanner planner2(ctx_, NoneWaiting);
  EXPECT_EQ(planner2.Reserve("p-2", T4s(2), 0), "");
  // Another priority is another walk: found.
  ReservationPlanner other(ctx_, NoneWaiting);
  EXPECT_EQ(other.Reserve("p-3", T4s(2), 5),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(planner2.Take().unplaced, UnorderedElementsAre("p-2"));

  ctx_.refresh_reservations = true;
  ReservationPlanner refreshed(ctx_, NoneWaiting);
  EXPECT_EQ(refreshed.Reserve("p-2", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(refreshed.Take().unplaced_walks, IsEmpty());
}

TEST_F(ReservationPlannerTest,
       AReservationPassesToTheNextRequestAskingTheSame) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  ReservationPlanner planner(ctx_, NoneWaiting);  // a refresh
  EXPECT_EQ(planner.Reserve("p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  const ReservationState found = planner.Take();

  // p-1 is gone; p-2 asks the same and is first now. A walk would be cut.
  ctx_.previous = &found;
  ctx_.reservation_walk_limit = 1;
  ctx_.refresh_reservations = false;
  ReservationPlanner next(ctx_, NoneWaiting);
  EXPECT_EQ(next.Reserve("p-2", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_EQ(Held(*next.reservations()),
            (HeldMap{{"n1", {"p-2", T0() + absl::Hours(2)}}}));
  const ReservationState passed = next.Take();
  EXPECT_THAT(passed.unplaced, IsEmpty());

  // And on to p-3 the pass after; a request asking otherwise walks (cut).
  ctx_.previous = &passed;
  ReservationPlanner third(ctx_, NoneWaiting);
  EXPECT_EQ(third.Reserve("p-3", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  ReservationPlanner other(ctx_, NoneWaiting);
  EXPECT_EQ(other.Reserve("p-4", T4s(2), 1), "");
  EXPECT_THAT(other.Take().unplaced, UnorderedElementsAre("p-4"));
}

TEST_F(ReservationPlannerTest, NothingPassesOnFromAHolderAdmittedThisPass) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  // h held n1 from +1 h last pass; x-1 ended early and h was admitted onto
  // n1 this pass (for 4 h); n2 frees at +2 h.
  AddLive({.id = "h",
           .tenant = "x",
           .node = "n1",
           .units = 2,
           .lease_left = absl::Hours(4)});
  AddLive({.id = "x-2",
           .tenant = "x",
           .node = "n2",
           .units = 2,
           .lease_left = absl::Hours(2)});
  ReservationState previous;
  previous.reservations[GpuPool(kT4)]["n1"] =
      Reservation{T0() + absl::Hours(1), "h"};
  {
    // The walk key as Reserve records it: taken from a real reservation.
    ReservationPlanner planner(ctx_, NoneWaiting);
    planner.Reserve("h", T4s(2), 0);
    previous.walk_holds = planner.Take().walk_holds;
    ASSERT_EQ(previous.walk_holds.size(), 1u);
  }
  ctx_.previous = &previous;
  ctx_.refresh_reservations = false;
  ReservationPlanner planner(ctx_, NoneWaiting);
  planner.Forget("h");  // as the pass does when it admits h
  EXPECT_EQ(planner.Reserve("p", T4s(2), 0),
            HoldsFrom("n2", T0() + absl::Hours(2)));
}

TEST_F(ReservationPlannerTest, AWalkThatMissedAPoolIsNotRememberedForOthers) {
  AddNode("n1", 2, kL4);
  AddNode("n2", 2);
  AddLive({.id = "x-1",
           .tenant = "x",
           .node = "n1",
           .lease_left = absl::Hours(2),
           .model = kL4});
  AddLive({.id = "x-2",
           .tenant = "x",
           .node = "n1",
           .lease_left = absl::Hours(3),
           .model = kL4});
  AddLive({.id = "x-3",
           .tenant = "x",
           .node = "n2",
           .units = 2,
           .lease_left = absl::Hours(1)});
  MatchSpec either = T4s(2);
  either.requested_models = {kL4, kT4};
  const ReservationState none{};
  ctx_.previous = &none;
  ctx_.reservation_walk_limit = 1;
  ctx_.refresh_reservations = false;
  ReservationPlanner planner(ctx_, NoneWaiting);
  // y holds the T4s; a walks the L4s alone and is cut (n1 frees with its
  // second lease, past the limit of one).
  EXPECT_EQ(planner.Reserve("y", T4s(1), 0),
            HoldsFrom("n2", T0() + absl::Hours(1)));
  EXPECT_EQ(planner.Reserve("a", either, 0), "");
  const ReservationState cut = planner.Take();
  EXPECT_THAT(cut.unplaced, UnorderedElementsAre("a"));
  EXPECT_THAT(cut.unplaced_walks, IsEmpty());
  // Next pass a, still unplaced by its id, holds nothing again, and its
  // key is not remembered for others either.
  ctx_.previous = &cut;
  ReservationPlanner again(ctx_, NoneWaiting);
  EXPECT_EQ(again.Reserve("a", either, 0), "");
  const ReservationState still = again.Take();
  EXPECT_THAT(still.unplaced, UnorderedElementsAre("a"));
  EXPECT_THAT(still.unplaced_walks, IsEmpty());
  // The pass after, first of both pools, c walks both: the L4s are cut
  // again, the T4s free at +1 h (x-3, one lease).
  ctx_.previous = &still;
  ReservationPlanner next(ctx_, NoneWaiting);
  EXPECT_EQ(next.Reserve("c", either, 0),
            HoldsFrom("n2", T0() + absl::Hours(1)));
}

TEST_F(ReservationPlannerTest, BetweenRefreshesAHolderTakesItsOldOneOver) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1",
           .tenant = "x",
           .node = "n1",
           .units = 2,
           .lease_left = absl::Hours(1)});
  AddLive({.id = "x-2",
           .tenant = "x",
           .node = "n2",
           .units = 2,
           .lease_left = absl::Hours(2)});
  // Held last pass from a later start than n1 now offers.
  ReservationState previous;
  previous.reservations[GpuPool(kT4)]["n2"] =
      Reservation{T0() + absl::Hours(5), "p-1"};
  ctx_.previous = &previous;
  ctx_.refresh_reservations = false;
  ReservationPlanner planner(ctx_, NoneWaiting);
  EXPECT_EQ(planner.Reserve("p-1", T4s(2), 0),
            HoldsFrom("n2", T0() + absl::Hours(5)));
  EXPECT_EQ(Held(*planner.reservations()),
            (HeldMap{{"n2", {"p-1", T0() + absl::Hours(5)}}}));

  ctx_.refresh_reservations = true;
  ReservationPlanner refreshed(ctx_, NoneWaiting);
  EXPECT_EQ(refreshed.Reserve("p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
}

TEST_F(ReservationPlannerTest, NominatedHoldsOfWaitingHoldersAreKept) {
  AddNode("n1", 2);
  ReservationState previous;
  auto& pool = previous.reservations[GpuPool(kT4)];
  pool["n1"] = Reservation{T0(), "p-1", /*nominated=*/true, 5};
  pool["n2"] = Reservation{T0(), "p-2", /*nominated=*/true, 5};
  pool["n3"] = Reservation{T0(), "p-3", /*nominated=*/false, 5};
  ctx_.previous = &previous;
  ReservationPlanner planner(ctx_,
                             [](absl::string_view id) { return id != "p-2"; });
  EXPECT_THAT(planner.kept_preemptors(), ElementsAre("p-1"));
  EXPECT_EQ(Held(*planner.reservations()), (HeldMap{{"n1", {"p-1", T0()}}}));
}

TEST_F(ReservationPlannerTest, ANominatedHoldYieldsToAHigherPriorityOnly) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  ReservationState previous;
  previous.reservations[GpuPool(kT4)]["n1"] =
      Reservation{T0(), "p-1", /*nominated=*/true, 5};
  ctx_.previous = &previous;
  ReservationPlanner planner(ctx_, [](absl::string_view id) { return true; });
  planner.Reserve("p-2", T4s(2), 0);  // takes n2, from now
  EXPECT_TRUE(planner.ReservedForOther(GpuPool(kT4), "n1", "p-9", 5));
  EXPECT_FALSE(planner.ReservedForOther(GpuPool(kT4), "n1", "p-9", 6));
  EXPECT_FALSE(planner.ReservedForOther(GpuPool(kT4), "n1", "p-1", 0));
  EXPECT_TRUE(planner.ReservedForOther(GpuPool(kT4), "n2", "p-9", 100));
  EXPECT_FALSE(planner.ReservedForOther(GpuPool(kL4), "n1", "p-9", 0));
}

// Holds for a MIG re-layout planned ahead are kept as made between
// refreshes while their holder waits (with their reason), not at a refresh;
// they yield to a higher priority, and are never taken over by Reserve.
TEST_F(ReservationPlannerTest, HoldsPlannedAheadAreKeptBetweenRefreshesOnly) {
  AddNode("n1", 2);
  ReservationPlanner first(ctx_, NoneWaiting);
  EXPECT_EQ(
      first.HoldPools("a-1", 3, "n1", {GpuPool(kT4)}, T0() + absl::Hours(1),
                      " for a re-layout"),
      absl::StrCat(HoldsFrom("n1", T0() + absl::Hours(1)), " for a re-layout"));
  const ReservationState previous = first.Take();
  ctx_.previous = &previous;
  ctx_.refresh_reservations = false;
  ReservationPlanner kept(ctx_, [](absl::string_view) { return true; });
  EXPECT_EQ(Held(*kept.reservations()),
            (HeldMap{{"n1", {"a-1", T0() + absl::Hours(1)}}}));
  EXPECT_EQ(
      kept.KeptAhead("a-1"),
      absl::StrCat(HoldsFrom("n1", T0() + absl::Hours(1)), " for a re-layout"));
  EXPECT_TRUE(kept.kept_preemptors().empty());  // not a preemptor
  EXPECT_TRUE(kept.ReservedForOther(GpuPool(kT4), "n1", "p-9", 3));
  EXPECT_FALSE(kept.ReservedForOther(GpuPool(kT4), "n1", "p-9", 4));
  // Its pool's first waiting request still reserves, and takes nothing of
  // it over.
  EXPECT_EQ(kept.Reserve("p-2", T4s(2), 0), "");
  EXPECT_EQ(Held(*kept.reservations()),
            (HeldMap{{"n1", {"a-1", T0() + absl::Hours(1)}}}));
  // A holder no longer waiting, or a refresh: not kept.
  ReservationPlanner gone(ctx_, NoneWaiting);
  EXPECT_TRUE(Held(*gone.reservations()).empty());
  EXPECT_EQ(gone.KeptAhead("a-1"), "");
  ctx_.refresh_reservations = true;
  ReservationPlanner refreshed(ctx_, [](absl::string_view) { return true; });
  EXPECT_TRUE(Held(*refreshed.reservations()).empty());
}

// A preemptor of higher priority that takes over a node held for another
// (a hold planned ahead, or a nominated one) holds it from its victim's
// grace end, as its own: not from the other's start.
TEST_F(ReservationPlannerTest, APreemptorTakesOverALowerHoldWhole) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  ReservationPlanner planner(ctx_, NoneWaiting);
  planner.HoldPools("a-1", 0, "n1", {GpuPool(kT4)}, T0() + absl::Hours(5), "");
  planner.HoldVictimNodes("p-1", 7, book_.VictimsOf("p-1"));
  EXPECT_EQ(Held(*planner.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Seconds(30)}}}));
  const Reservation& r = planner.reservations()->at(GpuPool(kT4)).at("n1");
  EXPECT_TRUE(r.nominated);
  EXPECT_FALSE(r.ahead);
  EXPECT_EQ(r.priority, 7);
}

TEST_F(ReservationPlannerTest, APreemptorHoldsItsVictimsNodesUntilGraceEnds) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  AddLive({.id = "x-2", .tenant = "x", .node = "n2", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  Preempted("x-2", "p-1", absl::Seconds(45));
  ReservationPlanner planner(ctx_, NoneWaiting);
  planner.HoldVictimNodes("p-1", 7, book_.VictimsOf("p-1"));
  EXPECT_EQ(Held(*planner.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Seconds(30)}},
                     {"n2", {"p-1", T0() + absl::Seconds(45)}}}));
  const Reservation& r = planner.reservations()->at(GpuPool(kT4)).at("n1");
  EXPECT_TRUE(r.nominated);
  EXPECT_EQ(r.priority, 7);
  // Its pool has had its holder: a later waiting request holds nothing.
  EXPECT_EQ(planner.Reserve("p-2", T4s(1), 0), "");
}

// Each holder's expected start (Allocation::estimated_start): a gang's when
// the last node it holds frees, a preemptor's when its last victim's grace
// ends, a reclaimer held from now when its victims end; a request that
// holds nothing has none.
TEST_F(ReservationPlannerTest, EachHolderStartsWhenItsLastHoldFrees) {
  AddNode("n1", 2, kL4);
  AddNode("n2", 2, kL4);
  AddNode("n3", 2);
  AddNode("n4", 2);
  AddLive({.id = "x-1",
           .tenant = "x",
           .node = "n1",
           .units = 2,
           .lease_left = absl::Hours(1),
           .model = kL4});
  AddLive({.id = "x-2",
           .tenant = "x",
           .node = "n2",
           .units = 2,
           .lease_left = absl::Hours(2),
           .model = kL4});
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
  ReservationPlanner planner(ctx_, NoneWaiting);
  MatchSpec gang = T4s(2, 2);
  gang.requested_models = {kL4};
  EXPECT_EQ(planner.Reserve("g-1", gang, 0),
            HoldsFrom("n1 and 1 more", T0() + absl::Hours(2)));
  EXPECT_EQ(planner.Reserve("g-2", gang, 0), "");  // not the pool's first
  planner.HoldVictimNodes("p-2", 7, book_.VictimsOf("p-2"));  // n3
  planner.HoldFit("p-3", T4s(1), ctx_.rules);  // n4's free GPU, from now
  const ReservationState state = planner.Take();
  EXPECT_EQ(state.starts, (absl::flat_hash_map<std::string, absl::Time>{
                              {"g-1", T0() + absl::Hours(2)},
                              {"p-2", T0() + absl::Seconds(45)},
                              {"p-3", T0() + absl::Seconds(20)}}));
}

}  // namespace
}  // namespace accelsched
