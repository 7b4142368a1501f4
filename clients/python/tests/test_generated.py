"""The committed stubs are exactly what generate.sh makes from proto/ now, so they are never
stale: after a change to proto/accelsched/v1, run clients/python/generate.sh."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PYTHON_CLIENT = Path(__file__).resolve().parents[1]
COMMITTED = PYTHON_CLIENT / "src" / "accelsched" / "v1"


def stubs(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("*_pb2*.py*"))}


def test_committed_stubs_are_what_generate_sh_makes(tmp_path):
    subprocess.run(
        ["bash", str(PYTHON_CLIENT / "generate.sh"), str(tmp_path)],
        check=True, env={**os.environ, "PYTHON": sys.executable},
    )

    generated = stubs(tmp_path / "accelsched" / "v1")
    committed = stubs(COMMITTED)
    assert "accelsched_pb2_grpc.py" in generated
    assert sorted(committed) == sorted(generated), "run clients/python/generate.sh"
    stale = [name for name in generated if committed[name] != generated[name]]
    assert not stale, f"stale stubs {stale}: run clients/python/generate.sh"
