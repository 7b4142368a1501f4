#!/usr/bin/env bash
# Builds with a sanitizer and runs the tests under it.
#   bash scripts/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer (clang):
#                                      # the whole suite, the real server included, and the
#                                      # libFuzzer targets in the same tree (scripts/fuzz.sh
#                                      # runs them)
#   bash scripts/sanitize.sh thread    # ThreadSanitizer (clang, with -Werror=thread-safety):
#                                      # core/ and storage/ and their tests, linked against
#                                      # abseil built with TSan (scripts/tsan_abseil.sh); gRPC is
#                                      # not instrumented, so the server is not in this build
#   bash scripts/sanitize.sh MODE build  # builds only
# Any report fails the run. The one TSan suppression (tests/support/tsan.supp) is inside abseil; none
# names the project's code. The plain build is gcc's and these are clang's, so both compilers
# build every file; clang builds the ASan tree in about two thirds of gcc's time
# (scheduler_allocation_test.cc: 22 s against 35 s).
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:?address or thread}"
what="${2:-test}"
dir="build-$mode"
# The layer check (each core/ header compiled alone) is the plain build's: a sanitizer
# changes nothing it checks.
# -O1 -g1 (line tables, all a report's stack needs) builds in about two thirds of -O2 -g's time
# under the sanitizers, which is most of what these jobs cost (scheduler_service.cc: 17 s for 26).
configure=(-DACCELSCHED_SANITIZE="$mode" -DACCELSCHED_BUILD_BENCH=OFF
  -DACCELSCHED_CHECK_LAYERS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG")
export CC=clang CXX=clang++
if [[ "$mode" == address ]]; then
  configure+=(-DACCELSCHED_FUZZ=ON)
else
  prefix="$(bash scripts/tsan_abseil.sh | tail -n 1)"
  # The core/ and storage/ tests compile their own includes here, no precompiled header
  # before them (tests/CMakeLists.txt, ACCELSCHED_TEST_PCH).
  configure+=(-DCMAKE_PREFIX_PATH="$prefix" -Dabsl_DIR="$prefix/lib/cmake/absl"
    -DACCELSCHED_TEST_PCH=OFF)
fi
cmake -S . -B "$dir" "${configure[@]}" >/dev/null
cmake --build "$dir" -j"${JOBS:-2}"
if [[ "$what" == build ]]; then exit 0; fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/support/tsan.supp"
cd "$dir"
ctest --output-on-failure -j"${JOBS:-2}" --timeout 900
