#!/usr/bin/env bash
# Runs every grpcurl block of the docs (tests/grpcurl/test_tours.py) against the built
# server, build/accelschedd, with the real grpcurl: installed from its Go module at the
# pinned version into $BUILD_DIR/go/bin, skipped when the binary there already is that
# version. The first install needs Go 1.25 or newer and the Go module proxy; Go keeps its
# module and build caches itself (~/go/pkg/mod, ~/.cache/go-build). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-build}
[[ $build == /* ]] || build=$root/$build  # GOBIN must be absolute

grpcurl_module=github.com/fullstorydev/grpcurl
grpcurl_version=v1.9.4  # keep in step with README.md and docs/integrations/grpcurl.md
gobin=$build/go/bin
grpcurl=$gobin/grpcurl

go=$(command -v go || true)
[[ -n $go ]] || go=/usr/local/go/bin/go
if [[ ! -x $go ]]; then
  echo "grpcurl_test.sh: no Go toolchain (go on PATH or /usr/local/go/bin/go)" >&2
  exit 1
fi

# `grpcurl -version` says "dev build" when built by go install; the module version Go
# records in the binary is the truth.
installed_version() {
  [[ -x $grpcurl ]] || return 0
  "$go" version -m "$grpcurl" 2>/dev/null |
    awk -v m="$grpcurl_module" '$1 == "mod" && $2 == m { print $3 }'
}

if [[ $(installed_version) == "$grpcurl_version" ]]; then
  echo "grpcurl_test.sh: $grpcurl is $grpcurl_version already"
else
  echo "grpcurl_test.sh: installing grpcurl $grpcurl_version into $gobin"
  GOBIN=$gobin "$go" install "$grpcurl_module/cmd/grpcurl@$grpcurl_version"
  if [[ $(installed_version) != "$grpcurl_version" ]]; then
    echo "grpcurl_test.sh: $grpcurl is not $grpcurl_version after go install" >&2
    exit 1
  fi
fi

export GRPCURL=$grpcurl ACCELSCHEDD=$build/accelschedd ACCELSCHED_SOURCE_DIR=$root
if [[ ! -x $ACCELSCHEDD ]]; then
  echo "grpcurl_test.sh: no $ACCELSCHEDD; build it first (scripts/build.sh)" >&2
  exit 1
fi
# No .pytest_cache or __pycache__ left in the tree.
export PYTHONDONTWRITEBYTECODE=1
python3 -m pytest -q -p no:cacheprovider tests/grpcurl "$@"
