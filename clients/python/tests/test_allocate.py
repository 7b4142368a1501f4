"""Allocate, explain, release and the context manager, with flytekit's own accelerator objects."""

from __future__ import annotations

import datetime
import json

import pytest
from flytekit import Resources, task
from flytekit.extras.accelerators import A100, T4

from accelsched import AlreadyExistsError, Client, ResourceExhaustedError, pb
from cluster import MIG_SLICES, capacity, register

pytestmark = pytest.mark.usefixtures("nodes")


def test_flytekit_mig_partition(client):
    a = client.allocate("mig", A100.partition_2g_10gb, count=2, container_name="main")

    assert a.state == pb.ACTIVE
    assert (a.node, a.model) == ("a100-node", "nvidia-tesla-a100")
    assert [d.device_id for d in a.devices] == ["GPU-a100-mig", "GPU-a100-mig"]
    assert {d.profile for d in a.devices} == {"2g.10gb"}
    assert len({d.mig_slice_id for d in a.devices}) == 2
    assert {d.mig_slice_id for d in a.devices} <= MIG_SLICES
    assert a.placement.node_selector["kubernetes.io/hostname"] == "a100-node"
    assert a.placement.node_selector["k8s.amazonaws.com/gpu-partition-size"] == "2g.10gb"
    assert a.placement.resource_count == 2
    container = json.loads(a.placement.pod_spec_patch)["containers"][0]
    assert container["name"] == "main"
    assert capacity(client, "nvidia-tesla-a100", "2g.10gb").free == 1


def test_flytekit_unpartitioned_a100(client):
    a = client.allocate("whole", A100.unpartitioned)

    assert (a.node, a.model) == ("a100-node", "nvidia-tesla-a100")
    assert [(d.device_id, d.mig_slice_id) for d in a.devices] == [("GPU-a100-whole", "")]
    assert a.placement.resource_name == "nvidia.com/gpu"
    assert a.placement.node_selector["k8s.amazonaws.com/accelerator"] == "nvidia-tesla-a100"
    assert "k8s.amazonaws.com/gpu-partition-size" not in a.placement.node_selector


def test_flytekit_t4(client):
    a = client.allocate("t4", T4)

    assert (a.node, a.model) == ("t4-node", "nvidia-tesla-t4")
    assert [d.device_id for d in a.devices] == ["GPU-t4"]
    assert a.placement.node_selector["kubernetes.io/hostname"] == "t4-node"
    assert a.placement.node_selector["k8s.amazonaws.com/accelerator"] == "nvidia-tesla-t4"


def test_device_name_and_accelsched_message(client):
    by_name = client.allocate("by-name", "Tesla T4")
    by_message = client.allocate("by-message", pb.Accelerator(device="A100", unpartitioned=True))

    assert [d.device_id for d in by_name.devices] == ["GPU-t4"]
    assert [d.device_id for d in by_message.devices] == ["GPU-a100-whole"]


def test_no_accelerator_takes_any_whole_gpu_never_a_mig_one(client):
    first = client.allocate("any-1", None)
    second = client.allocate("any-2")

    assert {first.devices[0].device_id, second.devices[0].device_id} == {
        "GPU-a100-whole", "GPU-t4"}
    with pytest.raises(ResourceExhaustedError):
        client.allocate("any-3")


def test_lease_in_seconds_or_timedelta(client):
    seconds = client.allocate("lease-s", T4, lease=120)
    delta = client.allocate("lease-td", A100.unpartitioned, lease=datetime.timedelta(minutes=5))

    def lease_of(a):
        return a.expires_at.ToDatetime() - a.created_at.ToDatetime()

    assert lease_of(seconds) == datetime.timedelta(seconds=120)
    assert lease_of(delta) == datetime.timedelta(minutes=5)
    renewed = client.renew(seconds.id, datetime.timedelta(hours=2))
    assert renewed.expires_at.ToDatetime() - seconds.created_at.ToDatetime() >= (
        datetime.timedelta(hours=2))


def test_allocate_is_idempotent_by_request_id(client):
    first = client.allocate("exec-1", A100.partition_2g_10gb)
    again = client.allocate("exec-1", A100.partition_2g_10gb)

    assert again.id == first.id
    assert list(again.devices) == list(first.devices)
    assert capacity(client, "nvidia-tesla-a100", "2g.10gb").allocated == 1
    with pytest.raises(AlreadyExistsError) as raised:
        client.allocate("exec-1", T4)
    assert raised.value.message


def test_context_manager_releases_on_exit(client):
    with client.allocation("ctx", T4) as a:
        assert a.state == pb.ACTIVE
        assert capacity(client, "nvidia-tesla-t4").free == 0
        with pytest.raises(ResourceExhaustedError):
            client.allocate("other", T4)

    assert client.get(a.id).state == pb.RELEASED
    assert capacity(client, "nvidia-tesla-t4").free == 1
    assert [d.device_id for d in client.allocate("other", T4).devices] == ["GPU-t4"]


