#!/usr/bin/env bash
# Sets everything up, builds, and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
(cd build && ctest --output-on-failure -j"${JOBS:-2}" --timeout 900)
# The same suite under AddressSanitizer + UndefinedBehaviorSanitizer, then the fuzzers for a
# bounded time. QUICK=1 stops after the plain run (for local iteration; CI runs it all).
if [[ "${QUICK:-0}" == 1 ]]; then exit 0; fi
bash scripts/sanitize.sh address
bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
