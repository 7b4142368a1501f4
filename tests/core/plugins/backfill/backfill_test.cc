// The backfill plugin on its own: leases in a real allocation book, its
// PostFilter asked directly, in a pass's session, for the hold a waiting
// request gets (the lease walk, the walk limit and its memory between
// refreshes, the takeover of the last pass's holds).
#include "core/plugins/backfill/backfill.h"

#include <deque>
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

using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

std::string HoldsFrom(const std::string& nodes, absl::Time start) {
  return absl::StrCat("; holds ", nodes, " from ", absl::FormatTime(start));
}

bool AllWaiting(absl::string_view) { return true; }

class BackfillTest : public FrameworkFixture {
 protected:
  static MatchSpec T4s(int count, int replicas = 1) {
    MatchSpec spec;
    spec.device_class = DeviceClass::kNvidiaGpu;
    spec.requested_models = {kT4};
    spec.count = count;
    spec.replicas = replicas;
    return spec;
  }

  const PostFilterPlugin& Backfill() {
    if (framework_ == nullptr) framework_ = MakeFramework();
    return dynamic_cast<const PostFilterPlugin&>(
        *framework_->plugins().Find(BackfillPlugin::kName));
  }

  // What the plugin says of pending `id` (of `priority`, asking `spec`) in
  // `s`, for `failure`.
  PostFilterResult PostFilter(PassSession& s, const std::string& id,
                              const MatchSpec& spec, int priority,
                              CycleFailure::Kind failure) {
    // The cycle points to its request and spec: both kept for the test.
    const MatchSpec& kept = specs_.emplace_back(spec);
    Allocation& request = requests_.emplace_back();
    static_cast<RequestSpec&>(request) = spec;
    request.id = id;
    request.request_id = absl::StrCat("r-", id);
    request.state = AllocationState::kPending;
    request.tenant = "t";
    request.priority = priority;
    const PostFilterPlugin& backfill = Backfill();
    std::unique_ptr<CycleState> cycle = Cycle(s, request, kept);
    return backfill.PostFilter(s.session, *cycle,
                               CycleFailure{failure, nullptr, "no fit"});
  }

  // The reason the plugin adds for `id` that no placement serves (as the
  // old ReservationPlanner::Reserve returned it): it is the last action, so
  // it always settles the request as waiting.
  std::string Reserve(PassSession& s, const std::string& id,
                      const MatchSpec& spec, int priority) {
    PostFilterResult r =
        PostFilter(s, id, spec, priority, CycleFailure::Kind::kNoFit);
    EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting) << id;
    return r.reason;
  }

  // node -> (held for, start) of the T4 pool's holds.
  using HeldMap = std::map<std::string, std::pair<std::string, absl::Time>>;
  static HeldMap Held(const Reservations& r) {
    HeldMap out;
    auto pool = r.find(GpuPool(kT4));
    if (pool == r.end()) return out;
    for (const auto& [node, res] : pool->second) {
      out[node] = {res.held_for, res.start};
    }
    return out;
  }

  std::deque<MatchSpec> specs_;
  std::deque<Allocation> requests_;
};

struct ReserveCase {
  const char* name;
  std::vector<std::pair<std::string, int>> nodes;  // name, T4 GPUs
  std::vector<FrameworkFixture::Live> live;
  int count;
  int replicas;
  std::string holds;     // the nodes in the reason, "" for none
  absl::Duration start;  // after T0
  std::vector<std::string> reserved;

  friend void PrintTo(const ReserveCase& c, std::ostream* os) { *os << c.name; }
};

class ReserveTest : public BackfillTest,
                    public testing::WithParamInterface<ReserveCase> {};

TEST_P(ReserveTest, TheHeadHoldsTheNodesThatFreeFirst) {
  const ReserveCase& c = GetParam();
  for (const auto& [name, gpus] : c.nodes) AddNode(name, gpus);
  for (const Live& l : c.live) AddLive(l);
  std::unique_ptr<PassSession> s = NewSession();
  const std::string reason = Reserve(*s, "p-1", T4s(c.count, c.replicas), 0);
  if (c.holds.empty()) {
    EXPECT_EQ(reason, "");
    EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
    return;
  }
  EXPECT_EQ(reason, HoldsFrom(c.holds, T0() + c.start));
  std::vector<std::string> reserved;
  for (const auto& [node, held] : Held(s->holds.reservations())) {
    EXPECT_EQ(held.first, "p-1");
    EXPECT_EQ(held.second, T0() + c.start);
    reserved.push_back(node);
  }
  EXPECT_EQ(reserved, c.reserved);
}

using L = FrameworkFixture::Live;

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

