#include "core/mig_geometry.h"

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

const MigFamily& Family(absl::string_view name) {
  const MigFamily* f = FindMigFamily(name);
  EXPECT_NE(f, nullptr) << name;
  return *f;
}

// Walks every profile of every family: alone on a GPU it is valid at each
// allowed start and invalid at every other slot.
TEST(MigGeometryTest, EveryProfileAloneIsValidExactlyAtItsAllowedStarts) {
  for (const MigFamily& family : AllMigFamilies()) {
    for (const MigProfile& p : family.profiles) {
      for (int start = -1; start <= family.memory_slices; ++start) {
        const bool allowed =
            start >= 0 && start < 8 && (p.allowed_starts >> start) & 1;
        const MigPlacement layout[] = {{p.name, start}};
        if (allowed) {
          EXPECT_OK(ValidateMigLayout(family, layout))
              << family.name << " " << p.name;
          EXPECT_LE(start + p.memory_slices, family.memory_slices)
              << family.name << " " << p.name << " runs off the GPU at start "
              << start;
        } else {
          EXPECT_THAT(ValidateMigLayout(family, layout),
                      StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("[0].start")))
              << family.name << " " << p.name << " at " << start;
        }
      }
    }
  }
}

TEST(MigGeometryTest, EveryFamilyIsWellFormed) {
  for (const MigFamily& family : AllMigFamilies()) {
    std::set<absl::string_view> names;
    int full_gpu_profiles = 0;
    for (const MigProfile& p : family.profiles) {
      EXPECT_TRUE(names.insert(p.name).second)
          << family.name << " lists " << p.name << " twice";
      EXPECT_LE(p.compute_slices, family.compute_slices) << p.name;
      EXPECT_NE(p.allowed_starts, 0) << p.name;
      // The "Ng" prefix of the name is its compute slices.
      EXPECT_EQ(p.name.substr(0, 2), std::to_string(p.compute_slices) + "g")
          << p.name;
      if (p.memory_slices == family.memory_slices) ++full_gpu_profiles;
    }
    EXPECT_EQ(full_gpu_profiles, 1)
        << family.name << " needs exactly one whole-GPU profile";
    EXPECT_FALSE(MigProfileNames(family).empty());
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
  const MigFamily& f = Family("a100-40gb");
  EXPECT_EQ(f.memory_slices, 8);
  EXPECT_EQ(f.compute_slices, 7);
  for (const Row& row : kRows) {
    const MigProfile* p = FindMigProfile(f, row.name);
    ASSERT_NE(p, nullptr) << row.name;
    EXPECT_EQ(p->compute_slices, row.compute) << row.name;
    EXPECT_EQ(p->memory_slices, row.memory) << row.name;
    std::vector<int> starts;
    for (int i = 0; i < 8; ++i) {
      if ((p->allowed_starts >> i) & 1) starts.push_back(i);
    }
    EXPECT_EQ(starts, row.starts) << row.name;
  }
}

TEST(MigGeometryTest, EachFamilyHasItsOwnProfileNames) {
  const std::pair<const char*, std::vector<const char*>> kFamilies[] = {
      {"a100-80gb",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"h100-80gb",
       {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}},
      {"h200-141gb",
       {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"}},
      {"a30-24gb", {"1g.6gb", "2g.12gb", "4g.24gb"}},
  };
  for (const auto& [family, profiles] : kFamilies) {
    for (const char* p : profiles) {
      EXPECT_NE(FindMigProfile(Family(family), p), nullptr)
          << family << " " << p;
    }
  }
  EXPECT_EQ(FindMigProfile(Family("h100-80gb"), "1g.5gb"), nullptr);
  EXPECT_EQ(Family("a30-24gb").memory_slices, 4);
  EXPECT_EQ(Family("a30-24gb").compute_slices, 4);
}

struct LayoutCase {
  const char* family;
  std::vector<MigPlacement> layout;
  const char* error;  // nullptr: valid
};

class MigLayoutTest : public testing::TestWithParam<LayoutCase> {};

TEST_P(MigLayoutTest, ValidatesLayout) {
  const LayoutCase& c = GetParam();
  absl::Status s = ValidateMigLayout(Family(c.family), c.layout);
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
        LayoutCase{"a100-40gb",
                   {{"1g.5gb", 0},
                    {"1g.5gb", 1},
                    {"1g.5gb", 2},
                    {"1g.5gb", 3},
                    {"1g.5gb", 4},
                    {"1g.5gb", 5},
                    {"1g.5gb", 6}},
                   nullptr},
        LayoutCase{"a100-40gb", {{"3g.20gb", 0}, {"3g.20gb", 4}}, nullptr},
        LayoutCase{"a100-40gb",
                   {{"4g.20gb", 0}, {"2g.10gb", 4}, {"1g.5gb", 6}},
                   nullptr},
        LayoutCase{"a100-40gb", {{"7g.40gb", 0}}, nullptr},
        LayoutCase{"a100-40gb", {}, nullptr},
        LayoutCase{"a100-40gb",
                   {{"3g.20gb", 0}, {"2g.10gb", 2}},
                   "[1] 2g.10gb at start 2 overlaps"},
        LayoutCase{"a100-40gb", {{"7g.40gb", 0}, {"1g.5gb", 6}}, "overlaps"},
        LayoutCase{"a100-40gb", {{"1g.10gb", 0}}, nullptr},
        LayoutCase{"a100-40gb",
                   {{"1g.10gb", 1}},
                   "[0].start 1 is not a valid placement"},
        LayoutCase{"a100-40gb", {{"3g.20gb", 2}}, "[0].start 2"},
        LayoutCase{"a100-40gb", {{"1g.5gb", 7}}, "[0].start 7"},
        LayoutCase{"a100-40gb",
                   {{"1g.10gb", 0}, {"3g.40gb", 4}},
                   "[1].profile \"3g.40gb\" is not a MIG profile of a100-40gb"},
        // A100 80GB and H100 share the shape.
        LayoutCase{
            "a100-80gb",
            {{"3g.40gb", 4}, {"2g.20gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 3}},
            nullptr},
        LayoutCase{
            "a100-80gb", {{"1g.5gb", 0}}, "not a MIG profile of a100-80gb"},
        LayoutCase{"h100-80gb", {{"4g.40gb", 0}, {"3g.40gb", 4}}, nullptr},
        LayoutCase{
            "h100-80gb", {{"4g.40gb", 0}, {"4g.40gb", 4}}, "[1].start 4"},
        LayoutCase{
            "h100-80gb", {{"1g.20gb", 6}, {"1g.10gb", 7}}, "[1].start 7"},
        // H200
        LayoutCase{"h200-141gb", {{"7g.141gb", 0}}, nullptr},
        LayoutCase{"h200-141gb",
                   {{"2g.35gb", 0}, {"2g.35gb", 2}, {"3g.71gb", 4}},
                   nullptr},
        LayoutCase{
            "h200-141gb", {{"2g.35gb", 0}, {"2g.35gb", 1}}, "[1].start 1"},
        // A30: four slots.
        LayoutCase{"a30-24gb",
                   {{"2g.12gb", 0}, {"1g.6gb", 2}, {"1g.6gb", 3}},
                   nullptr},
        LayoutCase{"a30-24gb", {{"4g.24gb", 0}}, nullptr},
        LayoutCase{"a30-24gb", {{"1g.6gb", 4}}, "[0].start 4"},
        LayoutCase{"a30-24gb", {{"2g.12gb", 0}, {"2g.12gb", 0}}, "overlaps"}));

// With the A100's start rules compute can never exceed 7 without an overlap, so
// the rule is shown on a family that has fewer compute slices than memory
// slices.
TEST(MigGeometryTest, ComputeSlicesMayNotExceedTheFamilys) {
  const MigFamily& a100 = Family("a100-40gb");
  const MigFamily tight{"tight", 8, 5, a100.profiles};
  const MigPlacement fits[] = {{"4g.20gb", 0}, {"1g.5gb", 4}};
  const MigPlacement too_many[] = {{"4g.20gb", 0}, {"2g.10gb", 4}};
  EXPECT_OK(ValidateMigLayout(tight, fits));
  EXPECT_THAT(ValidateMigLayout(tight, too_many),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("use 6 compute slices; tight has 5")));
}

}  // namespace
}  // namespace accelsched
