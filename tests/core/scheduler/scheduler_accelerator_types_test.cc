// The scheduler with registries other than the built-in one: shapes and types
// that only data adds, and replacing the registry while devices are
// registered.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/accelerator_types_file.h"
#include "core/base/clock.h"
#include "core/scheduler/scheduler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/accelerator_types_test_util.h"
#include "tests/support/blocking_scheduler.h"
#include "tests/support/fake_store.h"
#include "tests/support/scheduler_test_util.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

Device AcmeSplit(std::string id, int index) {
  Device d = Gpu(id, "Acme X1", index);
  d.mig_enabled = true;
  d.mig_slices = {{id + "-a", "2g.32gb", 0}, {id + "-b", "2g.32gb", 2}};
  return d;
}

class SchedulerRegistryTest : public testing::Test {
 protected:
  void Start(std::shared_ptr<const AcceleratorTypeSet> registry) {
    s_ = std::make_unique<BlockingScheduler>(
        &store_, &clock_, std::move(registry), Scheduler::Options());
    ASSERT_OK(s_->Load());
  }

  FakeStore store_;
  FakeClock clock_{absl::FromUnixSeconds(1'700'000'000)};
  std::unique_ptr<BlockingScheduler> s_;
};

// v5p-32 is not in Google's "most common" table but is a real shape: four
// hosts of four chips.
TEST_F(SchedulerRegistryTest, V5p2x2x4RegistersAndAllocates) {
  Start(BuiltinAcceleratorTypes());
  for (int h = 0; h < 4; ++h) {
    std::vector<Device> chips;
    for (int c = 0; c < 4; ++c) {
      chips.push_back(
          Chip(absl::StrCat("chip-", h, "-", c), "v5p-32", "2x2x4", c));
    }
    ASSERT_OK(s_->RegisterNode(MakeNode(absl::StrCat("tpu-", h), chips)));
  }
  absl::StatusOr<Allocation> a =
      s_->Allocate(Want("train", "tpu-v5p-slice", 1, "2x2x4"));
  ASSERT_OK(a);
  EXPECT_EQ(a->devices.size(), 16u);
  EXPECT_EQ(a->partition, "2x2x4");
  // A fifth host of the same slice is one too many.
  EXPECT_THAT(s_->RegisterNode(
                  MakeNode("tpu-4", {Chip("chip-4-0", "v5p-32", "2x2x4", 0)})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("would have 17 chips on 5 hosts")));
}

TEST_F(SchedulerRegistryTest, AnOperatorTypeRegistersAndAllocatesItsProfiles) {
  Start(BuiltinPlus(kAcmeTypes).value());
  ASSERT_OK(s_->RegisterNode(MakeNode("acme-1", {AcmeSplit("X", 0)})));
  absl::StatusOr<Allocation> a =
      s_->Allocate(Want("job", "acme-x1", 2, "2g.32gb"));
  ASSERT_OK(a);
  EXPECT_EQ(a->model, "acme-x1");
  EXPECT_EQ(a->devices.size(), 2u);
  EXPECT_THAT(s_->Allocate(Want("bad", "acme-x1", 1, "1g.16gb")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("valid: 2g.32gb, 4g.64gb")));
  bool counted = false;
  for (const CapacityEntry& e : s_->GetCapacity()) {
    if (e.model == "acme-x1" && e.partition == "2g.32gb") {
      EXPECT_EQ(e.total, 2);
      EXPECT_EQ(e.allocated, 2);
      counted = true;
    }
  }
  EXPECT_TRUE(counted);
}

TEST_F(SchedulerRegistryTest, ReplacingKeepsEveryRegisteredDevicesType) {
  Start(BuiltinPlus(kAcmeTypes).value());
  ASSERT_OK(s_->RegisterNode(MakeNode("acme-1", {AcmeSplit("X", 0)})));
  // The built-in registry alone would orphan the Acme GPU.
  EXPECT_THAT(s_->ReplaceAcceleratorTypes(BuiltinAcceleratorTypes()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "node \"acme-1\" device \"X\": model \"Acme X1\" would "
                       "no longer be known"));
  // Nor may the profile in use go.
  EXPECT_THAT(
      s_->ReplaceAcceleratorTypes(
          BuiltinPlus(
              "types { canonical_model: \"acme-x1\" aliases: \"Acme X1\" "
              "mig_memory_slices: 4 mig_compute_slices: 4 mig_profiles { name: "
              "\"4g.64gb\" memory_slices: 4 compute_slices: 4 starts: 0 } }")
              .value()),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("it would not fit: device.mig_slices[0].profile "
                         "\"2g.32gb\" is not a MIG profile")));
  // Refused replacements changed nothing.
  EXPECT_NE(s_->accelerator_types()->Find("acme-x1"), nullptr);
  ASSERT_OK(s_->Allocate(Want("one", "Acme X1", 1, "2g.32gb")));

  // A registry that keeps it and adds a spelling takes effect for new
  // requests.
  ASSERT_OK(s_->ReplaceAcceleratorTypes(
      BuiltinPlus(std::string(kAcmeTypes) +
                  "types { canonical_model: \"acme-x1\" aliases: \"Acme X1 "
                  "Ultra\" }")
          .value()));
  ASSERT_OK(s_->Allocate(Want("two", "acme x1 ultra", 1, "2g.32gb")));
}

// Every way a new registry could leave a registered device without its type.
TEST_F(SchedulerRegistryTest, ReplacingRefusesEveryWayOfLosingAType) {
  constexpr char kTpu[] =
      "types { canonical_model: \"tpu-x\" device_class: GOOGLE_TPU "
      "tpu_topologies { topology: \"2x2x2\" chips: 8 hosts: 2 } }";
  Start(BuiltinPlus(std::string(kAcmeTypes) + kTpu).value());
  ASSERT_OK(s_->RegisterNode(MakeNode("acme-1", {AcmeSplit("X", 0)})));
  std::vector<Device> chips;
  for (int c = 0; c < 4; ++c) {
    Device d = Chip(absl::StrCat("c", c), "s1", "2x2x2", c);
    d.model = "tpu-x";
    chips.push_back(d);
  }
  ASSERT_OK(s_->RegisterNode(MakeNode("tpu-1", chips)));
  struct Case {
    std::string text;  // the new registry: built-in types plus this
    const char* error;
  };
  const std::string acme_profiles =
      "mig_memory_slices: 4 mig_compute_slices: 4 mig_profiles { name: "
      "\"2g.32gb\" memory_slices: 2 compute_slices: 2 starts: [0, 2] }";
  const Case kCases[] = {
      // "Acme X1" now names another type.
      {absl::StrCat("types { canonical_model: \"acme-x1\" ", acme_profiles,
                    " } types { canonical_model: \"acme-x2\" aliases: "
                    "\"Acme X1\" ",
                    acme_profiles, " }", kTpu),
       "node \"acme-1\" device \"X\": model \"Acme X1\" would become acme-x2 "
       "(NVIDIA_GPU) instead of acme-x1"},
      // ... or another class.
      {absl::StrCat("types { canonical_model: \"acme-x1\" aliases: \"Acme "
                    "X1\" device_class: AMD_GPU }",
                    kTpu),
       "would become acme-x1 (AMD_GPU)"},
      // Acme X1 without MIG.
      {absl::StrCat("types { canonical_model: \"acme-x1\" aliases: \"Acme "
                    "X1\" }",
                    kTpu),
       "device.mig_enabled is set but acme-x1 has no MIG support"},
      // The TPU shape gone, or spanning other hosts.
      {absl::StrCat(kAcmeTypes,
                    "types { canonical_model: \"tpu-x\" device_class: "
                    "GOOGLE_TPU tpu_topologies { topology: \"2x2x1\" chips: "
                    "4 hosts: 1 } }"),
       "device.tpu_topology \"2x2x2\" is not a topology of tpu-x"},
      {absl::StrCat(kAcmeTypes,
                    "types { canonical_model: \"tpu-x\" device_class: "
                    "GOOGLE_TPU tpu_topologies { topology: \"2x2x2\" chips: "
                    "8 hosts: 1 } }"),
       "TPU topology 2x2x2 of tpu-x would be gone or changed"},
  };
  for (const Case& c : kCases) {
    absl::StatusOr<std::shared_ptr<const AcceleratorTypeSet>> next =
        BuiltinPlus(c.text);
    ASSERT_OK(next) << c.error;
    EXPECT_THAT(
        s_->ReplaceAcceleratorTypes(*next),
        StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(c.error)));
  }
  // Still the first registry.
  EXPECT_EQ(s_->accelerator_types()->Find("Acme X1")->canonical_model,
            "acme-x1");
  EXPECT_NE(s_->accelerator_types()->Find("tpu-x"), nullptr);
}

