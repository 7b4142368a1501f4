// The preemption plugin on its own: its PostFilter asked directly, in a
// pass's session, for a request no placement serves: it waits for victims
// still in their grace, else preempts through the session's statement and
// holds its victims' nodes, and stands back for a MIG re-layout at the next
// periodic pass or a quota refusal.
#include "core/plugins/preemption/preemption.h"

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
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
using ::testing::Pair;
using ::testing::UnorderedElementsAreArray;

// The scheduler's statement as the book sees it: a victim is PREEMPTED for
// its preemptor and keeps its units for the grace (never past its lease), so
// that the holds the plugin makes on its victims' nodes (read from the book)
// can be seen. Everything is recorded too.
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

class PreemptionTest : public FrameworkFixture {
 protected:
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
    if (framework_ == nullptr) framework_ = MakeFramework();
    return std::make_unique<BookSession>(*framework_, snapshot_, book_);
  }

  const PostFilterPlugin& Preemption() {
    if (framework_ == nullptr) framework_ = MakeFramework();
    return dynamic_cast<const PostFilterPlugin&>(
        *framework_->plugins().Find(PreemptionPlugin::kName));
  }

  // A prepared cycle of pending `p` (its own spec) in `mode`, reading
  // `holds`.
  std::unique_ptr<CycleState> CycleOf(const Holds& holds, const Allocation& p,
                                      CycleMode mode = CycleMode::kAdmit) {
    const MatchSpec& spec = specs_.emplace_back(MatchSpec::Of(p));
    auto cycle = std::make_unique<CycleState>(mode, snapshot_, spec, p, &holds);
    cycle->notes().queued = true;
    framework_->Prepare(*cycle);
    return cycle;
  }

  PostFilterResult NoFit(Session& session, CycleState& cycle) {
    return Preemption().PostFilter(
        session, cycle,
        CycleFailure{CycleFailure::Kind::kNoFit, nullptr, "no fit"});
  }

  // node -> (held for, start, nominated, priority) of the T4 pool's holds.
  using HeldMap =
      std::map<std::string, std::tuple<std::string, absl::Time, bool, int>>;
  static HeldMap Held(const Reservations& r) {
    HeldMap out;
    auto pool = r.find(GpuPool(kT4));
    if (pool == r.end()) return out;
    for (const auto& [node, res] : pool->second) {
      out[node] =
          std::make_tuple(res.held_for, res.start, res.nominated, res.priority);
    }
    return out;
  }

  std::deque<MatchSpec> specs_;
};

struct PreemptCase {
  const char* name;
  std::vector<std::pair<std::string, int>> nodes;  // name, T4 GPUs
  std::vector<FrameworkFixture::Live> live;
  int count;                         // p-1's units, at priority 5
  std::vector<std::string> victims;  // in the order preempted
  std::string reason;
  std::string detail;
  std::vector<std::string> held;  // nodes held for p-1 from the grace end

  friend void PrintTo(const PreemptCase& c, std::ostream* os) { *os << c.name; }
};

class PreemptTest : public PreemptionTest,
                    public testing::WithParamInterface<PreemptCase> {};

TEST_P(PreemptTest, PreemptsThroughTheStatementAndHoldsTheNode) {
  const PreemptCase& c = GetParam();
  for (const auto& [name, gpus] : c.nodes) AddNode(name, gpus);
  for (const Live& l : c.live) AddLive(l);
  const Allocation& p = AddPending("p-1", "t", c.count, 5);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p);
  const PostFilterResult r = NoFit(s->session, *cycle);
  EXPECT_EQ(r.reason, c.reason);
  EXPECT_EQ(r.detail, c.detail);
  std::vector<std::pair<std::string, std::string>> preempted;
  for (const std::string& v : c.victims) preempted.emplace_back(v, "p-1");
  EXPECT_EQ(s->statement.recorded.preempted, preempted);
  HeldMap held;
  for (const std::string& node : c.held) {
    held[node] =
        std::make_tuple(std::string("p-1"), T0() + absl::Seconds(30), true, 5);
  }
  EXPECT_EQ(Held(s->holds.reservations()), held);
  if (c.victims.empty()) {
    EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
    return;
  }
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_THAT(book_.tallies().VictimsOf("p-1"),
              UnorderedElementsAreArray(c.victims));
}

using L = FrameworkFixture::Live;

