#include "core/packing/packing_policy.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace accelsched {
namespace {

constexpr std::pair<Packing, absl::string_view> kNames[] = {
    {Packing::kFragmentation, "fragmentation"},
    {Packing::kBestFit, "best_fit"},
    {Packing::kFirstFit, "first_fit"},
    {Packing::kSpread, "spread"},
};

}  // namespace

absl::StatusOr<Packing> ParsePacking(absl::string_view name) {
  for (const auto& [packing, spelled] : kNames) {
    if (name == spelled) return packing;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--packing: unknown policy \"", name,
                   "\" (one of fragmentation, best_fit, first_fit, spread)"));
}

absl::string_view PackingName(Packing packing) {
  for (const auto& [p, spelled] : kNames) {
    if (p == packing) return spelled;
  }
  return "unknown";
}

}  // namespace accelsched
