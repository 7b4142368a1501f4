"""Typed errors carry the status code and the server's message verbatim; only UNAVAILABLE and
DEADLINE_EXCEEDED are retried."""

from __future__ import annotations

import logging

import grpc
import pytest
from flytekit.extras.accelerators import A100, T4

from accelsched import (
    AccelschedError,
    Client,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
    pb,
)
from cluster import refusing_address

pytestmark = pytest.mark.usefixtures("nodes")


def server_message(client: Client, rpc: str, request) -> str:
    """What the server answers to ``request`` on a bare stub call."""
    with pytest.raises(grpc.RpcError) as raised:
        getattr(client.stub, rpc)(request, timeout=10)
    return raised.value.details()


def test_unknown_device_is_invalid_argument_naming_the_field(client):
    with pytest.raises(InvalidArgumentError) as raised:
        client.allocate("bad", "no-such-gpu")

    e = raised.value
    assert e.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "accelerator.device" in e.message
    assert e.message == server_message(
        client, "Allocate",
        pb.AllocateRequest(request_id="bad", accelerator=pb.Accelerator(device="no-such-gpu")))
    assert str(e) == f"INVALID_ARGUMENT: {e.message}"


def test_nothing_free_is_resource_exhausted_with_the_servers_summary(client):
    client.allocate("holder", T4)

    with pytest.raises(ResourceExhaustedError) as raised:
        client.allocate("loser", T4)

    e = raised.value
    assert e.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert e.message == client.explain("loser", T4).summary
    assert "nodes available" in str(e)


def test_unknown_id_is_not_found(client):
    for call in (lambda: client.get("a-unknown"), lambda: client.release("a-unknown"),
                 lambda: client.get(request_id="never-sent")):
        with pytest.raises(NotFoundError) as raised:
            call()
        assert raised.value.code == grpc.StatusCode.NOT_FOUND
    assert raised.value.message == server_message(
        client, "GetAllocation", pb.GetAllocationRequest(request_id="never-sent"))


def test_never_satisfiable_and_ended_are_failed_precondition(client):
    with pytest.raises(FailedPreconditionError):
        client.allocate("too-many", A100.partition_2g_10gb, count=4)

    a = client.allocate("ended", T4)
    client.release(a.id)
    with pytest.raises(FailedPreconditionError) as raised:
        client.renew(a.id, 60)
    assert raised.value.message


def test_errors_other_than_unavailable_are_not_retried(client, caplog):
    caplog.set_level(logging.INFO, logger="accelsched")

    with pytest.raises(NotFoundError):
        client.get("a-unknown")

    assert not [r for r in caplog.records if "retry" in r.getMessage()]


def test_unavailable_after_the_last_retry(caplog):
    caplog.set_level(logging.INFO, logger="accelsched")

    with refusing_address() as address, Client(address, retries=2, initial_backoff=0.01) as c:
        with pytest.raises(UnavailableError) as raised:
            c.get("a-1")

    assert isinstance(raised.value, AccelschedError)
    retries = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(retries) == 2
    assert "retry 2 of 2" in retries[-1]
