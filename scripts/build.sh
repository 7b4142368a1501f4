#!/usr/bin/env bash
# Installs dependencies (when missing) and builds into build/: every target (the tests, the
# benchmarks), or with --server [TARGET...] only the server and the node agent (accelschedd,
# accelsched-agent; or the TARGETs named), with only the packages they need, as a unity build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --server ]]; then
  shift
  bash scripts/setup.sh --build-only
  # A unity build: accelschedd alone in two thirds of the time (CMakeLists.txt).
  options=(-DACCELSCHED_BUILD_TESTS=OFF -DACCELSCHED_BUILD_BENCH=OFF -DACCELSCHED_UNITY_BUILD=ON)
  targets=(--target "${@:-accelschedd}")
  (($#)) || targets+=(accelsched-agent)
else
  bash scripts/setup.sh
  options=(-DACCELSCHED_BUILD_TESTS=ON -DACCELSCHED_BUILD_BENCH=ON -DACCELSCHED_UNITY_BUILD=OFF)
  targets=()
fi
# -g1 (line tables: what a backtrace or perf needs) builds in about two thirds of -g's time
# (tests/core/scheduler/scheduler_allocation_test.cc: 16 s against 25 s).
cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${options[@]}" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build build -j"${JOBS:-2}" "${targets[@]}"
