// The order's share on its own, and the queue walked by it: usage from a
// real allocation book, weights from TenantPolicies.
#include "core/admission/dominant_share.h"

#include <string>
#include <vector>

#include "core/queue/queue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/admission_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

class DominantShareTest : public AdmissionFixture {
 protected:
  void SetUp() override {
    AddNode("n1", 8, kT4);
    AddNode("n2", 4, kL4);
  }
};

TEST_F(DominantShareTest, TheLargestFractionOfAPoolOverTheWeight) {
  TenantPolicy heavy;
  heavy.weight = 2;
  SetTenants({{"a", heavy}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "a-2", .tenant = "a", .node = "n2", .units = 2, .model = kL4});
  AddLive({.id = "b-1", .tenant = "b", .node = "n1", .units = 4});
  EXPECT_DOUBLE_EQ(DominantShare(ctx_, "a"), 0.5 / 2);  // 2 of 4 L4s
  EXPECT_DOUBLE_EQ(DominantShare(ctx_, "b"), 0.5);      // 4 of 8 T4s
  EXPECT_DOUBLE_EQ(DominantShare(ctx_, "idle"), 0);
}

TEST_F(DominantShareTest, PreemptedAllocationsCountUntilTheyEnd) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  Preempted("a-1", "p-1");
  EXPECT_DOUBLE_EQ(DominantShare(ctx_, "a"), 0.25);
  book_.End(*book_.FindMutable("a-1"), AllocationState::kPreempted, "preempted",
            T0());
  EXPECT_DOUBLE_EQ(DominantShare(ctx_, "a"), 0);
}

TEST_F(DominantShareTest, TheCacheKeepsAShareUntilForgotten) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  ShareCache cache(ctx_);
  EXPECT_DOUBLE_EQ(cache.Share("a"), 0.25);
  AddLive({.id = "a-2", .tenant = "a", .node = "n1", .units = 2});
  EXPECT_DOUBLE_EQ(cache.Share("a"), 0.25);
  cache.Forget("a");
  EXPECT_DOUBLE_EQ(cache.Share("a"), 0.5);
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

// The order a pass visits in: priority, then the lowest share (asked again
// after each admission), then arrival.
TEST_F(DominantShareTest, TheQueueWalksTheLowestShareFirst) {
  AddLive({.id = "a-0", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "b-0", .tenant = "b", .node = "n1", .units = 1});
  Queue queue;
  queue.Add(Pending("q-1", "a"));
  queue.Add(Pending("q-2", "b"));
  queue.Add(Pending("q-3", "b"));
  queue.Add(Pending("q-4", "a", 1));
  ShareCache shares(ctx_);
  std::vector<std::string> order;
  queue.Walk([&](const std::string& t) { return shares.Share(t); },
             [&](const std::string& id) {
               order.push_back(id);
               return Queue::Verdict::kSkipGroup;
             });
  EXPECT_THAT(order, ElementsAre("q-4", "q-2", "q-1"));
}

}  // namespace
}  // namespace accelsched
