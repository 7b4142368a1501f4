// What the server learns of how long requests run (DurationLearner), and
// which duration packing weighs (ExpectedDurationOf): given, learned, or the
// lease.
#include "core/packing/duration_learner.h"

#include <string>

#include "core/packing/expected_duration.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace accelsched {
namespace {

using ::testing::Optional;

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

RequestSpec T4s(int count) {
  RequestSpec spec;
  spec.requested_models = {"nvidia-tesla-t4"};
  spec.count = count;
  return spec;
}

TEST(DurationLearnerTest, SaysNothingBeforeThreeRunsThenTheMedian) {
  DurationLearner learner;
  const std::string key = DurationLearner::KeyOf("a", T4s(1));
  learner.Observe(key, absl::Minutes(50), kT0);
  learner.Observe(key, absl::Minutes(60), kT0);
  EXPECT_EQ(learner.Estimate(key, kT0), std::nullopt);
  learner.Observe(key, absl::Minutes(45), kT0);
  EXPECT_THAT(learner.Estimate(key, kT0),
              Optional(DurationEstimate{absl::Minutes(50),
                                        DurationSource::kLearned, 3}));
  // One odd run does not move the median.
  learner.Observe(key, absl::Hours(40), kT0);
  EXPECT_THAT(learner.Estimate(key, kT0),
              Optional(DurationEstimate{absl::Minutes(50),
                                        DurationSource::kLearned, 4}));
  EXPECT_EQ(learner.Estimate("unknown", kT0), std::nullopt);
}

// Runtimes with no typical value (the upper quartile above kMaxSpread times
// the lower) say nothing.
TEST(DurationLearnerTest, RuntimesThatVaryTooMuchSayNothing) {
  DurationLearner learner;
  const std::string key = DurationLearner::KeyOf("a", T4s(1));
  for (absl::Duration d : {absl::Minutes(5), absl::Minutes(30), absl::Hours(3),
                           absl::Hours(20)}) {
    learner.Observe(key, d, kT0);
  }
  EXPECT_EQ(learner.Estimate(key, kT0), std::nullopt);
  // Quartiles exactly kMaxSpread apart (30 and 120 minutes) still say
  // something: the median, 40 minutes.
  DurationLearner close;
  for (absl::Duration d : {absl::Minutes(30), absl::Minutes(40),
                           absl::Minutes(120), absl::Minutes(130)}) {
    close.Observe(key, d, kT0);
  }
  EXPECT_THAT(close.Estimate(key, kT0),
              Optional(DurationEstimate{absl::Minutes(40),
                                        DurationSource::kLearned, 4}));
}

// A sample's weight halves every kHalfLife: three runs of 30 minutes two
// days ago weigh a quarter each, two runs of 10 minutes now one each.
TEST(DurationLearnerTest, NewerRunsOutweighOlderOnes) {
  DurationLearner learner;
  const std::string key = DurationLearner::KeyOf("a", T4s(1));
  const absl::Time then = kT0 - 2 * DurationLearner::kHalfLife;
  for (int i = 0; i < 3; ++i) learner.Observe(key, absl::Minutes(30), then);
  for (int i = 0; i < 2; ++i) learner.Observe(key, absl::Minutes(10), kT0);
  EXPECT_THAT(learner.Estimate(key, kT0),
              Optional(DurationEstimate{absl::Minutes(10),
                                        DurationSource::kLearned, 5}));
  // Seen at the time they ended (every weight 1), the three 30-minute runs
  // are the plain median.
  EXPECT_THAT(learner.Estimate(key, then),
              Optional(DurationEstimate{absl::Minutes(30),
                                        DurationSource::kLearned, 5}));
}

TEST(DurationLearnerTest, KeysAreTheTenantAndTheShape) {
  DurationLearner learner;
  for (int i = 0; i < 3; ++i) {
    learner.Observe(DurationLearner::KeyOf("a", T4s(1)), absl::Minutes(5), kT0);
    learner.Observe(DurationLearner::KeyOf("b", T4s(1)), absl::Hours(5), kT0);
    learner.Observe(DurationLearner::KeyOf("a", T4s(8)), absl::Hours(9), kT0);
  }
  EXPECT_EQ(
      learner.Estimate(DurationLearner::KeyOf("a", T4s(1)), kT0)->duration,
      absl::Minutes(5));
  EXPECT_EQ(
      learner.Estimate(DurationLearner::KeyOf("b", T4s(1)), kT0)->duration,
      absl::Hours(5));
  EXPECT_EQ(
      learner.Estimate(DurationLearner::KeyOf("a", T4s(8)), kT0)->duration,
      absl::Hours(9));
  // The given expected_duration is a hint, not the shape.
  RequestSpec hinted = T4s(1);
  hinted.expected_duration = absl::Hours(2);
  EXPECT_EQ(DurationLearner::KeyOf("a", hinted),
            DurationLearner::KeyOf("a", T4s(1)));
}

TEST(DurationLearnerTest, MemoryIsBounded) {
  DurationLearner learner;
  const std::string key = DurationLearner::KeyOf("a", T4s(1));
  // The newest kSamplesPerKey runs of a key are kept.
  for (int i = 0; i < DurationLearner::kSamplesPerKey; ++i) {
    learner.Observe(key, absl::Hours(3), kT0);
  }
  for (int i = 0; i < DurationLearner::kSamplesPerKey; ++i) {
    learner.Observe(key, absl::Minutes(7), kT0);
  }
  EXPECT_THAT(
      learner.Estimate(key, kT0),
      Optional(DurationEstimate{absl::Minutes(7), DurationSource::kLearned,
                                DurationLearner::kSamplesPerKey}));
  // Past kMaxKeys, the key observed longest ago goes first.
  for (size_t i = 0; i < DurationLearner::kMaxKeys; ++i) {
    const std::string k =
        DurationLearner::KeyOf("t" + std::to_string(i), T4s(1));
    for (int j = 0; j < 3; ++j) {
      learner.Observe(k, absl::Minutes(1), kT0 + absl::Seconds(1 + i));
    }
  }
  EXPECT_EQ(learner.keys(), DurationLearner::kMaxKeys);
  EXPECT_EQ(learner.Estimate(key, kT0), std::nullopt);
  EXPECT_NE(learner.Estimate(DurationLearner::KeyOf("t0", T4s(1)), kT0),
            std::nullopt);
}

TEST(DurationLearnerTest, ARunOfNoTimeIsIgnored) {
  DurationLearner learner;
  learner.Observe("k", -absl::Seconds(1), kT0);
  for (int i = 0; i < 3; ++i) learner.Observe("k", absl::ZeroDuration(), kT0);
  EXPECT_EQ(learner.keys(), 0u);
  EXPECT_EQ(learner.Estimate("k", kT0), std::nullopt);
}

TEST(ExpectedDurationOfTest, GivenThenLearnedThenTheLease) {
  DurationLearner learner;
  RequestSpec spec = T4s(1);
  const absl::Duration kDefault = absl::Hours(1);
  EXPECT_EQ(ExpectedDurationOf("a", spec, &learner, kDefault, kT0),
            (DurationEstimate{kDefault, DurationSource::kLease, 0}));
  spec.lease = absl::Minutes(10);
  EXPECT_EQ(ExpectedDurationOf("a", spec, nullptr, kDefault, kT0),
            (DurationEstimate{absl::Minutes(10), DurationSource::kLease, 0}));
  for (int i = 0; i < 3; ++i) {
    learner.Observe(DurationLearner::KeyOf("a", spec), absl::Hours(6), kT0);
  }
  EXPECT_EQ(ExpectedDurationOf("a", spec, &learner, kDefault, kT0),
            (DurationEstimate{absl::Hours(6), DurationSource::kLearned, 3}));
  EXPECT_EQ(ExpectedDurationOf("b", spec, &learner, kDefault, kT0).source,
            DurationSource::kLease);
  spec.expected_duration = absl::Minutes(90);
  EXPECT_EQ(ExpectedDurationOf("a", spec, &learner, kDefault, kT0),
            (DurationEstimate{absl::Minutes(90), DurationSource::kGiven, 0}));
}

TEST(ExpectedDurationTest, DescribesWhereTheDurationCameFrom) {
  EXPECT_EQ(DescribeDuration({absl::Hours(2), DurationSource::kGiven, 0}),
            "expected duration 2h (given)");
  EXPECT_EQ(DescribeDuration({absl::Minutes(25), DurationSource::kLearned, 12}),
            "expected duration 25m (learned from 12 finished allocations)");
  EXPECT_EQ(DescribeDuration({absl::Hours(1), DurationSource::kLease, 0}),
            "expected duration 1h (the lease)");
}

}  // namespace
}  // namespace accelsched
