// The allocation book on its own: no store, no scheduler.
#include "core/book/allocation_book.h"

#include <map>
#include <string>
#include <vector>

#include "core/book/book_records.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

Unit WholeGpu(std::string key) {
  Unit u;
  u.key = std::move(key);
  u.pool = PoolKey{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
  u.home = "n1";
  u.hosts = {"n1"};
  u.devices = {AllocatedDevice{"n1", u.key, "", ""}};
  return u;
}

class AllocationBookTest : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* key : {"g0", "g1", "g2"}) index_.Put(WholeGpu(key));
  }
  AllocationBook::Record Live(std::string id, std::string request_id,
                              std::vector<std::string> units,
                              absl::Time expires_at, std::string tenant = "") {
    AllocationBook::Record r;
    r.allocation.id = std::move(id);
    r.allocation.request_id = std::move(request_id);
    r.allocation.state = AllocationState::kActive;
    r.allocation.tenant = std::move(tenant);
    r.allocation.expires_at = expires_at;
    for (const std::string& u : units) {
      r.allocation.devices.push_back(AllocatedDevice{"n1", u, "", ""});
    }
    r.units = std::move(units);
    return r;
  }
  int64_t Allocated() {
    return index_
        .FindPool(PoolKey{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""})
        ->allocated;
  }

  CapacityIndex index_;
  UnitHoldings holdings_{&index_};
  AllocationBook book_{&holdings_};
};

TEST_F(AllocationBookTest, HoldingAndEndingMoveOwnerAndIndexTogether) {
  book_.Add(Live("a-1", "r1", {"g0", "g1"}, kT0 + absl::Hours(1)));
  EXPECT_EQ(book_.holdings().HolderOf("g0"), "a-1");
  EXPECT_EQ(index_.Find("g1")->holder, "a-1");
  EXPECT_EQ(Allocated(), 2);
  AllocationBook::Record& r = *book_.Find("a-1");
  book_.End(r, AllocationState::kReleased, kReasonReleased, kT0);
  EXPECT_EQ(book_.holdings().HolderOf("g0"), "");
  EXPECT_EQ(Allocated(), 0);
  EXPECT_EQ(r.allocation.state, AllocationState::kReleased);
  EXPECT_EQ(r.allocation.end_reason, "released");
  EXPECT_EQ(r.allocation.ended_at, kT0);
  // Ended, it is no longer due for expiry and no longer counted as active.
  EXPECT_THAT(book_.Due(kT0 + absl::Hours(2)), IsEmpty());
  EXPECT_THAT(book_.tallies().active_by_tenant(), IsEmpty());
}

TEST_F(AllocationBookTest, ARequestIdFindsItsNewestAllocation) {
  AllocationBook::Record& first =
      book_.Add(Live("a-1", "r1", {"g0"}, kT0 + absl::Hours(1)));
  book_.End(first, AllocationState::kExpired, kReasonExpired, kT0);
  book_.Add(Live("a-2", "r1", {"g1"}, kT0 + absl::Hours(1)));
  EXPECT_EQ(book_.Find({"", "r1"})->allocation.id, "a-2");
  EXPECT_EQ(book_.Find("a-1")->allocation.state, AllocationState::kExpired);
  EXPECT_EQ(book_.Find({"", "r9"}), nullptr);
  EXPECT_EQ(book_.Find("a-9"), nullptr);
  // Forgetting the older one keeps the request id's newest.
  EXPECT_THAT(book_.ForgetEnded(kT0 + absl::Seconds(1)), ElementsAre("a-1"));
  EXPECT_EQ(book_.Find({"", "r1"})->allocation.id, "a-2");
  EXPECT_EQ(book_.Find("a-1"), nullptr);
}

TEST_F(AllocationBookTest, LeasesComeDueInExpiryOrder) {
  book_.Add(Live("a-1", "r1", {"g0"}, kT0 + absl::Minutes(3)));
  book_.Add(Live("a-2", "r2", {"g1"}, kT0 + absl::Minutes(1)));
  book_.Add(Live("a-3", "r3", {"g2"}, kT0 + absl::Minutes(2)));
  book_.SetExpiry(*book_.Find("a-3"), kT0 + absl::Minutes(9));
  std::vector<std::string> due;
  for (auto* r : book_.Due(kT0 + absl::Minutes(3))) {
    due.push_back(r->allocation.id);
  }
  EXPECT_THAT(due, ElementsAre("a-2", "a-1"));
  EXPECT_THAT(book_.Due(kT0), IsEmpty());
}

