"""The AllocateRequest builder follows from the proto: every field of AllocateRequest can be set
through it (and through allocate, explain and allocation), with the client's conveniences.
No server: these tests take none of conftest's fixtures."""

from __future__ import annotations

import datetime
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import duration_pb2, message_factory
from google.protobuf.descriptor import FieldDescriptor

from accelsched import Client, pb
from accelsched.client import _CONVERSIONS, _DEFAULTS, _allocate_request

FIELDS = pb.AllocateRequest.DESCRIPTOR.fields
FIELD_NAMES = [field.name for field in FIELDS]


def one_value(field: FieldDescriptor) -> Any:
    """A value of ``field``'s type (one element of a repeated field) that is not its zero
    value; for a message field, the message with its first field set (of the message's own
    class, which every conversion takes as it is)."""
    if field.message_type is not None:
        first = field.message_type.fields[0]
        return message_factory.GetMessageClass(field.message_type)(**{first.name: value_of(first)})
    if field.enum_type is not None:
        return next(v.number for v in field.enum_type.values if v.number != 0)
    if field.cpp_type == FieldDescriptor.CPPTYPE_BOOL:
        return True
    if field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        return b"bytes" if field.type == FieldDescriptor.TYPE_BYTES else f"{field.name}-value"
    if field.cpp_type in (FieldDescriptor.CPPTYPE_FLOAT, FieldDescriptor.CPPTYPE_DOUBLE):
        return 0.5
    return 7


def value_of(field: FieldDescriptor) -> Any:
    """A non-default value of ``field``, of whatever type the proto gives it: new fields are
    covered without a change here."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        entry = field.message_type.fields_by_name
        return {one_value(entry["key"]): one_value(entry["value"])}
    if field.is_repeated:
        return [one_value(field)]
    return one_value(field)


def check_builder(build: Callable[..., pb.AllocateRequest]) -> None:
    """Fails (AssertionError) unless ``build`` takes every field of AllocateRequest by name
    and puts it into the request: all of them at once, and each alone (then the request is
    that field on the defaults)."""

    def built(values: dict[str, Any]) -> pb.AllocateRequest:
        try:
            return build(**values)
        except TypeError as e:
            raise AssertionError(f"the builder refuses an argument: {e}") from e

    values = {name: value_of(field) for name, field in zip(FIELD_NAMES, FIELDS)}
    request = built(values)
    set_fields = {field.name for field, _ in request.ListFields()}
    missing = [name for name in FIELD_NAMES if name not in set_fields]
    assert not missing, f"fields of AllocateRequest the builder leaves unset: {missing}"
    want = pb.AllocateRequest(**values)
    wrong = [name for name in FIELD_NAMES if getattr(request, name) != getattr(want, name)]
    assert not wrong, f"fields of AllocateRequest the builder sets to another value: {wrong}"
    for name in FIELD_NAMES:
        alone = {"request_id": "r", name: values[name]}
        assert built(alone) == pb.AllocateRequest(**{"count": 1, **alone}), (
            f"{name} alone: not that field on the defaults")


def test_every_field_of_allocate_request_can_be_set():
    assert {"request_id", "required_topology", "preferred_topology"} <= set(FIELD_NAMES)
    check_builder(_allocate_request)


@pytest.mark.parametrize("name", FIELD_NAMES)
def test_the_check_fails_for_a_builder_without_a_field(name):
    def dropping(**values: Any) -> pb.AllocateRequest:
        values.pop(name)
        return _allocate_request(**{"request_id": "", **values})

    def refusing(**values: Any) -> pb.AllocateRequest:
        if name in values:
            raise TypeError(f"unexpected keyword argument {name!r}")
        return _allocate_request(**values)

    for builder in (dropping, refusing):
        with pytest.raises(AssertionError, match=rf"\b{name}\b"):
            check_builder(builder)


def test_conversions_and_defaults_are_of_fields():
    # A field renamed in the proto would otherwise lose its conversion without a word.
    assert set(_CONVERSIONS) <= set(FIELD_NAMES)
    assert set(_DEFAULTS) <= set(FIELD_NAMES)


def test_defaults_one_device_and_nothing_else():
    assert _allocate_request("r") == pb.AllocateRequest(request_id="r", count=1)
    # A count given is kept, 0 too (a share may send it).
    assert _allocate_request("r", count=0) == pb.AllocateRequest(request_id="r")


def test_conveniences_are_converted():
    assert _allocate_request("r", "A100").accelerator == pb.Accelerator(device="A100")
    given = pb.Accelerator(device="A100", partition_size="1g.5gb")
    assert _allocate_request("r", given).accelerator == given
    assert not _allocate_request("r", None).HasField("accelerator")
    for lease, want in (
        (90, duration_pb2.Duration(seconds=90)),
        (1.5, duration_pb2.Duration(seconds=1, nanos=500_000_000)),
        (datetime.timedelta(minutes=5), duration_pb2.Duration(seconds=300)),
        (duration_pb2.Duration(seconds=7), duration_pb2.Duration(seconds=7)),
    ):
        assert _allocate_request("r", lease=lease).lease == want, lease
        assert _allocate_request("r", expected_duration=lease).expected_duration == want, lease
    assert not _allocate_request("r", lease=None).HasField("lease")
    assert not _allocate_request("r", expected_duration=None).HasField("expected_duration")
    assert _allocate_request("r", pod_resources={"cpu": "500m", "memory": "4Gi"}).pod_resources == (
        pb.NodeResources(cpu_milli=500, memory_bytes=4 * 2**30, pods=1))
    assert not _allocate_request("r", pod_resources={"cpu": "0"}).HasField("pod_resources")
    assert _allocate_request("r", share=0.25).share == pb.GpuShare(compute_milli=250)
    with pytest.raises(ValueError, match="share"):
        _allocate_request("r", share=1.5)
    with pytest.raises(TypeError):
        _allocate_request("r", object())
    gang = _allocate_request("g", "H100", count=8, replicas=4, topology_key="example.com/block",
                             required_topology="example.com/block",
                             preferred_topology="example.com/rack")
    assert (gang.count, gang.replicas, gang.topology_key, gang.required_topology,
            gang.preferred_topology) == (8, 4, "example.com/block", "example.com/block",
                                         "example.com/rack")


def test_an_unknown_keyword_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="unexpected keyword argument 'gpus'"):
        _allocate_request("r", gpus=2)
    with pytest.raises(TypeError, match="'gpus', 'lease_s'"):
        _allocate_request("r", gpus=2, lease_s=3)


def test_a_value_the_field_cannot_take_names_the_field():
    with pytest.raises(TypeError, match="^priority: "):
        _allocate_request("r", priority="high")
    with pytest.raises(ValueError, match="^replicas: "):
        _allocate_request("r", replicas=2**40)
    with pytest.raises(TypeError, match="^node_selector: "):
        _allocate_request("r", node_selector={"pool": 1})


class RecordingStub:
    """In place of the generated stub: records each call's request and answers with an empty
    message of what the RPC returns."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, rpc: str) -> Callable[..., Any]:
        method = pb.DESCRIPTOR.services_by_name["AcceleratorScheduler"].methods_by_name[rpc]
        answer = message_factory.GetMessageClass(method.output_type)

        def call(request: Any, timeout: float | None = None) -> Any:
            self.calls.append((rpc, request))
            return answer(id="a-1") if method.output_type.name == "Allocation" else answer()

        return call


