// The reclaim plugin on its own: tenants of one cohort with quotas, a
// pending request its cohort's quota refuses (the quota plugin's PreFilter
// leaves its QuotaRefusal in the cycle), and the plugin's PostFilter asked
// directly, in a pass's session whose statement preempts in the book.
#include "core/plugins/reclaim/reclaim.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/plugins/quota/quota.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// The scheduler's statement as the book sees it: a victim is PREEMPTED for
// its preemptor and keeps its units for the grace (never past its lease), so
// that the holds on victims' nodes (read from the book) and the start they
// give can be seen. Everything is recorded too.
class PreemptingStatement final : public CycleStatement {
 public:
  PreemptingStatement(AllocationBook& book, const Snapshot& snapshot)
      : book_(book), snapshot_(snapshot) {}
  void Place(const std::string& id, const Groups& groups) override {
    recorded.Place(id, groups);
  }
  void Preempt(const std::string& victim,
               const std::string& preemptor) override {
    AllocationBook::Record& r = *book_.Find(victim);
    book_.Preempt(r, preemptor,
                  std::min(r.allocation.expires_at,
                           snapshot_.now + snapshot_.preemption_grace));
    recorded.Preempt(victim, preemptor);
  }
  void PlanMigRelayout(const std::string& id,
                       const RelayoutChoice& choice) override {
    recorded.PlanMigRelayout(id, choice);
  }

  RecordingStatement recorded;

 private:
  AllocationBook& book_;
  const Snapshot& snapshot_;
};

// Cohort c's T4 quota is 3: a's nominal 1, b's 2. a holds three T4s of n1
// (borrowing two: a-1 of two units, a-2, admitted after it, of one); x,
// outside the cohort, holds n1's fourth at a lower priority than b's.
class ReclaimTest : public FrameworkFixture {
 protected:
  void SetUp() override {
    AddNode("n1", 4);
    TenantPolicy a;
    a.cohort = "c";
    a.quotas[GpuPool(kT4)] = Quota{1000, std::nullopt};
    TenantPolicy b = a;
    b.quotas[GpuPool(kT4)] = Quota{2000, std::nullopt};
    SetTenants({{"a", a}, {"b", b}});
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
    framework_ = MakeFramework();
  }

  // A pass's session (no last pass) whose statement preempts in the book.
  struct BookSession {
    BookSession(const Framework& framework, const Snapshot& snapshot,
                AllocationBook& book)
        : holds(&book, nullptr, /*refresh=*/true,
                [](absl::string_view) { return false; }),
          statement(book, snapshot),
          session(framework, snapshot, holds, statement) {}
    Holds holds;
    PreemptingStatement statement;
    Session session;
  };
  std::unique_ptr<BookSession> NewBookSession() {
    return std::make_unique<BookSession>(*framework_, snapshot_, book_);
  }

  template <typename T>
  const T& PluginOf(const char* name) {
    return dynamic_cast<const T&>(*framework_->plugins().Find(name));
  }

  // A prepared cycle of pending `p` for `spec` (its own by default) in a
  // pass, reading `holds`.
  std::unique_ptr<CycleState> CycleOf(const Holds& holds, const Allocation& p,
                                      std::optional<MatchSpec> spec = {}) {
    const MatchSpec& kept =
        specs_.emplace_back(spec.has_value() ? *spec : MatchSpec::Of(p));
    auto cycle = std::make_unique<CycleState>(CycleMode::kAdmit, snapshot_,
                                              kept, p, &holds);
    cycle->notes().queued = true;
    framework_->Prepare(*cycle);
    return cycle;
  }

  // The quota plugin's PreFilter on `cycle`: what it refuses leaves a
  // QuotaRefusal for the reclaim plugin.
  Verdict QuotaPreFilter(Session& session, CycleState& cycle) {
    return PluginOf<PreFilterPlugin>(QuotaPlugin::kName)
        .PreFilter(session, cycle);
  }

