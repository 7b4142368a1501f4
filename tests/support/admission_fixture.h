// A catalog, an allocation book and tenants' policies without a store or a
// scheduler, for the admission planners' tests: nodes of whole GPUs, live
// and pending allocations put straight into the book, and the
// AdmissionContext over them.
#ifndef ACCELSCHED_TESTS_SUPPORT_ADMISSION_FIXTURE_H_
#define ACCELSCHED_TESTS_SUPPORT_ADMISSION_FIXTURE_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "config/accelerator_types_file.h"
#include "core/admission/admission_context.h"
#include "core/tenants/tenant_policy.h"
#include "core/book/allocation_book.h"
#include "core/catalog/catalog.h"
#include "core/catalog/node_validation.h"
#include "gtest/gtest.h"
#include "tests/support/scheduler_test_util.h"

namespace accelsched {

inline constexpr char kT4[] = "nvidia-tesla-t4";
inline constexpr char kL4[] = "nvidia-l4";

inline PoolKey GpuPool(const std::string& model) {
  return PoolKey{DeviceClass::kNvidiaGpu, model, ""};
}

class AdmissionFixture : public testing::Test {
 protected:
  static absl::Time T0() { return absl::FromUnixSeconds(1'700'000'000); }

  AdmissionFixture() {
    ctx_.catalog = &catalog_;
    ctx_.book = &book_;
    ctx_.tenants = &tenants_;
    ctx_.rules.now = T0();
    ctx_.default_lease = absl::Hours(1);
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
      if (u->pool != GpuPool(l.model) || !u->allocation.empty()) continue;
      r.units.push_back(key);
      a.devices.insert(a.devices.end(), u->devices.begin(), u->devices.end());
    }
    EXPECT_EQ(static_cast<int>(r.units.size()), l.units) << l.id;
    return book_.Add(std::move(r)).allocation;
  }

  // Marks live `victim` PREEMPTED for `preemptor`, in its grace for `grace`.
  void Preempted(const std::string& victim, const std::string& preemptor,
                 absl::Duration grace = absl::Seconds(30)) {
    book_.Preempt(*book_.FindMutable(victim), preemptor, T0() + grace);
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

  std::shared_ptr<const AcceleratorTypeSet> types_ = BuiltinAcceleratorTypes();
  Catalog catalog_{&book_};
  AllocationBook book_{&catalog_.mutable_index()};
  TenantPolicies tenants_;
  AdmissionContext ctx_;
};

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_ADMISSION_FIXTURE_H_
