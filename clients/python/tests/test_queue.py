"""queue=True, watch and wait_admitted."""

from __future__ import annotations

import time

from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from flytekit.extras.accelerators import T4

from accelsched import (
    AllocationEndedError,
    DeadlineExceededError,
    EventStream,
    InvalidArgumentError,
    UnavailableError,
    pb,
)
from accelsched.v1 import accelsched_pb2_grpc
from cluster import T4_NODE, on_log, refusing_address, register, wait_for

pytestmark = pytest.mark.usefixtures("nodes")
# Bounds every wait of these tests, so that a broken one fails instead of hanging.
WAIT_S = 30


def live_watch(client, **filters) -> EventStream:
    """A watch of T4_NODE that the server has surely registered: it has seen an event caused
    after it started (a re-registration of the node)."""
    events = client.watch(node=T4_NODE.name, timeout=WAIT_S, **filters)
    register(client, T4_NODE)
    assert next(events).type == pb.Event.NODE_REGISTERED
    return events


def next_event(events: EventStream, event_type: int) -> pb.Event:
    return next(e for e in events if e.type == event_type)


def queued(client):
    """A T4 held by one request, and a second request queued behind it."""
    holder = client.allocate("holder", T4)
    waiter = client.allocate("waiter", T4, queue=True)
    assert waiter.state == pb.PENDING
    assert waiter.queue_position == 1
    assert "nvidia-tesla-t4" in waiter.pending_reason
    # The first to wait for the T4s holds the node from the holder's lease end.
    assert waiter.HasField("estimated_start")
    assert waiter.estimated_start == holder.expires_at
    return holder, waiter


def test_watch_streams_filtered_events(client):
    with live_watch(client) as events:
        a = client.allocate("watched", T4)
        client.allocate("elsewhere", "A100")  # on the A100 node: filtered out
        client.release(a.id)

        allocated, released = next(events), next(events)
    assert (allocated.type, allocated.allocation.id) == (pb.Event.ALLOCATED, a.id)
    assert (released.type, released.allocation.id) == (pb.Event.RELEASED, a.id)
    assert released.sequence > allocated.sequence


def test_watch_with_a_malformed_filter_raises(client):
    with pytest.raises(InvalidArgumentError) as raised:
        next(client.watch(tenant="\n", timeout=WAIT_S))
    assert "tenant" in raised.value.message


def test_wait_admitted_after_a_release(client, server):
    holder, waiter = queued(client)

    with live_watch(client) as events, ThreadPoolExecutor(1) as pool:
        # Only an event can wake it in time: it reads the allocation only at its deadline.
        admitted = pool.submit(client.wait_admitted, waiter.id, 2 * WAIT_S, poll_interval=3600)
        # Its own watch is live once the server counts two (this test's and its).
        wait_for(lambda: server.metric("accelsched_watchers") == 2)
        client.release(holder.id)

        event = next_event(events, pb.Event.ADMITTED)
        result = admitted.result(WAIT_S)

    assert event.allocation.id == waiter.id
    assert (result.id, result.state) == (waiter.id, pb.ACTIVE)
    assert [d.device_id for d in result.devices] == ["GPU-t4"]
    assert client.get(waiter.id).state == pb.ACTIVE


def test_wait_admitted_polls_when_the_watch_fails(client):
    holder, waiter = queued(client)

    with refusing_address() as address, grpc.insecure_channel(address) as nowhere, \
            on_log("polling") as polling, ThreadPoolExecutor(1) as pool:
        client.stub.WatchEvents = accelsched_pb2_grpc.AcceleratorSchedulerStub(
            nowhere).WatchEvents
        admitted = pool.submit(client.wait_admitted, waiter.id, WAIT_S, poll_interval=0.05)
        assert polling.wait(WAIT_S)  # its watch has failed
        client.release(holder.id)
        result = admitted.result(WAIT_S)

    assert (result.id, result.state) == (waiter.id, pb.ACTIVE)


def test_wait_admitted_returns_an_active_allocation_at_once(client):
    a = client.allocate("active", T4)

    # Not a timeout of 0: the first read is bounded by the timeout too, and a read that must
    # end now may fail with DEADLINE_EXCEEDED before the server answers (seen in a run).
    assert client.wait_admitted(a.id, WAIT_S).id == a.id


def test_wait_admitted_times_out_while_pending(client):
    _, waiter = queued(client)

    with pytest.raises(DeadlineExceededError) as raised:
        client.wait_admitted(waiter.id, 0.2, poll_interval=0.05)
    assert waiter.id in raised.value.message
    assert client.get(waiter.id).state == pb.PENDING


def test_wait_admitted_raises_when_withdrawn(client, server):
    _, waiter = queued(client)

    with ThreadPoolExecutor(1) as pool:
        # Only the watch's event can end it in time: it reads the allocation only at its
        # deadline.
        admitted = pool.submit(client.wait_admitted, waiter.id, 2 * WAIT_S, poll_interval=3600)
        wait_for(lambda: server.metric("accelsched_watchers") == 1)
        client.release(waiter.id)
        with pytest.raises(AllocationEndedError) as raised:
            admitted.result(WAIT_S)

    assert raised.value.allocation.state == pb.RELEASED
    assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION


def test_wait_admitted_is_bounded_by_its_timeout_when_the_server_is_down(client, server):
    _, waiter = queued(client)
    server.kill()

    started = time.monotonic()
    with pytest.raises((UnavailableError, DeadlineExceededError)):
        client.wait_admitted(waiter.id, 1.0)
    # The retries alone would take 25 s or more.
    assert time.monotonic() - started < 5