  PostFilterResult ReclaimPostFilter(Session& session, CycleState& cycle,
                                     CycleFailure::Kind kind,
                                     const std::string& reason) {
    return PluginOf<PostFilterPlugin>(ReclaimPlugin::kName)
        .PostFilter(session, cycle, CycleFailure{kind, nullptr, reason});
  }

  // b-1 (one T4, priority 0) refused by its cohort's quota: its
  // PostFilter's result.
  PostFilterResult ReclaimForB(BookSession& s) {
    const Allocation& b = AddPending("b-1", "b", 1, 0);
    std::unique_ptr<CycleState> cycle = CycleOf(s.holds, b);
    const Verdict v = QuotaPreFilter(s.session, *cycle);
    EXPECT_EQ(v.code, Verdict::Code::kUnschedulable);
    EXPECT_EQ(v.reason,
              "quota: cohort c at 3/3 nvidia-tesla-t4 devices, tenant b asks "
              "1 more");
    const QuotaRefusal* refusal = cycle->data().Find<QuotaRefusal>();
    EXPECT_NE(refusal, nullptr);
    if (refusal != nullptr) {
      EXPECT_EQ(refusal->reclaim.pool, GpuPool(kT4));
      EXPECT_EQ(refusal->reclaim.milli, 1000);
    }
    return ReclaimPostFilter(s.session, *cycle, CycleFailure::Kind::kRefused,
                             v.reason);
  }

  // node -> (held for, start, nominated) of the T4 pool's holds.
  using HeldMap =
      std::map<std::string, std::tuple<std::string, absl::Time, bool>>;
  static HeldMap Held(const Reservations& r) {
    HeldMap out;
    auto pool = r.find(GpuPool(kT4));
    if (pool == r.end()) return out;
    for (const auto& [node, res] : pool->second) {
      out[node] = std::make_tuple(res.held_for, res.start, res.nominated);
    }
    return out;
  }
  static std::tuple<std::string, absl::Time, bool> HeldForB(absl::Time start) {
    return std::make_tuple(std::string("b-1"), start, true);
  }

  std::deque<MatchSpec> specs_;
};

// Nowhere to fit now: the borrowers on the node that then fits it go (only
// what the cohort is short of; x-1, of lower priority but no borrower,
// stays), and that node is held for it from their grace end.
TEST_F(ReclaimTest, WithNoRoomNowBorrowersOnTheNodeThatThenFitsItGo) {
  std::unique_ptr<BookSession> s = NewBookSession();
  const PostFilterResult r = ReclaimForB(*s);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.reason,
            "; preempted 1 borrowing allocation, waiting for their grace");
  EXPECT_EQ(r.detail, "preempted 1 borrowing allocation");
  EXPECT_THAT(s->statement.recorded.preempted, ElementsAre(Pair("a-2", "b-1")));
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n1", HeldForB(T0() + absl::Seconds(30))}}));
}

// Room now elsewhere (n2): what the cohort is short of comes back from
// borrowers anywhere (a-2, the latest admitted), and the node it fits on is
// held for it from now; it is expected to start when its victims end.
TEST_F(ReclaimTest, WithRoomNowBorrowersAnywhereGoAndItHoldsWhereItFits) {
  AddNode("n2", 1);
  std::unique_ptr<BookSession> s = NewBookSession();
  const PostFilterResult r = ReclaimForB(*s);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.reason,
            "; preempted 1 borrowing allocation, waiting for their grace");
  EXPECT_THAT(s->statement.recorded.preempted, ElementsAre(Pair("a-2", "b-1")));
  EXPECT_EQ(Held(s->holds.reservations()), (HeldMap{{"n2", HeldForB(T0())}}));
  EXPECT_TRUE(s->holds.TurnTaken(GpuPool(kT4)));
  const ReservationState state = s->holds.Take();
  EXPECT_EQ(state.starts, (absl::flat_hash_map<std::string, absl::Time>{
                              {"b-1", T0() + absl::Seconds(30)}}));
}

