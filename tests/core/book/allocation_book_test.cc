// The allocation book on its own: no store, no scheduler.
#include "core/book/allocation_book.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
  EXPECT_EQ(leases.FreeAt("a-1", kT0), kT0 + absl::Hours(1));
  EXPECT_EQ(leases.FreeAt("a-2", kT0), absl::InfinitePast());
  EXPECT_EQ(leases.FreeAt("a-3", kT0), absl::InfinitePast());
  EXPECT_EQ(leases.FreeAt("a-9", kT0), absl::InfinitePast());
}

// The book's expected ends: an ACTIVE allocation whose runtime is given or
// was learned when it was admitted is expected at admitted_at + it (its
// lease end once it has outlived that); the learner learns only from
// allocations released after running, and a rebuild replays the book in
// the order things happened.
TEST_F(AllocationBookTest, LeasesExpectKnownRuntimesAndLearnFromReleases) {
  BookLeases leases(&book_);
  auto admit = [&](const std::string& id, const std::vector<std::string>& units,
                   absl::Time at, absl::Duration expected) {
    AllocationBook::Record r =
        Live(id, "r-" + id, units, at + absl::Hours(24), "team");
    r.allocation.count = static_cast<int>(units.size());
    r.allocation.admitted_at = at;
    r.allocation.expected_duration = expected;
    AllocationBook::Record& added = book_.Add(std::move(r));
    leases.Admitted(added);
    return &added;
  };
  auto end = [&](AllocationBook::Record* r, AllocationState state,
                 const char* reason, absl::Time at) {
    book_.End(*r, state, reason, at);
    leases.Ended(*r);
  };
  // Given: 2 h from admission, whatever the 24 h lease; past it, any moment.
  // (Of 2 GPUs: another shape than the runs below.)
  AllocationBook::Record* given =
      admit("a-1", {"g0", "g2"}, kT0, absl::Hours(2));
  EXPECT_EQ(leases.FreeAt("a-1", kT0), kT0 + absl::Hours(2));
  EXPECT_EQ(leases.FreeAt("a-1", kT0 + absl::Hours(3)), kT0 + absl::Hours(3));
  end(given, AllocationState::kReleased, kReasonReleased, kT0 + absl::Hours(1));
  EXPECT_EQ(leases.FreeAt("a-1", kT0), absl::InfinitePast());

  // Admitted before anything is learned: its lease, then and after a
  // rebuild.
  const absl::Time early = kT0 + absl::Minutes(90);
  admit("a-10", {"g0"}, early, absl::ZeroDuration());
  // Three released runs of 30 minutes teach the learner; an expired, a
  // preempted and a withdrawn one teach it nothing.
  absl::Time t = kT0 + absl::Hours(2);
  for (int i = 0; i < 3; ++i) {
    AllocationBook::Record* r =
        admit(absl::StrCat("a-2", i), {"g1"}, t, absl::ZeroDuration());
    EXPECT_EQ(leases.FreeAt(r->allocation.id, t), t + absl::Hours(24));
    end(r, AllocationState::kReleased, kReasonReleased, t + absl::Minutes(30));
    t += absl::Hours(1);
  }
  for (const auto& [state, reason] :
       std::vector<std::pair<AllocationState, const char*>>{
           {AllocationState::kExpired, kReasonExpired},
           {AllocationState::kPreempted, kReasonPreempted},
           {AllocationState::kReleased, kReasonWithdrawn}}) {
    AllocationBook::Record* r =
        admit(absl::StrCat("a-3", reason), {"g1"}, t, absl::ZeroDuration());
    end(r, state, reason, t + absl::Hours(5));
    t += absl::Hours(6);
  }
  RequestSpec one_t4;
  one_t4.count = 1;
  const std::string key = DurationLearner::KeyOf("team", one_t4);
  ASSERT_TRUE(leases.learned().Estimate(key, t).has_value());
  EXPECT_EQ(leases.learned().Estimate(key, t)->duration, absl::Minutes(30));
  EXPECT_EQ(leases.learned().Estimate(key, t)->samples, 3);
  // A new allocation of that shape is expected for the learned 30 minutes;
  // so is one whose id sorts first (made early, admitted now): the rebuild
  // replays by time, not by id.
  admit("a-4", {"g2"}, t, absl::ZeroDuration());
  EXPECT_EQ(leases.FreeAt("a-4", t), t + absl::Minutes(30));
  admit("a-05", {"g1"}, t, absl::ZeroDuration());
  EXPECT_EQ(leases.FreeAt("a-05", t), t + absl::Minutes(30));

  // Rebuilt, as after a restart: the same, learned in the order it happened.
  BookLeases rebuilt(&book_);
  rebuilt.Rebuild();
  EXPECT_EQ(rebuilt.learned().Estimate(key, t),
            leases.learned().Estimate(key, t));
  EXPECT_EQ(rebuilt.FreeAt("a-4", t), t + absl::Minutes(30));
  EXPECT_EQ(rebuilt.FreeAt("a-05", t), t + absl::Minutes(30));
  EXPECT_EQ(leases.FreeAt("a-10", early), early + absl::Hours(24));
  EXPECT_EQ(rebuilt.FreeAt("a-10", early), early + absl::Hours(24));
}

}  // namespace
}  // namespace accelsched
