#!/usr/bin/env bash
# Tests the Python client (clients/python) against the real ${BUILD_DIR:-build}/accelschedd, in
# a virtual environment at ${BUILD_DIR:-build}/python-venv with clients/python[test] installed
# from PyPI (flytekit, pytest and grpcio-tools, pinned in clients/python/pyproject.toml). The
# environment is made again only when pyproject.toml is newer than its marker; the package is
# installed editable, so a warm run installs nothing. pytest also checks that the committed
# stubs are what clients/python/generate.sh makes (tests/test_generated.py).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath -m "${BUILD_DIR:-build}")
venv=$build/python-venv
marker=$venv/.installed
python=${PYTHON:-python3}
pyproject=clients/python/pyproject.toml

if [[ ! -x "$build/accelschedd" ]]; then
  echo "python_test.sh: no $build/accelschedd: build it first (scripts/build.sh)" >&2
  exit 1
fi

if [[ ! -f "$marker" || "$pyproject" -nt "$marker" ]]; then
  if ! "$python" -c 'import ensurepip' 2>/dev/null; then
    # Debian ships venv's pip bootstrap apart from python3, in python3-venv.
    echo "python_test.sh: installing python3-venv"
    SUDO=""
    if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv
  fi
  rm -rf "$venv"
  "$python" -m venv "$venv"
  # A current pip resolves flytekit's hundred dependencies in a third of the time of the
  # pip that venv bundles (23 for Python 3.11).
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input pip==26.3
  # --no-compile: byte-compiling flytekit's hundred dependencies at install time costs more
  # than compiling, on first import, the few modules the tests load. pip's cache
  # (~/.cache/pip) keeps the wheels for the next fresh environment.
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --no-compile --editable "$root/clients/python[test]"
  touch "$marker"
fi

ACCELSCHEDD="$build/accelschedd" "$venv/bin/python" -m pytest -q "$root/clients/python/tests"
