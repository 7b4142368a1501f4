// The registry of plugins by name (core/framework/registry.h), the table of
// every plugin (core/plugins/registry.cc) and the default profile the
// server's options choose from it.
#include "core/framework/registry.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/framework/framework.h"
#include "core/packing/placement_score.h"
#include "core/plugins/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

class Named final : public Plugin {
 public:
  explicit Named(absl::string_view name) : name_(name) {}
  absl::string_view name() const override { return name_; }

 private:
  std::string name_;
};

std::unique_ptr<Plugin> MakeAlpha() { return std::make_unique<Named>("alpha"); }
std::unique_ptr<Plugin> MakeBeta() { return std::make_unique<Named>("beta"); }

TEST(RegistryTest, FindsWhatWasRegisteredInOrder) {
  Registry r;
  EXPECT_OK(r.Register("beta", &MakeBeta));
  EXPECT_OK(r.Register("alpha", &MakeAlpha));
  EXPECT_EQ(r.Find("alpha"), &MakeAlpha);
  EXPECT_EQ(r.Find("beta"), &MakeBeta);
  EXPECT_EQ(r.Find("gamma"), nullptr);
  EXPECT_THAT(r.names(), ElementsAre("beta", "alpha"));
}

TEST(RegistryTest, ANameRegisteredTwiceIsInvalidArgument) {
  Registry r;
  ASSERT_OK(r.Register("alpha", &MakeAlpha));
  EXPECT_THAT(r.Register("alpha", &MakeAlpha),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "plugin \"alpha\" is registered twice"));
  // The first stays, once.
  EXPECT_EQ(r.Find("alpha"), &MakeAlpha);
  EXPECT_THAT(r.names(), ElementsAre("alpha"));
}

TEST(RegistryTest, AFactoryOfAnotherNameIsInvalidArgument) {
  Registry r;
  EXPECT_THAT(r.Register("alpha", &MakeBeta),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "plugin \"alpha\" is registered for a plugin named "
                       "\"beta\""));
  // Nothing is registered under either name.
  EXPECT_EQ(r.Find("alpha"), nullptr);
  EXPECT_EQ(r.Find("beta"), nullptr);
  EXPECT_TRUE(r.names().empty());
}

// Every plugin of core/plugins/registry.cc's table, in its order.
const std::vector<std::string> kEveryPlugin = {
    "fair_share",  "accelerator_fit", "shares",         "node_resources",
    "request_mix", "quota",           "label_selector", "schedulable",
    "node_drain",  "topology",        "reservations",   "best_fit",
    "first_fit",   "spread",          "fragmentation",  "lease_term",
    "gpu_links",   "mig_relayout",    "preemption",     "reclaim",
    "plan_ahead",  "backfill",
};

TEST(PluginRegistryTest, HasEveryPluginOfTheTableUnderItsOwnName) {
  const Registry& r = PluginRegistry();
  EXPECT_THAT(r.names(), ElementsAreArray(kEveryPlugin));
  for (const std::string& name : kEveryPlugin) {
    SCOPED_TRACE(name);
    PluginFactory make = r.Find(name);
    ASSERT_NE(make, nullptr);
    EXPECT_EQ(make()->name(), name);
  }
  // Built once.
  EXPECT_EQ(&PluginRegistry(), &r);
}

struct ProfileCase {
  const char* name;
  ProfileOptions options;
  std::vector<std::string> plugins;  // in the profile's order

  friend void PrintTo(const ProfileCase& c, std::ostream* os) { *os << c.name; }
};

class DefaultProfileTest : public testing::TestWithParam<ProfileCase> {};

