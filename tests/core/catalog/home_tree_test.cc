#include "core/catalog/home_tree.h"

#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using Entry = HomeTree::Entry;
using ::testing::ElementsAre;

constexpr int64_t kAny = std::numeric_limits<int64_t>::min();

std::vector<std::string> Walk(const HomeTree& homes, const Entry& from,
                              int64_t min_memory, size_t most = SIZE_MAX) {
  std::vector<std::string> out;
  homes.ForEachFrom(from, min_memory, [&](const Entry& e) {
    out.push_back(e.home);
    return out.size() < most;
  });
  return out;
}

TEST(HomeTreeTest, WalksInOrderFromAKeySkippingHomesShortOfMemory) {
  HomeTree homes;
  homes.Insert({2, 4000, "b", 8});
  homes.Insert({1, 9000, "a", 64});
  homes.Insert({2, 4000, "a", 2});
  homes.Insert({2, 1000, "c", 64});
  homes.Insert({3, kUnaccountedCpu, "d", kUnaccountedMemory});
  EXPECT_EQ(homes.size(), 5u);
  // Order: free, then CPU, then name.
  EXPECT_THAT(Walk(homes, {}, kAny), ElementsAre("a", "c", "a", "b", "d"));
  EXPECT_THAT(Walk(homes, {2, 2000, ""}, kAny), ElementsAre("a", "b", "d"));
  EXPECT_THAT(Walk(homes, {2, 2000, ""}, 4), ElementsAre("b", "d"));
  EXPECT_THAT(Walk(homes, {2, 2000, ""}, 9), ElementsAre("d"));
  EXPECT_THAT(Walk(homes, {2, 2000, ""}, 9, 0), ElementsAre("d"));
  // The walk stops when visit says so.
  EXPECT_THAT(Walk(homes, {}, 8, 2), ElementsAre("a", "c"));
  ASSERT_NE(homes.Last(), nullptr);
  EXPECT_EQ(homes.Last()->home, "d");
  EXPECT_EQ(homes.MaxMemory(), kUnaccountedMemory);
  homes.Erase({3, kUnaccountedCpu, "d"});
  EXPECT_EQ(homes.Last()->home, "b");
  EXPECT_EQ(homes.MaxMemory(), 64);
  HomeTree none;
  EXPECT_EQ(none.Last(), nullptr);
  EXPECT_EQ(none.MaxMemory(), kAny);
}

TEST(HomeTreeTest, EraseFindsTheEntryByItsKeyWhateverItsMemory) {
  HomeTree homes;
  homes.Insert({1, 100, "a", 8});
  homes.Erase({1, 100, "a"});  // memory not given
  EXPECT_TRUE(homes.empty());
  homes.Erase({1, 100, "a"});  // absent: no-op
  EXPECT_TRUE(homes.empty());
  // Re-inserted with less memory, the subtree figures follow.
  homes.Insert({1, 100, "a", 64});
  homes.Insert({1, 200, "b", 2});
  EXPECT_THAT(Walk(homes, {}, 32), ElementsAre("a"));
  homes.Erase({1, 100, "a"});
  homes.Insert({1, 100, "a", 4});
  EXPECT_THAT(Walk(homes, {}, 32), ElementsAre());
  EXPECT_THAT(Walk(homes, {}, 3), ElementsAre("a"));
}

// Against a plain ordered set walked entry by entry, through inserts and
// erases that reshape the tree (so the per-subtree figures are recomputed on
// rotations).
TEST(HomeTreeTest, AgreesWithAPlainWalkThroughRandomChanges) {
  std::mt19937 rng(7);
  HomeTree homes;
  std::set<Entry> plain;
  for (int step = 0; step < 4000; ++step) {
    Entry e{static_cast<int>(rng() % 4) + 1, static_cast<int64_t>(rng() % 50),
            "n" + std::to_string(rng() % 300),
            static_cast<int64_t>(rng() % 100)};
    auto it = plain.find(e);
    if (it != plain.end()) {
      homes.Erase(e);
      plain.erase(it);
    } else {
      homes.Insert(e);
      plain.insert(e);
    }
    ASSERT_EQ(homes.size(), plain.size());
    if (step % 40 != 0) continue;
    const Entry from{static_cast<int>(rng() % 4) + 1,
                     static_cast<int64_t>(rng() % 50), ""};
    const int64_t min_memory = static_cast<int64_t>(rng() % 110);
    std::vector<std::string> want;
    for (auto p = plain.lower_bound(from); p != plain.end(); ++p) {
      if (p->memory >= min_memory) want.push_back(p->home);
    }
    ASSERT_EQ(Walk(homes, from, min_memory), want) << "step " << step;
  }
}

}  // namespace
}  // namespace accelsched
