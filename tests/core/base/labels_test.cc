#include "core/base/labels.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/status_matchers.h"

namespace accelsched {
namespace {

using ::testing::HasSubstr;

TEST(LabelsTest, KubernetesLabelsAreValid) {
  EXPECT_OK(
      ValidateLabels({{"kubernetes.io/hostname", "gpu-node-1"},
                      {"k8s.amazonaws.com/accelerator", "nvidia-tesla-a100"},
                      {"cloud.google.com/gke-tpu-topology", "2x4"},
                      {"pool", ""},
                      {"Team_A.x", "v1.2_3"}},
                     "node.labels"));
}

TEST(LabelsTest, MalformedKeysAndValuesNameTheField) {
  const std::pair<std::string, std::string> kBad[] = {
      {"", "v"},
      {"-a", "v"},
      {"a b", "v"},
      {"Example.COM/a", "v"},
      {"/a", "v"},
      {"a/", "v"},
      {"a", "-v"},
      {"a", "v v"},
      {"a", std::string(64, 'v')},
  };
  for (const auto& [key, value] : kBad) {
    EXPECT_THAT(
        ValidateLabels({{key, value}}, "node.labels"),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node.labels")))
        << key << "=" << value;
  }
}

TEST(LabelSelectorTest, TermsAllMustHold) {
  const Labels labels = {{"pool", "a100"}, {"zone", "z1"}, {"spot", "true"}};
  auto match = [&](const char* text) {
    absl::StatusOr<LabelSelector> s =
        LabelSelector::Parse(text, "label_selector");
    EXPECT_OK(s) << text;
    return s.ok() && s->Matches(labels);
  };
  EXPECT_TRUE(match(""));
  EXPECT_TRUE(match("pool=a100"));
  EXPECT_TRUE(match("pool==a100, zone=z1"));
  EXPECT_TRUE(match("pool=a100,zone!=z2"));
  EXPECT_TRUE(match("spot"));
  EXPECT_TRUE(match("!reserved"));
  EXPECT_FALSE(match("pool=h100"));
  EXPECT_FALSE(match("pool=a100,zone=z2"));
  EXPECT_FALSE(match("zone!=z1"));
  EXPECT_FALSE(match("reserved"));
  EXPECT_FALSE(match("!spot"));
}

TEST(LabelSelectorTest, ToStringSpellsTheTermsInTheirOrder) {
  absl::StatusOr<LabelSelector> s =
      LabelSelector::Parse("zone==z1, pool!=a100,spot,!reserved", "selector");
  ASSERT_OK(s);
  EXPECT_EQ(s->ToString(), "zone=z1,pool!=a100,spot,!reserved");
  EXPECT_EQ(LabelSelector().ToString(), "");
  EXPECT_EQ(LabelSelector::FromMap({{"a", "1"}, {"b", ""}}).ToString(),
            "a=1,b=");
}

TEST(LabelSelectorTest, MalformedSelectorIsInvalidArgument) {
  for (const char* bad :
       {"=v", "a=b=c d", ",", "a,,b", "!", "a b=c", "a=b c"}) {
    EXPECT_THAT(LabelSelector::Parse(bad, "label_selector"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("label_selector")))
        << bad;
  }
}

TEST(LabelSelectorTest, FromMapRequiresEveryPair) {
  LabelSelector s = LabelSelector::FromMap({{"a", "1"}, {"b", "2"}});
  EXPECT_TRUE(s.Matches({{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  EXPECT_FALSE(s.Matches({{"a", "1"}}));
  EXPECT_FALSE(s.Matches({{"a", "1"}, {"b", "3"}}));
}

}  // namespace
}  // namespace accelsched
