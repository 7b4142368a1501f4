"""A client of accelsched's AcceleratorScheduler service (proto/accelsched/v1/accelsched.proto).

Unary calls are retried on UNAVAILABLE and DEADLINE_EXCEEDED, which is safe for every one of
them: Allocate is idempotent by request_id, Release by allocation id, and the rest only read.
Failures raise the typed errors of :mod:`accelsched.errors`.
"""

from __future__ import annotations

import contextlib
import datetime
import inspect
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from queue import Empty, SimpleQueue
from typing import Any, TypeVar, Union

import grpc
from google.protobuf import duration_pb2
from google.protobuf.descriptor import FieldDescriptor

from accelsched.errors import (
    AccelschedError,
    AllocationEndedError,
    DeadlineExceededError,
    from_rpc_error,
)
from accelsched.resources import to_pod_resources
from accelsched.v1 import accelsched_pb2 as pb
from accelsched.v1 import accelsched_pb2_grpc as pb_grpc

log = logging.getLogger(__name__)

_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
# The messages whose bytes are an accelsched.v1.Accelerator's (Flyte 1 and Flyte 2).
_GPU_ACCELERATORS = frozenset({"flyteidl.core.GPUAccelerator", "flyteidl2.core.GPUAccelerator"})

# What `accelerator` may be: anything to_accelerator takes (flytekit's objects are duck-typed).
AcceleratorLike = Any
# A lease or an expected duration: seconds, a timedelta, or a google.protobuf.Duration as it is.
LeaseLike = float | datetime.timedelta | duration_pb2.Duration | None


def to_accelerator(accelerator: AcceleratorLike) -> pb.Accelerator | None:
    """``accelerator`` as an accelsched.v1.Accelerator, or None for "any whole GPU".

    Accepts an accelsched.v1.Accelerator; a device name in any spelling the server's
    accelerator-type registry knows ("nvidia-tesla-a100", "A100", "NVIDIA A100-SXM4-40GB");
    a flytekit accelerator object as it is (``flytekit.extras.accelerators.T4``,
    ``A100.partition_2g_10gb``: anything with ``to_flyte_idl()``); or a flyteidl (or flyteidl2)
    ``GPUAccelerator`` message. Raises TypeError for anything else. Names are checked by the server, not here.
    """
    if accelerator is None or isinstance(accelerator, pb.Accelerator):
        return accelerator
    if isinstance(accelerator, str):
        return pb.Accelerator(device=accelerator)
    # Duck-typed so that the client does not depend on flytekit or flyteidl.
    if hasattr(accelerator, "to_flyte_idl"):
        accelerator = accelerator.to_flyte_idl()
    if getattr(getattr(accelerator, "DESCRIPTOR", None), "full_name", "") in _GPU_ACCELERATORS:
        # accelsched.v1.Accelerator has GPUAccelerator's field numbers (device 1,
        # unpartitioned 2, partition_size 3, device_class 4), so its bytes parse as ours.
        return pb.Accelerator.FromString(accelerator.SerializeToString())
    raise TypeError(
        "accelerator must be None, a device name, an accelsched.v1.Accelerator, a flytekit "
        f"accelerator or a GPUAccelerator message, not {type(accelerator).__name__}"
    )


def _duration(lease: LeaseLike) -> duration_pb2.Duration | None:
    if lease is None or isinstance(lease, duration_pb2.Duration):
        return lease
    if not isinstance(lease, datetime.timedelta):
        lease = datetime.timedelta(seconds=lease)
    duration = duration_pb2.Duration()
    duration.FromTimedelta(lease)
    return duration


ShareLike = Union[float, pb.GpuShare, None]


