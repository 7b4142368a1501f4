// Runs a process on a wall clock that is off: libfaketime (Debian's package
// libfaketime, installed by scripts/setup.sh) preloaded with a relative offset.
// Facts from its README (/usr/share/doc/libfaketime/README.gz): section 4d, a
// FAKETIME starting with + or - is an offset in seconds; section 2, the MT
// build is the one for threaded programs; FAKETIME_DONT_FAKE_MONOTONIC=1
// leaves CLOCK_MONOTONIC real (deadlines and timeouts run on it).
#ifndef ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_
#define ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace accelsched {

// For ServerProcess::Start's `environment`: the wall clock `offset` ahead of
// this machine's (behind when negative), to the second.
inline std::vector<std::string> ClockOffsetEnvironment(absl::Duration offset) {
  const int64_t seconds = absl::ToInt64Seconds(offset);
  return {"LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
          absl::StrCat("FAKETIME=", seconds < 0 ? "" : "+", seconds),
          "FAKETIME_DONT_FAKE_MONOTONIC=1"};
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_
