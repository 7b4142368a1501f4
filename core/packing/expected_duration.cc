#include "core/packing/expected_duration.h"

#include "absl/strings/str_cat.h"

namespace accelsched {

std::string DescribeDuration(const DurationEstimate& estimate) {
  const std::string d = absl::FormatDuration(estimate.duration);
  switch (estimate.source) {
    case DurationSource::kGiven:
      return absl::StrCat("expected duration ", d, " (given)");
    case DurationSource::kLearned:
      return absl::StrCat("expected duration ", d, " (learned from ",
                          estimate.samples, " finished allocation",
                          estimate.samples == 1 ? "" : "s", ")");
    case DurationSource::kLease:
      break;
  }
  return absl::StrCat("expected duration ", d, " (the lease)");
}

}  // namespace accelsched
