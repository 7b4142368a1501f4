#!/usr/bin/env bash
# Builds and tests the Go client (clients/go) offline with Debian's Go toolchain and Go
# packages (GOPATH mode over /usr/share/gocode: no module downloads), against the real
# build/accelschedd. Generates the gRPC stubs from proto/ with Debian's protoc-gen-go and
# protoc-gen-go-grpc into build/go (never committed, so never stale).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${BUILD_DIR:-$root/build}
gopath=$build/go
module=github.com/accelsched/accelsched/clients/go
rm -rf "$gopath/src"
mkdir -p "$gopath/src/$module/accelschedv1"
protoc --proto_path=proto --go_out="$gopath/src" --go-grpc_out="$gopath/src" \
  accelsched/v1/accelsched.proto accelsched/v1/accelerator_type.proto
ln -s "$root/clients/go/accelsched" "$gopath/src/$module/accelsched"

export GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$gopath/cache" GOPROXY=off
export ACCELSCHEDD="$build/accelschedd" ACCELSCHED_SOURCE_DIR="$root"
# Named one by one: a `...` pattern does not follow the symlink.
packages=("$module/accelschedv1" "$module/accelsched")
go vet "${packages[@]}"
unformatted=$(gofmt -l clients/go)
if [[ -n "$unformatted" ]]; then
  echo "go_test.sh: not gofmt-formatted: $unformatted" >&2
  exit 1
fi
go test -count=1 -timeout=300s "${packages[@]}"
