// The fair_share plugin: a tenant's rank (its dominant share) computed once
// per session and again after an admission of its own (Reserve), what
// admitting a request adds to it, and the queue walked by it. Usage from a
// real allocation book, weights from TenantPolicies.
#include "core/plugins/fair_share/fair_share.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/framework/cycle_state.h"
#include "core/matching/match_spec.h"
#include "core/model/gpu_share.h"
#include "core/queue/queue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

class FairShareTest : public FrameworkFixture {
 protected:
  void SetUp() override {
    AddNode("n1", 8, kT4);
    AddNode("n2", 4, kL4);
  }

  // Tells the plugin that `request` was given units in `s`.
  void Reserve(PassSession& s, const Allocation& request) {
    const MatchSpec spec = MatchSpec::Of(request);
    std::unique_ptr<CycleState> cycle = Cycle(s, request, spec);
    plugin_.Reserve(s.session, *cycle, Groups{});
  }

  FairSharePlugin plugin_;
};

TEST_F(FairShareTest, TheRankIsTheDominantShare) {
  TenantPolicy heavy;
  heavy.weight = 2;
  SetTenants({{"a", heavy}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "a-2", .tenant = "a", .node = "n2", .units = 2, .model = kL4});
  AddLive({.id = "b-1", .tenant = "b", .node = "n1", .units = 4});
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0.5 / 2);
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "b"), 0.5);
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "idle"), 0);
}

// What the old ShareCache kept until Forget: a walk over many groups of a
// tenant does not compute its share again, until it is admitted.
TEST_F(FairShareTest, TheRankIsKeptInTheSessionUntilItsTenantIsReserved) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0.25);
  AddLive({.id = "a-2", .tenant = "a", .node = "n1", .units = 2});
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0.25);
  // Another tenant's admission leaves a's rank as it was.
  Reserve(*s, AddPending("b-1", "b"));
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0.25);
  Reserve(*s, AddPending("a-3", "a"));
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0.5);
}

TEST_F(FairShareTest, ANewSessionComputesTheRankAfresh) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> first = NewSession();
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(first->session, "a"), 0.25);
  AddLive({.id = "a-2", .tenant = "a", .node = "n1", .units = 2});
  std::unique_ptr<PassSession> second = NewSession();
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(second->session, "a"), 0.5);
}

TEST_F(FairShareTest, WithoutABookEveryRankIsZero) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  snapshot_.book = nullptr;
  std::unique_ptr<PassSession> s = NewSession();
  EXPECT_DOUBLE_EQ(plugin_.TenantRank(s->session, "a"), 0);
}

Allocation Pending(std::string id, std::string tenant, int priority = 0) {
  Allocation a;
  a.id = std::move(id);
  a.tenant = std::move(tenant);
  a.priority = priority;
  a.state = AllocationState::kPending;
  a.requested_models = {kT4};
  return a;
}

// The order a pass visits in: priority, then the lowest rank (asked again
// after each admission), then arrival.
TEST_F(FairShareTest, TheQueueWalksTheLowestRankFirst) {
  AddLive({.id = "a-0", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  Queue queue;
  queue.Add(Pending("q-1", "a"));
  queue.Add(Pending("q-2", "b"));
  queue.Add(Pending("q-3", "b"));
  queue.Add(Pending("q-4", "a", 1));
  std::unique_ptr<PassSession> s = NewSession();
  std::vector<std::string> order;
  queue.Walk(
      [&](const std::string& t) { return plugin_.TenantRank(s->session, t); },
      [&](const std::string& id) {
        order.push_back(id);
        return Queue::Verdict::kSkipGroup;
      });
  EXPECT_THAT(order, ElementsAre("q-4", "q-2", "q-1"));
}

struct AddedCase {
  const char* name;
  std::vector<std::string> models;
  int count;
  std::optional<GpuShare> share;
  double weight;
  double added;

  friend void PrintTo(const AddedCase& c, std::ostream* os) { *os << c.name; }
};

class RankAddedTest : public FairShareTest,
                      public testing::WithParamInterface<AddedCase> {};

// Counted against every pool the request may take (8 T4s, 4 L4s).
TEST_P(RankAddedTest, DemandOverThePoolsUnitsOverTheWeight) {
  const AddedCase& c = GetParam();
  TenantPolicy policy;
  policy.weight = c.weight;
  SetTenants({{"a", policy}});
  Allocation request = Pending("q-1", "a");
  request.requested_models = c.models;
  request.count = c.count;
  request.share = c.share;
  EXPECT_DOUBLE_EQ(plugin_.RankAdded(snapshot_, request), c.added);
}

INSTANTIATE_TEST_SUITE_P(
    Requests, RankAddedTest,
    testing::Values(
        AddedCase{"TwoOfEightT4s", {kT4}, 2, std::nullopt, 1, 2.0 / 8},
        AddedCase{"TheWeightDivides", {kT4}, 2, std::nullopt, 2, 2.0 / 8 / 2},
        AddedCase{"AnyModelCountsEveryPool", {}, 3, std::nullopt, 1, 3.0 / 12},
        AddedCase{"ModelsCountTheirPools", {kL4, kT4}, 1, std::nullopt, 1,
                  1.0 / 12},
        AddedCase{"AShareCountsItsComputeMilli", {kT4}, 1,
                  GpuShare{.compute_milli = 500}, 1, 0.5 / 8},
        // No unit of the model: one unit stands for the pools' none.
        AddedCase{"AModelWithoutUnits", {"nvidia-h100"}, 1, std::nullopt, 1,
                  1.0}),
    [](const testing::TestParamInfo<AddedCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