// A reclaimer whose victims are in their grace preempts no more: it waits,
// holding their nodes (from their grace end) and where it fits now (from
// now).
TEST_F(ReclaimTest, AReclaimerWaitsForItsVictims) {
  AddNode("n2", 1);
  Preempted("a-2", "b-1", absl::Seconds(30));
  std::unique_ptr<BookSession> s = NewBookSession();
  const PostFilterResult r = ReclaimForB(*s);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.reason, "; waiting for 1 preempted allocation to end");
  EXPECT_THAT(s->statement.recorded.preempted, IsEmpty());
  EXPECT_EQ(Held(s->holds.reservations()),
            (HeldMap{{"n1", HeldForB(T0() + absl::Seconds(30))},
                     {"n2", HeldForB(T0())}}));
}

// Where no reclaim opens a pool the plugin does nothing: a request that is
// not refused (it did not fit: preemption's), one refused by another plugin
// (no QuotaRefusal), one of a tenant over its own nominal quota (a, whose
// refusal names no pool to reclaim).
struct NothingCase {
  const char* name;
  std::string tenant;
  bool quota_prefilter;  // run the quota plugin first
  CycleFailure::Kind failure;
};

class NothingTest : public ReclaimTest,
                    public testing::WithParamInterface<NothingCase> {};

TEST_P(NothingTest, ReclaimsNothing) {
  const NothingCase& c = GetParam();
  const Allocation& p = AddPending("p-1", c.tenant, 1, 0);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p);
  if (c.quota_prefilter) {
    EXPECT_EQ(QuotaPreFilter(s->session, *cycle).code,
              Verdict::Code::kUnschedulable);
  }
  const PostFilterResult r =
      ReclaimPostFilter(s->session, *cycle, c.failure, "why");
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, "");
  EXPECT_THAT(s->statement.recorded.preempted, IsEmpty());
  EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, NothingTest,
    testing::Values(NothingCase{"NotRefused", "b", true,
                                CycleFailure::Kind::kNoFit},
                    NothingCase{"RefusedByAnotherPlugin", "b", false,
                                CycleFailure::Kind::kRefused},
                    NothingCase{"OverItsOwnNominalQuota", "a", true,
                                CycleFailure::Kind::kRefused}),
    [](const testing::TestParamInfo<NothingCase>& info) {
      return std::string(info.param.name);
    });

// Whether a request whose shape found no room this pass is still tried: its
// tenant, in a cohort and within its nominal quota, may take back what
// another member borrows; a share reclaims only quota, where it fits now.
struct BlockedCase {
  const char* name;
  std::string tenant;
  bool share;
  bool may_help;
};

class MayHelpBlockedTest : public ReclaimTest,
                           public testing::WithParamInterface<BlockedCase> {};

TEST_P(MayHelpBlockedTest, SaysWhetherAReclaimMayStillMakeRoom) {
  const BlockedCase& c = GetParam();
  const Allocation& p = AddPending("p-1", c.tenant, 1, 0);
  MatchSpec spec = MatchSpec::Of(p);
  if (c.share) spec.share = GpuShare{500, 0};
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p, spec);
  EXPECT_EQ(PluginOf<PostFilterPlugin>(ReclaimPlugin::kName)
                .MayHelpBlocked(s->session, *cycle),
            c.may_help);
}

INSTANTIATE_TEST_SUITE_P(
    Tenants, MayHelpBlockedTest,
    testing::Values(BlockedCase{"WithinItsNominalQuota", "b", false, true},
                    BlockedCase{"OverItsNominalQuota", "a", false, false},
                    BlockedCase{"OutsideACohort", "x", false, false},
                    BlockedCase{"AShare", "b", true, false}),
    [](const testing::TestParamInfo<BlockedCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
