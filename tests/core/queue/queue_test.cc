// The queue's order on its own: priority, then the tenant's share, then
// first come first served; groups given up on as a whole.
#include "core/queue/queue.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

Allocation Pending(std::string id, std::string tenant, int priority = 0,
                   int count = 1) {
  Allocation a;
  a.id = std::move(id);
  a.tenant = std::move(tenant);
  a.priority = priority;
  a.count = count;
  a.state = AllocationState::kPending;
  a.requested_models = {"nvidia-tesla-t4"};
  return a;
}

std::vector<std::string> Walked(const Queue& q,
                                const std::map<std::string, double>& shares) {
  std::vector<std::string> ids;
  q.Walk(
      [&](const std::string& t) {
        auto it = shares.find(t);
        return it == shares.end() ? 0.0 : it->second;
      },
      [&](const std::string& id) {
        ids.push_back(id);
        return Queue::Verdict::kTaken;
      });
  return ids;
}

TEST(QueueTest, PriorityThenShareThenArrival) {
  Queue q;
  q.Add(Pending("a-1", "busy"));
  q.Add(Pending("a-2", "idle"));
  q.Add(Pending("a-3", "busy", 5));
  q.Add(Pending("a-4", "idle"));
  EXPECT_THAT(Walked(q, {{"busy", 0.5}, {"idle", 0.1}}),
              ElementsAre("a-3", "a-2", "a-4", "a-1"));
  EXPECT_EQ(q.CountByTenant(),
            (std::map<std::string, int64_t>{{"busy", 2}, {"idle", 2}}));
}

TEST(QueueTest, TheSimulatedOrderInterleavesTenantsByShare) {
  Queue q;
  for (int i = 0; i < 3; ++i) q.Add(Pending("a-" + std::to_string(i), "a"));
  for (int i = 0; i < 3; ++i) q.Add(Pending("b-" + std::to_string(i), "b"));
  // Each admission adds 0.1 to its tenant's share; b starts ahead of a.
  const std::vector<std::string> order =
      q.Order([](const std::string& t) { return t == "b" ? 0.15 : 0.0; },
              [](const std::string&) { return 0.1; });
  EXPECT_THAT(order, ElementsAre("a-0", "a-1", "b-0", "a-2", "b-1", "b-2"));
}

TEST(QueueTest, SkippingAGroupSkipsOnlyItsRest) {
  Queue q;
  Allocation big = Pending("a-1", "t", 0, 8);
  q.Add(big);
  big.id = "a-3";
  q.Add(big);
  q.Add(Pending("a-2", "t"));
  std::vector<std::string> visited;
  q.Walk([](const std::string&) { return 0.0; },
         [&](const std::string& id) {
           visited.push_back(id);
           return id == "a-1" ? Queue::Verdict::kSkipGroup
                              : Queue::Verdict::kTaken;
         });
  // a-3 is of a-1's shape and tenant: given up on with it.
  EXPECT_THAT(visited, ElementsAre("a-1", "a-2"));
}

TEST(QueueTest, SkippingAShapeSkipsItForEveryTenant) {
  Queue q;
  q.Add(Pending("a-1", "x", 0, 8));
  q.Add(Pending("a-2", "y", 0, 8));
  q.Add(Pending("a-3", "z", 0, 1));
  q.Add(Pending("a-4", "y", 0, 1));
  std::vector<std::string> visited;
  q.Walk([](const std::string&) { return 0.0; },
         [&](const std::string& id) {
           visited.push_back(id);
           return id == "a-1" ? Queue::Verdict::kSkipShape
                              : Queue::Verdict::kTaken;
         });
  EXPECT_THAT(visited, ElementsAre("a-1", "a-3", "a-4"));
}

