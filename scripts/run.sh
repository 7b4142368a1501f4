#!/usr/bin/env bash
# Sets everything up, builds, and runs the server on its embedded SQLite default
# (./accelsched.db). Extra arguments are passed to accelschedd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec build/accelschedd "$@"
