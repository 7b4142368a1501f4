// The reservations plugin: a node's units of a pool held for another
// waiting request are not taken, unless the request is the one they are
// held for, its lease ends by the hold's start, or the hold is a nominated
// or planned-ahead one of a lower priority. Explain's account leaves it
// out; a request refused only for holds is told so apart.
#include "core/plugins/reservations/reservations.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/catalog/capacity_index.h"
#include "core/framework/cycle_state.h"
#include "core/framework/diagnosis.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/matching/match_spec.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

const absl::Time kNow = absl::FromUnixSeconds(1000);
// When the holds of these tests start.
const absl::Time kStart = kNow + absl::Hours(1);
const PoolKey kT4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
const PoolKey kL4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};

// A bare index of two T4s on each of `nodes`, with a scratch copy of holds
// that the tests fill, and cycles of a request (`request_`: its id and
// priority) through the default profile (best fit).
class ReservationsTest : public testing::Test {
 protected:
  ReservationsTest()
      : framework_(MakeFramework()),
        holds_(nullptr, nullptr, Holds::Standing::kScratch),
        session_(*framework_, snapshot_, holds_, statement_) {
    snapshot_.index = &index_;
    snapshot_.nodes = &nodes_;
    snapshot_.now = kNow;
  }

  static std::unique_ptr<const Framework> MakeFramework() {
    absl::StatusOr<std::unique_ptr<Framework>> fw = Framework::Create(
        PluginRegistry(),
        DefaultProfile(ProfileOptions{Packing::kBestFit, false}));
    EXPECT_TRUE(fw.ok()) << fw.status();
    return *std::move(fw);
  }

  void AddNodes(const std::vector<std::string>& names) {
    for (const std::string& name : names) {
      Node n;
      n.name = name;
      n.last_heartbeat = kNow;
      nodes_[name] = n;
      for (int g = 0; g < 2; ++g) {
        Unit u;
        u.key = absl::StrCat(name, "-gpu", g);
        u.pool = kT4;
        u.home = name;
        u.hosts = {name};
        u.devices = {{name, u.key, "", ""}};
        u.order = g;
        index_.Put(std::move(u));
      }
    }
  }

  // A prepared cycle of the request for `spec` whose lease ends at
  // `ends_at`, reading `holds` (kept for the cycle).
  std::unique_ptr<CycleState> Cycle(const MatchSpec& spec, absl::Time ends_at,
                                    const Holds* holds) {
    specs_.push_back(std::make_unique<MatchSpec>(spec));
    auto cycle = std::make_unique<CycleState>(
        CycleMode::kAdmit, snapshot_, *specs_.back(), request_, holds, ends_at);
    framework_->Prepare(*cycle);
    return cycle;
  }

  // The node the request is placed on, or "none".
  std::string Placed(absl::Time ends_at) {
    std::unique_ptr<CycleState> cycle =
        Cycle(MatchSpec::ForPool(kT4, 1), ends_at, &holds_);
    std::optional<Groups> groups = framework_->Place(session_, *cycle);
    return groups.has_value() ? groups->front().front()->home : "none";
  }

  CapacityIndex index_;
  NodeMap nodes_;
  Snapshot snapshot_;
  std::unique_ptr<const Framework> framework_;
  Holds holds_;
  DryStatement statement_;
  Session session_;
  Allocation request_;
  std::vector<std::unique_ptr<MatchSpec>> specs_;
  ReservationsPlugin plugin_;
};

