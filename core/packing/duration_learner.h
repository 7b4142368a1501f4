// What the server learns of how long requests run: for each tenant and
// request shape (RequestSpec::KeyFor(kShape)), the runtimes of its last
// finished allocations (admitted to released), and their median weighted by
// age (a sample's weight halves every kHalfLife), so that a tenant whose
// jobs change is followed within a day and one odd run moves nothing.
// Bounded: kSamplesPerKey samples a key, kMaxKeys keys (the key whose latest
// run ended first goes first). Not thread-safe: the scheduler's lock guards
// it.
//
// It is memory only: the scheduler rebuilds it at start from the finished
// allocations the store keeps (SchedulerOptions::retention), in the order
// they ended (BookLeases::Rebuild), so that a restart forgets nothing that
// is still stored and writes nothing more.
#ifndef ACCELSCHED_CORE_PACKING_DURATION_LEARNER_H_
#define ACCELSCHED_CORE_PACKING_DURATION_LEARNER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/model/request_spec.h"
#include "core/packing/expected_duration.h"

namespace accelsched {

class DurationLearner {
 public:
  static constexpr int kSamplesPerKey = 32;
  static constexpr size_t kMaxKeys = 4096;
  // Fewer finished allocations than this say nothing yet.
  static constexpr int kMinSamples = 3;
  // Runtimes whose upper quartile is more than this times their lower one
  // say nothing either: a key whose runs differ that much has no typical
  // runtime, and weighing the median as one packs worse than weighing none
  // (bench/packing_bench, "durations learned" on the synthetic stream).
  static constexpr double kMaxSpread = 4;
  static constexpr absl::Duration kHalfLife = absl::Hours(24);

  // The key of a request of `tenant` for `spec`: its tenant and its shape.
  static std::string KeyOf(absl::string_view tenant, const RequestSpec& spec);

  // Records that an allocation of `key` ran `runtime` and ended at
  // `ended_at`. A runtime of zero or less is ignored. Keeps the key's last
  // kSamplesPerKey samples; a new key past kMaxKeys replaces the one whose
  // latest sample ended first (O(kMaxKeys), once per new key).
  void Observe(absl::string_view key, absl::Duration runtime,
               absl::Time ended_at);

  // The median of `key`'s samples, each weighed 0.5^(age / kHalfLife) as of
  // `now` (a sample from the future weighs 1): source kLearned with its
  // sample count. nullopt for a key with fewer than kMinSamples samples, or
  // whose weighted upper quartile is above kMaxSpread times its lower one.
  std::optional<DurationEstimate> Estimate(absl::string_view key,
                                           absl::Time now) const;

  size_t keys() const { return by_key_.size(); }

 private:
  struct Sample {
    absl::Duration runtime;
    absl::Time ended_at;
  };
  struct Samples {
    // A ring of at most kSamplesPerKey; `next` is where the next one goes.
    std::vector<Sample> ring;
    int next = 0;
    absl::Time newest = absl::InfinitePast();
  };

  absl::flat_hash_map<std::string, Samples> by_key_;
};

// How long a request of `tenant` for `spec`, admitted at `now`, is expected
// to run: its expected_duration when given; else `learned`'s estimate for
// its key (null: none); else its lease, `default_lease` when it names none.
DurationEstimate ExpectedDurationOf(absl::string_view tenant,
                                    const RequestSpec& spec,
                                    const DurationLearner* learned,
                                    absl::Duration default_lease,
                                    absl::Time now);

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_PACKING_DURATION_LEARNER_H_
