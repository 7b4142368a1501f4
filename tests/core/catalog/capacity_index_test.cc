#include "core/catalog/capacity_index.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/catalog/pool_queries.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;

const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

Unit T4(const std::string& key, const std::string& node, int order) {
  return Unit{key, kT4,   node, {node}, {{node, key, "", ""}},
              "",  order, true, ""};
}

Unit Whole(const PoolKey& pool, const std::string& key, const std::string& node,
           int order) {
  Unit u = T4(key, node, order);
  u.pool = pool;
  return u;
}

std::vector<HomeTree::Entry> Entries(const HomeTree& homes) {
  std::vector<HomeTree::Entry> out;
  homes.ForEach([&](const HomeTree::Entry& e) {
    out.push_back(e);
    return true;
  });
  return out;
}

TEST(CapacityIndexTest, CountsFollowHealthAndAllocation) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  Unit sick = T4("c", "n2", 0);
  sick.healthy = false;
  index.Put(sick);
  index.SetHolder("a", "alloc-1");
  EXPECT_THAT(CapacityOf(index),
              ElementsAre(CapacityEntry{DeviceClass::kNvidiaGpu,
                                        "nvidia-tesla-t4", "", 3, 1, 1, 1}));
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(CapacityIndex::FreeEntry{1, kUnaccountedCpu, "n1"}));
  EXPECT_EQ(*pool->home_sizes.rbegin(), 2);
  index.SetHolder("a", "");
  EXPECT_THAT(Entries(pool->by_free),
              ElementsAre(CapacityIndex::FreeEntry{2, kUnaccountedCpu, "n1"}));
  index.Remove("a");
  index.Remove("b");
  index.Remove("c");
  EXPECT_TRUE(CapacityOf(index).empty());
  EXPECT_EQ(index.FindPool(kT4), nullptr);
  EXPECT_TRUE(index.UnitsOnNode("n1").empty());
}

// A GPU that takes shares is filed with the GPUs nobody shares while it has
// no share, under its shares' group while it has some and compute left, and
// in no tree when it is full, held whole or unhealthy; no empty group's tree
// is kept.
TEST(CapacityIndexTest, SharingGpusAreFiledByTheirSharesGroup) {
  CapacityIndex index;
  Unit gpu = T4("g", "n1", 0);
  gpu.sharing = GpuSharing::kMps;
  gpu.memory_bytes = 1000;
  index.Put(gpu);
  // Looked up each time: a unit put again is removed first, and its pool
  // with it when it was the pool's last.
  auto pool = [&] { return index.FindPool(kT4); };
  ASSERT_NE(pool(), nullptr);
  // (free milli, unit key) of each tree.
  using Filed = std::vector<std::pair<int, std::string>>;
  auto filed = [](const HomeTree& tree) {
    Filed out;
    for (const HomeTree::Entry& e : Entries(tree)) {
      out.emplace_back(e.free, e.home);
    }
    return out;
  };
  auto groups = [&] {
    std::vector<std::string> out;
    for (const auto& [group, tree] : pool()->by_share) out.push_back(group);
    return out;
  };
  EXPECT_EQ(filed(pool()->unshared), (Filed{{1000, "g"}}));
  EXPECT_TRUE(pool()->by_share.empty());
  index.AddShare("g", GpuShare{400, 400, "ns-a"}, +1);
  EXPECT_TRUE(filed(pool()->unshared).empty());
  EXPECT_THAT(groups(), ElementsAre("ns-a"));
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  EXPECT_EQ(index.Find("g")->share_group, "ns-a");
  index.AddShare("g", GpuShare{600, 600, "ns-a"}, +1);  // full
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_TRUE(filed(pool()->unshared).empty());
  index.AddShare("g", GpuShare{600, 600, "ns-a"}, -1);
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  // Unhealthy (re-put as the catalog does, its shares kept): in no tree.
  Unit sick = *index.Find("g");
  sick.healthy = false;
  index.Put(sick);
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_TRUE(filed(pool()->unshared).empty());
  Unit well = *index.Find("g");
  well.healthy = true;
  index.Put(well);
  EXPECT_EQ(filed(pool()->by_share.at("ns-a")), (Filed{{600, "g"}}));
  // The last share gone, any group may take it again.
  index.AddShare("g", GpuShare{400, 400, "ns-a"}, -1);
  EXPECT_EQ(index.Find("g")->share_group, "");
  EXPECT_TRUE(pool()->by_share.empty());
  EXPECT_EQ(filed(pool()->unshared), (Filed{{1000, "g"}}));
  index.SetHolder("g", "whole");
  EXPECT_TRUE(filed(pool()->unshared).empty());
  index.SetHolder("g", "");
  index.Remove("g");
  EXPECT_EQ(index.FindPool(kT4), nullptr);
}