// Whether the plugin holds n1's T4s back from a request of `priority`
// (`id`, lease ending at `ends_at`) for each kind of hold.
TEST_F(ReservationsTest, FilterHoldsBackWhatIsHeldForAnother) {
  struct Case {
    std::string name;
    Reservation hold;
    std::string id;  // the requester's ("" for a new request)
    int priority;
    absl::Time ends_at;
    std::string node = "n1";
    const PoolKey* pool = &kT4;
    bool held;
  };
  const Reservation backfill{kStart, "w"};
  const Reservation nominated{kStart, "w", /*nominated=*/true, /*priority=*/1};
  const Reservation ahead{kStart, "w", false, /*priority=*/1, /*ahead=*/true};
  const absl::Time late = kStart + absl::Minutes(1);
  for (const Case& c : std::vector<Case>{
           {"a lease past the start", backfill, "", 0, late, "n1", &kT4, true},
           {"a lease ending at the start", backfill, "", 0, kStart, "n1", &kT4,
            false},
           {"a lease ending before the start", backfill, "", 0,
            kStart - absl::Minutes(1), "n1", &kT4, false},
           {"a lease not known", backfill, "", 0, absl::InfiniteFuture(), "n1",
            &kT4, true},
           {"its own hold", backfill, "w", 0, late, "n1", &kT4, false},
           {"another's hold, pending", backfill, "v", 0, late, "n1", &kT4,
            true},
           // A backfill hold never yields to priority.
           {"backfill, a higher priority", backfill, "", 9, late, "n1", &kT4,
            true},
           {"nominated, a higher priority", nominated, "", 2, late, "n1", &kT4,
            false},
           {"nominated, the same priority", nominated, "", 1, late, "n1", &kT4,
            true},
           {"nominated, a lower priority", nominated, "", 0, late, "n1", &kT4,
            true},
           {"nominated, a lower priority whose lease ends first", nominated, "",
            0, kStart, "n1", &kT4, false},
           {"ahead, a higher priority", ahead, "", 2, late, "n1", &kT4, false},
           {"ahead, the same priority", ahead, "", 1, late, "n1", &kT4, true},
           {"another node", backfill, "", 0, late, "n2", &kT4, false},
           {"another pool", backfill, "", 0, late, "n1", &kL4, false},
       }) {
    Holds holds(nullptr, nullptr, Holds::Standing::kScratch);
    holds.Hold(kT4, "n1", c.hold);
    request_.id = c.id;
    request_.priority = c.priority;
    std::unique_ptr<CycleState> cycle =
        Cycle(MatchSpec::ForPool(kT4, 1), c.ends_at, &holds);
    const char* why =
        plugin_.Filter(*cycle, NodeView{c.node, nullptr, c.pool, {}});
    EXPECT_EQ(why == nullptr ? "" : std::string(why),
              c.held ? "held for a waiting request" : "")
        << c.name;
  }
}

// Prepared only when the cycle reads holds and there are some.
TEST_F(ReservationsTest, PreparedOnlyWhenSomethingIsHeld) {
  EXPECT_EQ(plugin_.kind(), FilterPlugin::Kind::kHeld);
  const MatchSpec spec = MatchSpec::ForPool(kT4, 1);
  CycleState no_holds(CycleMode::kAdmit, snapshot_, spec, request_, nullptr,
                      kStart);
  EXPECT_FALSE(plugin_.Prepare(no_holds));
  CycleState none_held(CycleMode::kAdmit, snapshot_, spec, request_, &holds_,
                       kStart);
  EXPECT_FALSE(plugin_.Prepare(none_held));
  holds_.Hold(kL4, "n9", Reservation{kStart, "w"});
  CycleState held(CycleMode::kAdmit, snapshot_, spec, request_, &holds_,
                  kStart);
  EXPECT_TRUE(plugin_.Prepare(held));
}

// Through a placement: best fit's node, held, is passed over unless the
// request's lease ends by the hold's start.
TEST_F(ReservationsTest, APlacementPassesOverAHeldNode) {
  AddNodes({"n1", "n2"});
  index_.SetHolder("n1-gpu0", "x");  // n1 is best fit's: one free
  EXPECT_EQ(Placed(absl::InfiniteFuture()), "n1");
  holds_.Hold(kT4, "n1", Reservation{kStart, "w"});
  EXPECT_EQ(Placed(kStart + absl::Minutes(1)), "n2");
  EXPECT_EQ(Placed(kStart), "n1");
  holds_.Hold(kT4, "n2", Reservation{kStart, "w"});
  EXPECT_EQ(Placed(kStart + absl::Minutes(1)), "none");
  request_.id = "w";
  EXPECT_EQ(Placed(kStart + absl::Minutes(1)), "n1");
}

// A hold is for a time: the per-node account does not weigh it, and a
// request that would fit but for holds is told so after the account.
TEST_F(ReservationsTest, ARequestRefusedForHoldsIsToldSo) {
  AddNodes({"n1"});
  EXPECT_FALSE(plugin_.in_account());
  holds_.Hold(kT4, "n1", Reservation{kStart, "w"});
  std::unique_ptr<CycleState> cycle =
      Cycle(MatchSpec::ForPool(kT4, 1), kStart + absl::Minutes(1), &holds_);
  EXPECT_FALSE(framework_->Place(session_, *cycle).has_value());
  EXPECT_EQ(WhyRefused(*framework_, session_, *cycle),
            "1/1 nodes available; what is free there is held for waiting "
            "requests until their reservations start (a request whose lease "
            "ends by then may take it)");
  // Short of units, holds or not: no note.
  std::unique_ptr<CycleState> three =
      Cycle(MatchSpec::ForPool(kT4, 3), kStart + absl::Minutes(1), &holds_);
  EXPECT_EQ(WhyRefused(*framework_, session_, *three),
            "0/1 nodes available: 1 too few free nvidia-tesla-t4 devices");
}

}  // namespace
}  // namespace accelsched
