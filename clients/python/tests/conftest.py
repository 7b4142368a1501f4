"""Fixtures: a real accelschedd per test on its own SQLite file, a Client of it, and the
nodes of cluster.py registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from accelsched import Client
from cluster import A100_NODE, T4_NODE, Server, register


@pytest.fixture
def server(tmp_path: Path):
    s = Server(tmp_path / "accelsched.db")
    s.start()
    yield s
    s.kill()


@pytest.fixture
def client(server: Server):
    with Client(server.address) as c:
        yield c


@pytest.fixture
def nodes(client: Client) -> None:
    register(client, A100_NODE, T4_NODE)
