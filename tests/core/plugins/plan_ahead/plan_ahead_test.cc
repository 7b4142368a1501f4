// The plan_ahead plugin on its own: an H100 laid out as seven 1g.10gb
// slices on a node whose agent re-lays out, two of them held for five
// minutes (no 3g.40gb fits now: one at 0 spans slices 0-3, one at 4 slices
// 4-6), a pending request for a 3g.40gb, and the plugin's PostFilter asked
// directly in a pass's session: the periodic pass holds the GPU's pools for
// it from when the slices free, and the passes between return the holds
// kept. (Through the scheduler: scheduler_mig_relayout_test.cc.)
#include "core/plugins/plan_ahead/plan_ahead.h"

#include <deque>
#include <memory>
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

constexpr char kH100[] = "nvidia-h100";
const Labels kRelayouts = {{kMigRelayoutLabel, "enabled"}};

PoolKey SlicePool(const std::string& profile) {
  return PoolKey{DeviceClass::kNvidiaGpu, kH100, profile};
}

// An H100 laid out by hand as seven 1g.10gb slices, ids "<id>-s<start>".
Device SevenSmall(const std::string& id, int index) {
  Device d = Gpu(id, kH100, index);
  d.mig_enabled = true;
  for (int s = 0; s < 7; ++s) {
    d.mig_slices.push_back({absl::StrCat(id, "-s", s), "1g.10gb", s});
  }
  return d;
}

bool AllWaiting(absl::string_view) { return true; }
bool NoneWaiting(absl::string_view) { return false; }

class PlanAheadTest : public FrameworkFixture {
 protected:
  // n7 as above, "big" waiting for a 3g.40gb; a periodic pass that plans 10
  // minutes ahead.
  void SetUp() override {
    framework_ = MakeFramework();
    AddMigNode("n7", {SevenSmall("GPU-a", 0)});
    AddLiveSlice("s3", "GPU-a-s3", absl::Minutes(5));
    AddLiveSlice("s4", "GPU-a-s4", absl::Minutes(5));
    AddMigPending("big", "3g.40gb");
    snapshot_.plan_relayouts = true;
    snapshot_.relayout_ahead = absl::Minutes(10);
  }

  void AddMigNode(const std::string& name, std::vector<Device> gpus,
                  Labels labels = kRelayouts) {
    Node node = MakeNode(name, std::move(gpus), std::move(labels));
    ASSERT_TRUE(NormalizeAndValidateNode(*types_, node).ok());
    ASSERT_TRUE(catalog_.Put(*types_, std::move(node), T0()).ok());
  }

  // An ACTIVE allocation `id` holding MIG slice `slice` until T0() +
  // `lease_left`.
  void AddLiveSlice(const std::string& id, const std::string& slice,
                    absl::Duration lease_left) {
    const Unit* u = catalog_.index().Find(slice);
    ASSERT_NE(u, nullptr) << slice;
    ASSERT_TRUE(u->free()) << slice;
    AllocationBook::Record r;
    Allocation& a = r.allocation;
    a.id = id;
    a.request_id = absl::StrCat("r-", id);
    a.state = AllocationState::kActive;
    a.tenant = "x";
    a.device_class = DeviceClass::kNvidiaGpu;
    a.requested_models = {u->pool.model};
    a.model = u->pool.model;
    a.partition = u->pool.partition;
    a.count = 1;
    a.node = u->home;
    a.admitted_at = T0() - absl::Hours(1);
    a.expires_at = T0() + lease_left;
    a.devices = u->devices;
    r.units = {u->key};
    book_.Add(std::move(r));
  }

  // A PENDING allocation for `count` slices of `profile` of an H100.
  const Allocation& AddMigPending(const std::string& id,
                                  const std::string& profile, int count = 1) {
    AllocationBook::Record r;
    Allocation& a = r.allocation;
    a.id = id;
    a.request_id = absl::StrCat("r-", id);
    a.state = AllocationState::kPending;
    a.tenant = "t";
    a.device_class = DeviceClass::kNvidiaGpu;
    a.requested_models = {kH100};
    a.partition = profile;
    a.count = count;
    a.expires_at = T0() + absl::Minutes(10);
    return book_.Add(std::move(r)).allocation;
  }

  const Allocation& Big() { return book_.Find("big")->allocation; }

  std::unique_ptr<CycleState> CycleOf(PassSession& s, const Allocation& p) {
    return Cycle(s, p, specs_.emplace_back(MatchSpec::Of(p)));
  }

  PostFilterResult PlanAhead(
      PassSession& s, CycleState& cycle,
      CycleFailure::Kind failure = CycleFailure::Kind::kNoFit) {
    return dynamic_cast<const PostFilterPlugin&>(
               *framework_->plugins().Find(PlanAheadPlugin::kName))
        .PostFilter(s.session, cycle, CycleFailure{failure, nullptr, "why"});
  }

  // What the plugin adds to the reason of a request whose holds start at
  // `start`.
  static std::string HeldAhead(absl::Time start) {
    return absl::StrCat("; holds n7 from ", absl::FormatTime(start),
                        " for a MIG re-layout of GPU-a once the allocations "
                        "on its slices end");
  }

  std::deque<MatchSpec> specs_;
};

