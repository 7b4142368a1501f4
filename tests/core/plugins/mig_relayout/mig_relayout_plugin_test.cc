// The mig_relayout plugin on its own: H100s laid out as seven 1g.10gb
// slices on a node whose agent re-lays out, a pending request for a 3g.40gb
// that no slice offers, and the plugin's PostFilter asked directly in a
// pass's session (the periodic one plans; another defers to it), with a
// re-layout in flight waited for, and MayResolve for what no node holds
// yet. (Through the scheduler: scheduler_mig_relayout_test.cc.)
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/mig_plan.h"
#include "core/plugins/mig_relayout/mig_relayout.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kH100[] = "nvidia-h100";
const Labels kRelayouts = {{kMigRelayoutLabel, "enabled"}};

// An H100 laid out by hand as seven 1g.10gb slices, ids "<id>-s<start>".
Device SevenSmall(const std::string& id, int index) {
  Device d = Gpu(id, kH100, index);
  d.mig_enabled = true;
  for (int s = 0; s < 7; ++s) {
    d.mig_slices.push_back({absl::StrCat(id, "-s", s), "1g.10gb", s});
  }
  return d;
}

class MigRelayoutTest : public FrameworkFixture {
 protected:
  MigRelayoutTest() { framework_ = MakeFramework(); }

  void AddMigNode(const std::string& name, std::vector<Device> gpus,
                  Labels labels = kRelayouts) {
    Node node = MakeNode(name, std::move(gpus), std::move(labels));
    ASSERT_TRUE(NormalizeAndValidateNode(*types_, node).ok());
    ASSERT_TRUE(catalog_.Put(*types_, std::move(node), T0()).ok());
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

  std::unique_ptr<CycleState> CycleOf(PassSession& s, const Allocation& p) {
    return Cycle(s, p, specs_.emplace_back(MatchSpec::Of(p)));
  }

  const PostFilterPlugin& Relayout() {
    return dynamic_cast<const PostFilterPlugin&>(
        *framework_->plugins().Find(MigRelayoutPlugin::kName));
  }

  PostFilterResult NoFit(PassSession& s, CycleState& cycle) {
    return Relayout().PostFilter(
        s.session, cycle,
        CycleFailure{CycleFailure::Kind::kNoFit, nullptr, "no fit"});
  }

  std::deque<MatchSpec> specs_;
};

TEST_F(MigRelayoutTest, APeriodicPassPlansAReLayoutAndTheRequestWaitsForIt) {
  AddMigNode("n7", {SevenSmall("GPU-a", 0)});
  const Allocation& big = AddMigPending("big", "3g.40gb");
  snapshot_.plan_relayouts = true;
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, big);
  const PostFilterResult r = NoFit(*s, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kUnderWay);
  EXPECT_EQ(r.reason, "waiting for the MIG re-layout of GPU-a on n7");
  EXPECT_EQ(r.detail, "planned a MIG re-layout of GPU-a on n7");
  EXPECT_EQ(r.summary,
            "a MIG re-layout would serve it at the next periodic pass: GPU-a "
            "into 1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4 on n7 "
            "(destroys 3 free slices)");
  EXPECT_FALSE(cycle->notes().deferred);
  ASSERT_THAT(s->statement.relayouts, SizeIs(1));
  const auto& [id, choice] = s->statement.relayouts[0];
  EXPECT_EQ(id, "big");
  EXPECT_EQ(choice.node, "n7");
  ASSERT_THAT(choice.gpus, SizeIs(1));
  EXPECT_EQ(choice.gpus[0].device_id, "GPU-a");
  EXPECT_EQ(DescribeMigLayout(choice.gpus[0].plan.layout),
            "1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 3g.40gb@4");
  EXPECT_EQ(choice.destroyed, 3);
  // For the rest of the session it is under way: asked again, or skipped
  // with its shape, the request waits for it, and nothing more is planned.
  std::unique_ptr<CycleState> again = CycleOf(*s, big);
  const PostFilterResult second = NoFit(*s, *again);
  EXPECT_EQ(second.code, PostFilterResult::Code::kUnderWay);
  EXPECT_EQ(second.reason, "waiting for the MIG re-layout of GPU-a on n7");
  EXPECT_THAT(s->statement.relayouts, SizeIs(1));
  EXPECT_EQ(Relayout().ReasonWhileSkipped(s->session, "big"),
            "waiting for the MIG re-layout of GPU-a on n7");
  EXPECT_EQ(Relayout().ReasonWhileSkipped(s->session, "other"), std::nullopt);
  // It starts as soon as its agent reports the new layout.
  const ReservationState next = framework_->CloseSession(s->session);
  EXPECT_EQ(next.starts,
            (absl::flat_hash_map<std::string, absl::Time>{{"big", T0()}}));
}

