// The --tenants file: what it sets, and every mistake named by file and line.
#include "config/tenants_file.h"

#include <string>

#include "config/accelerator_types_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<TenantPolicies> Parse(absl::string_view text) {
  return ParseTenantPolicies(text, "tenants.textproto",
                             *BuiltinAcceleratorTypes());
}

TEST(TenantsFileTest, WeightsQuotasCohortsAndPreemptibility) {
  absl::StatusOr<TenantPolicies> p = Parse(R"pb(
    tenants {
      name: "team-a"
      weight: 3
      cohort: "research"
      quotas { model: "A100" partition: "1g.5gb" nominal: 14 }
      quotas { model: "T4" nominal: 2 borrowing_limit: 4 }
    }
    tenants { name: "team-b" cohort: "research" non_preemptible: true }
    tenants { name: "team-c" }
  )pb");
  ASSERT_OK(p);
  const TenantPolicy& a = p->Find("team-a");
  EXPECT_EQ(a.weight, 3);
  EXPECT_EQ(a.cohort, "research");
  EXPECT_TRUE(a.preemptible);
  const PoolKey mig{DeviceClass::kNvidiaGpu, "nvidia-tesla-a100", "1g.5gb"};
  const PoolKey t4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
  ASSERT_EQ(a.quotas.size(), 2u);
  // Kept in thousandths of a unit, as shares count.
  EXPECT_EQ(a.quotas.at(mig).nominal_milli, 14000);
  EXPECT_FALSE(a.quotas.at(mig).borrowing_limit_milli.has_value());
  EXPECT_EQ(a.quotas.at(t4).borrowing_limit_milli, 4000);
  EXPECT_FALSE(p->Find("team-b").preemptible);
  EXPECT_EQ(p->Find("team-c").weight, 1);  // absent: 1
  EXPECT_EQ(p->Find("nobody").weight, 1);  // unnamed: the default
  EXPECT_TRUE(p->Find("nobody").quotas.empty());
  EXPECT_THAT(p->CohortMembers("research"),
              testing::ElementsAre("team-a", "team-b"));
  EXPECT_TRUE(p->CohortMembers("").empty());
}

TEST(TenantsFileTest, WholeGpuQuotasMayBeWrittenInThousandths) {
  absl::StatusOr<TenantPolicies> p = Parse(R"pb(
    tenants {
      name: "team-a"
      cohort: "research"
      quotas { model: "T4" nominal_milli: 2500 borrowing_limit_milli: 750 }
      quotas { model: "L4" nominal: 1 borrowing_limit_milli: 0 }
    }
  )pb");
  ASSERT_OK(p);
  const TenantPolicy& a = p->Find("team-a");
  const PoolKey t4{DeviceClass::kNvidiaGpu, "nvidia-tesla-t4", ""};
  const PoolKey l4{DeviceClass::kNvidiaGpu, "nvidia-l4", ""};
  EXPECT_EQ(a.quotas.at(t4).nominal_milli, 2500);
  EXPECT_EQ(a.quotas.at(t4).borrowing_limit_milli, 750);
  EXPECT_EQ(a.quotas.at(l4).nominal_milli, 1000);
  EXPECT_EQ(a.quotas.at(l4).borrowing_limit_milli, 0);
}

TEST(TenantsFileTest, MistakesNameTheFileTheLineAndTheField) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"tenants { name: \"a\" }\ntenants { name: \"a\" }",
       "tenants.textproto:2: tenants[1] (a): name: repeats"},
      {"tenants { weight: 1 }", "tenants[0]: name: is required"},
      {"tenants { name: \"a\" weight: -1 }", "weight: -1 is not a finite"},
      {"tenants {\n name: \"a\"\n quotas { model: \"nope\" nominal: 1 }\n}",
       "tenants.textproto:1: tenants[0] (a): quotas[0].model: \"nope\""},
      {"tenants { name: \"a\" quotas { model: \"H100\" partition: \"1g.5gb\" "
       "nominal: 1 } }",
       "quotas[0].partition: \"1g.5gb\" is not a MIG profile of nvidia-h100"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal: -2 } }",
       "quotas[0].nominal: must be >= 0"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal: 1 "
       "borrowing_limit: 2 } }",
       "quotas[0].borrowing_limit: needs a cohort"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal: 1000000000001 "
       "} }",
       "quotas[0].nominal: must be at most 1000000000000"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal_milli: -1 } }",
       "quotas[0].nominal_milli: must be >= 0"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal: 1 "
       "nominal_milli: 1500 } }",
       "quotas[0].nominal_milli: set nominal or nominal_milli, not both"},
      {"tenants { name: \"a\" cohort: \"c\" quotas { model: \"T4\" "
       "borrowing_limit: 1 borrowing_limit_milli: 1500 } }",
       "quotas[0].borrowing_limit_milli: set borrowing_limit or "
       "borrowing_limit_milli, not both"},
      {"tenants { name: \"a\" quotas { model: \"T4\" "
       "borrowing_limit_milli: 1 } }",
       "quotas[0].borrowing_limit_milli: needs a cohort"},
      {"tenants { name: \"a\" quotas { model: \"A100\" partition: "
       "\"1g.5gb\" nominal_milli: 1500 } }",
       "quotas[0].nominal_milli: only whole NVIDIA GPUs"},
      {"tenants { name: \"a\" quotas { model: \"T4\" nominal: 1 } quotas { "
       "model: \"nvidia-tesla-t4\" nominal: 2 } }",
       "quotas[1]: a second quota for nvidia-tesla-t4 devices"},
      {"tenants { name: \"a\" colour: 1 }",
       "tenants.textproto:1:27: Message type \"accelsched.v1.TenantConfig\" "
       "has no field named \"colour\""},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(Parse(c.text), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr(c.message)))
        << c.text;
  }
}

TEST(TenantsFileTest, NoFileMeansTheDefaultForEveryone) {
  absl::StatusOr<TenantPolicies> p =
      LoadTenantPolicies("", *BuiltinAcceleratorTypes());
  ASSERT_OK(p);
  EXPECT_TRUE(p->tenants().empty());
  EXPECT_THAT(
      LoadTenantPolicies("/no/such/file", *BuiltinAcceleratorTypes()),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("/no/such/file")));
}

}  // namespace
}  // namespace accelsched
