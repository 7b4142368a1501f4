// New allocation ids: "a-<creation time in microseconds,
// hex>-<counter><random>", so that ids sort by creation and stay unique across
// restarts and within one microsecond. Not thread-safe: its owner's lock covers
// it.
#ifndef ACCELSCHED_CORE_BOOK_ALLOCATION_IDS_H_
#define ACCELSCHED_CORE_BOOK_ALLOCATION_IDS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"

namespace accelsched {

class AllocationIds {
 public:
  // A new id for an allocation created at `now`.
  std::string Next(absl::Time now);

 private:
  uint64_t counter_ = 0;
};

}  // namespace accelsched

#endif  // ACCELSCHED_CORE_BOOK_ALLOCATION_IDS_H_
