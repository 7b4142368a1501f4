#include "core/book/allocation_ids.h"

#include <string>

#include "gtest/gtest.h"

namespace accelsched {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

TEST(AllocationIdsTest, IdsSortByTimeAndDifferWithinOneMicrosecond) {
  AllocationIds ids;
  const std::string a = ids.Next(kT0);
  const std::string b = ids.Next(kT0);
  const std::string c = ids.Next(kT0 + absl::Microseconds(1));
  EXPECT_NE(a, b);
  EXPECT_LT(a, c);
  EXPECT_LT(b, c);
}

}  // namespace
}  // namespace accelsched
