#include "core/accelerators/mig_geometry.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "config/accelerator_types_file.h"
#include "core/accelerators/accelerator_type_set.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

const MigGeometry& Mig(absl::string_view model) {
  static const auto registry = BuiltinAcceleratorTypes();
  const AcceleratorType* t = registry->Find(model);
  EXPECT_NE(t, nullptr) << model;
  return t->mig;
}

// Every built-in type with MIG.
std::vector<const AcceleratorType*> MigTypes() {
  std::vector<const AcceleratorType*> out;
  for (const AcceleratorType& t : BuiltinAcceleratorTypes()->types()) {
    if (t.has_mig()) out.push_back(&t);
  }
  return out;
}

TEST(MigGeometryTest, TheRegistryHasMigTypes) {
  EXPECT_GE(MigTypes().size(), 7u);
}

// Walks every profile of every built-in MIG type: alone on a GPU it is valid
// at each allowed start and invalid at every other slot.
TEST(MigGeometryTest, EveryProfileAloneIsValidExactlyAtItsAllowedStarts) {
  for (const AcceleratorType* t : MigTypes()) {
    const MigGeometry& g = t->mig;
    for (const MigProfile& p : g.profiles) {
      for (int start = -1; start <= g.memory_slices; ++start) {
        const bool allowed = std::find(p.starts.begin(), p.starts.end(),
                                       start) != p.starts.end();
        const MigPlacement layout[] = {{p.name, start}};
        if (allowed) {
          EXPECT_OK(ValidateMigLayout(g, t->canonical_model, layout))
              << t->canonical_model << " " << p.name;
          EXPECT_LE(start + p.memory_slices, g.memory_slices)
              << t->canonical_model << " " << p.name
              << " runs off the GPU at start " << start;
        } else {
          EXPECT_THAT(ValidateMigLayout(g, t->canonical_model, layout),
                      StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("[0].start")))
              << t->canonical_model << " " << p.name << " at " << start;
        }
      }
    }
  }
}

// What NVIDIA's tables share: every GPU has a whole-GPU profile (all slots,
// all compute; the RTX PRO 6000 has two, with and without graphics), and a
// profile's "Ng" prefix is its compute slices.
TEST(MigGeometryTest, EveryBuiltInGeometryIsWellFormed) {
  for (const AcceleratorType* t : MigTypes()) {
    const MigGeometry& g = t->mig;
    int whole_gpu_profiles = 0;
    for (const MigProfile& p : g.profiles) {
      EXPECT_EQ(p.name.substr(0, p.name.find('g') + 1),
                std::to_string(p.compute_slices) + "g")
          << t->canonical_model << " " << p.name;
      if (p.memory_slices == g.memory_slices &&
          p.compute_slices == g.compute_slices) {
        ++whole_gpu_profiles;
      }
    }
    EXPECT_GE(whole_gpu_profiles, 1)
        << t->canonical_model << " needs a whole-GPU profile";
    EXPECT_FALSE(g.ProfileNames().empty());
  }
}

// NVIDIA's A100-40GB table, exactly as the MIG user guide gives it.
TEST(MigGeometryTest, A100FortyGigabyteTableMatchesTheGuide) {
  struct Row {
    const char* name;
    int compute, memory;
    std::vector<int> starts;
  };
  const Row kRows[] = {{"1g.5gb", 1, 1, {0, 1, 2, 3, 4, 5, 6}},
                       {"1g.10gb", 1, 2, {0, 2, 4, 6}},
                       {"2g.10gb", 2, 2, {0, 2, 4}},
                       {"3g.20gb", 3, 4, {0, 4}},
                       {"4g.20gb", 4, 4, {0}},
                       {"7g.40gb", 7, 8, {0}}};
  const MigGeometry& g = Mig("nvidia-tesla-a100");
  EXPECT_EQ(g.memory_slices, 8);
  EXPECT_EQ(g.compute_slices, 7);
  for (const Row& row : kRows) {
    const MigProfile* p = g.Find(row.name);
    ASSERT_NE(p, nullptr) << row.name;
    EXPECT_EQ(p->compute_slices, row.compute) << row.name;
    EXPECT_EQ(p->memory_slices, row.memory) << row.name;
    EXPECT_EQ(p->starts, row.starts) << row.name;
  }
}