// Registrations and allocations while the registry is replaced, back and
// forth, from another thread: each request sees one registry or the other,
// and nothing it depends on goes away (run under ThreadSanitizer too).
TEST_F(SchedulerRegistryTest, ReplacingWhileServingIsSafe) {
  const auto plain = BuiltinPlus(kAcmeTypes).value();
  const auto ultra =
      BuiltinPlus(std::string(kAcmeTypes) +
                  "types { canonical_model: \"acme-x1\" aliases: \"Acme "
                  "X1 Ultra\" }")
          .value();
  Start(plain);
  std::atomic<bool> done{false};
  std::thread replacer([&] {
    for (int i = 0; !done.load(); ++i) {
      EXPECT_OK(s_->ReplaceAcceleratorTypes(i % 2 == 0 ? ultra : plain));
    }
  });
  std::vector<std::thread> workers;
  for (int w = 0; w < 3; ++w) {
    workers.emplace_back([&, w] {
      for (int i = 0; i < 40; ++i) {
        const std::string node = absl::StrCat("n", w);
        EXPECT_OK(s_->RegisterNode(
            MakeNode(node, {AcmeSplit(absl::StrCat("G", w), 0)})));
        const std::string id = absl::StrCat(w, "-", i);
        absl::StatusOr<Allocation> a =
            s_->Allocate(Want(id, "acme-x1", 1, "2g.32gb"));
        EXPECT_OK(a);
        absl::StatusOr<Allocation> b =
            s_->Allocate(Want(id + "u", "Acme X1 Ultra", 1, "2g.32gb"));
        if (!b.ok()) {
          // Only the plain registry refuses the spelling.
          EXPECT_THAT(b, StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("Acme X1 Ultra")));
        } else {
          EXPECT_OK(s_->Release({"", id + "u"}));
        }
        EXPECT_OK(s_->Release({"", id}));
      }
    });
  }
  for (std::thread& t : workers) t.join();
  done = true;
  replacer.join();
  for (const CapacityEntry& e : s_->GetCapacity()) {
    EXPECT_EQ(e.allocated, 0) << e.model << " " << e.partition;
  }
}