TEST_F(AllocationBookTest, LoadTakesOwnersWithoutMarkingTheIndex) {
  StoredAllocation live{Live("a-1", "r1", {"g0"}, kT0).allocation, {"g0"}};
  StoredAllocation ended{Live("a-2", "r2", {"g1"}, kT0).allocation, {"g1"}};
  ended.allocation.state = AllocationState::kReleased;
  book_.Load({live, ended});
  EXPECT_EQ(book_.holdings().HolderOf("g0"), "a-1");
  EXPECT_EQ(book_.holdings().HolderOf("g1"), "");
  EXPECT_EQ(Allocated(), 0);  // the catalog, loaded next, asks HolderOf
  EXPECT_EQ(book_.tallies().active_by_tenant(),
            (std::map<std::string, int64_t>{{"", 1}}));
}

TEST_F(AllocationBookTest, ListFiltersAndPagesInIdOrder) {
  book_.Add(Live("a-1", "r1", {"g0"}, kT0, "x"));
  book_.Add(Live("a-2", "r2", {"g1"}, kT0, "y"));
  book_.Add(Live("a-3", "r3", {"g2"}, kT0, "x"));
  AllocationFilter x;
  x.tenant = "x";
  AllocationPage page = AllocationsPage(book_, x, 1, "");
  ASSERT_EQ(page.allocations.size(), 1u);
  EXPECT_EQ(page.allocations[0].id, "a-1");
  EXPECT_FALSE(page.next_page_token.empty());
  page = AllocationsPage(book_, x, 1, "a-1");
  ASSERT_EQ(page.allocations.size(), 1u);
  EXPECT_EQ(page.allocations[0].id, "a-3");
  EXPECT_TRUE(page.next_page_token.empty());
  AllocationFilter on_node;
  on_node.node = "n2";
  EXPECT_THAT(AllocationsPage(book_, on_node, 10, "").allocations, IsEmpty());
}

TEST_F(AllocationBookTest, ActiveCountsFollowPreemptionAndEnd) {
  AllocationBook::Record& a =
      book_.Add(Live("a-1", "r1", {"g0"}, kT0 + absl::Hours(1), "x"));
  book_.Add(Live("a-2", "r2", {"g1"}, kT0 + absl::Hours(1), "x"));
  EXPECT_EQ(book_.tallies().active_by_tenant(),
            (std::map<std::string, int64_t>{{"x", 2}}));
  // A PREEMPTED one is live (it holds its units through its grace) but no
  // longer ACTIVE.
  book_.Preempt(a, "a-9", kT0 + absl::Minutes(1));
  EXPECT_EQ(book_.tallies().active_by_tenant(),
            (std::map<std::string, int64_t>{{"x", 1}}));
  book_.End(a, AllocationState::kPreempted, "preempted", kT0);
  book_.End(*book_.Find("a-2"), AllocationState::kReleased, kReasonReleased,
            kT0);
  EXPECT_THAT(book_.tallies().active_by_tenant(), IsEmpty());
}

TEST_F(AllocationBookTest, PendingRecordsAndLeasesReadEveryRecord) {
  AllocationBook::Record pending;
  pending.allocation.id = "a-3";
  pending.allocation.request_id = "r3";
  pending.allocation.state = AllocationState::kPending;
  pending.allocation.expires_at = kT0 + absl::Minutes(5);
  book_.Add(std::move(pending));
  book_.Add(Live("a-1", "r1", {"g0"}, kT0 + absl::Hours(1)));
  AllocationBook::Record& ended =
      book_.Add(Live("a-2", "r2", {"g1"}, kT0 + absl::Hours(2)));
  book_.End(ended, AllocationState::kReleased, kReasonReleased, kT0);
  std::vector<std::string> ids;
  for (const AllocationBook::Record* r : PendingRecords(book_)) {
    ids.push_back(r->allocation.id);
  }
  EXPECT_THAT(ids, ElementsAre("a-3"));
  // Only a live allocation's units come free at its expiry.
  const BookLeases leases(&book_);
  EXPECT_EQ(leases.FreeAt("a-1"), kT0 + absl::Hours(1));
  EXPECT_EQ(leases.FreeAt("a-2"), absl::InfinitePast());
  EXPECT_EQ(leases.FreeAt("a-3"), absl::InfinitePast());
  EXPECT_EQ(leases.FreeAt("a-9"), absl::InfinitePast());
}

}  // namespace
}  // namespace accelsched
