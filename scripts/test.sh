#!/usr/bin/env bash
# Sets everything up, builds, and runs every test: the plain suite; against the server just
# built, the Go modules' tests (the client, the propeller plugin), every grpcurl block of the
# docs and the Python client's tests; the docs' links and generated API reference; the same
# suite under AddressSanitizer + UndefinedBehaviorSanitizer, core/ and storage/ under ThreadSanitizer, then the fuzzers for a
# bounded time. QUICK=1 stops before the sanitizers (for local iteration; CI runs it all).
# Each phase's duration is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
timings=()
phase() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  timings+=("$name: $((SECONDS - start)) s")
}
report() { printf 'test.sh: %s\n' "${timings[@]}"; }
trap report EXIT
phase build bash scripts/build.sh
phase plain bash -c 'cd build && ctest --output-on-failure -j"${JOBS:-2}" --timeout 900'
phase go bash scripts/go_test.sh
phase grpcurl bash scripts/grpcurl_test.sh
phase python bash scripts/python_test.sh
phase docs bash scripts/docs_test.sh
if [[ "${QUICK:-0}" == 1 ]]; then exit 0; fi
phase asan+ubsan bash scripts/sanitize.sh address
phase tsan bash scripts/sanitize.sh thread
phase fuzz bash scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