// What each home offers follows its allocatable, whichever comes first.
TEST(CapacityIndexTest, ByAllocatableFollowsTheNodesAllocatable) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->unaccounted_homes, 1);
  EXPECT_TRUE(pool->by_allocatable.empty());
  index.SetAllocatable("n1", NodeResources{8000, 64, 0});
  EXPECT_EQ(pool->unaccounted_homes, 0);
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 8000, "n1", 64}));
  index.Put(T4("b", "n1", 1));  // a second unit: the same home
  index.SetAllocatable("n1", NodeResources{32000, 16, 0});
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 32000, "n1", 16}));
  // Accounted before its first unit arrives.
  index.SetAllocatable("n2", NodeResources{4000, 8, 0});
  index.Put(T4("c", "n2", 0));
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 4000, "n2", 8},
                          HomeTree::Entry{0, 32000, "n1", 16}));
  index.SetAllocatable("n1", std::nullopt);
  EXPECT_EQ(pool->unaccounted_homes, 1);
  EXPECT_THAT(Entries(pool->by_allocatable),
              ElementsAre(HomeTree::Entry{0, 4000, "n2", 8}));
  index.Remove("c");
  EXPECT_TRUE(pool->by_allocatable.empty());
}

TEST(CapacityIndexTest, KnowsHowManyHomesHaveEachFreeCount) {
  CapacityIndex index;
  for (int i = 0; i < 3; ++i) index.Put(T4("a" + std::to_string(i), "a", i));
  index.Put(T4("b0", "b", 0));
  index.Put(Whole(kL4, "c0", "c", 0));
  index.Put(Unit{"m0",
                 {DeviceClass::kNvidiaGpu, "nvidia-h100", "1g.10gb"},
                 "d",
                 {"d"},
                 {},
                 "g",
                 0,
                 true,
                 ""});
  const CapacityIndex::Pool* t4 = index.FindPool(kT4);
  EXPECT_EQ(t4->HomesWithFree(1), 1);
  EXPECT_EQ(t4->HomesWithFree(3), 1);
  EXPECT_EQ(t4->HomesWithFree(4), 0);
  index.SetHolder("a0", "x");
  EXPECT_EQ(t4->HomesWithFree(1), 1);
  EXPECT_EQ(t4->HomesWithFree(2), 1);
  EXPECT_EQ(t4->HomesWithFree(3), 0);
  index.SetHolder("b0", "x");
  EXPECT_EQ(t4->HomesWithFree(1), 0);
  EXPECT_EQ(t4->free(), 2);
  // Whole NVIDIA pools in model order; the MIG pool is not one.
  std::vector<std::string> models;
  for (const auto& [key, pool] : PoolsOf(index, DeviceClass::kNvidiaGpu, "")) {
    models.push_back(key->model);
  }
  EXPECT_THAT(models, ElementsAre("nvidia-l4", "nvidia-tesla-t4"));
  EXPECT_TRUE(PoolsOf(index, DeviceClass::kAmdGpu, "").empty());
}

// The index keeps who holds a home's units whole, through every change.
TEST(CapacityIndexTest, HoldersFollowAllocationsPutAndRemove) {
  CapacityIndex index;
  index.Put(T4("a", "n1", 0));
  index.Put(T4("b", "n1", 1));
  index.SetHolder("a", "x");
  index.SetHolder("b", "x");
  const CapacityIndex::Pool* pool = index.FindPool(kT4);
  ASSERT_NE(pool, nullptr);
  const CapacityIndex::Home& home = pool->homes.at("n1");
  EXPECT_EQ(home.holders.at("x"), 2);
  // Put again while held (a re-registration): the new unit is free.
  index.Put(T4("a", "n1", 0));
  EXPECT_EQ(home.holders.at("x"), 1);
  index.SetHolder("a", "y");
  EXPECT_EQ(home.holders.at("y"), 1);
  index.Remove("b");
  EXPECT_FALSE(home.holders.contains("x"));
  index.SetHolder("a", "");
  EXPECT_TRUE(home.holders.empty());
}

}  // namespace
}  // namespace accelsched
