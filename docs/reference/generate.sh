#!/usr/bin/env bash
# Generates the API reference, docs/reference/api.md, from the proto's comments with
# protoc-gen-doc (pinned here, installed from the Go module proxy into BIN) and Debian's protoc
# (3.21, scripts/setup.sh), with the well-known types the contract uses (Duration, Timestamp), so
# that every type the page names has its section. scripts/docs_test.sh regenerates it into a
# scratch directory and fails when the bytes differ from the committed page, as
# scripts/go_test.sh does for the Go stubs.
#   docs/reference/generate.sh [OUT_DIR] [BIN]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$here}
bin=${2:-$root/build/go/bin}
PROTOC_GEN_DOC=github.com/pseudomuto/protoc-gen-doc/cmd/protoc-gen-doc@v1.5.1
mkdir -p "$bin" "$out"
if ! "$bin/protoc-gen-doc" --version 2>/dev/null | grep -qx "protoc-gen-doc version ${PROTOC_GEN_DOC#*@v}"; then
  GOBIN="$bin" GOFLAGS=-mod=mod go install "$PROTOC_GEN_DOC"
fi
protoc --proto_path="$root/proto" --plugin=protoc-gen-doc="$bin/protoc-gen-doc" \
  --doc_out="$out" --doc_opt=markdown,api.md \
  accelsched/v1/accelsched.proto accelsched/v1/accelerator_type.proto accelsched/v1/tenants.proto \
  google/protobuf/duration.proto google/protobuf/timestamp.proto