// Where no plan is made the request goes on to the other actions: deferred
// (preemption and planning ahead stand back) only when a re-layout might
// serve it and only the periodic pass may plan it.
struct NoPlanCase {
  const char* name;
  Labels labels;  // n7's, with one SevenSmall GPU
  bool periodic;
  int count;  // 3g.40gb slices asked
  bool deferred;
  std::string reason;

  friend void PrintTo(const NoPlanCase& c, std::ostream* os) { *os << c.name; }
};

class NoPlanTest : public MigRelayoutTest,
                   public testing::WithParamInterface<NoPlanCase> {};

TEST_P(NoPlanTest, PlansNothing) {
  const NoPlanCase& c = GetParam();
  AddMigNode("n7", {SevenSmall("GPU-a", 0)}, c.labels);
  const Allocation& big = AddMigPending("big", "3g.40gb", c.count);
  snapshot_.plan_relayouts = c.periodic;
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, big);
  const PostFilterResult r = NoFit(*s, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, c.reason);
  EXPECT_EQ(cycle->notes().deferred, c.deferred);
  EXPECT_THAT(s->statement.relayouts, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NoPlanTest,
    testing::Values(
        NoPlanCase{"NotAPeriodicPass", kRelayouts, false, 1, true,
                   "; a MIG re-layout is looked for at the next periodic "
                   "pass"},
        NoPlanCase{"NoAgentReLaysOut", {}, true, 1, false, ""},
        NoPlanCase{
            "NoAgentReLaysOutNorIsItAPeriodicPass", {}, false, 1, false, ""},
        // One H100 holds two 3g.40gb at most.
        NoPlanCase{"NoLayoutServesIt", kRelayouts, true, 3, false, ""}),
    [](const testing::TestParamInfo<NoPlanCase>& info) {
      return std::string(info.param.name);
    });

// A plan the catalog holds (written by an earlier pass) is waited for in
// every later session, periodic or not.
TEST_F(MigRelayoutTest, ARequestWithAReLayoutInFlightWaitsForIt) {
  AddMigNode("n7", {SevenSmall("GPU-a", 0)});
  const Allocation& big = AddMigPending("big", "3g.40gb");
  MigPlan plan;
  for (int start = 0; start < 4; ++start) {
    plan.slices.push_back({absl::StrCat("GPU-a-s", start), "1g.10gb", start});
  }
  plan.slices.push_back({"", "3g.40gb", 4});
  plan.generation = 1;
  plan.allocation_id = "big";
  plan.deadline = T0() + absl::Minutes(10);
  ASSERT_TRUE(catalog_.SetMigPlan("n7", "GPU-a", plan).ok());
  for (bool periodic : {false, true}) {
    SCOPED_TRACE(periodic ? "periodic" : "not periodic");
    snapshot_.plan_relayouts = periodic;
    std::unique_ptr<PassSession> s = NewSession();
    std::unique_ptr<CycleState> cycle = CycleOf(*s, big);
    const PostFilterResult r = NoFit(*s, *cycle);
    EXPECT_EQ(r.code, PostFilterResult::Code::kUnderWay);
    EXPECT_EQ(r.reason, "waiting for the MIG re-layout of GPU-a on n7");
    EXPECT_THAT(s->statement.relayouts, IsEmpty());
    EXPECT_EQ(Relayout().ReasonWhileSkipped(s->session, "big"),
              "waiting for the MIG re-layout of GPU-a on n7");
  }
}

// What no node could hold as the cluster is laid out, a re-layout of a
// node whose agent re-lays out may some day: let through PreFilter.
struct ResolveCase {
  const char* name;
  Labels labels;  // n7's, with one SevenSmall GPU
  std::string profile;
  int count;
  bool may_resolve;

  friend void PrintTo(const ResolveCase& c, std::ostream* os) { *os << c.name; }
};

class MayResolveTest : public MigRelayoutTest,
                       public testing::WithParamInterface<ResolveCase> {};

TEST_P(MayResolveTest, SaysWhetherAReLayoutCouldServeIt) {
  const ResolveCase& c = GetParam();
  AddMigNode("n7", {SevenSmall("GPU-a", 0)}, c.labels);
  const Allocation& p = AddMigPending("p-1", c.profile, c.count);
  std::unique_ptr<PassSession> s = NewSession();
  std::unique_ptr<CycleState> cycle = CycleOf(*s, p);
  EXPECT_EQ(Relayout().MayResolve(s->session, *cycle), c.may_resolve);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MayResolveTest,
    testing::Values(ResolveCase{"OneSlice", kRelayouts, "3g.40gb", 1, true},
                    ResolveCase{"AsManyAsOneGpuHolds", kRelayouts, "3g.40gb", 2,
                                true},
                    ResolveCase{"MoreThanTheNodeCouldHold", kRelayouts,
                                "3g.40gb", 3, false},
                    ResolveCase{"NoAgentReLaysOut", {}, "3g.40gb", 1, false}),
    [](const testing::TestParamInfo<ResolveCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