def to_share(share: ShareLike) -> pb.GpuShare | None:
    """A share of one GPU: a fraction of its compute (0 < x <= 1, as KAI-Scheduler's
    ``gpu-fraction`` annotation writes it; booked in thousandths, rounded to the nearest), or a
    ``GpuShare`` as it is (``compute_milli``, ``memory_bytes`` 0 for the same fraction of the
    GPU's memory, and ``group``: the shares on one GPU are all of one group, the pod's namespace
    where pods take the GPU's DRA claim). None: whole devices, and a fraction has no group.

    Raises ValueError for a fraction outside (0, 1] or under a thousandth, TypeError for
    anything else (a bool too)."""
    if share is None or isinstance(share, pb.GpuShare):
        return share
    if isinstance(share, bool) or not isinstance(share, (int, float)):
        raise TypeError(f"share: a fraction of one GPU or a GpuShare, not {type(share).__name__}")
    if not 0 < share <= 1:
        raise ValueError(f"share: {share} is not a fraction of one GPU (0 < share <= 1)")
    milli = math.floor(share * 1000 + 0.5)  # halves away from zero, as Go's math.Round
    if milli < 1:
        raise ValueError(f"share: {share} is less than a thousandth of a GPU")
    return pb.GpuShare(compute_milli=milli)


# The fields of AllocateRequest whose argument is converted before it goes into the message; each
# conversion also takes the field's own message as it is. Every other field takes what the
# generated constructor takes, so that a field the proto gains is accepted without a change here.
_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "accelerator": to_accelerator,
    "lease": _duration,
    "expected_duration": _duration,
    "pod_resources": to_pod_resources,
    "share": to_share,
}
# Where the request's default is not the field's zero value: one device.
_DEFAULTS: dict[str, Any] = {"count": 1}
_FIELDS = pb.AllocateRequest.DESCRIPTOR.fields_by_name


def _allocate_request(request_id: str, accelerator: AcceleratorLike = None, **fields: Any
                      ) -> pb.AllocateRequest:
    """The AllocateRequest of allocate's arguments: every field of the message by its name,
    converted as _CONVERSIONS says, ``count`` 1 unless given, the rest unset.

    Raises TypeError naming an argument that is no field of AllocateRequest, TypeError or
    ValueError naming the field whose value the message refuses (protobuf's own errors do not),
    and what the conversions raise. The one place that builds an AllocateRequest: allocate,
    explain and allocation all come here."""
    unknown = [name for name in fields if name not in _FIELDS]
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise TypeError(f"unexpected keyword argument {names}: not a field of "
                        f"{pb.AllocateRequest.DESCRIPTOR.full_name}")
    values = {**_DEFAULTS, **fields, "request_id": request_id, "accelerator": accelerator}
    request = pb.AllocateRequest()
    for name, value in values.items():
        convert = _CONVERSIONS.get(name)
        if convert is not None:
            value = convert(value)
        # One field at a time, so that an error names the field it is about.
        try:
            request.MergeFrom(pb.AllocateRequest(**{name: value}))
        except TypeError as e:
            raise TypeError(f"{name}: {e}") from e
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from e
    return request


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _takes_allocate_request(method: _Method) -> _Method:
    """Gives ``method`` (self, request_id, accelerator, **fields), whose fields go to
    _allocate_request, the signature that names them: every field of AllocateRequest,
    keyword-only, with its default. help(), inspect.signature and what reads it (IPython's and
    Jupyter's completion) so list the proto's fields, not a list kept by hand."""
    signature = inspect.signature(method)
    *named, rest = signature.parameters.values()
    assert [p.name for p in named] == ["self", "request_id", "accelerator"], method
    assert rest.kind is inspect.Parameter.VAR_KEYWORD, method
    fields = [
        inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY,
                          default=_DEFAULTS.get(field.name, _unset(field)),
                          annotation=_annotation(field))
        for field in pb.AllocateRequest.DESCRIPTOR.fields
        if field.name not in ("request_id", "accelerator")
    ]
    signature = signature.replace(parameters=[*named, *fields])
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method


def _unset(field: FieldDescriptor) -> Any:
    """What leaves ``field`` unset: None for a message, a map or a repeated field, else the
    field's zero value."""
    if field.is_repeated or field.message_type is not None:
        return None
    return field.default_value