// The last action: whatever it found, the request waits, and Explain's step
// says what it holds.
TEST_F(BackfillTest, TheDetailSaysWhatIsHeld) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> s = NewSession();
  PostFilterResult first =
      PostFilter(*s, "p-1", T4s(2), 0, CycleFailure::Kind::kNoFit);
  EXPECT_EQ(first.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(
      first.detail,
      absl::StrCat("holds n1 from ", absl::FormatTime(T0() + absl::Hours(1))));
  PostFilterResult second =
      PostFilter(*s, "p-2", T4s(2), 0, CycleFailure::Kind::kNoFit);
  EXPECT_EQ(second.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(second.reason, "");
  EXPECT_EQ(second.detail, "holds nothing");
}

// A request a PreFilter refused (its quota) has no room to wait for; a share
// holds no reservation yet, and leaves its pool's turn to a whole request.
TEST_F(BackfillTest, ARefusedRequestOrAShareHoldsNothing) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> s = NewSession();
  PostFilterResult refused =
      PostFilter(*s, "p-1", T4s(2), 0, CycleFailure::Kind::kRefused);
  EXPECT_EQ(refused.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(refused.reason, "");
  MatchSpec share = T4s(1);
  share.share = GpuShare{500, 0};
  PostFilterResult shared =
      PostFilter(*s, "p-2", share, 0, CycleFailure::Kind::kNoFit);
  EXPECT_EQ(shared.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(shared.reason, "");
  EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
  EXPECT_FALSE(s->holds.TurnTaken(GpuPool(kT4)));
  EXPECT_EQ(Reserve(*s, "p-3", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
}

// Each pool the request may take has its own candidate: the earliest start
// wins, and on a tie the pool it names first.
TEST_F(BackfillTest, ThePoolThatFreesFirstWinsThenTheFirstNamed) {
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
    std::unique_ptr<PassSession> s = NewSession();
    EXPECT_EQ(Reserve(*s, "p-1", either, 0),
              HoldsFrom("n2", T0() + absl::Hours(1)));
    EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());  // no T4 held
    EXPECT_EQ(s->holds.reservations().at(GpuPool(kL4)).at("n2").held_for,
              "p-1");
  }
  // Both free now: a tie.
  for (const char* id : {"x-1", "x-2"}) {
    book_.End(*book_.Find(id), AllocationState::kReleased, kReasonReleased,
              T0());
  }
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_EQ(Reserve(*s, "p-1", either, 0), HoldsFrom("n1", T0()));
  EXPECT_EQ(Held(s->holds.reservations()), (HeldMap{{"n1", {"p-1", T0()}}}));
  EXPECT_FALSE(s->holds.reservations().contains(GpuPool(kL4)));
}

// With the node's CPU accounted, a free T4 is not enough: the head needs
// 4000 cpu_milli, and n1's are held by x-1 until its lease ends. The walk
// counts the CPU each ended lease frees.
TEST_F(BackfillTest, TheHeadWaitsForTheCpuItsPodNeeds) {
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
    std::unique_ptr<PassSession> s = NewSession();
    EXPECT_EQ(Reserve(*s, "p-1", spec, 0),
              HoldsFrom("n1", T0() + absl::Hours(2)));
  }
  // Without pod resources the free T4 serves from now.
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_EQ(Reserve(*s, "p-1", T4s(1), 0), HoldsFrom("n1", T0()));
}

TEST_F(BackfillTest, OnlyThePoolsFirstWaitingRequestHolds) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_EQ(Reserve(*s, "p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
  EXPECT_EQ(Reserve(*s, "p-2", T4s(1), 0), "");
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Hours(1)}}}));
  s->holds.Release("p-1");
  EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
}

