#!/usr/bin/env bash
# Sets up what the server needs, builds the server only, and runs it on its embedded SQLite
# default (./accelsched.db). Extra arguments are passed to accelschedd. The node agent:
# `bash scripts/build.sh --server accelsched-agent` (build/accelsched-agent).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh --server accelschedd
exec build/accelschedd "$@"