TEST(MigGeometryTest, EachGpuHasItsOwnProfileNames) {
  const std::pair<const char*, std::vector<const char*>> kGpus[] = {
      {"nvidia-a100-80gb",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"nvidia-h100",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"nvidia-h200",
       {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {"nvidia-a30", {"1g.6gb", "2g.12gb", "4g.24gb"}},
  };
  for (const auto& [model, profiles] : kGpus) {
    for (const char* p : profiles) {
      EXPECT_NE(Mig(model).Find(p), nullptr) << model << " " << p;
    }
  }
  EXPECT_EQ(Mig("nvidia-h100").Find("1g.5gb"), nullptr);
  EXPECT_EQ(Mig("nvidia-a30").memory_slices, 4);
  EXPECT_EQ(Mig("nvidia-a30").compute_slices, 4);
}

// A "+me" profile takes the GPU's media engines: one per GPU (NVIDIA's table,
// "max instances"), though its starts would allow more.
TEST(MigGeometryTest, ProfilesAreLimitedToTheirMaxInstances) {
  const MigPlacement two_me[] = {{"1g.5gb+me", 0}, {"1g.5gb+me", 1}};
  EXPECT_THAT(ValidateMigLayout(Mig("nvidia-tesla-a100"), "a100", two_me),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("[1] 1g.5gb+me is one too many: a GPU holds "
                                 "at most 1")));
  const MigPlacement one_me[] = {{"1g.5gb+me", 0}, {"1g.5gb", 1}};
  EXPECT_OK(ValidateMigLayout(Mig("nvidia-tesla-a100"), "a100", one_me));
}

// The RTX PRO 6000 places on NVML's grid of 12 slots.
TEST(MigGeometryTest, RtxPro6000PlacesOnAGridOfTwelve) {
  const MigGeometry& g = Mig("RTX PRO 6000");
  EXPECT_EQ(g.memory_slices, 12);
  EXPECT_EQ(g.compute_slices, 4);
  EXPECT_EQ(g.profiles.size(), 11u);
  const MigPlacement full[] = {
      {"1g.24gb", 0}, {"1g.24gb+gfx", 3}, {"2g.48gb-me", 6}};
  EXPECT_OK(ValidateMigLayout(g, "rtx", full));
  const MigPlacement off_grid[] = {{"1g.24gb", 1}};
  EXPECT_THAT(ValidateMigLayout(g, "rtx", off_grid),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("[0].start 1 is not a valid placement")));
  const MigPlacement two_all[] = {{"1g.24gb+me.all", 0}, {"1g.24gb+me.all", 3}};
  EXPECT_THAT(
      ValidateMigLayout(g, "rtx", two_all),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one too many")));
}

// NVIDIA's "max instances" per profile (the guide's tables), for every GPU:
// what the starts allow, except the media-engine profiles.
TEST(MigGeometryTest, MaxInstancesAreTheGuides) {
  const std::pair<const char*, std::vector<std::pair<const char*, int>>>
      kGpus[] = {
          {"nvidia-tesla-a100",
           {{"1g.5gb", 7},
            {"1g.5gb+me", 1},
            {"1g.10gb", 4},
            {"2g.10gb", 3},
            {"3g.20gb", 2},
            {"4g.20gb", 1},
            {"7g.40gb", 1}}},
          {"nvidia-h100",
           {{"1g.10gb", 7},
            {"1g.10gb+me", 1},
            {"1g.20gb", 4},
            {"2g.20gb", 3},
            {"3g.40gb", 2},
            {"4g.40gb", 1},
            {"7g.80gb", 1}}},
          {"nvidia-b200",
           {{"1g.23gb", 7},
            {"1g.23gb+me", 1},
            {"1g.45gb", 4},
            {"2g.45gb", 3},
            {"3g.90gb", 2},
            {"4g.90gb", 1},
            {"7g.180gb", 1}}},
          {"nvidia-a30",
           {{"1g.6gb", 4},
            {"1g.6gb+me", 1},
            {"2g.12gb", 2},
            {"2g.12gb+me", 1},
            {"4g.24gb", 1}}},
          {"nvidia-rtx-pro-6000",
           {{"1g.24gb", 4},
            {"1g.24gb+me", 1},
            {"1g.24gb+gfx", 4},
            {"1g.24gb+me.all", 1},
            {"1g.24gb-me", 4},
            {"2g.48gb", 2},
            {"2g.48gb+gfx", 2},
            {"2g.48gb+me.all", 1},
            {"2g.48gb-me", 2},
            {"4g.96gb", 1},
            {"4g.96gb+gfx", 1}}},
      };
  for (const auto& [model, rows] : kGpus) {
    const MigGeometry& g = Mig(model);
    EXPECT_EQ(g.profiles.size(), rows.size()) << model;
    for (const auto& [name, max] : rows) {
      const MigProfile* p = g.Find(name);
      ASSERT_NE(p, nullptr) << model << " " << name;
      // As many as fit side by side at the allowed starts, or the stated cap.
      int fit = 0;
      int next_free = 0;
      for (int s : p->starts) {
        if (s >= next_free) {
          ++fit;
          next_free = s + p->memory_slices;
        }
      }
      const int allowed =
          p->max_instances > 0 ? std::min(fit, p->max_instances) : fit;
      EXPECT_EQ(allowed, max) << model << " " << name;
    }
  }
}

TEST(MigGeometryTest, InconsistentGeometriesAreRefusedNamingTheField) {
  const MigProfile one{"1g.1gb", 1, 1, {0, 1}};
  struct Case {
    MigGeometry geometry;
    const char* field;
  };
  const Case kCases[] = {
      {{0, 0, {one}}, "mig_memory_slices"},
      {{33, 7, {one}}, "mig_memory_slices"},
      {{2, 0, {one}}, "mig_compute_slices"},
      {{2, 1, {{"", 1, 1, {0}}}}, "mig_profiles[0].name"},
      {{2, 1, {{"1g 1gb", 1, 1, {0}}}}, "mig_profiles[0].name"},
      {{2, 1, {one, one}}, "mig_profiles[1].name \"1g.1gb\" is listed twice"},
      {{2, 1, {{"x", 3, 1, {0}}}}, "mig_profiles[0].memory_slices"},
      {{2, 1, {{"x", 1, 2, {0}}}}, "mig_profiles[0].compute_slices"},
      {{2, 1, {{"x", 1, 1, {}}}}, "mig_profiles[0].starts is empty"},
      {{2, 1, {{"x", 1, 1, {1, 0}}}}, "mig_profiles[0].starts must be"},
      {{2, 1, {{"x", 2, 1, {1}}}}, "mig_profiles[0].starts[0]"},
      {{2, 1, {{"x", 1, 1, {-1}}}}, "mig_profiles[0].starts[0]"},
      {{2, 1, {}}, "mig_memory_slices"},
  };
  for (const Case& c : kCases) {
    EXPECT_THAT(
        ValidateMigGeometry(c.geometry),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.field)))
        << c.field;
  }
  EXPECT_OK(ValidateMigGeometry({}));
  EXPECT_OK(ValidateMigGeometry({32, 32, {{"32g.x", 32, 32, {0}}}}));
}

