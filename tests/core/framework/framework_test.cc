// The framework on its own (core/framework/framework.h): which profiles it is
// built from, and the cycle it runs through the extension points, with small
// fake plugins that record what they are asked and answer what the test
// scripts, over the fixture's snapshot of two one-T4 nodes.
#include "core/framework/framework.h"

#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/framework/cycle_record.h"
#include "core/framework/cycle_state.h"
#include "core/framework/holds.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "core/framework/session.h"
#include "core/matching/match_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"
#include "tests/support/status_matchers.h"

namespace accelsched {

// For gtest's messages: a step as Explain shows it.
void PrintTo(const CycleStep& s, std::ostream* os) {
  *os << "{" << s.plugin << ", " << s.extension_point << ", " << s.nodes_in
      << ", " << s.nodes_out << ", \"" << s.detail << "\"}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

// What the fakes answer, and what they were asked, in order ("PreFilter
// pre_a"). One per test (FrameworkTest sets it): factories take no
// arguments, so the fakes read their script from here.
struct Script {
  std::map<std::string, Verdict> verdicts;          // default: Success()
  std::map<std::string, PostFilterResult> results;  // default: kContinue, ""
  std::set<std::string> for_new;      // ForNewRequests, PreFilter or PostFilter
  std::set<std::string> may_resolve;  // PostFilter plugins' MayResolve
  bool fits = true;                   // the placement's answer
  std::vector<std::string> calls;
  std::vector<CycleFailure> failures;  // what each PostFilter was told
};
Script* script = nullptr;

class FakePreFilter final : public PreFilterPlugin {
 public:
  explicit FakePreFilter(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  Verdict PreFilter(Session&, CycleState&) const override {
    script->calls.push_back(absl::StrCat("PreFilter ", name_));
    auto it = script->verdicts.find(name_);
    return it == script->verdicts.end() ? Verdict::Success() : it->second;
  }
  bool ForNewRequests() const override {
    return script->for_new.contains(name_);
  }

 private:
  const std::string name_;
};

class FakePostFilter final : public PostFilterPlugin {
 public:
  explicit FakePostFilter(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  PostFilterResult PostFilter(Session&, CycleState&,
                              const CycleFailure& failure) const override {
    script->calls.push_back(absl::StrCat("PostFilter ", name_));
    script->failures.push_back(failure);
    auto it = script->results.find(name_);
    return it == script->results.end() ? PostFilterResult{} : it->second;
  }
  bool ForNewRequests() const override {
    return script->for_new.contains(name_);
  }
  bool MayResolve(const Session&, const CycleState&) const override {
    return script->may_resolve.contains(name_);
  }

 private:
  const std::string name_;
};

// Gives the request n1's unit when the script says it fits, whatever the
// filters say; weighs that one candidate.
class FakePlacement final : public PlacementPlugin {
 public:
  explicit FakePlacement(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  bool Places(const CycleState&) const override { return true; }
  std::optional<Groups> Place(const Session&,
                              const CycleState& cycle) const override {
    script->calls.push_back(absl::StrCat("Place ", name_));
    if (!script->fits) return std::nullopt;
    const CapacityIndex& index = *cycle.snapshot().index;
    return Groups{{index.Find(index.UnitsOnNode("n1").front())}};
  }
  std::vector<RankedPlacement> Rank(const Session&,
                                    const CycleState&) const override {
    if (!script->fits) return {};
    return {RankedPlacement{GpuPool(kT4), "n1",
                            PlacementScore{.after = 0.5, .free_before = 1}}};
  }
  std::string WhyNot(const Session&, const CycleState&) const override {
    return "no room (fake)";
  }

 private:
  const std::string name_;
};

// A gate that fences n2 off.
class FakeFilter final : public FilterPlugin {
 public:
  explicit FakeFilter(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  Kind kind() const override { return Kind::kGate; }
  bool Prepare(CycleState&) const override { return true; }
  const char* Filter(const CycleState&, const NodeView& node) const override {
    return node.name == "n2" ? "fenced" : nullptr;
  }

 private:
  const std::string name_;
};

class FakeScore final : public ScorePlugin {
 public:
  explicit FakeScore(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  double Score(const CycleState&, const ScoredNode&) const override {
    return 0;
  }

 private:
  const std::string name_;
};

class FakeUnitScore final : public UnitScorePlugin {
 public:
  explicit FakeUnitScore(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  int Weighs(const CycleState&, const Node&, const PoolKey&,
             int count) const override {
    return count;
  }
  std::vector<int> Choose(const CycleState&, const Node&,
                          absl::Span<const Unit* const>, int) const override {
    return {};
  }
  std::string Describe(const CycleState&,
                       absl::Span<const Unit* const>) const override {
    return "units chosen (fake)";
  }

 private:
  const std::string name_;
};

class FakeReserve final : public ReservePlugin {
 public:
  explicit FakeReserve(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  void Reserve(Session&, const CycleState& cycle,
               const Groups& groups) const override {
    script->calls.push_back(absl::StrCat(
        "Reserve ", name_, " ", cycle.request().id, " ", groups.size()));
  }

 private:
  const std::string name_;
};

class FakeQueueSort final : public QueueSortPlugin {
 public:
  explicit FakeQueueSort(const char* name) : name_(name) {}
  absl::string_view name() const override { return name_; }
  double TenantRank(Session&, const std::string&) const override { return 0; }
  double RankAdded(const Snapshot&, const Allocation&) const override {
    return 0;
  }

 private:
  const std::string name_;
};

template <typename T, const char* kName>
std::unique_ptr<Plugin> Make() {
  return std::make_unique<T>(kName);
}

constexpr char kPreA[] = "pre_a";
constexpr char kPreB[] = "pre_b";
constexpr char kPreC[] = "pre_c";
constexpr char kPostA[] = "post_a";
constexpr char kPostB[] = "post_b";
constexpr char kPlace[] = "place";
constexpr char kGate[] = "gate";
constexpr char kScore[] = "score";
constexpr char kUnitsA[] = "units_a";
constexpr char kUnitsB[] = "units_b";
constexpr char kReserve[] = "reserve";
constexpr char kSortA[] = "sort_a";
constexpr char kSortB[] = "sort_b";

const Registry& TestRegistry() {
  static const Registry* const registry = [] {
    auto* r = new Registry();
    for (const auto& [name, make] :
         std::vector<std::pair<const char*, PluginFactory>>{
             {kPreA, &Make<FakePreFilter, kPreA>},
             {kPreB, &Make<FakePreFilter, kPreB>},
             {kPreC, &Make<FakePreFilter, kPreC>},
             {kPostA, &Make<FakePostFilter, kPostA>},
             {kPostB, &Make<FakePostFilter, kPostB>},
             {kPlace, &Make<FakePlacement, kPlace>},
             {kGate, &Make<FakeFilter, kGate>},
             {kScore, &Make<FakeScore, kScore>},
             {kUnitsA, &Make<FakeUnitScore, kUnitsA>},
             {kUnitsB, &Make<FakeUnitScore, kUnitsB>},
             {kReserve, &Make<FakeReserve, kReserve>},
             {kSortA, &Make<FakeQueueSort, kSortA>},
             {kSortB, &Make<FakeQueueSort, kSortB>},
         }) {
      EXPECT_OK(r->Register(name, make));
    }
    return r;
  }();
  return *registry;
}

// Every plugin weighs 2, so that a Score step's weight is not the default.
Profile ProfileOf(const std::vector<std::string>& names) {
  Profile p;
  for (const std::string& name : names) p.plugins.push_back({name, 2});
  return p;
}

struct CreateCase {
  const char* name;
  std::vector<std::string> plugins;
  std::string message;

  friend void PrintTo(const CreateCase& c, std::ostream* os) { *os << c.name; }
};

class FrameworkCreateTest : public testing::TestWithParam<CreateCase> {};

TEST_P(FrameworkCreateTest, IsInvalidArgumentNamingThePlugin) {
  const CreateCase& c = GetParam();
  EXPECT_THAT(Framework::Create(TestRegistry(), ProfileOf(c.plugins)),
              StatusIs(absl::StatusCode::kInvalidArgument, c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Refusals, FrameworkCreateTest,
    testing::Values(
        CreateCase{"UnknownPlugin",
                   {"place", "nope"},
                   "profile: no plugin \"nope\" is registered"},
        CreateCase{"PluginNamedTwice",
                   {"pre_a", "place", "pre_a"},
                   "profile: plugin \"pre_a\" is named twice"},
        CreateCase{"SecondQueueSort",
                   {"sort_a", "place", "sort_b"},
                   "profile: plugin \"sort_b\" is a second QueueSort plugin "
                   "(sort_a is the first)"},
        CreateCase{"SecondUnitScore",
                   {"units_a", "place", "units_b"},
                   "profile: plugin \"units_b\" is a second UnitScore plugin "
                   "(units_a is the first)"},
        CreateCase{"NoPlacement",
                   {"sort_a", "pre_a", "post_a"},
                   "profile: no placement plugin (a --packing policy) is "
                   "named"}),
    [](const testing::TestParamInfo<CreateCase>& info) {
      return std::string(info.param.name);
    });

// A chain's lists are fixed in size (FilterList): the plugin set refuses a
// Filter plugin past them, and keeps those before.
TEST(PluginSetTest, RefusesAFilterPluginPastTheMostAProfileMayName) {
  PluginSet set;
  for (int i = 0; i < FilterChain::kMaxFilters; ++i) {
    const std::string name = absl::StrCat("gate_", i);
    ASSERT_OK(set.Add(std::make_unique<FakeFilter>(name.c_str()), 1));
  }
  EXPECT_THAT(set.Add(std::make_unique<FakeFilter>("one_more"), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "profile: plugin \"one_more\" is a Filter plugin past "
                       "the 16 a profile may name"));
  EXPECT_EQ(set.filters().size(), FilterChain::kMaxFilters);
  EXPECT_EQ(set.Find("one_more"), nullptr);
}

class FrameworkTest : public FrameworkFixture {
 protected:
  void SetUp() override {
    script = &script_;
    AddNode("n1", 1);
    AddNode("n2", 1);
  }
  void TearDown() override { script = nullptr; }

  std::unique_ptr<Framework> Build(const std::vector<std::string>& names) {
    absl::StatusOr<std::unique_ptr<Framework>> fw =
        Framework::Create(TestRegistry(), ProfileOf(names));
    EXPECT_OK(fw);
    return fw.ok() ? *std::move(fw) : nullptr;
  }

  // A cycle of `request` (p-1, pending, unless the test says) in a
  // session of its own, with holds made afresh.
  struct Run {
    Run(const Framework& fw, const Snapshot& snapshot,
        const AllocationBook* book, const Allocation& request, CycleMode mode,
        bool queued)
        : spec(MatchSpec::Of(request)),
          holds(book, nullptr, true, [](absl::string_view) { return false; }),
          session(fw, snapshot, holds, statement),
          cycle(mode, snapshot, spec, request, &holds) {
      cycle.notes().queued = queued;
    }
    const MatchSpec spec;
    Holds holds;
    RecordingStatement statement;
    Session session;
    CycleState cycle;
  };
  std::unique_ptr<Run> NewRun(const Framework& fw,
                              CycleMode mode = CycleMode::kExplain,
                              bool queued = true,
                              const Allocation* request = nullptr) {
    if (request == nullptr) request = &Pending();
    return std::make_unique<Run>(fw, snapshot_, &book_, *request, mode, queued);
  }
  const Allocation& Pending() {
    if (const AllocationBook::Record* r = book_.Find("p-1")) {
      return r->allocation;
    }
    return AddPending("p-1", "a");
  }

  Script script_;
};

TEST_F(FrameworkTest, CreatesAProfileOfOneOfEachPoint) {
  std::unique_ptr<Framework> fw =
      Build({"sort_a", "pre_a", "gate", "place", "score", "units_a", "reserve",
             "post_a"});
  ASSERT_NE(fw, nullptr);
  ASSERT_NE(fw->plugins().queue_sort(), nullptr);
  EXPECT_EQ(fw->plugins().queue_sort()->name(), "sort_a");
  ASSERT_NE(fw->plugins().unit_score(), nullptr);
  EXPECT_EQ(fw->plugins().unit_score()->name(), "units_a");
  ASSERT_EQ(fw->plugins().filters().size(), 1);
  EXPECT_EQ(fw->plugins().filters()[0].plugin->name(), "gate");
  ASSERT_EQ(fw->plugins().scores().size(), 1);
  EXPECT_EQ(fw->plugins().scores()[0].plugin->name(), "score");
  EXPECT_EQ(fw->plugins().scores()[0].weight, 2);
  ASSERT_NE(fw->plugins().Find("post_a"), nullptr);
  EXPECT_EQ(fw->plugins().Find("post_a")->name(), "post_a");
  EXPECT_EQ(fw->plugins().Find("pre_b"), nullptr);
}

TEST_F(FrameworkTest, PreFiltersRunInProfileOrder) {
  std::unique_ptr<Framework> fw =
      Build({"pre_c", "pre_a", "pre_b", "place", "post_a"});
  std::unique_ptr<Run> run = NewRun(*fw);
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  EXPECT_EQ(r.outcome, CycleResult::Outcome::kPlaced);
  EXPECT_THAT(script_.calls, ElementsAre("PreFilter pre_c", "PreFilter pre_a",
                                         "PreFilter pre_b", "Place place"));
}

// kUnschedulable: the PreFilters after it are not asked, nor the placement;
// the PostFilters are, told it was refused and why.
TEST_F(FrameworkTest, TheFirstRefusalStopsThePreFiltersAndGoesToPostFilter) {
  std::unique_ptr<Framework> fw =
      Build({"pre_c", "pre_a", "pre_b", "place", "post_a"});
  script_.verdicts["pre_a"] = Verdict::Unschedulable("a refuses");
  script_.verdicts["pre_b"] = Verdict::Unschedulable("b refuses");
  std::unique_ptr<Run> run = NewRun(*fw);
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  EXPECT_THAT(script_.calls, ElementsAre("PreFilter pre_c", "PreFilter pre_a",
                                         "PostFilter post_a"));
  EXPECT_EQ(r.outcome, CycleResult::Outcome::kWaiting);
  EXPECT_EQ(r.reason, "a refuses");
  ASSERT_EQ(script_.failures.size(), 1);
  EXPECT_EQ(script_.failures[0].kind, CycleFailure::Kind::kRefused);
  EXPECT_EQ(script_.failures[0].reason, "a refuses");
  EXPECT_EQ(r.failure.kind, CycleFailure::Kind::kRefused);
  EXPECT_EQ(r.failure.reason, "a refuses");
}

// kUnresolvable: refused for good (FAILED_PRECONDITION), asking nothing
// after it, unless a PostFilter plugin may make room some day: then the
// cycle goes on as if it had passed.
TEST_F(FrameworkTest, AnUnresolvableVerdictIsRefusedForGood) {
  std::unique_ptr<Framework> fw =
      Build({"pre_a", "pre_b", "place", "post_a", "post_b"});
  script_.verdicts["pre_a"] = Verdict::Unresolvable("never as it is");
  std::unique_ptr<Run> run = NewRun(*fw);
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  EXPECT_EQ(r.outcome, CycleResult::Outcome::kRefused);
  EXPECT_THAT(r.refusal, StatusIs(absl::StatusCode::kFailedPrecondition,
                                  "never as it is"));
  EXPECT_THAT(script_.calls, ElementsAre("PreFilter pre_a"));
}

TEST_F(FrameworkTest, AnUnresolvableVerdictAPostFilterMayResolveIsLetThrough) {
  std::unique_ptr<Framework> fw =
      Build({"pre_a", "pre_b", "place", "post_a", "post_b"});
  script_.verdicts["pre_a"] = Verdict::Unresolvable("never as it is");
  script_.may_resolve = {"post_b"};
  std::unique_ptr<Run> run = NewRun(*fw);
  CycleRecord record;
  run->cycle.notes().record = &record;
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  EXPECT_EQ(r.outcome, CycleResult::Outcome::kPlaced);
  EXPECT_OK(r.refusal);
  EXPECT_THAT(script_.calls,
              ElementsAre("PreFilter pre_a", "PreFilter pre_b", "Place place"));
  // Explain says who let it through.
  ASSERT_FALSE(record.steps().empty());
  EXPECT_EQ(record.steps()[0],
            (CycleStep{"pre_a", "PreFilter", 2, 2,
                       "never as it is; let through: post_b may make room "
                       "some day"}));
}

struct CodeCase {
  const char* name;
  PostFilterResult first;  // post_a's; post_b continues with "; b tried"
  CycleResult::Outcome outcome;
  std::string reason;
  absl::Status refusal;
  std::vector<std::string> asked;
  std::vector<std::string> summary;

  friend void PrintTo(const CodeCase& c, std::ostream* os) { *os << c.name; }
};

class PostFilterCodeTest : public FrameworkTest,
                           public testing::WithParamInterface<CodeCase> {};

// Nothing fits: post_a's code decides whether post_b is asked and how the
// cycle ends.
TEST_P(PostFilterCodeTest, DecidesTheOutcome) {
  const CodeCase& c = GetParam();
  std::unique_ptr<Framework> fw = Build({"place", "post_a", "post_b"});
  script_.fits = false;
  script_.results["post_a"] = c.first;
  script_.results["post_b"] =
      PostFilterResult{PostFilterResult::Code::kContinue, "; b tried", "", ""};
  std::unique_ptr<Run> run = NewRun(*fw);
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  EXPECT_EQ(r.outcome, c.outcome);
  EXPECT_EQ(r.reason, c.reason);
  EXPECT_EQ(r.refusal, c.refusal);
  EXPECT_THAT(r.summary, ElementsAreArray(c.summary));
  std::vector<std::string> asked = {"Place place"};
  for (const std::string& p : c.asked) asked.push_back("PostFilter " + p);
  EXPECT_THAT(script_.calls, ElementsAreArray(asked));
  // Each was told that nothing fits, and the placement's why.
  ASSERT_EQ(script_.failures.size(), c.asked.size());
  for (const CycleFailure& f : script_.failures) {
    EXPECT_EQ(f.kind, CycleFailure::Kind::kNoFit);
    EXPECT_EQ(f.reason, "no room (fake)");
  }
  EXPECT_EQ(r.failure.kind, CycleFailure::Kind::kNoFit);
}

using Code = PostFilterResult::Code;
using Outcome = CycleResult::Outcome;

INSTANTIATE_TEST_SUITE_P(
    Codes, PostFilterCodeTest,
    testing::Values(CodeCase{"ContinueAppendsAndAsksTheNext",
                             {Code::kContinue, "; a tried", "", "a's summary"},
                             Outcome::kWaiting,
                             "no room (fake); a tried; b tried",
                             absl::OkStatus(),
                             {"post_a", "post_b"},
                             {"a's summary"}},
                    CodeCase{"WaitingAppendsAndStops",
                             {Code::kWaiting, "; a holds n1", "", ""},
                             Outcome::kWaiting,
                             "no room (fake); a holds n1",
                             absl::OkStatus(),
                             {"post_a"},
                             {}},
                    CodeCase{"UnderWayReplacesTheReasonAndStops",
                             {Code::kUnderWay, "a re-lays out n1", "", ""},
                             Outcome::kUnderWay,
                             "a re-lays out n1",
                             absl::OkStatus(),
                             {"post_a"},
                             {}},
                    CodeCase{"RefusedIsFailedPreconditionAndStops",
                             {Code::kRefused, "a: never", "", ""},
                             Outcome::kRefused,
                             "no room (fake)",
                             absl::FailedPreconditionError("a: never"),
                             {"post_a"},
                             {}}),
    [](const testing::TestParamInfo<CodeCase>& info) {
      return std::string(info.param.name);
    });

struct ModeCase {
  const char* name;
  CycleMode mode;
  bool queued;
  std::vector<std::string> pre_filters;   // asked, of pre_a (new) and pre_b
  std::vector<std::string> post_filters;  // asked, of post_a (new) and post_b

  friend void PrintTo(const ModeCase& c, std::ostream* os) { *os << c.name; }
};

class ModeTest : public FrameworkTest,
                 public testing::WithParamInterface<ModeCase> {};

// pre_a and post_a are checks of new requests (ForNewRequests); pre_b and
// post_b are the pass's.
TEST_P(ModeTest, AsksThePluginsOfTheMode) {
  const ModeCase& c = GetParam();
  std::unique_ptr<Framework> fw =
      Build({"pre_a", "pre_b", "place", "post_a", "post_b"});
  script_.for_new = {"pre_a", "post_a"};
  std::unique_ptr<Run> run = NewRun(*fw, c.mode, c.queued);

  EXPECT_TRUE(fw->PreFilter(run->session, run->cycle).ok());
  std::vector<std::string> pre;
  for (const std::string& p : c.pre_filters) pre.push_back("PreFilter " + p);
  EXPECT_THAT(script_.calls, ElementsAreArray(pre));

  script_.calls.clear();
  fw->PostFilter(run->session, run->cycle,
                 CycleFailure{CycleFailure::Kind::kNoFit, nullptr, "no room"});
  std::vector<std::string> post;
  for (const std::string& p : c.post_filters) {
    post.push_back("PostFilter " + p);
  }
  EXPECT_THAT(script_.calls, ElementsAreArray(post));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, ModeTest,
    testing::Values(
        ModeCase{"Allocate",
                 CycleMode::kAllocate,
                 false,
                 {"pre_a", "pre_b"},
                 {"post_a"}},
        // Whether an Allocate queues changes nothing: it is not a pass.
        ModeCase{"AllocateOfARequestThatQueues",
                 CycleMode::kAllocate,
                 true,
                 {"pre_a", "pre_b"},
                 {"post_a"}},
        ModeCase{"Admit", CycleMode::kAdmit, true, {"pre_b"}, {"post_b"}},
        ModeCase{"ExplainOfARequestThatDoesNotQueue",
                 CycleMode::kExplain,
                 false,
                 {"pre_a", "pre_b"},
                 {"post_a"}},
        ModeCase{"ExplainOfARequestThatQueues",
                 CycleMode::kExplain,
                 true,
                 {"pre_a", "pre_b"},
                 {"post_a", "post_b"}}),
    [](const testing::TestParamInfo<ModeCase>& info) {
      return std::string(info.param.name);
    });

struct ReleaseCase {
  const char* name;
  CycleMode mode;
  CycleFailure::Kind kind;
  bool released;

  friend void PrintTo(const ReleaseCase& c, std::ostream* os) { *os << c.name; }
};

class RefusedHoldsTest : public FrameworkTest,
                         public testing::WithParamInterface<ReleaseCase> {};

// A request a PreFilter refused holds nothing when its PostFilters are
// asked (they may hold for it again); one that found no room keeps its
// holds, and an Allocate's holds are not the session's to change.
TEST_P(RefusedHoldsTest, ReleasesTheRequestersHolds) {
  const ReleaseCase& c = GetParam();
  std::unique_ptr<Framework> fw = Build({"place", "post_a"});
  std::unique_ptr<Run> run = NewRun(*fw, c.mode, true);
  run->holds.Hold(GpuPool(kT4), "n1", Reservation{.held_for = "p-1"});
  fw->PostFilter(run->session, run->cycle,
                 CycleFailure{c.kind, nullptr, "refused"});
  EXPECT_EQ(run->holds.reservations().empty(), c.released);
  EXPECT_EQ(run->holds.WasReleased("p-1"), c.released);
}

INSTANTIATE_TEST_SUITE_P(
    Failures, RefusedHoldsTest,
    testing::Values(ReleaseCase{"RefusedInAPass", CycleMode::kAdmit,
                                CycleFailure::Kind::kRefused, true},
                    ReleaseCase{"RefusedInExplain", CycleMode::kExplain,
                                CycleFailure::Kind::kRefused, true},
                    ReleaseCase{"RefusedInAllocate", CycleMode::kAllocate,
                                CycleFailure::Kind::kRefused, false},
                    ReleaseCase{"NoFitInAPass", CycleMode::kAdmit,
                                CycleFailure::Kind::kNoFit, false}),
    [](const testing::TestParamInfo<ReleaseCase>& info) {
      return std::string(info.param.name);
    });

// Placed: the Reserve plugins are told, and the requester holds nothing
// more (what it held goes to no other request this pass) and is placed in
// the session (no victim of it).
TEST_F(FrameworkTest, APlacedRequestIsReservedReleasedAndNotedPlaced) {
  std::unique_ptr<Framework> fw = Build({"place", "reserve", "post_a"});
  std::unique_ptr<Run> run = NewRun(*fw);
  run->holds.Hold(GpuPool(kT4), "n1", Reservation{.held_for = "p-1"});
  run->holds.Hold(GpuPool(kT4), "n2", Reservation{.held_for = "p-2"});
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  ASSERT_EQ(r.outcome, CycleResult::Outcome::kPlaced);
  ASSERT_EQ(r.groups.size(), 1);
  ASSERT_EQ(r.groups[0].size(), 1);
  EXPECT_EQ(r.groups[0][0]->home, "n1");
  EXPECT_THAT(script_.calls,
              ElementsAre("Place place", "Reserve reserve p-1 1"));
  EXPECT_TRUE(run->session.placed("p-1"));
  EXPECT_TRUE(run->holds.WasReleased("p-1"));
  EXPECT_FALSE(run->holds.WasReleased("p-2"));
  ASSERT_EQ(run->holds.reservations().size(), 1);
  const auto& held = run->holds.reservations().at(GpuPool(kT4));
  ASSERT_EQ(held.size(), 1);
  EXPECT_EQ(held.at("n2").held_for, "p-2");
  // RunCycle books nothing: the caller does.
  EXPECT_THAT(run->statement.placed, IsEmpty());
}

// A new request (no id yet) has nothing to release or note.
TEST_F(FrameworkTest, ANewRequestIsReservedOnly) {
  std::unique_ptr<Framework> fw = Build({"place", "reserve"});
  Allocation fresh;
  fresh.tenant = "a";
  fresh.requested_models = {kT4};
  std::unique_ptr<Run> run = NewRun(*fw, CycleMode::kAllocate, false, &fresh);
  run->holds.Hold(GpuPool(kT4), "n1", Reservation{.held_for = "p-1"});
  const CycleResult r = fw->RunCycle(run->session, run->cycle);
  ASSERT_EQ(r.outcome, CycleResult::Outcome::kPlaced);
  EXPECT_THAT(script_.calls, ElementsAre("Place place", "Reserve reserve  1"));
  EXPECT_FALSE(run->session.placed(""));
  EXPECT_EQ(run->holds.reservations().size(), 1);
}

struct RecordCase {
  const char* name;
  std::map<std::string, Verdict> verdicts;
  bool fits;
  std::vector<CycleStep> steps;

  friend void PrintTo(const RecordCase& c, std::ostream* os) { *os << c.name; }
};

class RecordTest : public FrameworkTest,
                   public testing::WithParamInterface<RecordCase> {};

// Explain's record: one step per plugin the cycle ran, at its extension
// point, with the candidate nodes in and out (both nodes hold a T4; the gate
// fences n2 off).
TEST_P(RecordTest, HasOneStepPerPluginRun) {
  const RecordCase& c = GetParam();
  std::unique_ptr<Framework> fw = Build(
      {"pre_a", "gate", "place", "score", "units_a", "reserve", "post_a"});
  script_.verdicts = c.verdicts;
  script_.fits = c.fits;
  script_.results["post_a"] =
      PostFilterResult{Code::kContinue, "; a tried", "a did this", ""};
  std::unique_ptr<Run> run = NewRun(*fw);
  CycleRecord record;
  run->cycle.notes().record = &record;
  fw->RunCycle(run->session, run->cycle);
  EXPECT_THAT(record.steps(), ElementsAreArray(c.steps));
}

INSTANTIATE_TEST_SUITE_P(
    Cycles, RecordTest,
    testing::Values(
        RecordCase{
            "Placed",
            {{"pre_a", Verdict::Success("a looked")}},
            true,
            {{"pre_a", "PreFilter", 2, 2, "a looked"},
             {"gate", "Filter", 2, 1, ""},
             {"place", "Score", 1, 1,
              "chose n1 of 1 weighed: strands 0.50 of 0 free units (was 0.00 "
              "of 1); lease mismatch 0.00"},
             {"score", "Score", 1, 1, "weight 2"},
             {"units_a", "Score", 1, 1, "units chosen (fake)"},
             {"reserve", "Reserve", 1, 1, ""}}},
        RecordCase{"NoFit",
                   {},
                   false,
                   {{"pre_a", "PreFilter", 2, 2, ""},
                    {"gate", "Filter", 2, 1, ""},
                    {"place", "Score", 1, 0, "no room (fake)"},
                    {"post_a", "PostFilter", 0, 0, "a did this"}}},
        RecordCase{"RefusedByAPreFilter",
                   {{"pre_a", Verdict::Unschedulable("a refuses")}},
                   true,
                   {{"pre_a", "PreFilter", 2, 0, "a refuses"},
                    {"post_a", "PostFilter", 0, 0, "a did this"}}}),
    [](const testing::TestParamInfo<RecordCase>& info) {
      return std::string(info.param.name);
    });

// A PostFilter step without a detail shows its reason.
TEST_F(FrameworkTest, APostFilterStepWithoutDetailShowsItsReason) {
  std::unique_ptr<Framework> fw = Build({"place", "post_a"});
  script_.fits = false;
  script_.results["post_a"] =
      PostFilterResult{Code::kContinue, "; a tried", "", ""};
  std::unique_ptr<Run> run = NewRun(*fw);
  CycleRecord record;
  run->cycle.notes().record = &record;
  fw->RunCycle(run->session, run->cycle);
  EXPECT_THAT(
      record.steps(),
      ElementsAre(CycleStep{"place", "Score", 2, 0, "no room (fake)"},
                  CycleStep{"post_a", "PostFilter", 0, 0, "; a tried"}));
}

}  // namespace
}  // namespace accelsched
