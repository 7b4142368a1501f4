#!/usr/bin/env bash
# Installs accelsched's build and test dependencies from Debian 12's packages.
# Idempotent and non-interactive: packages already present are left alone.
# --build-only: just what building accelschedd and accelsched-agent needs (scripts/run.sh and
# the Dockerfile use it).
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config
  protobuf-compiler libprotobuf-dev
  libgrpc++-dev protobuf-compiler-grpc grpc-proto
  libabsl-dev
  prometheus-cpp-dev
  libsqlite3-dev sqlite3
  libpq-dev
  rapidjson-dev
)
# The tests and benchmarks are GoogleTest and Google Benchmark programs. The tests run the real
# tools: Prometheus and promtool, docker-compose's config check.
# The tests also need clang's sanitizer and libFuzzer runtimes, openssl for test
# certificates, setpriv (util-linux) to run the server as an unprivileged user, and
# dpkg-dev (dpkg-source) for scripts/tsan_abseil.sh's `apt-get source`.
# libfaketime runs a replica on a wall clock that is off in the HA tests (tests/support/clock_offset.h).
# The PostgreSQL backend's tests start private servers of Debian's postgresql-15
# (tests/support/postgres_instance.h), as the postgres account that package creates.
TEST_PACKAGES=(libgtest-dev libgmock-dev libbenchmark-dev postgresql-15 prometheus docker-compose clang libclang-rt-14-dev openssl util-linux dpkg-dev libfaketime)
if [[ "${1:-}" != "--build-only" ]]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The Kubernetes manifests are validated offline by kubernetes-models (the Kubernetes and
# Prometheus Operator schemas as npm packages, pinned with their hashes in package-lock.json):
# no Debian package carries a current Kubernetes schema, and kubectl needs a server to validate.
if [[ "${1:-}" != "--build-only" ]]; then
  if ! command -v npm >/dev/null; then
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
    echo "setup: installing nodejs npm"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  validate="$(dirname "$0")/../deploy/kubernetes/validate"
  if [[ ! -d "$validate/node_modules" || "$validate/package-lock.json" -nt "$validate/node_modules" ]]; then
    (cd "$validate" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    touch "$validate/node_modules"
  fi
fi

# The Go modules (clients/go and its propeller plugin) need the Go toolchain the machines carry
# (Go 1.26, the go directive of Flyte's modules; Debian 12's 1.19 cannot build them); their
# dependencies come from the Go module proxy into Go's own caches. The Python client's come from
# PyPI into a virtual environment (scripts/python_test.sh).
if [[ "${1:-}" != "--build-only" ]]; then
  if ! go version 2>/dev/null | grep -Eq 'go1\.(2[6-9]|[3-9][0-9])'; then
    echo "setup: Go 1.26 or later is needed on PATH (found: $(go version 2>&1))" >&2
    exit 1
  fi
fi
