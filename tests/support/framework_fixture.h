// A catalog, an allocation book and tenants' policies without a store or a
// scheduler, for the framework's and the plugins' tests: nodes of whole
// GPUs, live and pending allocations put straight into the book, the
// snapshot over them, sessions with holds and a statement that records what
// the cycle did, and cycle states of pending requests, through the default
// profile's framework (core/plugins/registry.h).
#ifndef ACCELSCHED_TESTS_SUPPORT_FRAMEWORK_FIXTURE_H_
#define ACCELSCHED_TESTS_SUPPORT_FRAMEWORK_FIXTURE_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "config/accelerator_types_file.h"
#include "core/book/allocation_book.h"
#include "core/book/book_records.h"
#include "core/catalog/catalog.h"
#include "core/catalog/node_validation.h"
#include "core/framework/cycle_state.h"
#include "core/framework/framework.h"
#include "core/framework/holds.h"
#include "core/framework/session.h"
#include "core/framework/snapshot.h"
#include "core/framework/statement.h"
#include "core/plugins/registry.h"
#include "core/tenants/tenant_policy.h"
#include "gtest/gtest.h"
#include "tests/support/scheduler_test_util.h"

namespace accelsched {

inline constexpr char kT4[] = "nvidia-tesla-t4";
inline constexpr char kL4[] = "nvidia-l4";

inline PoolKey GpuPool(const std::string& model) {
  return PoolKey{DeviceClass::kNvidiaGpu, model, ""};
}

// What a cycle asked the scheduler to do, in order, changing nothing.
class RecordingStatement final : public CycleStatement {
 public:
  void Place(const std::string& id, const Groups& groups) override {
    placed.emplace_back(id, groups);
  }
  void Preempt(const std::string& victim,
               const std::string& preemptor) override {
    preempted.emplace_back(victim, preemptor);
  }
  void PlanMigRelayout(const std::string& id,
                       const RelayoutChoice& choice) override {
    relayouts.emplace_back(id, choice);
  }

