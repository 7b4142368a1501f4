// An admission pass (core/framework/admission_pass.h) over a queue, with the
// default profile, over the fixture's catalog and book: what it places, the
// shapes it gives up on, and who goes first. The fixture's statement records
// and books nothing, so each case asks only for what a pass decides, not
// for what a booked placement would change after.
#include "core/framework/admission_pass.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/queue/queue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

TenantPolicy QuotedT4(int64_t nominal, int64_t l4_nominal = -1) {
  TenantPolicy p;
  p.quotas[GpuPool(kT4)] = Quota{nominal * kGpuMilli, std::nullopt};
  if (l4_nominal >= 0) {
    p.quotas[GpuPool(kL4)] = Quota{l4_nominal * kGpuMilli, std::nullopt};
  }
  return p;
}

class AdmissionPassTest : public FrameworkFixture {
 protected:
  // Enters pending `id` into the book and the queue.
  void Queued(const std::string& id, const std::string& tenant,
              int priority = 0, std::vector<std::string> models = {kT4}) {
    queue_.Add(AddPending(id, tenant, 1, priority, std::move(models)));
  }

  ReservationState Pass(PassSession& s) {
    return RunAdmissionPass(*framework_, s.session, queue_);
  }

  static std::vector<std::string> PlacedIds(const RecordingStatement& st) {
    std::vector<std::string> ids;
    for (const auto& [id, groups] : st.placed) ids.push_back(id);
    return ids;
  }

  Queue queue_;
};

TEST_F(AdmissionPassTest, ARequestThatFitsIsPlacedThroughTheStatement) {
  AddNode("n1", 2);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1"});
  Queued("p-1", "a");
  std::unique_ptr<PassSession> s = NewSession();
  const ReservationState next = Pass(*s);
  ASSERT_EQ(s->statement.placed.size(), 1);
  const auto& [id, groups] = s->statement.placed[0];
  EXPECT_EQ(id, "p-1");
  ASSERT_EQ(groups.size(), 1);
  ASSERT_EQ(groups[0].size(), 1);
  // The unit x-1 does not hold.
  EXPECT_EQ(groups[0][0]->home, "n1");
  EXPECT_TRUE(groups[0][0]->holder.empty());
  EXPECT_TRUE(s->session.placed("p-1"));
  EXPECT_THAT(s->statement.preempted, IsEmpty());
  // Placed: it holds nothing for the next pass.
  EXPECT_FALSE(next.starts.contains("p-1"));
}

// The one T4 is x-1's, of a priority no one here may preempt. p-1 finds no
// room (and holds n1 from when x-1's lease ends); p-2, of the same shape at a
// lower priority, is then given p-1's reason without a cycle of its own
// (which would have held nothing: p-1 took the pool's turn), and p-3, of
// the same shape and priority as p-1, is never visited.
TEST_F(AdmissionPassTest, WithoutQuotasAShapeWithoutRoomIsSkippedForEveryone) {
  AddNode("n1", 1);
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .priority = 9});
  Queued("p-1", "a", 1);
  Queued("p-2", "b", 0);
  Queued("p-3", "b", 1);
  std::unique_ptr<PassSession> s = NewSession();
  const ReservationState next = Pass(*s);
  EXPECT_THAT(s->statement.placed, IsEmpty());
  const std::string why =
      "no node has 1 free nvidia-tesla-t4 device (0 free of 1); holds n1 "
      "from 2023-11-14T23:13:20+00:00";  // T0() + x-1's hour
  EXPECT_EQ(queue_.Reason("p-1"), why);
  EXPECT_EQ(queue_.Reason("p-2"), why);
  EXPECT_EQ(queue_.Reason("p-3"), "");
  EXPECT_TRUE(next.starts.contains("p-1"));
  EXPECT_FALSE(next.starts.contains("p-2"));
}

