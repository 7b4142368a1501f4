"""Kubernetes quantities and flytekit's resources become the request's pod_resources."""

from __future__ import annotations

from fractions import Fraction

import pytest
from flytekit import Resources, task

from accelsched import parse_quantity, pb, to_pod_resources
from accelsched.client import _allocate_request


@pytest.mark.parametrize(
    ("quantity", "value"),
    [
        ("500m", Fraction(1, 2)),
        ("2", 2),
        (" 2 ", 2),
        ("+1.5", Fraction(3, 2)),
        ("1.", 1),
        (".5", Fraction(1, 2)),
        ("0", 0),
        ("4Gi", 4 * 2**30),
        ("1.5Gi", 3 * 2**29),
        ("1G", 10**9),
        ("1M", 10**6),
        ("1k", 1000),
        ("1E", 10**18),  # exa, not an exponent
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("25e-2", Fraction(1, 4)),
        ("100u", Fraction(1, 10**4)),
        ("3n", Fraction(3, 10**9)),
        ("0.5n", Fraction(1, 10**9)),  # rounded up to a billionth
        ("1e-40", Fraction(1, 10**9)),
        ("-1e-40", Fraction(-1, 10**9)),
        ("100000000000000000000000000000000000000000000000000e-45", 10**5),
        ("128974848000m", 128974848),  # Kubernetes' own examples of 129M
        ("129e6", 129000000),
        ("-1", -1),
        (2, 2),
        (0.5, Fraction(1, 2)),
        (1e-05, Fraction(1, 10**5)),  # its JSON text is "1e-05"
        (1e20, 10**20),  # "1e+20"
        (1024, 1024),
    ],
)
def test_quantities_parse_as_kubernetes_reads_them(quantity, value):
    assert parse_quantity(quantity) == value


@pytest.mark.parametrize(
    "quantity",
    ["", "1e", "4GB", "1K", "1mi", "1Ki5", "1 Gi", "0x10", "1,5", "--1", "1.2.3", "129e6m"],
)
def test_what_kubernetes_refuses_is_refused(quantity):
    with pytest.raises(ValueError):
        parse_quantity(quantity)


@pytest.mark.parametrize("quantity", ["m", ".", "e3", "+"])
def test_a_quantity_without_a_digit_is_refused(quantity):
    # The grammar needs a digit; Kubernetes' scanner reads these as 0, a likely mistake.
    with pytest.raises(ValueError):
        parse_quantity(quantity)


def test_non_quantities_are_type_errors():
    for value in (True, None, b"1", [1]):
        with pytest.raises(TypeError):
            parse_quantity(value)
    for value in (float("nan"), float("inf")):
        with pytest.raises(ValueError):
            parse_quantity(value)


def test_cpu_in_thousandths_and_memory_in_bytes_rounded_up():
    assert to_pod_resources({"cpu": "500m", "memory": "4Gi"}) == pb.NodeResources(
        cpu_milli=500, memory_bytes=4 * 2**30, pods=1)
    assert to_pod_resources({"cpu": 2, "memory": 1024}) == pb.NodeResources(
        cpu_milli=2000, memory_bytes=1024, pods=1)
    # 1500u is 2m as the API server stores it; 1.5 bytes is 2.
    assert to_pod_resources({"cpu": "1500u", "memory": "1500m"}) == pb.NodeResources(
        cpu_milli=2, memory_bytes=2, pods=1)
    assert to_pod_resources({"cpu": 0.1}) == pb.NodeResources(cpu_milli=100, pods=1)
    assert to_pod_resources({"memory": "1e-40"}) == pb.NodeResources(memory_bytes=1, pods=1)


def test_nothing_requested_sends_nothing():
    assert to_pod_resources(None) is None
    assert to_pod_resources({}) is None
    assert to_pod_resources({"cpu": "0", "memory": 0}) is None
    assert to_pod_resources(Resources()) is None
    assert _allocate_request("r").HasField("pod_resources") is False


def test_flytekit_resources_are_requests():
    assert to_pod_resources(Resources(cpu="2", mem="8Gi")) == pb.NodeResources(
        cpu_milli=2000, memory_bytes=8 * 2**30, pods=1)
    assert to_pod_resources(Resources(cpu=0.5, mem=1024)) == pb.NodeResources(
        cpu_milli=500, memory_bytes=1024, pods=1)
    # A (request, limit) pair gives its request.
    assert to_pod_resources(Resources(cpu=("1", "2"), mem="1Gi")) == pb.NodeResources(
        cpu_milli=1000, memory_bytes=2**30, pods=1)


def test_a_flytekit_tasks_requests_else_its_limits():
    @task(requests=Resources(cpu="500m"), limits=Resources(cpu="2", mem="4Gi", gpu="1"))
    def train() -> None: ...

    # The CPU request; no memory request, so the memory limit (Kubernetes' default).
    assert to_pod_resources(train.resources) == pb.NodeResources(
        cpu_milli=500, memory_bytes=4 * 2**30, pods=1)

    @task(resources=Resources(cpu=("1", "2"), mem="1Gi"))
    def prepare() -> None: ...

    assert to_pod_resources(prepare.resources) == pb.NodeResources(
        cpu_milli=1000, memory_bytes=2**30, pods=1)

    @task
    def plain() -> None: ...

    assert to_pod_resources(plain.resources) is None


def test_a_containers_requests_give_their_cpu_and_memory():
    requests = {"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": "1", "ephemeral-storage": "10Gi",
                "hugepages-2Mi": "1Gi"}
    assert to_pod_resources(requests) == pb.NodeResources(
        cpu_milli=1000, memory_bytes=2 * 2**30, pods=1)


def test_node_resources_taken_as_they_are():
    given = pb.NodeResources(cpu_milli=1, memory_bytes=2, pods=3)
    assert to_pod_resources(given) is given
    request = _allocate_request("r", pod_resources={"cpu": "250m", "memory": "1Gi"})
    assert request.pod_resources == pb.NodeResources(cpu_milli=250, memory_bytes=2**30, pods=1)


def test_bad_pod_resources_name_what_is_wrong():
    with pytest.raises(ValueError, match="not mem"):
        to_pod_resources({"cpu": "1", "mem": "1Gi"})
    with pytest.raises(ValueError, match="memory.*4GB"):
        to_pod_resources({"memory": "4GB"})
    with pytest.raises(ValueError, match="cpu '-1' is negative"):
        to_pod_resources({"cpu": "-1"})
    with pytest.raises(ValueError, match="too large"):
        to_pod_resources({"memory": "9Ei"})
    with pytest.raises(ValueError, match="too large"):
        to_pod_resources({"cpu": "1e99"})
    with pytest.raises(TypeError, match="cpu"):
        to_pod_resources({"cpu": True})
    with pytest.raises(TypeError):
        to_pod_resources("2")