TEST_F(PlanAheadTest, APeriodicPassHoldsTheGpusPoolsFromWhenItsSlicesFree) {
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, Big());
  const PostFilterResult r = PlanAhead(*s, *cycle);
  const absl::Time frees = T0() + absl::Minutes(5);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.reason, HeldAhead(frees));
  EXPECT_EQ(s->holds.KeptAhead("big"), HeldAhead(frees));
  // The slices it would destroy are all 1g.10gb: that pool of n7 is held, as
  // planned ahead, against requests of its priority or lower.
  ASSERT_EQ(s->holds.reservations().size(), 1u);
  const auto& pool = s->holds.reservations().at(SlicePool("1g.10gb"));
  ASSERT_EQ(pool.size(), 1u);
  const Reservation& held = pool.at("n7");
  EXPECT_EQ(held.held_for, "big");
  EXPECT_EQ(held.start, frees);
  EXPECT_TRUE(held.ahead);
  EXPECT_FALSE(held.nominated);
  EXPECT_EQ(held.priority, 0);
  EXPECT_THAT(s->statement.relayouts, IsEmpty());  // nothing to apply yet
}

// Between periodic passes no pass plans ahead: the holds kept (while the
// request waits) are returned with their reason; a request that holds
// nothing gets nothing.
TEST_F(PlanAheadTest, BetweenPeriodicPassesTheKeptHoldsAreReturned) {
  ReservationState previous;
  {
    std::unique_ptr<PassSession> s = NewSession();
    std::unique_ptr<CycleState> cycle = CycleOf(*s, Big());
    ASSERT_EQ(PlanAhead(*s, *cycle).code, PostFilterResult::Code::kWaiting);
    previous = s->holds.Take();
  }
  snapshot_.plan_relayouts = false;
  const absl::Time frees = T0() + absl::Minutes(5);
  {
    std::unique_ptr<PassSession> s =
        NewSession(&previous, /*refresh=*/false, AllWaiting);
    std::unique_ptr<CycleState> cycle = CycleOf(*s, Big());
    const PostFilterResult r = PlanAhead(*s, *cycle);
    EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
    EXPECT_EQ(r.reason, HeldAhead(frees));
    EXPECT_EQ(
        s->holds.reservations().at(SlicePool("1g.10gb")).at("n7").held_for,
        "big");
  }
  // Kept only while it waits.
  std::unique_ptr<PassSession> s =
      NewSession(&previous, /*refresh=*/false, NoneWaiting);
  std::unique_ptr<CycleState> cycle = CycleOf(*s, Big());
  const PostFilterResult r = PlanAhead(*s, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, "");
  EXPECT_THAT(s->holds.reservations(), IsEmpty());
}

// What keeps a periodic pass from planning ahead for the request.
struct NoHoldCase {
  const char* name;
  bool deferred = false;  // a re-layout may serve it at the next pass
  absl::Duration ahead = absl::Minutes(10);
  // n8 has a GPU with two 3g.40gb slices, both held: the one that frees
  // first is the backfill plugin's to hold.
  bool profile_exists = false;
  // n7's 1g.10gb pool is held for another request (nominated, of a lower
  // priority than big's): left alone.
  bool held_for_other = false;
  CycleFailure::Kind failure = CycleFailure::Kind::kNoFit;

  friend void PrintTo(const NoHoldCase& c, std::ostream* os) { *os << c.name; }
};

class NoHoldTest : public PlanAheadTest,
                   public testing::WithParamInterface<NoHoldCase> {};

TEST_P(NoHoldTest, HoldsNothing) {
  const NoHoldCase& c = GetParam();
  snapshot_.relayout_ahead = c.ahead;
  if (c.profile_exists) {
    Device d = Gpu("GPU-b", kH100, 0);
    d.mig_enabled = true;
    d.mig_slices = {{"GPU-b-0", "3g.40gb", 0}, {"GPU-b-4", "3g.40gb", 4}};
    AddMigNode("n8", {d}, {});
    AddLiveSlice("b0", "GPU-b-0", absl::Hours(1));
    AddLiveSlice("b4", "GPU-b-4", absl::Hours(2));
  }
  std::unique_ptr<PassSession> s = NewSession();
  if (c.held_for_other) {
    s->holds.Hold(SlicePool("1g.10gb"), "n7",
                  Reservation{T0(), "q-1", /*nominated=*/true, -5});
  }
  std::unique_ptr<CycleState> cycle = CycleOf(*s, Big());
  if (c.deferred) cycle->notes().deferred = true;
  const PostFilterResult r = PlanAhead(*s, *cycle, c.failure);
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, "");
  EXPECT_EQ(s->holds.KeptAhead("big"), "");
  for (const auto& [pool, nodes] : s->holds.reservations()) {
    for (const auto& [node, held] : nodes) {
      EXPECT_NE(held.held_for, "big") << node;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NoHoldTest,
    testing::Values(
        NoHoldCase{.name = "Deferred", .deferred = true},
        NoHoldCase{.name = "NoPlanningAhead", .ahead = absl::ZeroDuration()},
        NoHoldCase{.name = "TheSlicesFreeTooLate", .ahead = absl::Minutes(2)},
        NoHoldCase{.name = "ASliceOfTheProfileExists", .profile_exists = true},
        NoHoldCase{.name = "ThePoolIsHeldForAnother", .held_for_other = true},
        NoHoldCase{.name = "RefusedByQuota",
                   .failure = CycleFailure::Kind::kRefused}),
    [](const testing::TestParamInfo<NoHoldCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