  std::vector<std::pair<std::string, Groups>> placed;
  // (victim, preemptor)
  std::vector<std::pair<std::string, std::string>> preempted;
  std::vector<std::pair<std::string, RelayoutChoice>> relayouts;
};

class FrameworkFixture : public testing::Test {
 protected:
  static absl::Time T0() { return absl::FromUnixSeconds(1'700'000'000); }

  FrameworkFixture() {
    snapshot_.index = &catalog_.index();
    snapshot_.nodes = &catalog_.nodes();
    snapshot_.catalog = &catalog_;
    snapshot_.book = &book_;
    snapshot_.tenants = &tenants_;
    snapshot_.types = types_.get();
    snapshot_.leases = &leases_;
    snapshot_.now = T0();
    snapshot_.default_lease = absl::Hours(1);
  }

  // Registers `name` with `gpus` whole GPUs of `model`, labelled `labels`.
  void AddNode(const std::string& name, int gpus, const char* model = kT4,
               Labels labels = {},
               std::optional<NodeResources> allocatable = std::nullopt) {
    std::vector<Device> devices;
    for (int i = 0; i < gpus; ++i) {
      devices.push_back(Gpu(absl::StrCat(name, "-gpu", i), model, i));
    }
    Node node = MakeNode(name, std::move(devices), std::move(labels));
    node.allocatable = allocatable;
    ASSERT_TRUE(NormalizeAndValidateNode(*types_, node).ok());
    ASSERT_TRUE(catalog_.Put(*types_, std::move(node), T0()).ok());
  }

  void SetTenants(std::map<std::string, TenantPolicy> tenants) {
    tenants_ = TenantPolicies(std::move(tenants));
  }

  // A live allocation to put into the book (AddLive).
 public:
  struct Live {
    std::string id;
    std::string tenant;
    std::string node;
    int units = 1;
    int priority = 0;
    absl::Duration lease_left = absl::Hours(1);  // expires at T0() + this
    absl::Duration admitted_ago = absl::Hours(1);
    const char* model = kT4;
    std::optional<NodeResources> pod_resources;
  };

 protected:
  // Puts an ACTIVE allocation into the book holding `units` free units of
  // its model on its node.
  const Allocation& AddLive(const Live& l) {
    AllocationBook::Record r;
    Allocation& a = r.allocation;
    a.id = l.id;
    a.request_id = absl::StrCat("r-", l.id);
    a.state = AllocationState::kActive;
    a.tenant = l.tenant;
    a.priority = l.priority;
    a.device_class = DeviceClass::kNvidiaGpu;
    a.requested_models = {l.model};
    a.model = l.model;
    a.count = l.units;
    a.node = l.node;
    a.admitted_at = T0() - l.admitted_ago;
    a.expires_at = T0() + l.lease_left;
    a.pod_resources = l.pod_resources;
    for (const std::string& key : catalog_.index().UnitsOnNode(l.node)) {
      if (static_cast<int>(r.units.size()) == l.units) break;
      const Unit* u = catalog_.index().Find(key);
      if (u->pool != GpuPool(l.model) || !u->holder.empty()) continue;
      r.units.push_back(key);
      a.devices.insert(a.devices.end(), u->devices.begin(), u->devices.end());
    }
    EXPECT_EQ(static_cast<int>(r.units.size()), l.units) << l.id;
    return book_.Add(std::move(r)).allocation;
  }

  // Marks live `victim` PREEMPTED for `preemptor`, in its grace for `grace`.
  void Preempted(const std::string& victim, const std::string& preemptor,
                 absl::Duration grace = absl::Seconds(30)) {
    book_.Preempt(*book_.Find(victim), preemptor, T0() + grace);
  }

  // Puts a PENDING allocation for `count` units of `models` into the book.
  const Allocation& AddPending(const std::string& id, const std::string& tenant,
                               int count = 1, int priority = 0,
                               std::vector<std::string> models = {kT4}) {
    AllocationBook::Record r;
    Allocation& a = r.allocation;
    a.id = id;
    a.request_id = absl::StrCat("r-", id);
    a.state = AllocationState::kPending;
    a.tenant = tenant;
    a.priority = priority;
    a.device_class = DeviceClass::kNvidiaGpu;
    a.requested_models = std::move(models);
    a.count = count;
    a.expires_at = T0() + absl::Minutes(10);
    return book_.Add(std::move(r)).allocation;
  }

  // A framework of the default profile for `options`.
  static std::unique_ptr<const Framework> MakeFramework(
      ProfileOptions options = ProfileOptions{}) {
    absl::StatusOr<std::unique_ptr<Framework>> fw =
        Framework::Create(PluginRegistry(), DefaultProfile(options));
    EXPECT_TRUE(fw.ok()) << fw.status();
    return *std::move(fw);
  }

  // A pass's session over the fixture: holds taking over `previous`'s for
  // the requests `waiting` says still wait (none by default).
  struct PassSession {
    PassSession(const Framework& framework, const Snapshot& snapshot,
                const AllocationBook* book, const ReservationState* previous,
                bool refresh, std::function<bool(absl::string_view)> waiting)
        : holds(book, previous, refresh, waiting),
          session(framework, snapshot, holds, statement) {}
    Holds holds;
    RecordingStatement statement;
    Session session;
  };
  std::unique_ptr<PassSession> NewSession(
      const ReservationState* previous = nullptr, bool refresh = true,
      std::function<bool(absl::string_view)> waiting = [](absl::string_view) {
        return false;
      }) {
    if (framework_ == nullptr) framework_ = MakeFramework();
    snapshot_.previous = previous;
    snapshot_.refresh = refresh;
    return std::make_unique<PassSession>(*framework_, snapshot_, &book_,
                                         previous, refresh, waiting);
  }

  // A prepared cycle of `request` (kAdmit: a pending request in a pass) for
  // `spec`, reading `session`'s holds.
  std::unique_ptr<CycleState> Cycle(PassSession& s, const Allocation& request,
                                    const MatchSpec& spec,
                                    CycleMode mode = CycleMode::kAdmit) {
    auto cycle =
        std::make_unique<CycleState>(mode, snapshot_, spec, request, &s.holds);
    cycle->notes().queued = true;
    framework_->Prepare(*cycle);
    return cycle;
  }

  std::shared_ptr<const AcceleratorTypeSet> types_ = BuiltinAcceleratorTypes();
  Catalog catalog_{&holdings_, nullptr};
  UnitHoldings holdings_{&catalog_.mutable_index()};
  AllocationBook book_{&holdings_};
  BookLeases leases_{&book_};
  TenantPolicies tenants_;
  Snapshot snapshot_;
  std::unique_ptr<const Framework> framework_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_FRAMEWORK_FIXTURE_H_
