"""Typed errors: one class per gRPC status code that accelsched gives a meaning to.

Every error carries the status code (``code``) and accelsched's message as the server wrote it
(``message``); ``str(e)`` is ``"CODE: message"``. Codes without a class of their own raise
:class:`AccelschedError` itself.
"""

from __future__ import annotations

import grpc

from accelsched.v1 import accelsched_pb2 as pb


class AccelschedError(Exception):
    """A call to accelsched failed with ``code``; ``message`` is the server's, verbatim."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


class InvalidArgumentError(AccelschedError):
    """A malformed or missing field; the message names it (e.g. ``accelerator.device``)."""


class NotFoundError(AccelschedError):
    """An unknown allocation, request or node id."""


class AlreadyExistsError(AccelschedError):
    """A request_id that already has a live allocation for a different request."""


class ResourceExhaustedError(AccelschedError):
    """Nothing can serve the request now; the message is Explain's summary of why."""


class FailedPreconditionError(AccelschedError):
    """The request can never be met as it stands (more devices than any node holds, a model no
    node has), or the allocation has already ended (RenewLease)."""


class AllocationEndedError(FailedPreconditionError):
    """Raised by the client, not the server (Client.wait_admitted): a PENDING allocation ended
    (withdrawn, expired) instead of being admitted. ``allocation`` is it, as last read."""

    def __init__(self, allocation: pb.Allocation):
        state = pb.AllocationState.Name(allocation.state)
        super().__init__(
            grpc.StatusCode.FAILED_PRECONDITION,
            f"allocation {allocation.id} is {state}, neither PENDING nor ACTIVE",
        )
        self.allocation = allocation


class DeadlineExceededError(AccelschedError):
    """The last attempt ran past its deadline, or a wait (wait_admitted) ran past its timeout."""


class UnavailableError(AccelschedError):
    """The server could not be reached, still after every retry (or a watch was cut)."""


_BY_CODE = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExistsError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPreconditionError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
}


def from_rpc_error(error: grpc.RpcError) -> AccelschedError:
    """The typed error for a failed call (``error`` is also a grpc.Call, as every failed
    call's exception is)."""
    code = error.code()
    return _BY_CODE.get(code, AccelschedError)(code, error.details() or "")