TEST_F(BackfillTest, PastTheWalkLimitTheHolderWaitsForARefresh) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  const ReservationState previous{};
  snapshot_.reservation_walk_limit = 1;
  std::unique_ptr<PassSession> s = NewSession(&previous, /*refresh=*/false);
  EXPECT_EQ(Reserve(*s, "p-1", T4s(2), 0), "");
  ReservationState state = s->holds.Take();
  EXPECT_THAT(state.reservations, IsEmpty());
  EXPECT_THAT(state.unplaced, UnorderedElementsAre("p-1"));

  // Until the refresh it stays unplaced, and still the pool's holder.
  std::unique_ptr<PassSession> next = NewSession(&state, /*refresh=*/false);
  EXPECT_EQ(Reserve(*next, "p-1", T4s(2), 0), "");
  EXPECT_EQ(Reserve(*next, "p-2", T4s(1), 0), "");
  EXPECT_THAT(next->holds.Take().unplaced, UnorderedElementsAre("p-1"));

  // A refresh walks every lease.
  std::unique_ptr<PassSession> refreshed = NewSession(&state, /*refresh=*/true);
  EXPECT_EQ(Reserve(*refreshed, "p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(refreshed->holds.Take().unplaced, IsEmpty());
}

TEST_F(BackfillTest, ARequestAskingWhatWasNotFoundWaitsToo) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  const ReservationState none{};
  snapshot_.reservation_walk_limit = 1;
  std::unique_ptr<PassSession> s = NewSession(&none, /*refresh=*/false);
  EXPECT_EQ(Reserve(*s, "p-1", T4s(2), 0), "");
  const ReservationState cut = s->holds.Take();

  // Two passes on, with a walk limit that would find n1 (p-1 was admitted
  // elsewhere; a pass in between saw no request of that walk): p-2 asks the
  // same and is not walked for before the refresh.
  snapshot_.reservation_walk_limit = 10;
  std::unique_ptr<PassSession> between = NewSession(&cut, /*refresh=*/false);
  EXPECT_EQ(Reserve(*between, "p-9", T4s(1), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
  const ReservationState passed = between->holds.Take();
  std::unique_ptr<PassSession> s2 = NewSession(&passed, /*refresh=*/false);
  EXPECT_EQ(Reserve(*s2, "p-2", T4s(2), 0), "");
  // Another priority is another walk: found.
  std::unique_ptr<PassSession> other = NewSession(&passed, /*refresh=*/false);
  EXPECT_EQ(Reserve(*other, "p-3", T4s(2), 5),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(s2->holds.Take().unplaced, UnorderedElementsAre("p-2"));

  std::unique_ptr<PassSession> refreshed =
      NewSession(&passed, /*refresh=*/true);
  EXPECT_EQ(Reserve(*refreshed, "p-2", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_THAT(refreshed->holds.Take().unplaced_walks, IsEmpty());
}

TEST_F(BackfillTest, AReservationPassesToTheNextRequestAskingTheSame) {
  AddNode("n1", 2);
  AddLive(
      {.id = "x-1", .tenant = "x", .node = "n1", .lease_left = absl::Hours(1)});
  AddLive(
      {.id = "x-2", .tenant = "x", .node = "n1", .lease_left = absl::Hours(2)});
  std::unique_ptr<PassSession> s = NewSession();  // a refresh
  EXPECT_EQ(Reserve(*s, "p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  const ReservationState found = s->holds.Take();

  // p-1 is gone; p-2 asks the same and is first now. A walk would be cut.
  snapshot_.reservation_walk_limit = 1;
  std::unique_ptr<PassSession> next = NewSession(&found, /*refresh=*/false);
  EXPECT_EQ(Reserve(*next, "p-2", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  EXPECT_EQ(Held(next->holds.reservations()),
            (HeldMap{{"n1", {"p-2", T0() + absl::Hours(2)}}}));
  const ReservationState passed = next->holds.Take();
  EXPECT_THAT(passed.unplaced, IsEmpty());

  // And on to p-3 the pass after; a request asking otherwise walks (cut).
  std::unique_ptr<PassSession> third = NewSession(&passed, /*refresh=*/false);
  EXPECT_EQ(Reserve(*third, "p-3", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(2)));
  std::unique_ptr<PassSession> other = NewSession(&passed, /*refresh=*/false);
  EXPECT_EQ(Reserve(*other, "p-4", T4s(2), 1), "");
  EXPECT_THAT(other->holds.Take().unplaced, UnorderedElementsAre("p-4"));
}

TEST_F(BackfillTest, NothingPassesOnFromAHolderAdmittedThisPass) {
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
    // The walk key as the walk records it: taken from a real hold.
    std::unique_ptr<PassSession> s = NewSession();
    Reserve(*s, "h", T4s(2), 0);
    previous.walk_holds = s->holds.Take().walk_holds;
    ASSERT_EQ(previous.walk_holds.size(), 1u);
  }
  std::unique_ptr<PassSession> s = NewSession(&previous, /*refresh=*/false);
  s->holds.Release("h");  // as the cycle does when it places h
  EXPECT_EQ(Reserve(*s, "p", T4s(2), 0),
            HoldsFrom("n2", T0() + absl::Hours(2)));
}

TEST_F(BackfillTest, AWalkThatMissedAPoolIsNotRememberedForOthers) {
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
  snapshot_.reservation_walk_limit = 1;
  std::unique_ptr<PassSession> s = NewSession(&none, /*refresh=*/false);
  // y holds the T4s; a walks the L4s alone and is cut (n1 frees with its
  // second lease, past the limit of one).
  EXPECT_EQ(Reserve(*s, "y", T4s(1), 0),
            HoldsFrom("n2", T0() + absl::Hours(1)));
  EXPECT_EQ(Reserve(*s, "a", either, 0), "");
  const ReservationState cut = s->holds.Take();
  EXPECT_THAT(cut.unplaced, UnorderedElementsAre("a"));
  EXPECT_THAT(cut.unplaced_walks, IsEmpty());
  // Next pass a, still unplaced by its id, holds nothing again, and its
  // key is not remembered for others either.
  std::unique_ptr<PassSession> again = NewSession(&cut, /*refresh=*/false);
  EXPECT_EQ(Reserve(*again, "a", either, 0), "");
  const ReservationState still = again->holds.Take();
  EXPECT_THAT(still.unplaced, UnorderedElementsAre("a"));
  EXPECT_THAT(still.unplaced_walks, IsEmpty());
  // The pass after, first of both pools, c walks both: the L4s are cut
  // again, the T4s free at +1 h (x-3, one lease).
  std::unique_ptr<PassSession> next = NewSession(&still, /*refresh=*/false);
  EXPECT_EQ(Reserve(*next, "c", either, 0),
            HoldsFrom("n2", T0() + absl::Hours(1)));
}

TEST_F(BackfillTest, BetweenRefreshesAHolderTakesItsOldOneOver) {
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
  std::unique_ptr<PassSession> s = NewSession(&previous, /*refresh=*/false);
  EXPECT_EQ(Reserve(*s, "p-1", T4s(2), 0),
            HoldsFrom("n2", T0() + absl::Hours(5)));
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n2", {"p-1", T0() + absl::Hours(5)}}}));

  std::unique_ptr<PassSession> refreshed =
      NewSession(&previous, /*refresh=*/true);
  EXPECT_EQ(Reserve(*refreshed, "p-1", T4s(2), 0),
            HoldsFrom("n1", T0() + absl::Hours(1)));
}

// A node held nominated for a preemptor of higher priority is passed by: the
// walk holds the other node, from now.
TEST_F(BackfillTest, ANodeNominatedForAHigherPriorityIsPassedBy) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  ReservationState previous;
  previous.reservations[GpuPool(kT4)]["n1"] =
      Reservation{T0(), "p-1", /*nominated=*/true, 5};
  std::unique_ptr<PassSession> s =
      NewSession(&previous, /*refresh=*/true, AllWaiting);
  EXPECT_EQ(Reserve(*s, "p-2", T4s(2), 0), HoldsFrom("n2", T0()));
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n1", {"p-1", T0()}}, {"n2", {"p-2", T0()}}}));
}

// Holds for a MIG re-layout planned ahead, kept between refreshes, are never
// taken over by the walk: the pool's first waiting request still walks, and
// finds nothing else here.
TEST_F(BackfillTest, HoldsPlannedAheadAreNotTakenOver) {
  AddNode("n1", 2);
  ReservationState previous;
  {
    Holds first(&book_, nullptr, /*refresh=*/true,
                [](absl::string_view) { return false; });
    first.HoldAhead("a-1", 3, "n1", {GpuPool(kT4)}, T0() + absl::Hours(1),
                    " for a re-layout");
    previous = first.Take();
  }
  std::unique_ptr<PassSession> kept =
      NewSession(&previous, /*refresh=*/false, AllWaiting);
  EXPECT_EQ(Reserve(*kept, "p-2", T4s(2), 0), "");
  EXPECT_EQ(Held(kept->holds.reservations()),
            (HeldMap{{"n1", {"a-1", T0() + absl::Hours(1)}}}));
  EXPECT_TRUE(kept->holds.TurnTaken(GpuPool(kT4)));
}

// A preemptor's victims' nodes take its pool's turn: a later waiting
// request holds nothing.
TEST_F(BackfillTest, AfterAPreemptorsHoldTheNextRequestHoldsNothing) {
  AddNode("n1", 2);
  AddNode("n2", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  Preempted("x-1", "p-1", absl::Seconds(30));
  std::unique_ptr<PassSession> s = NewSession();
  s->holds.HoldVictimNodes(catalog_.index(), "p-1", 7,
                           book_.tallies().VictimsOf("p-1"));
  EXPECT_EQ(Reserve(*s, "p-2", T4s(1), 0), "");
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n1", {"p-1", T0() + absl::Seconds(30)}}}));
}

// A gang held by the walk starts when its last node frees (one start for all
// its holds); a request that is not its pool's first holds nothing and has
// no start.
TEST_F(BackfillTest, AGangStartsWhenItsLastNodeFrees) {
  AddNode("n1", 2, kL4);
  AddNode("n2", 2, kL4);
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
  std::unique_ptr<PassSession> s = NewSession();
  MatchSpec gang = T4s(2, 2);
  gang.requested_models = {kL4};
  EXPECT_EQ(Reserve(*s, "g-1", gang, 0),
            HoldsFrom("n1 and 1 more", T0() + absl::Hours(2)));
  EXPECT_EQ(Reserve(*s, "g-2", gang, 0), "");  // not the pool's first
  const ReservationState state = s->holds.Take();
  EXPECT_EQ(state.starts, (absl::flat_hash_map<std::string, absl::Time>{
                              {"g-1", T0() + absl::Hours(2)}}));
}

}  // namespace
}  // namespace accelsched
