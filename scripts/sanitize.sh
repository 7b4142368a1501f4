#!/usr/bin/env bash
# Builds everything with a sanitizer and runs the whole test suite under it.
#   bash scripts/sanitize.sh address   # AddressSanitizer + UndefinedBehaviorSanitizer (gcc)
#   bash scripts/sanitize.sh thread    # ThreadSanitizer (clang, with -Werror=thread-safety)
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:?address or thread}"
dir="build-$mode"
if [[ "$mode" == thread ]]; then export CC=clang CXX=clang++; fi
cmake -S . -B "$dir" -DACCELSCHED_SANITIZE="$mode" -DACCELSCHED_BUILD_BENCH=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$dir" -j"${JOBS:-2}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
cd "$dir"
ctest --output-on-failure -j"${JOBS:-2}" --timeout 900
