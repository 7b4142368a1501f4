#!/usr/bin/env bash
# Generates the Go stubs of proto/accelsched/v1 into OUT/accelschedv1 (default: this module,
# where they are committed, as flyteidl commits its own). The generators are pinned here and
# installed from the Go module proxy into BIN; protoc is Debian's (3.21, scripts/setup.sh), whose
# version the stubs' headers name. scripts/go_test.sh regenerates into a scratch directory and
# fails when the bytes differ from the committed ones.
#   clients/go/generate.sh [OUT] [BIN]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here}
bin=${2:-$root/build/go/bin}
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.11
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
mkdir -p "$bin" "$out"
if ! "$bin/protoc-gen-go" --version 2>/dev/null | grep -qx "protoc-gen-go ${PROTOC_GEN_GO#*@}" ||
  ! "$bin/protoc-gen-go-grpc" --version 2>/dev/null | grep -qx "protoc-gen-go-grpc ${PROTOC_GEN_GO_GRPC#*@v}"; then
  GOBIN="$bin" go install "$PROTOC_GEN_GO"
  GOBIN="$bin" go install "$PROTOC_GEN_GO_GRPC"
fi
module=github.com/accelsched/accelsched/clients/go
PATH="$bin:$PATH" protoc --proto_path="$root/proto" \
  --go_out="$out" --go_opt=module="$module" \
  --go-grpc_out="$out" --go-grpc_opt=module="$module" \
  accelsched/v1/accelsched.proto accelsched/v1/accelerator_type.proto accelsched/v1/tenants.proto