INSTANTIATE_TEST_SUITE_P(
    Victims, PreemptTest,
    testing::Values(
        PreemptCase{"OneVictim",
                    {{"n1", 2}, {"n2", 2}},
                    {L{.id = "x-1", .tenant = "x", .node = "n1", .units = 2},
                     L{.id = "x-2", .tenant = "x", .node = "n2"},
                     L{.id = "x-3", .tenant = "x", .node = "n2"}},
                    2,
                    {"x-1"},
                    "; preempted 1 allocation, waiting for their grace",
                    "preempted 1 allocation",
                    {"n1"}},
        PreemptCase{"TwoVictims",
                    {{"n1", 2}},
                    {L{.id = "x-1", .tenant = "x", .node = "n1"},
                     L{.id = "x-2", .tenant = "x", .node = "n1"}},
                    2,
                    {"x-2", "x-1"},
                    "; preempted 2 allocations, waiting for their grace",
                    "preempted 2 allocations",
                    {"n1"}},
        PreemptCase{"NoneOfLowerPriority",
                    {{"n1", 2}},
                    {L{.id = "x-1",
                       .tenant = "x",
                       .node = "n1",
                       .units = 2,
                       .priority = 5}},
                    2,
                    {},
                    "",
                    "",
                    {}}),
    [](const testing::TestParamInfo<PreemptCase>& info) {
      return std::string(info.param.name);
    });

// A preemptor whose victims are still in their grace preempts no more: it
// waits for them, holding their nodes (nominated, from each one's grace end).
struct WaitCase {
  const char* name;
  std::vector<absl::Duration> graces;  // victim i on node n<i+1>
  std::string reason;
};

class WaitTest : public PreemptionTest,
                 public testing::WithParamInterface<WaitCase> {};

TEST_P(WaitTest, WaitsForItsVictimsHoldingTheirNodes) {
  const WaitCase& c = GetParam();
  HeldMap held;
  for (size_t i = 0; i < c.graces.size(); ++i) {
    const std::string node = absl::StrCat("n", i + 1);
    const std::string victim = absl::StrCat("x-", i + 1);
    AddNode(node, 2);
    AddLive({.id = victim, .tenant = "x", .node = node, .units = 2});
    Preempted(victim, "p-1", c.graces[i]);
    held[node] =
        std::make_tuple(std::string("p-1"), T0() + c.graces[i], true, 5);
  }
  AddNode("n9", 2);
  AddLive({.id = "y-1", .tenant = "y", .node = "n9", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p);
  const PostFilterResult r = NoFit(s->session, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.reason, c.reason);
  EXPECT_EQ(r.reason, WaitingForVictims(c.graces.size()));
  // y-1, of lower priority too, is not taken as well.
  EXPECT_THAT(s->statement.recorded.preempted, IsEmpty());
  EXPECT_EQ(Held(s->holds.reservations()), held);
}

INSTANTIATE_TEST_SUITE_P(
    Graces, WaitTest,
    testing::Values(WaitCase{"OneVictim",
                             {absl::Seconds(30)},
                             "; waiting for 1 preempted allocation to end"},
                    WaitCase{"TwoVictims",
                             {absl::Seconds(30), absl::Seconds(45)},
                             "; waiting for 2 preempted allocations to end"}),
    [](const testing::TestParamInfo<WaitCase>& info) {
      return std::string(info.param.name);
    });

// A MIG re-layout may serve it at the next periodic pass (the mig_relayout
// plugin deferred it): nobody is preempted for it meanwhile.
TEST_F(PreemptionTest, StandsBackWhenDeferred) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p);
  cycle->notes().deferred = true;
  const PostFilterResult r = NoFit(s->session, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, "");
  EXPECT_THAT(s->statement.recorded.preempted, IsEmpty());
  EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
}

// A request its quota refused is the reclaim plugin's: preemption by
// priority would not give it quota.
TEST_F(PreemptionTest, DoesNothingForAQuotaRefusal) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p);
  const PostFilterResult r = Preemption().PostFilter(
      s->session, *cycle,
      CycleFailure{CycleFailure::Kind::kRefused, nullptr, "quota: ..."});
  EXPECT_EQ(r.code, PostFilterResult::Code::kContinue);
  EXPECT_EQ(r.reason, "");
  EXPECT_THAT(s->statement.recorded.preempted, IsEmpty());
  EXPECT_THAT(Held(s->holds.reservations()), IsEmpty());
}

// Explain's dry run says what it would do.
TEST_F(PreemptionTest, ExplainSaysItWouldPreempt) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .units = 2});
  const Allocation& p = AddPending("p-1", "t", 2, 5);
  std::unique_ptr<BookSession> s = NewBookSession();
  std::unique_ptr<CycleState> cycle = CycleOf(s->holds, p, CycleMode::kExplain);
  const PostFilterResult r = NoFit(s->session, *cycle);
  EXPECT_EQ(r.code, PostFilterResult::Code::kWaiting);
  EXPECT_EQ(r.detail, "would preempt 1 allocation");
  EXPECT_THAT(s->statement.recorded.preempted, ElementsAre(Pair("x-1", "p-1")));
}

}  // namespace
}  // namespace accelsched
