"""Retries ride out a crash (kill -9) and restart of the server, and nothing acknowledged is
lost."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from flytekit.extras.accelerators import A100, T4

from accelsched import pb
from cluster import A100_NODE, T4_NODE, on_log, register

WAIT_S = 60


def test_a_call_retrying_through_a_restart_succeeds(server, client):
    register(client, A100_NODE, T4_NODE)
    kept = client.allocate("kept", A100.partition_2g_10gb, count=2)
    released = client.release(client.allocate("released", A100.unpartitioned).id)

    server.kill()
    with on_log("retry") as retrying, ThreadPoolExecutor(1) as pool:
        during = pool.submit(client.allocate, "during", T4)
        assert retrying.wait(WAIT_S)  # it has failed at least once
        server.start()  # same port, same database
        allocated = during.result(WAIT_S)

    assert allocated.state == pb.ACTIVE
    assert [d.device_id for d in allocated.devices] == ["GPU-t4"]
    assert client.get(allocated.id) == allocated
    # What was acknowledged before the crash is as it was.
    assert client.get(kept.id).state == pb.ACTIVE
    assert list(client.get(kept.id).devices) == list(kept.devices)
    assert client.get(released.id).state == pb.RELEASED
    # Still idempotent: the same request gets the same allocation after the restart.
    assert client.allocate("kept", A100.partition_2g_10gb, count=2).id == kept.id
    # The released GPU is free again, the kept slices are not.
    assert [d.device_id for d in client.allocate("again", A100.unpartitioned).devices] == [
        "GPU-a100-whole"]
    mig = client.explain("more", A100.partition_2g_10gb, count=2)
    assert not mig.feasible
