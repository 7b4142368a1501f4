// The catalog on its own: no store, no scheduler, owners from a map.
#include "core/catalog/catalog.h"

#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "config/accelerator_types_file.h"
#include "core/catalog/node_queries.h"
#include "core/catalog/node_validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class MapOwners : public UnitHolders {
 public:
  absl::string_view HolderOf(absl::string_view key) const override {
    auto it = owners.find(key);
    return it == owners.end() ? absl::string_view() : it->second;
  }
  absl::flat_hash_map<std::string, std::string> owners;
};

class CatalogTest : public testing::Test {
 protected:
  absl::StatusOr<Node> Put(Node node) {
    absl::Status valid = NormalizeAndValidateNode(*registry_, node);
    if (!valid.ok()) return valid;
    return catalog_.Put(*registry_, std::move(node), now_);
  }
  const CapacityIndex::Pool* Pool(const char* model,
                                  const char* partition = "") {
    return catalog_.index().FindPool(
        PoolKey{DeviceClass::kNvidiaGpu, model, partition});
  }
  // Marks `key` held by `allocation` as the allocation book does.
  void Hold(const std::string& key, const std::string& allocation) {
    holders_.owners[key] = allocation;
    catalog_.mutable_index().SetHolder(key, allocation);
  }

  std::shared_ptr<const AcceleratorTypeSet> registry_ =
      BuiltinAcceleratorTypes();
  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  MapOwners holders_;
  Catalog catalog_{&holders_, nullptr};
};

TEST_F(CatalogTest, UnitsDeriveFromDevicesMigSlicesAndTpuSlices) {
  ASSERT_OK(Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1),
                                MigA100("GPU-m", 2)})));
  ASSERT_OK(Put(MakeNode(
      "t1", {Chip("c0", "s1", "2x2x2", 0), Chip("c1", "s1", "2x2x2", 1),
             Chip("c2", "s1", "2x2x2", 2), Chip("c3", "s1", "2x2x2", 3)})));
  EXPECT_EQ(Pool("nvidia-tesla-t4")->total, 2);
  EXPECT_EQ(Pool("nvidia-tesla-a100", "1g.5gb")->total, 7);
  // Half of a 2x2x2 slice (8 chips, 4 per host): known, not yet healthy.
  const Unit* slice = catalog_.index().Find(TpuUnitKey("s1"));
  ASSERT_NE(slice, nullptr);
  EXPECT_FALSE(slice->healthy);
  ASSERT_OK(Put(MakeNode(
      "t2", {Chip("c4", "s1", "2x2x2", 0), Chip("c5", "s1", "2x2x2", 1),
             Chip("c6", "s1", "2x2x2", 2), Chip("c7", "s1", "2x2x2", 3)})));
  slice = catalog_.index().Find(TpuUnitKey("s1"));
  EXPECT_TRUE(slice->healthy);
  EXPECT_THAT(slice->hosts, ElementsAre("t1", "t2"));
  EXPECT_EQ(NodeCounts(catalog_.nodes()), (std::pair<int64_t, int64_t>{3, 0}));
}

TEST_F(CatalogTest, ADeviceOfAnotherNodeIsRefusedAndNothingChanges) {
  ASSERT_OK(Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  EXPECT_THAT(
      Put(MakeNode("n2", {Gpu("GPU-b", "T4", 0), Gpu("GPU-a", "T4", 1)})),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("node.devices[1].id \"GPU-a\" is already "
                         "registered on node \"n1\"")));
  EXPECT_THAT(FindNode(catalog_.nodes(), "n2"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"n2\"")));
  EXPECT_EQ(Pool("nvidia-tesla-t4")->total, 1);
}

TEST_F(CatalogTest, AHeldDeviceIsKeptUntilItsOwnerLetsGo) {
  ASSERT_OK(
      Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)})));
  Hold("GPU-b", "a-1");
  absl::StatusOr<Node> n = Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0)}));
  ASSERT_OK(n);
  ASSERT_EQ(n->devices.size(), 2u);
  EXPECT_TRUE(n->devices[1].removed);
  EXPECT_FALSE(n->devices[1].healthy);
  // Still held, so still a unit, and still the holder's.
  EXPECT_EQ(catalog_.index().Find("GPU-b")->holder, "a-1");
  EXPECT_THAT(HoldersOn(catalog_.index(), holders_, "n1"), ElementsAre("a-1"));
  EXPECT_EQ(catalog_.DropReleasedRemovedDevices("n1"), std::nullopt);
  Hold("GPU-b", "");
  holders_.owners.clear();
  std::optional<Node> dropped = catalog_.DropReleasedRemovedDevices("n1");
  ASSERT_TRUE(dropped.has_value());
  EXPECT_EQ(dropped->devices.size(), 1u);
  EXPECT_EQ(catalog_.index().Find("GPU-b"), nullptr);
}