_PYTHON_TYPES = {
    FieldDescriptor.CPPTYPE_BOOL: "bool",
    FieldDescriptor.CPPTYPE_DOUBLE: "float",
    FieldDescriptor.CPPTYPE_FLOAT: "float",
    FieldDescriptor.CPPTYPE_ENUM: "int",
    FieldDescriptor.CPPTYPE_INT32: "int",
    FieldDescriptor.CPPTYPE_INT64: "int",
    FieldDescriptor.CPPTYPE_UINT32: "int",
    FieldDescriptor.CPPTYPE_UINT64: "int",
}


def _annotation(field: FieldDescriptor) -> str:
    """What allocate's argument for ``field`` may be: its conversion's, else the field's
    Python type."""
    convert = _CONVERSIONS.get(field.name)
    if convert is not None:
        return str(next(iter(inspect.signature(convert).parameters.values())).annotation)
    return _python_type(field)


def _python_type(field: FieldDescriptor) -> str:
    """The values ``field`` takes, as an annotation: a Mapping for a map, a Sequence for a
    repeated field, a message by its full name."""
    message = field.message_type
    if message is not None and message.GetOptions().map_entry:
        key, value = message.fields_by_name["key"], message.fields_by_name["value"]
        return f"Mapping[{_python_type(key)}, {_python_type(value)}] | None"
    if message is not None:
        of = message.full_name
    elif field.cpp_type == FieldDescriptor.CPPTYPE_STRING:
        of = "bytes" if field.type == FieldDescriptor.TYPE_BYTES else "str"
    else:
        of = _PYTHON_TYPES[field.cpp_type]
    if field.is_repeated:
        return f"Sequence[{of}] | None"
    return f"{of} | None" if message is not None else of


def _key(allocation_id: str | None, request_id: str | None) -> dict[str, str]:
    """The oneof key of Release and GetAllocation: exactly one of the two ids."""
    if (allocation_id is None) == (request_id is None):
        raise ValueError("give exactly one of allocation_id and request_id")
    if allocation_id is not None:
        return {"allocation_id": allocation_id}
    return {"request_id": request_id}


class EventStream:
    """WatchEvents' events, as an iterator of accelsched.v1.Event.

    ``cancel()``, or leaving a ``with`` block, ends the stream and the iteration. A stream
    the server ends raises a typed error: UnavailableError when the server stops or restarts,
    ResourceExhaustedError when this watcher fell behind. Either way events may have been
    missed: read the state again (get, ListAllocations) and watch anew. Not retried, for that
    reason.
    """

    def __init__(self, call: Any):
        self._call = call
        self._cancelled = False

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> pb.Event:
        try:
            return next(self._call)
        except grpc.RpcError as e:
            if self._cancelled:
                raise StopIteration from None
            raise from_rpc_error(e) from e

    def cancel(self) -> None:
        self._cancelled = True
        self._call.cancel()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.cancel()


