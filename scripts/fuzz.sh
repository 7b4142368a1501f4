#!/usr/bin/env bash
# Runs each libFuzzer target for ${1:-20} seconds on a fresh corpus seeded from tests/fuzz/corpus.
# The targets are built (clang, ASan + UBSan) in the AddressSanitizer tree, build-address/, by
# scripts/sanitize.sh address; after that job this build is a no-op. Any crash fails the run;
# its input is left in build-fuzz/crashes/ to become a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
bash scripts/sanitize.sh address build
targets=(fuzz_registry fuzz_mig_geometry fuzz_allocate fuzz_register_node)
mkdir -p build-fuzz/crashes
for t in "${targets[@]}"; do
  corpus="build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  if [[ -d "tests/fuzz/corpus/$t" ]]; then cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true; fi
  echo "fuzz: $t for ${seconds}s"
  build-address/tests/fuzz/"$t" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t-" "$corpus" 2>&1 |
    grep -E "stat::number_of_executed_units|ERROR|SUMMARY|Done|Test unit written" || true
  # A crash leaves an artifact; the run above exits non-zero but is piped, so look.
  if compgen -G "build-fuzz/crashes/$t-*" >/dev/null; then
    echo "fuzz: $t found a crash: $(ls build-fuzz/crashes/$t-*)" >&2
    exit 1
  fi
done
