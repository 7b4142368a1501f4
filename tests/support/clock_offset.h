// Runs a process on a wall clock that is off: libfaketime (Debian's package
// libfaketime, installed by scripts/setup.sh) preloaded with a relative offset.
// Facts from its README (/usr/share/doc/libfaketime/README.gz): section 4d, a
// FAKETIME starting with + or - is an offset in seconds; section 2, the MT
// build is the one for threaded programs; FAKETIME_DONT_FAKE_MONOTONIC=1
// leaves CLOCK_MONOTONIC real (deadlines and timeouts run on it). Under
// AddressSanitizer with its runtime linked dynamically (GCC's), a preloaded
// library ahead of it is refused unless ASAN_OPTIONS has
// verify_asan_link_order=0 (compiler-rt, asan_flags.inc).
#ifndef ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_
#define ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace accelsched {

// For ServerProcess::Start's `environment`: the wall clock `offset` ahead of
// this machine's (behind when negative), to the second.
// Where Debian's package puts the library: a test asserts it is there, since
// a preload that is missing only warns, and the process would run on the true
// clock.
inline constexpr char kLibFaketime[] =
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

inline std::vector<std::string> ClockOffsetEnvironment(absl::Duration offset) {
  const int64_t seconds = absl::ToInt64Seconds(offset);
  const char* asan = std::getenv("ASAN_OPTIONS");
  return {absl::StrCat("LD_PRELOAD=", kLibFaketime),
          absl::StrCat("FAKETIME=", seconds < 0 ? "" : "+", seconds),
          "FAKETIME_DONT_FAKE_MONOTONIC=1",
          absl::StrCat("ASAN_OPTIONS=", asan != nullptr ? asan : "",
                       asan != nullptr && *asan != '\0' ? ":" : "",
                       "verify_asan_link_order=0")};
}

}  // namespace accelsched

#endif  // ACCELSCHED_TESTS_SUPPORT_CLOCK_OFFSET_H_