class Client:
    """accelsched over one gRPC channel to ``target`` ("host:port").

    ``credentials`` (grpc.ssl_channel_credentials(...) and the like) makes a secure channel;
    None, a plaintext one. Every unary call gets ``timeout`` seconds per attempt and is retried
    up to ``retries`` times on UNAVAILABLE or DEADLINE_EXCEEDED, after waits that start at
    ``initial_backoff`` seconds and double up to ``max_backoff``, each drawn uniformly from
    [w/2, w] so that clients cut off together do not come back in step. The defaults keep
    trying for 25 to 50 s, through a server restart. ``options`` are extra gRPC channel
    arguments.

    ``stub`` is the generated AcceleratorSchedulerStub on the same channel, for the RPCs this
    class does not wrap (RegisterNode, GetCapacity, ...): no retries, grpc.RpcError.
    """

    def __init__(
        self,
        target: str,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        timeout: float = 10.0,
        retries: int = 15,
        initial_backoff: float = 0.1,
        max_backoff: float = 5.0,
        options: Sequence[tuple[str, Any]] = (),
    ):
        self._timeout = timeout
        self._retries = retries
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        channel_options = [
            # While the channel waits to reconnect, calls fail at once; its own backoff grows
            # to 120 s by default. Kept within ours, so that the retries reach a server as
            # soon as it is back.
            ("grpc.initial_reconnect_backoff_ms", int(initial_backoff * 1000)),
            ("grpc.max_reconnect_backoff_ms", int(max_backoff * 1000)),
            *options,
        ]
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=channel_options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=channel_options)
        self.stub = pb_grpc.AcceleratorSchedulerStub(self._channel)

    def close(self) -> None:
        """Closes the channel; calls in flight end with CANCELLED."""
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, rpc: str, request: Any, deadline: float | None = None) -> Any:
        """Calls ``rpc``, retried as the class says; with ``deadline`` (time.monotonic()), no
        attempt runs past it and no retry starts after it (the last error is raised)."""
        method = getattr(self.stub, rpc)
        backoff = self._initial_backoff
        attempt = 0
        while True:
            timeout = self._timeout
            if deadline is not None:
                timeout = max(0.0, min(timeout, deadline - time.monotonic()))
            try:
                return method(request, timeout=timeout)
            except grpc.RpcError as e:
                if e.code() not in _RETRYABLE or attempt >= self._retries:
                    raise from_rpc_error(e) from e
                wait = random.uniform(backoff / 2, backoff)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise from_rpc_error(e) from e
                attempt += 1
                log.info(
                    "accelsched %s: %s (%s); retry %d of %d in %.2f s",
                    rpc, e.code().name, e.details(), attempt, self._retries, wait,
                )
            time.sleep(wait)
            backoff = min(2 * backoff, self._max_backoff)

    @_takes_allocate_request
    def allocate(self, request_id: str, accelerator: AcceleratorLike = None, **fields: Any
                 ) -> pb.Allocation:
        """Allocates ``count`` devices (or MIG slices) of ``accelerator`` on one node, or a gang
        of ``replicas`` such groups.

        The keyword arguments are the fields of AllocateRequest
        (proto/accelsched/v1/accelsched.proto), any of them by its name, each taking what the
        generated message takes (``tenant="team-a"``, ``node_selector={"pool": "a"}``,
        ``alternative_devices=["H100"]``, ``priority=10``) and the conveniences below besides;
        ``count`` is 1 unless given, every other field unset. A field the proto gains is taken
        as such, without a change to this client.

        ``request_id`` is the idempotency key (e.g. the task execution id): while it has a
        live allocation, the same request returns that allocation and allocates nothing, so a
        retry is always safe. ``accelerator`` is anything :func:`to_accelerator` takes; None
        means any whole GPU not in MIG mode (Flyte's plain ``gpu: 1``), and
        ``alternative_devices`` names further models that will do. ``lease`` is seconds, a
        timedelta or a Duration (None: the server's default); ``expected_duration`` (the
        same kinds) is how long the task is expected to run once admitted, which packing
        weighs in place of the lease (Flyte's task timeout; never a limit). With ``queue=True`` a request
        that does not fit now is returned PENDING instead of refused (see wait_admitted).
        ``pod_resources`` is the CPU and memory the task's pod requests besides the devices
        (anything :func:`~accelsched.resources.to_pod_resources` takes: the flytekit task's
        ``my_task.resources``, ``Resources(cpu="2", mem="8Gi")``, ``{"cpu": "500m", "memory":
        "4Gi"}``); only a node with that much free is chosen. None: not accounted.
        ``share`` asks for a share of one GPU instead of whole devices (anything
        :func:`to_share` takes: ``0.25``, ``GpuShare(compute_milli=250, memory_bytes=4 << 30)``)
        on a GPU registered with ``sharing`` TIME_SLICING or MPS; ``count`` stays 1.
        ``replicas`` asks for a gang: that many groups of ``count`` devices, each group on a
        node of its own, all admitted together or none. For a gang, ``topology_key`` is a node
        label whose one value every group's node shares; ``required_topology`` is a level of
        the server's ``--topology_levels`` whose one domain holds every group (a level no
        domain could ever hold it in: FailedPreconditionError naming it), and
        ``preferred_topology`` a narrower level whose domains the groups take as few of as can
        hold them, never a refusal for it.

        Returns the Allocation: ACTIVE with its devices and Kubernetes placement, or PENDING.
        Raises InvalidArgumentError for a malformed request, its message naming the field
        (an unknown device: ``accelerator.device``; a MIG profile the model lacks; an empty
        request_id; a topology level the server does not have); ResourceExhaustedError when
        nothing is free now and ``queue`` is False, with the server's summary of why;
        FailedPreconditionError when no node could ever hold it; AlreadyExistsError when
        ``request_id`` is live for a different accelerator or count; UnavailableError or
        DeadlineExceededError once the retries are spent. Raised before any call: TypeError
        for a keyword that is no field of AllocateRequest or a value of a type its field does
        not take, ValueError for a number out of its field's range (both naming the field);
        TypeError for an ``accelerator`` or ``pod_resources`` of no known kind, ValueError for
        a ``pod_resources`` quantity that is malformed or negative or a ``share`` out of
        range, TypeError for a ``share`` of no known kind.
        """
        return self._call("Allocate", _allocate_request(request_id, accelerator, **fields))

    @_takes_allocate_request
    def explain(self, request_id: str, accelerator: AcceleratorLike = None, **fields: Any
                ) -> pb.ExplainResponse:
        """What allocate with the same arguments would pick now, and for every node that
        cannot serve it, why. Allocates nothing.

        Returns an ExplainResponse (``feasible``, ``would_allocate``, ``nodes``, ``summary``).
        Raises InvalidArgumentError for a request allocate would refuse as malformed,
        UnavailableError or DeadlineExceededError once the retries are spent, and what
        allocate raises before any call for arguments it cannot send.
        """
        return self._call("Explain", _allocate_request(request_id, accelerator, **fields))

    @contextlib.contextmanager
    @_takes_allocate_request
    def allocation(self, request_id: str, accelerator: AcceleratorLike = None, **fields: Any
                   ) -> Iterator[pb.Allocation]:
        """``with client.allocation(...) as a:`` allocates as allocate (same arguments and
        errors) and releases ``a`` when the block ends, also when it raises. A PENDING
        allocation (``queue=True``) is yielded as it is; it is withdrawn on exit."""
        allocation = self.allocate(request_id, accelerator, **fields)
        try:
            yield allocation
        except BaseException:
            # The block's own error is the one to see; a release that fails as well is
            # logged (the lease frees the devices in the end).
            try:
                self.release(allocation.id)
            except AccelschedError as e:
                log.warning("accelsched: releasing %s after an error: %s", allocation.id, e)
            raise
        self.release(allocation.id)

    def release(self, allocation_id: str | None = None, *, request_id: str | None = None
                ) -> pb.Allocation:
        """Releases the allocation named by exactly one of ``allocation_id`` and
        ``request_id`` (ValueError otherwise); a PENDING one is withdrawn.

        Idempotent: releasing an ended allocation returns it as it is. Returns the ended
        Allocation. Raises NotFoundError for an unknown id, InvalidArgumentError for a
        malformed one, UnavailableError or DeadlineExceededError once the retries are spent.
        """
        return self._call("Release", pb.ReleaseRequest(**_key(allocation_id, request_id)))

    def get(self, allocation_id: str | None = None, *, request_id: str | None = None
            ) -> pb.Allocation:
        """The allocation named by exactly one of ``allocation_id`` and ``request_id``
        (ValueError otherwise), in any state.

        Raises NotFoundError for an unknown id (or an ended one past the server's retention),
        InvalidArgumentError for a malformed one, UnavailableError or DeadlineExceededError
        once the retries are spent.
        """
        request = pb.GetAllocationRequest(**_key(allocation_id, request_id))
        return self._call("GetAllocation", request)

    def _get_by_id(self, allocation_id: str, deadline: float) -> pb.Allocation:
        request = pb.GetAllocationRequest(allocation_id=allocation_id)
        return self._call("GetAllocation", request, deadline)

    def renew(self, allocation_id: str, lease: LeaseLike) -> pb.Allocation:
        """Extends a live allocation's lease to ``lease`` (seconds, a timedelta or a Duration;
        None: the server's default) from now. A PENDING one keeps its place in the queue.

        Returns the Allocation with its new ``expires_at``. Raises FailedPreconditionError if
        it has already ended (released, expired), NotFoundError for an unknown id,
        InvalidArgumentError for a malformed id or lease, UnavailableError or
        DeadlineExceededError once the retries are spent.
        """
        return self._call(
            "RenewLease", pb.RenewLeaseRequest(allocation_id=allocation_id, lease=_duration(lease))
        )

    def watch(self, *, tenant: str = "", request_id: str = "", node: str = "",
              timeout: float | None = None) -> EventStream:
        """Allocation and catalog events as they are committed, from now on, as an
        :class:`EventStream` (iterate it; cancel it or use it in a ``with`` block).

        Each filter set must match: ``tenant`` and ``request_id`` select allocation events of
        that tenant or request; ``node`` catalog events of that node and events of
        allocations with a device on it. ``timeout`` (seconds) ends the stream with
        DeadlineExceededError; None: it runs until cancelled. A malformed filter raises
        InvalidArgumentError from the iteration. Not retried (see EventStream).
        """
        request = pb.WatchEventsRequest(tenant=tenant, request_id=request_id, node=node)
        return EventStream(self.stub.WatchEvents(request, timeout=timeout))

    def wait_admitted(self, allocation_id: str, timeout: float, *, poll_interval: float = 1.0
                      ) -> pb.Allocation:
        """Waits until the PENDING allocation ``allocation_id`` is ACTIVE and returns it (at
        once if it already is).

        Listens to WatchEvents for its request, and reads it with GetAllocation every
        ``poll_interval`` seconds without an event about it: that covers an admission between
        the first read and the watch taking effect, and a watch that fails (it is then polling
        alone). Raises DeadlineExceededError when it is still PENDING after ``timeout``
        seconds; AllocationEndedError when it ended instead (released, expired); NotFoundError
        for an unknown id; what get raises once its retries are spent, and no later than
        ``timeout``.
        """
        deadline = time.monotonic() + timeout
        allocation = self._get_by_id(allocation_id, deadline)
        if allocation.state != pb.PENDING:
            return _admitted(allocation)
        events: SimpleQueue[pb.Event] = SimpleQueue()
        with self.watch(request_id=allocation.request_id) as stream:
            threading.Thread(target=_pump, args=(stream, events), daemon=True).start()
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise _deadline_error(allocation_id, timeout)
                try:
                    event = events.get(timeout=min(remaining, poll_interval))
                except Empty:
                    event = None
                if event is None:  # nothing heard about it for a while: read it
                    try:
                        allocation = self._get_by_id(allocation_id, deadline)
                    except DeadlineExceededError:
                        if time.monotonic() < deadline:
                            raise
                        raise _deadline_error(allocation_id, timeout) from None
                elif event.allocation.id == allocation_id:
                    allocation = event.allocation
                if allocation.state != pb.PENDING:
                    return _admitted(allocation)


def _deadline_error(allocation_id: str, timeout: float) -> DeadlineExceededError:
    return DeadlineExceededError(
        grpc.StatusCode.DEADLINE_EXCEEDED,
        f"allocation {allocation_id} still PENDING after {timeout} s",
    )


def _admitted(allocation: pb.Allocation) -> pb.Allocation:
    if allocation.state != pb.ACTIVE:
        raise AllocationEndedError(allocation)
    return allocation


def _pump(stream: EventStream, events: SimpleQueue[pb.Event]) -> None:
    """Moves the stream's events to ``events``, so that the waiter never blocks on the stream
    itself. A failed stream only leaves the waiter polling."""
    try:
        for event in stream:
            events.put(event)
    except AccelschedError as e:
        log.info("accelsched WatchEvents ended (%s); polling GetAllocation", e)
