"""accelsched-client: a Python client of accelsched, the GPU and TPU scheduler.

    from accelsched import Client
    from flytekit.extras.accelerators import A100

    with Client("accelsched:50051") as client:
        with client.allocation("exec-42-n0-0", A100.partition_2g_10gb, lease=3600,
                               pod_resources={"cpu": "2", "memory": "8Gi"}) as a:
            print(a.node, a.placement.pod_spec_patch)

The protobuf messages are in accelsched.v1.accelsched_pb2 (also as accelsched.pb).
"""

from accelsched.client import Client, EventStream, to_accelerator, to_share
from accelsched.errors import (
    AccelschedError,
    AllocationEndedError,
    AlreadyExistsError,
    DeadlineExceededError,
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
)
from accelsched.resources import parse_quantity, to_pod_resources
from accelsched.v1 import accelsched_pb2 as pb

__all__ = [
    "AccelschedError",
    "AllocationEndedError",
    "AlreadyExistsError",
    "Client",
    "DeadlineExceededError",
    "EventStream",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "NotFoundError",
    "ResourceExhaustedError",
    "UnavailableError",
    "parse_quantity",
    "pb",
    "to_accelerator",
    "to_pod_resources",
    "to_share",
]
