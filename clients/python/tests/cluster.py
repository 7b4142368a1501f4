"""A real accelschedd for the tests, and the nodes they register.

The binary is $ACCELSCHEDD (scripts/python_test.sh sets it), else build/accelschedd of this
repository.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from accelsched import Client, pb

REPO = Path(__file__).resolve().parents[3]
READY = re.compile(r"accelschedd ready: grpc_port=(\d+) metrics_port=(\d+)")
# How long a start may take before the test fails rather than hangs.
START_TIMEOUT_S = 30


class Server:
    """accelschedd on 127.0.0.1. The first start picks a free port; later starts (after kill)
    take the same port and the same database, as a restarted server would."""

    def __init__(self, db: Path):
        self.binary = os.environ.get("ACCELSCHEDD", str(REPO / "build" / "accelschedd"))
        self.db = db
        self.port = 0
        self.metrics_port = 0
        self.process: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Starts the server and returns once it prints its ready line."""
        self.process = subprocess.Popen(
            [self.binary, f"--db={self.db}", f"--listen=127.0.0.1:{self.port}",
             "--metrics_listen=127.0.0.1:0"],
            stderr=subprocess.PIPE, text=True,
        )
        ready = threading.Event()
        lines: list[str] = []

        def read(stderr=self.process.stderr) -> None:
            # Reads to the end, so that the server never blocks on a full pipe.
            for line in stderr:
                lines.append(line)
                match = READY.search(line)
                if match and not ready.is_set():
                    self.port, self.metrics_port = int(match[1]), int(match[2])
                    ready.set()
            ready.set()  # it exited: wake the waiter, which then finds it gone

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(START_TIMEOUT_S) or self.process.poll() is not None:
            self.kill()
            pytest.fail(f"{self.binary} did not get ready:\n{''.join(lines)}")

    def kill(self) -> None:
        """kill -9: nothing is flushed or closed on the way out."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def metric(self, name: str) -> float:
        """The value of the unlabelled metric ``name`` now."""
        # No proxy: an http_proxy of the environment must not carry a loopback read.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{self.metrics_port}/metrics") as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        raise AssertionError(f"no metric {name}")


# An A100 node with one whole GPU and one in MIG mode holding three 2g.10gb slices (models
# spelled as flytekit and as NVML write them), and a T4 node.
A100_NODE = pb.Node(
    name="a100-node",
    labels={"kubernetes.io/hostname": "a100-node", "pool": "a100"},
    devices=[
        pb.Device(id="GPU-a100-whole", model="nvidia-tesla-a100", index=0, healthy=True),
        pb.Device(
            id="GPU-a100-mig", model="NVIDIA A100-SXM4-40GB", index=1, healthy=True,
            mig_enabled=True,
            mig_slices=[
                pb.MigSlice(id=f"MIG-a100-{start}", profile="2g.10gb", start=start)
                for start in (0, 2, 4)
            ],
        ),
    ],
)
MIG_SLICES = {f"MIG-a100-{start}" for start in (0, 2, 4)}
T4_NODE = pb.Node(
    name="t4-node",
    labels={"kubernetes.io/hostname": "t4-node", "pool": "t4"},
    devices=[pb.Device(id="GPU-t4", model="Tesla T4", index=0, healthy=True)],
)


def register(client: Client, *nodes: pb.Node) -> None:
    for node in nodes:
        client.stub.RegisterNode(pb.RegisterNodeRequest(node=node), timeout=10)


def capacity(client: Client, model: str, partition: str = "") -> pb.CapacityEntry:
    """The GetCapacity entry of a canonical model and partition ("": whole devices)."""
    for entry in client.stub.GetCapacity(pb.GetCapacityRequest(), timeout=10).entries:
        if (entry.model, entry.partition) == (model, partition):
            return entry
    raise AssertionError(f"no capacity entry for {model} {partition!r}")


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    """Returns once ``condition()`` holds; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for a condition"
        time.sleep(0.01)


class _Seen(logging.Handler):
    def __init__(self, text: str):
        super().__init__(logging.INFO)
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


@contextlib.contextmanager
def on_log(text: str) -> Iterator[threading.Event]:
    """An Event set once the client logs a line containing ``text``."""
    logger = logging.getLogger("accelsched")
    seen = _Seen(text)
    level = logger.level
    logger.setLevel(logging.INFO)
    logger.addHandler(seen)
    try:
        yield seen.event
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)


@contextlib.contextmanager
def refusing_address() -> Iterator[str]:
    """A loopback address that refuses connections: its port is bound but not listening, so
    nothing else can take it meanwhile."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{s.getsockname()[1]}"