TEST_F(CatalogTest, AHeldDeviceCannotChangeItsMigLayoutInPlace) {
  ASSERT_OK(Put(MakeNode("n1", {MigA100("GPU-m", 0)})));
  Hold("GPU-m-s3", "a-1");
  EXPECT_THAT(Put(MakeNode("n1", {Gpu("GPU-m", "nvidia-tesla-a100", 0)})),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("\"GPU-m\" is in live allocation a-1")));
  EXPECT_EQ(Pool("nvidia-tesla-a100", "1g.5gb")->total, 7);
}

TEST_F(CatalogTest, HeartbeatChecksEveryIdBeforeChangingHealth) {
  ASSERT_OK(
      Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)})));
  const absl::Time later = now_ + absl::Seconds(10);
  EXPECT_THAT(catalog_.Heartbeat("n1", {"GPU-a", "GPU-x"}, {}, later),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unhealthy_device_ids[1] \"GPU-x\"")));
  EXPECT_THAT(catalog_.Heartbeat("n1", {}, {"GPU-x"}, later),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("device_stats[\"GPU-x\"]")));
  EXPECT_EQ((*FindNode(catalog_.nodes(), "n1"))->last_heartbeat, now_);
  EXPECT_EQ(Pool("nvidia-tesla-t4")->unhealthy, 0);
  absl::StatusOr<std::vector<HealthChange>> changes =
      catalog_.Heartbeat("n1", {"GPU-a"}, {"GPU-b"}, later);
  ASSERT_OK(changes);
  ASSERT_EQ(changes->size(), 1u);
  EXPECT_EQ((*changes)[0].device_id, "GPU-a");
  EXPECT_FALSE((*changes)[0].healthy);
  EXPECT_EQ(Pool("nvidia-tesla-t4")->unhealthy, 1);
  EXPECT_EQ((*FindNode(catalog_.nodes(), "n1"))->last_heartbeat, later);
  // The same report again changes nothing.
  EXPECT_THAT(*catalog_.Heartbeat("n1", {"GPU-a"}, {}, later), IsEmpty());
}

TEST_F(CatalogTest, CordonSurvivesReRegistrationAndRemovalFreesIds) {
  ASSERT_OK(Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0)})));
  ASSERT_OK(catalog_.SetSchedulable("n1", false));
  absl::StatusOr<Node> n = Put(MakeNode("n1", {Gpu("GPU-a", "T4", 0)}));
  ASSERT_OK(n);
  EXPECT_FALSE(n->schedulable);
  EXPECT_EQ(NodeCounts(catalog_.nodes()), (std::pair<int64_t, int64_t>{0, 1}));
  ASSERT_OK(catalog_.Remove("n1"));
  EXPECT_THAT(catalog_.Remove("n1"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("\"n1\"")));
  EXPECT_EQ(Pool("nvidia-tesla-t4"), nullptr);
  EXPECT_OK(Put(MakeNode("n2", {Gpu("GPU-a", "T4", 0)})));
}

TEST_F(CatalogTest, LoadTakesOwnersAndRefusesAnUnknownModel) {
  holders_.owners["GPU-b"] = "a-9";
  Node stored = MakeNode("n1", {Gpu("GPU-a", "T4", 0), Gpu("GPU-b", "T4", 1)});
  ASSERT_OK(catalog_.Load({stored}, *registry_));
  EXPECT_EQ(Pool("nvidia-tesla-t4")->allocated, 1);
  EXPECT_EQ((*FindNode(catalog_.nodes(), "n1"))->devices[0].canonical_model,
            "nvidia-tesla-t4");
  Node odd = MakeNode("n2", {Gpu("GPU-z", "no-such-gpu", 0)});
  EXPECT_THAT(catalog_.Load({stored, odd}, *registry_),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("\"GPU-z\" has model \"no-such-gpu\"")));
  EXPECT_THAT(catalog_.nodes(), IsEmpty());
  EXPECT_THAT(catalog_.index().pools(), IsEmpty());
}

}  // namespace
}  // namespace accelsched
