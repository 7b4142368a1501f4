#!/usr/bin/env bash
# Regenerates the committed Python stubs (src/accelsched/v1/*_pb2*.py{,i}) from proto/ with
# grpcio-tools as pinned in pyproject.toml's `test` extra (pip install 'clients/python[test]'),
# using the python3 on PATH, or $PYTHON. An argument writes them under that directory instead of
# src/ (tests/test_generated.py does, to check the committed ones are what this produces).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/src}
python=${PYTHON:-python3}
cd "$here/../.."
mkdir -p "$out/accelsched/v1"
# --proto_path=proto makes the generated imports `from accelsched.v1 import ...`, the package's
# own layout. Messages for every file; the gRPC service exists only in accelsched.proto, so
# only it gets a _pb2_grpc.py.
"$python" -m grpc_tools.protoc --proto_path=proto \
  --python_out="$out" --pyi_out="$out" \
  accelsched/v1/accelsched.proto accelsched/v1/accelerator_type.proto accelsched/v1/tenants.proto
"$python" -m grpc_tools.protoc --proto_path=proto --grpc_python_out="$out" \
  accelsched/v1/accelsched.proto