// The table's order with what the options leave out left out: one packing
// plugin, the lease term beside fragmentation only, preemption and reclaim
// only with preemption on; every weight 1 but the lease term's.
TEST_P(DefaultProfileTest, TheTablesPluginsTheOptionsChoose) {
  const ProfileCase& c = GetParam();
  const Profile profile = DefaultProfile(c.options);
  std::vector<std::string> names;
  for (const Profile::Entry& e : profile.plugins) {
    names.push_back(e.plugin);
    EXPECT_EQ(e.weight, e.plugin == "lease_term" ? kLeaseWeight : 1)
        << e.plugin;
  }
  EXPECT_THAT(names, ElementsAreArray(c.plugins));
  // And it is a profile a framework is built from.
  absl::StatusOr<std::unique_ptr<Framework>> fw =
      Framework::Create(PluginRegistry(), profile);
  ASSERT_OK(fw);
  EXPECT_NE((*fw)->plugins().queue_sort(), nullptr);
  EXPECT_NE((*fw)->plugins().unit_score(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Options, DefaultProfileTest,
    testing::Values(
        ProfileCase{"Fragmentation",
                    {Packing::kFragmentation, true},
                    {"fair_share", "accelerator_fit", "shares",
                     "node_resources", "request_mix", "quota", "label_selector",
                     "schedulable", "node_drain", "topology", "reservations",
                     "fragmentation", "lease_term", "gpu_links", "mig_relayout",
                     "preemption", "reclaim", "plan_ahead", "backfill"}},
        ProfileCase{"BestFit",
                    {Packing::kBestFit, true},
                    {"fair_share", "accelerator_fit", "shares",
                     "node_resources", "request_mix", "quota", "label_selector",
                     "schedulable", "node_drain", "topology", "reservations",
                     "best_fit", "gpu_links", "mig_relayout", "preemption",
                     "reclaim", "plan_ahead", "backfill"}},
        ProfileCase{"FirstFit",
                    {Packing::kFirstFit, true},
                    {"fair_share", "accelerator_fit", "shares",
                     "node_resources", "request_mix", "quota", "label_selector",
                     "schedulable", "node_drain", "topology", "reservations",
                     "first_fit", "gpu_links", "mig_relayout", "preemption",
                     "reclaim", "plan_ahead", "backfill"}},
        ProfileCase{"Spread",
                    {Packing::kSpread, true},
                    {"fair_share", "accelerator_fit", "shares",
                     "node_resources", "request_mix", "quota", "label_selector",
                     "schedulable", "node_drain", "topology", "reservations",
                     "spread", "gpu_links", "mig_relayout", "preemption",
                     "reclaim", "plan_ahead", "backfill"}},
        ProfileCase{"FragmentationWithoutPreemption",
                    {Packing::kFragmentation, false},
                    {"fair_share", "accelerator_fit", "shares",
                     "node_resources", "request_mix", "quota", "label_selector",
                     "schedulable", "node_drain", "topology", "reservations",
                     "fragmentation", "lease_term", "gpu_links", "mig_relayout",
                     "plan_ahead", "backfill"}},
        ProfileCase{
            "SpreadWithoutPreemption",
            {Packing::kSpread, false},
            {"fair_share", "accelerator_fit", "shares", "node_resources",
             "request_mix", "quota", "label_selector", "schedulable",
             "node_drain", "topology", "reservations", "spread", "gpu_links",
             "mig_relayout", "plan_ahead", "backfill"}}),
    [](const testing::TestParamInfo<ProfileCase>& info) {
      return std::string(info.param.name);
    });

// The default options are --packing=fragmentation with preemption.
TEST(DefaultOptionsTest, TheDefaultOptionsAreFragmentationWithPreemption) {
  std::vector<std::string> defaults, chosen;
  for (const Profile::Entry& e : DefaultProfile(ProfileOptions{}).plugins) {
    defaults.push_back(e.plugin);
  }
  for (const Profile::Entry& e :
       DefaultProfile({Packing::kFragmentation, true}).plugins) {
    chosen.push_back(e.plugin);
  }
  EXPECT_EQ(defaults, chosen);
}

}  // namespace
}  // namespace accelsched
