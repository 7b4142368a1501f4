#!/usr/bin/env bash
# Checks the docs: docs/reference/api.md is what docs/reference/generate.sh makes of proto/ now
# (same bytes; protoc-gen-doc pinned there, installed from the Go module proxy into
# ${BUILD_DIR:-build}/go/bin); every link of every Markdown page resolves (tests/docs, with the
# packages pinned in tests/docs/requirements.txt, from PyPI, in ${BUILD_DIR:-build}/docs-venv).
# The grpcurl commands of the docs are run by scripts/grpcurl_test.sh. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath -m "${BUILD_DIR:-build}")
venv=$build/docs-venv
requirements=tests/docs/requirements.txt
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

export GOTOOLCHAIN=local
bash docs/reference/generate.sh "$scratch" "$build/go/bin"
if ! diff -u docs/reference/api.md "$scratch/api.md"; then
  echo "docs_test.sh: docs/reference/api.md is stale: run docs/reference/generate.sh and commit it" >&2
  exit 1
fi

if [[ ! -f "$venv/.installed" || "$requirements" -nt "$venv/.installed" ]]; then
  rm -rf "$venv"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --requirement "$requirements"
  touch "$venv/.installed"
fi
export ACCELSCHED_SOURCE_DIR=$root PYTHONDONTWRITEBYTECODE=1
"$venv/bin/python" -m pytest -q -p no:cacheprovider tests/docs "$@"
