// A tenant's dominant share on its own (core/tenants/dominant_share.h): usage
// from a real allocation book, weights from TenantPolicies. The order the
// fair_share plugin makes of it is in tests/core/plugins/fair_share/.
#include "core/tenants/dominant_share.h"

#include "gtest/gtest.h"
#include "tests/support/framework_fixture.h"

namespace accelsched {
namespace {

class DominantShareTest : public FrameworkFixture {
 protected:
  void SetUp() override {
    AddNode("n1", 8, kT4);
    AddNode("n2", 4, kL4);
  }

  double Share(const char* tenant) const {
    return DominantShare(catalog_.index(), book_, tenants_, tenant);
  }
};

TEST_F(DominantShareTest, TheLargestFractionOfAPoolOverTheWeight) {
  TenantPolicy heavy;
  heavy.weight = 2;
  SetTenants({{"a", heavy}});
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  AddLive({.id = "a-2", .tenant = "a", .node = "n2", .units = 2, .model = kL4});
  AddLive({.id = "b-1", .tenant = "b", .node = "n1", .units = 4});
  EXPECT_DOUBLE_EQ(Share("a"), 0.5 / 2);  // 2 of 4 L4s
  EXPECT_DOUBLE_EQ(Share("b"), 0.5);      // 4 of 8 T4s
  EXPECT_DOUBLE_EQ(Share("idle"), 0);
}

TEST_F(DominantShareTest, PreemptedAllocationsCountUntilTheyEnd) {
  AddLive({.id = "a-1", .tenant = "a", .node = "n1", .units = 2});
  Preempted("a-1", "p-1");
  EXPECT_DOUBLE_EQ(Share("a"), 0.25);
  book_.End(*book_.Find("a-1"), AllocationState::kPreempted, "preempted", T0());
  EXPECT_DOUBLE_EQ(Share("a"), 0);
}

// A share counts as its fraction of one GPU: 500 of 8 T4s' 8000.
TEST_F(DominantShareTest, AGpuShareCountsItsComputeMilli) {
  AllocationBook::Record r;
  Allocation& a = r.allocation;
  a.id = "a-1";
  a.state = AllocationState::kActive;
  a.tenant = "a";
  a.requested_models = {kT4};
  a.model = kT4;
  a.node = "n1";
  a.share = GpuShare{.compute_milli = 500};
  a.devices.push_back(AllocatedDevice{.node = "n1",
                                      .device_id = "n1-gpu0",
                                      .share = GpuShare{.compute_milli = 500},
                                      .sharing = GpuSharing::kMps});
  a.expires_at = T0() + absl::Hours(1);
  book_.Add(std::move(r));
  EXPECT_DOUBLE_EQ(Share("a"), 500.0 / 8000);
}

}  // namespace
}  // namespace accelsched