@pytest.fixture
def recorded():
    # No server: the channel never connects, the stub in its place answers.
    with Client("127.0.0.1:1", retries=0) as client:
        client.stub = RecordingStub()
        yield client


def test_allocate_explain_and_allocation_send_the_builders_request(recorded):
    values = {name: value_of(field) for name, field in zip(FIELD_NAMES, FIELDS)}
    fields = {name: v for name, v in values.items() if name not in ("request_id", "accelerator")}
    want = _allocate_request(values["request_id"], values["accelerator"], **fields)
    assert want == pb.AllocateRequest(**values)

    recorded.allocate(values["request_id"], values["accelerator"], **fields)
    recorded.explain(values["request_id"], values["accelerator"], **fields)
    with recorded.allocation(values["request_id"], values["accelerator"], **fields) as a:
        assert a.id == "a-1"

    assert recorded.stub.calls == [("Allocate", want), ("Explain", want), ("Allocate", want),
                                   ("Release", pb.ReleaseRequest(allocation_id="a-1"))]


def test_the_methods_refuse_what_the_builder_refuses_before_any_call(recorded):
    with pytest.raises(TypeError, match="'gpus'"):
        recorded.allocate("r", "A100", gpus=2)
    with pytest.raises(TypeError, match="'gpus'"):
        recorded.explain("r", gpus=2)
    with pytest.raises(TypeError, match="'gpus'"):
        with recorded.allocation("r", gpus=2):
            pass
    # request_id and accelerator alone are positional.
    with pytest.raises(TypeError):
        recorded.allocate("r", "A100", 2)
    assert recorded.stub.calls == []


@pytest.mark.parametrize("method", ["allocate", "explain", "allocation"])
def test_the_signature_names_every_field(method, recorded):
    for of in (getattr(Client, method), getattr(recorded, method)):
        parameters = list(inspect.signature(of).parameters.values())
        if parameters[0].name == "self":
            parameters = parameters[1:]
        assert [p.name for p in parameters[:2]] == ["request_id", "accelerator"]
        assert {p.kind for p in parameters[:2]} == {inspect.Parameter.POSITIONAL_OR_KEYWORD}
        keywords = parameters[2:]
        assert [p.name for p in keywords] == [
            name for name in FIELD_NAMES if name not in ("request_id", "accelerator")]
        assert {p.kind for p in keywords} == {inspect.Parameter.KEYWORD_ONLY}
        # Each default is what leaving the argument out sends.
        assert _allocate_request("r", **{p.name: p.default for p in keywords}) == (
            _allocate_request("r"))
        assert all(p.annotation is not inspect.Parameter.empty for p in keywords)
