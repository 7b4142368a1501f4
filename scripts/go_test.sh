#!/usr/bin/env bash
# Builds and tests the Go modules against the real build/accelschedd: the client (clients/go)
# and the Flyte propeller plugin (clients/go/flyteplugin, a module of its own on Flyte's):
#   - its committed stubs are what clients/go/generate.sh makes of proto/ now (same bytes);
#   - gofmt, go vet and go test of both, in module mode with go.sum as committed (-mod=readonly);
#   - a scratch module gets it by its import path with `go get` from a module proxy (a local one
#     serving this tree's module zip, in front of the public proxy for its dependencies) and
#     builds against it.
# Downloads go through the Go module proxy and stay in Go's own caches (GOMODCACHE, GOCACHE).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-$root/build}
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
export ACCELSCHEDD="$build/accelschedd" ACCELSCHED_SOURCE_DIR="$root"
module=github.com/accelsched/accelsched/clients/go
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

bash clients/go/generate.sh "$scratch/generated" "$build/go/bin"
if ! diff -r "$scratch/generated/accelschedv1" clients/go/accelschedv1; then
  echo "go_test.sh: clients/go/accelschedv1 is stale: run clients/go/generate.sh and commit it" >&2
  exit 1
fi

unformatted=$(gofmt -l clients/go)
if [[ -n "$unformatted" ]]; then
  echo "go_test.sh: not gofmt-formatted: $unformatted" >&2
  exit 1
fi
(cd clients/go && go vet ./... && go test -race -count=1 -timeout=300s ./...)
(cd clients/go/flyteplugin && go vet ./... && go test -count=1 -timeout=300s ./...)

# `go get` by import path. The module zip holds what a tag clients/go/v0.1.0 would: the
# module's files, without nested modules.
version=v0.1.0
proxy="$scratch/proxy/$module/@v"
mkdir -p "$proxy"
python3 - "$root/clients/go" "$proxy" "$module" "$version" <<'EOF'
import os, sys, zipfile
src, out, module, version = sys.argv[1:]
prefix = f"{module}@{version}/"
with zipfile.ZipFile(f"{out}/{version}.zip", "w", zipfile.ZIP_DEFLATED) as z:
    for d, dirs, files in os.walk(src):
        dirs[:] = sorted(x for x in dirs
                         if not os.path.exists(os.path.join(d, x, "go.mod")))
        for f in sorted(files):
            path = os.path.join(d, f)
            z.write(path, prefix + os.path.relpath(path, src))
EOF
cp clients/go/go.mod "$proxy/$version.mod"
printf '{"Version":"%s","Time":"2026-01-01T00:00:00Z"}\n' "$version" >"$proxy/$version.info"
echo "$version" >"$proxy/list"
mkdir "$scratch/user"
cat >"$scratch/user/main.go" <<'EOF'
package main

import (
	"fmt"

	"github.com/accelsched/accelsched/clients/go/accelsched"
	pb "github.com/accelsched/accelsched/clients/go/accelschedv1"
)

func main() {
	req, err := accelsched.NewAllocateRequest(accelsched.Task{ExecutionID: "x",
		Accelerator: &pb.Accelerator{Device: "H100"}, Queue: true})
	fmt.Println(req.GetAccelerator().GetDevice(), req.GetQueue(), err)
}
EOF
(
  cd "$scratch/user"
  export GOFLAGS=-mod=mod GONOSUMDB=github.com/accelsched/accelsched
  export GOPROXY="file://$scratch/proxy,$(go env GOPROXY)"
  go mod init example.com/user >/dev/null 2>&1
  go get "$module@$version"
  go mod tidy
  got=$(go run .)
  if [[ "$got" != "H100 true <nil>" ]]; then
    echo "go_test.sh: a module using $module@$version printed '$got'" >&2
    exit 1
  fi
  echo "go_test.sh: go get $module@$version: ok"
)