TEST(QueueTest, AGroupSkippedFirstLeavesItsShapesOthersInOrder) {
  Queue q;
  q.Add(Pending("a-1", "x"));
  q.Add(Pending("a-2", "y"));
  q.Add(Pending("a-3", "z"));
  q.Add(Pending("a-4", "w"));
  q.Add(Pending("a-5", "y"));
  std::vector<std::string> visited;
  q.Walk(
      [](const std::string& t) {
        return t == "y" ? 0.1 : t == "z" ? 0.2 : t == "x" ? 0.3 : 0.4;
      },
      [&](const std::string& id) {
        visited.push_back(id);
        return id == "a-2" ? Queue::Verdict::kSkipGroup
                           : Queue::Verdict::kTaken;
      });
  EXPECT_THAT(visited, ElementsAre("a-2", "a-3", "a-1", "a-4"));
}

TEST(QueueTest, AShapeThatLeftAndCameBackIsOneShapeAgain) {
  Queue q;
  q.Add(Pending("a-1", "x", 0, 8));
  q.Remove("a-1");  // its shape's last request: the shape is forgotten
  q.Add(Pending("a-2", "x", 0, 1));
  q.Add(Pending("a-3", "y", 0, 8));
  q.Add(Pending("a-4", "z", 0, 8));
  q.Add(Pending("a-5", "w", 0, 1));
  std::vector<std::string> visited;
  q.Walk([](const std::string&) { return 0.0; },
         [&](const std::string& id) {
           visited.push_back(id);
           return id == "a-3" ? Queue::Verdict::kSkipShape
                              : Queue::Verdict::kTaken;
         });
  // a-4 shares a-3's shape; a-2 and a-5 share the other.
  EXPECT_THAT(visited, ElementsAre("a-2", "a-3", "a-5"));
}

TEST(QueueTest, ARequestEnteredAgainIsFiledOnce) {
  Queue q;
  q.Add(Pending("a-1", "x", 0, 1));
  q.Add(Pending("a-1", "x", 0, 8));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_THAT(Walked(q, {}), ElementsAre("a-1"));
  EXPECT_EQ(q.Shape("a-1"), ShapeOf(Pending("a-1", "x", 0, 8)));
  q.Remove("a-1");
  EXPECT_EQ(q.size(), 0u);
  EXPECT_THAT(Walked(q, {}), ElementsAre());
}

TEST(QueueTest, RemoveAndReasons) {
  Queue q;
  q.Add(Pending("a-1", "t"));
  q.Add(Pending("a-2", "t", 3));
  q.SetReason("a-1", "no free T4");
  EXPECT_EQ(q.Reason("a-1"), "no free T4");
  EXPECT_EQ(q.Reason("a-9"), "");
  q.Remove("a-2");
  q.Remove("a-9");  // unknown: no-op
  EXPECT_THAT(Walked(q, {}), ElementsAre("a-1"));
  EXPECT_EQ(q.size(), 1u);
  q.Remove("a-1");
  EXPECT_EQ(q.size(), 0u);
  EXPECT_THAT(Walked(q, {}), ElementsAre());
}

TEST(QueueTest, ShapesDifferInEverythingThatDecidesPlacement) {
  Allocation a = Pending("a-1", "t");
  const std::string base = ShapeOf(a);
  for (auto change : std::vector<void (*)(Allocation&)>{
           [](Allocation& x) { x.count = 2; },
           [](Allocation& x) { x.replicas = 2; },
           [](Allocation& x) { x.partition = "1g.5gb"; },
           [](Allocation& x) { x.requested_models = {"nvidia-l4"}; },
           [](Allocation& x) { x.topology_key = "rack"; },
           [](Allocation& x) { x.lease = absl::Minutes(5); },
           [](Allocation& x) {
             x.node_selector = {{"pool", "a"}};
           },
           [](Allocation& x) { x.device_class = DeviceClass::kGoogleTpu; },
       }) {
    Allocation b = a;
    change(b);
    EXPECT_NE(ShapeOf(b), base);
  }
  Allocation same = a;
  same.id = "a-2";
  same.tenant = "other";
  same.priority = 7;
  EXPECT_EQ(ShapeOf(same), base);
  // Leases go by power of two seconds: 5 and 6 minutes (256..511 s) alike.
  Allocation five = a, six = a;
  five.lease = absl::Minutes(5);
  six.lease = absl::Minutes(6);
  EXPECT_EQ(ShapeOf(five), ShapeOf(six));
}

}  // namespace
}  // namespace accelsched