// With quotas a tenant's quota may narrow what a request of a shape may
// take: a, whose L4 quota is 0, may take only the full T4 and is skipped
// with its group (p-3); b, of the same shape but not narrowed, is still
// tried and takes the free L4; c, narrowed as a was, gets p-1's reason
// without a cycle of its own (which would have held nothing).
TEST_F(AdmissionPassTest, WithQuotasOnlyTheGroupOfWhatIsNarrowedIsSkipped) {
  AddNode("n1", 1, kT4);
  AddNode("n2", 1, kL4);
  SetTenants({{"a", QuotedT4(4, 0)}, {"c", QuotedT4(4, 0)}});
  AddLive({.id = "x-1", .tenant = "x", .node = "n1", .priority = 9});
  Queued("p-1", "a", 0, {});
  Queued("p-2", "b", 0, {});
  Queued("p-3", "a", 0, {});
  Queued("p-4", "c", 0, {});
  std::unique_ptr<PassSession> s = NewSession();
  Pass(*s);
  ASSERT_THAT(PlacedIds(s->statement), ElementsAre("p-2"));
  EXPECT_EQ(s->statement.placed[0].second[0][0]->home, "n2");
  // Narrowed to the T4 (nvidia-tesla-t4 alone in the reason).
  const std::string why =
      "no node has 1 free nvidia-tesla-t4 device (0 free of 1); holds n1 "
      "from 2023-11-14T23:13:20+00:00";
  EXPECT_EQ(queue_.Reason("p-1"), why);
  EXPECT_EQ(queue_.Reason("p-3"), "");
  EXPECT_EQ(queue_.Reason("p-4"), why);
}

struct FirstCase {
  const char* name;
  bool held_from_last_pass;  // p-9's nominated hold on n1
  bool victim_in_grace;      // its victim x-1 has not ended yet
  std::vector<std::string> relayouts_done;
  std::vector<std::string> order;  // placed, in order

  friend void PrintTo(const FirstCase& c, std::ostream* os) { *os << c.name; }
};

class WhoGoesFirstTest : public AdmissionPassTest,
                         public testing::WithParamInterface<FirstCase> {};

// p-1 (priority 1) goes before p-9 (priority 0) in the queue's order, unless
// p-9 is a preemptor whose victims have all ended, onto the nodes held for
// it since the last pass, or a request whose MIG re-layout is done. (Both
// fit: the recording statement books neither.)
TEST_P(WhoGoesFirstTest, PlacesInOrder) {
  const FirstCase& c = GetParam();
  AddNode("n1", 4);
  if (c.victim_in_grace) {
    AddLive({.id = "x-1", .tenant = "x", .node = "n1"});
    Preempted("x-1", "p-9");
  }
  Queued("p-1", "a", 1);
  Queued("p-9", "b", 0);
  ReservationState previous;
  if (c.held_from_last_pass) {
    previous.reservations[GpuPool(kT4)]["n1"] = Reservation{
        .start = T0(), .held_for = "p-9", .nominated = true, .priority = 0};
  }
  snapshot_.relayouts_done = c.relayouts_done;
  std::unique_ptr<PassSession> s =
      NewSession(&previous, true, [&](absl::string_view id) {
        return queue_.contains(id);
      });
  EXPECT_EQ(s->holds.kept_preemptors().contains("p-9"),
            c.held_from_last_pass);
  Pass(*s);
  EXPECT_THAT(PlacedIds(s->statement), ElementsAreArray(c.order));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, WhoGoesFirstTest,
    testing::Values(
        FirstCase{"TheQueuesOrder", false, false, {}, {"p-1", "p-9"}},
        FirstCase{"APreemptorWhoseVictimsEndedGoesFirst", true, false, {},
                  {"p-9", "p-1"}},
        FirstCase{"APreemptorWhoseVictimIsInItsGraceWaitsItsTurn", true, true,
                  {}, {"p-1", "p-9"}},
        FirstCase{"ARelayoutDoneGoesFirst", false, false, {"p-9"},
                  {"p-9", "p-1"}},
        // Not queued (taken out meanwhile): nothing to place.
        FirstCase{"ARelayoutDoneNoLongerQueuedIsPassedBy", false, false,
                  {"p-7"}, {"p-1", "p-9"}}),
    [](const testing::TestParamInfo<FirstCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace accelsched