struct LayoutCase {
  const char* model;
  std::vector<MigPlacement> layout;
  const char* error;  // nullptr: valid
};

class MigLayoutTest : public testing::TestWithParam<LayoutCase> {};

TEST_P(MigLayoutTest, ValidatesLayout) {
  const LayoutCase& c = GetParam();
  absl::Status s = ValidateMigLayout(Mig(c.model), c.model, c.layout);
  if (c.error == nullptr) {
    EXPECT_OK(s);
  } else {
    EXPECT_THAT(
        s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MigLayoutTest,
    testing::Values(
        // A100 40GB
        LayoutCase{"nvidia-tesla-a100",
                   {{"1g.5gb", 0},
                    {"1g.5gb", 1},
                    {"1g.5gb", 2},
                    {"1g.5gb", 3},
                    {"1g.5gb", 4},
                    {"1g.5gb", 5},
                    {"1g.5gb", 6}},
                   nullptr},
        LayoutCase{
            "nvidia-tesla-a100", {{"3g.20gb", 0}, {"3g.20gb", 4}}, nullptr},
        LayoutCase{"nvidia-tesla-a100",
                   {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}},
                   nullptr},
        LayoutCase{"nvidia-tesla-a100", {{"7g.40gb", 0}}, nullptr},
        LayoutCase{"nvidia-tesla-a100", {}, nullptr},
        LayoutCase{"nvidia-tesla-a100",
                   {{"3g.20gb", 0}, {"2g.10gb", 2}},
                   "[1] 2g.10gb at start 2 overlaps"},
        LayoutCase{
            "nvidia-tesla-a100", {{"7g.40gb", 0}, {"1g.5gb", 6}}, "overlaps"},
        LayoutCase{"nvidia-tesla-a100", {{"1g.10gb", 0}}, nullptr},
        LayoutCase{"nvidia-tesla-a100",
                   {{"1g.10gb", 1}},
                   "[0].start 1 is not a valid placement"},
        LayoutCase{"nvidia-tesla-a100", {{"3g.20gb", 2}}, "[0].start 2"},
        LayoutCase{"nvidia-tesla-a100", {{"1g.5gb", 7}}, "[0].start 7"},
        LayoutCase{"nvidia-tesla-a100",
                   {{"1g.10gb", 0}, {"3g.40gb", 4}},
                   "[1].profile \"3g.40gb\" is not a MIG profile of "
                   "nvidia-tesla-a100"},
        // A100 80GB and H100 share the shape.
        LayoutCase{
            "nvidia-a100-80gb",
            {{"3g.40gb", 4}, {"2g.20gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 3}},
            nullptr},
        LayoutCase{"nvidia-a100-80gb",
                   {{"1g.5gb", 0}},
                   "not a MIG profile of nvidia-a100-80gb"},
        LayoutCase{"nvidia-h100", {{"4g.40gb", 0}, {"3g.40gb", 4}}, nullptr},
        LayoutCase{
            "nvidia-h100", {{"4g.40gb", 0}, {"4g.40gb", 4}}, "[1].start 4"},
        LayoutCase{
            "nvidia-h100", {{"1g.20gb", 6}, {"1g.10gb", 7}}, "[1].start 7"},
        // H200
        LayoutCase{"nvidia-h200", {{"7g.141gb", 0}}, nullptr},
        LayoutCase{"nvidia-h200",
                   {{"2g.35gb", 0}, {"2g.35gb", 2}, {"3g.71gb", 4}},
                   nullptr},
        LayoutCase{
            "nvidia-h200", {{"2g.35gb", 0}, {"2g.35gb", 1}}, "[1].start 1"},
        // A30: four slots.
        LayoutCase{"nvidia-a30",
                   {{"2g.12gb", 0}, {"1g.6gb", 2}, {"1g.6gb", 3}},
                   nullptr},
        LayoutCase{"nvidia-a30", {{"4g.24gb", 0}}, nullptr},
        LayoutCase{"nvidia-a30", {{"1g.6gb", 4}}, "[0].start 4"},
        LayoutCase{
            "nvidia-a30", {{"2g.12gb", 0}, {"2g.12gb", 0}}, "overlaps"}));

// With the A100's start rules compute can never exceed 7 without an overlap, so
// the rule is shown on a GPU that has fewer compute slices than memory slots.
TEST(MigGeometryTest, ComputeSlicesMayNotExceedTheGpus) {
  MigGeometry tight = Mig("nvidia-tesla-a100");
  tight.compute_slices = 5;
  const MigPlacement fits[] = {{"4g.20gb", 0}, {"1g.5gb", 4}};
  const MigPlacement too_many[] = {{"4g.20gb", 0}, {"2g.10gb", 4}};
  EXPECT_OK(ValidateMigLayout(tight, "tight", fits));
  EXPECT_THAT(ValidateMigLayout(tight, "tight", too_many),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("use 6 compute slices; tight has 5")));
}

}  // namespace
}  // namespace accelsched
