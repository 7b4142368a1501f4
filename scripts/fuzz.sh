#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into build-fuzz/ and runs each for
# ${1:-20} seconds on a fresh corpus seeded from tests/fuzz/corpus. Any crash fails the run;
# its input is left in build-fuzz/crashes/ to become a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
# -O1 -g1, as the sanitizer jobs: most of this job's time is building.
CC=clang CXX=clang++ cmake -S . -B build-fuzz -DACCELSCHED_FUZZ=ON -DACCELSCHED_BUILD_TESTS=OFF \
  -DACCELSCHED_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
targets=(fuzz_registry fuzz_mig_geometry fuzz_allocate fuzz_register_node)
cmake --build build-fuzz -j"${JOBS:-2}" --target "${targets[@]}"
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  if [[ -d "tests/fuzz/corpus/$t" ]]; then cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true; fi
  echo "fuzz: $t for ${seconds}s"
  build-fuzz/tests/fuzz/"$t" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t-" "$corpus" 2>&1 |
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done|Test unit written" || true
  # A crash leaves an artifact; the run above exits non-zero but is piped, so look.
  if compgen -G "build-fuzz/crashes/$t-*" >/dev/null; then
    echo "fuzz: $t found a crash: $(ls build-fuzz/crashes/$t-*)" >&2
    exit 1
  fi
done