TEST_F(SchedulerRegistryTest, LoadingAStoredDeviceOfAnUnknownTypeIsDataLoss) {
  Start(BuiltinPlus(kAcmeTypes).value());
  ASSERT_OK(s_->RegisterNode(MakeNode("acme-1", {AcmeSplit("X", 0)})));
  Scheduler restarted(&store_, &clock_, BuiltinAcceleratorTypes(),
                      Scheduler::Options());
  EXPECT_THAT(
      restarted.Load(),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr("stored device \"X\" has model \"Acme X1\", "
                         "which the accelerator-type registry does "
                         "not know (add it with --accelerator_types)")));
  // Known, but without the profile its slices use.
  Scheduler narrowed(
      &store_, &clock_,
      BuiltinPlus("types { canonical_model: \"acme-x1\" aliases: \"Acme X1\" "
                  "mig_memory_slices: 4 mig_compute_slices: 4 mig_profiles { "
                  "name: \"4g.64gb\" memory_slices: 4 compute_slices: 4 "
                  "starts: 0 } }")
          .value(),
      Scheduler::Options());
  EXPECT_THAT(narrowed.Load(),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("stored device \"X\" of node \"acme-1\" does "
                                 "not fit the accelerator-type registry: "
                                 "device.mig_slices[0].profile \"2g.32gb\"")));
}

}  // namespace
}  // namespace accelsched