def test_context_manager_releases_when_the_block_raises(client):
    with pytest.raises(RuntimeError, match="task failed"):
        with client.allocation("ctx-raises", A100.partition_2g_10gb) as a:
            raise RuntimeError("task failed")

    assert client.get(a.id).state == pb.RELEASED
    assert capacity(client, "nvidia-tesla-a100", "2g.10gb").free == 3


def test_context_manager_keeps_the_blocks_error_when_the_release_fails(server):
    with Client(server.address, retries=1, initial_backoff=0.05, timeout=1) as quick:
        with pytest.raises(RuntimeError, match="task failed"):
            with quick.allocation("ctx-down", A100.partition_2g_10gb):
                server.kill()  # the release cannot reach it
                raise RuntimeError("task failed")


def test_release_by_either_id_is_idempotent(client):
    a = client.allocate("rel", T4)

    released = client.release(request_id="rel")
    again = client.release(a.id)

    assert (released.id, released.state) == (a.id, pb.RELEASED)
    assert (again.id, again.state) == (a.id, pb.RELEASED)
    assert client.get(request_id="rel").state == pb.RELEASED
    with pytest.raises(ValueError):
        client.release(a.id, request_id="rel")
    with pytest.raises(ValueError):
        client.get()


def test_explain_previews_and_allocates_nothing(client):
    preview = client.explain("x", A100.partition_2g_10gb, count=3)
    assert preview.feasible
    assert {d.mig_slice_id for d in preview.would_allocate.devices} == MIG_SLICES
    assert capacity(client, "nvidia-tesla-a100", "2g.10gb").free == 3

    client.allocate("holder", A100.partition_2g_10gb)
    refused = client.explain("x", A100.partition_2g_10gb, count=3)
    assert not refused.feasible
    assert "2g.10gb" in refused.summary


def test_node_selector_and_alternative_devices(client):
    # Only the T4 node's pool matches; A100 alone would not be there.
    a = client.allocate("alt", "A100", alternative_devices=["T4"], node_selector={"pool": "t4"})

    assert (a.node, a.model) == ("t4-node", "nvidia-tesla-t4")


def test_pod_resources_reach_the_server(client):
    # Needs an accelschedd that implements NodeResources: an older one drops the field.
    @task(requests=Resources(cpu="1500m", mem="6Gi"), limits=Resources(cpu="4", gpu="1"))
    def train() -> None: ...

    a = client.allocate("cpu-mem", T4, pod_resources=train.resources)

    held = client.get(request_id="cpu-mem").pod_resources
    assert held == pb.NodeResources(cpu_milli=1500, memory_bytes=6 * 2**30, pods=1)
    assert a.pod_resources == held


def test_pod_spec_patch_leaves_cpu_and_memory_to_the_task(client):
    a = client.allocate("patch", T4, container_name="main",
                        pod_resources={"cpu": "2", "memory": "8Gi"})

    container = json.loads(a.placement.pod_spec_patch)["containers"][0]
    for quantities in container["resources"].values():
        assert set(quantities) == {"nvidia.com/gpu"}


def test_shares_of_one_gpu(client):
    register(client, pb.Node(name="share-node", labels={"kubernetes.io/hostname": "share-node"},
                             devices=[pb.Device(id="GPU-S0", model="Tesla T4", index=0, healthy=True,
                                                memory_bytes=16 * 2**30, sharing=pb.MPS)]))
    a = client.allocate("quarter", T4, share=0.25)
    b = client.allocate("half", T4, share=pb.GpuShare(compute_milli=500, memory_bytes=2**30))

    assert [d.device_id for d in (*a.devices, *b.devices)] == ["GPU-S0", "GPU-S0"]
    assert a.devices[0].share == pb.GpuShare(compute_milli=250, memory_bytes=4 * 2**30)
    assert b.placement.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=1024M"
    assert a.placement.resource_claim == b.placement.resource_claim
    assert json.loads(a.placement.resource_claim)["metadata"]["name"] == "accelsched-share-mps-gpu-s0"
    assert capacity(client, "nvidia-tesla-t4").free_compute_milli == 250
    with pytest.raises(ResourceExhaustedError):
        client.allocate("too-big", T4, share=0.3)
    # 250 milli are free, but the GPU's shares are of no group: a share of another group does
    # not join them.
    with pytest.raises(ResourceExhaustedError, match="with the share free"):
        client.allocate("team-a", T4, share=pb.GpuShare(compute_milli=100, group="team-a"))
    for bad, error in ((0, ValueError), (1.5, ValueError), (0.0001, ValueError), (True, TypeError),
                       ("0.5", TypeError)):
        with pytest.raises(error):
            client.allocate("bad", T4, share=bad)
