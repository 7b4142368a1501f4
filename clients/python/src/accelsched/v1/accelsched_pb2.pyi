import datetime

from accelsched.v1 import accelerator_type_pb2 as _accelerator_type_pb2
from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union
from accelsched.v1.accelerator_type_pb2 import MigProfile as MigProfile
from accelsched.v1.accelerator_type_pb2 import FlyteNodeLabel as FlyteNodeLabel
from accelsched.v1.accelerator_type_pb2 import TpuTopology as TpuTopology
from accelsched.v1.accelerator_type_pb2 import TpuTopologyRule as TpuTopologyRule
from accelsched.v1.accelerator_type_pb2 import AcceleratorType as AcceleratorType
from accelsched.v1.accelerator_type_pb2 import AcceleratorTypeRegistry as AcceleratorTypeRegistry
from accelsched.v1.accelerator_type_pb2 import DeviceClass as DeviceClass

DESCRIPTOR: _descriptor.FileDescriptor
NVIDIA_GPU: _accelerator_type_pb2.DeviceClass
GOOGLE_TPU: _accelerator_type_pb2.DeviceClass
AMAZON_NEURON: _accelerator_type_pb2.DeviceClass
AMD_GPU: _accelerator_type_pb2.DeviceClass
HABANA_GAUDI: _accelerator_type_pb2.DeviceClass

class GpuSharing(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GPU_SHARING_NONE: _ClassVar[GpuSharing]
    TIME_SLICING: _ClassVar[GpuSharing]
    MPS: _ClassVar[GpuSharing]

class AllocationState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ALLOCATION_STATE_UNSPECIFIED: _ClassVar[AllocationState]
    ACTIVE: _ClassVar[AllocationState]
    RELEASED: _ClassVar[AllocationState]
    EXPIRED: _ClassVar[AllocationState]
    PENDING: _ClassVar[AllocationState]
    PREEMPTED: _ClassVar[AllocationState]
GPU_SHARING_NONE: GpuSharing
TIME_SLICING: GpuSharing
MPS: GpuSharing
ALLOCATION_STATE_UNSPECIFIED: AllocationState
ACTIVE: AllocationState
RELEASED: AllocationState
EXPIRED: AllocationState
PENDING: AllocationState
PREEMPTED: AllocationState

class Accelerator(_message.Message):
    __slots__ = ("device", "unpartitioned", "partition_size", "device_class")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    UNPARTITIONED_FIELD_NUMBER: _ClassVar[int]
    PARTITION_SIZE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    device: str
    unpartitioned: bool
    partition_size: str
    device_class: _accelerator_type_pb2.DeviceClass
    def __init__(self, device: _Optional[str] = ..., unpartitioned: _Optional[bool] = ..., partition_size: _Optional[str] = ..., device_class: _Optional[_Union[_accelerator_type_pb2.DeviceClass, str]] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("name", "labels", "devices", "schedulable", "last_heartbeat", "allocatable", "available", "overcommitted")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    SCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    ALLOCATABLE_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    OVERCOMMITTED_FIELD_NUMBER: _ClassVar[int]
    name: str
    labels: _containers.ScalarMap[str, str]
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    schedulable: bool
    last_heartbeat: _timestamp_pb2.Timestamp
    allocatable: NodeResources
    available: NodeResources
    overcommitted: str
    def __init__(self, name: _Optional[str] = ..., labels: _Optional[_Mapping[str, str]] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., schedulable: _Optional[bool] = ..., last_heartbeat: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., allocatable: _Optional[_Union[NodeResources, _Mapping]] = ..., available: _Optional[_Union[NodeResources, _Mapping]] = ..., overcommitted: _Optional[str] = ...) -> None: ...

class NodeResources(_message.Message):
    __slots__ = ("cpu_milli", "memory_bytes", "pods")
    CPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    cpu_milli: int
    memory_bytes: int
    pods: int
    def __init__(self, cpu_milli: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., pods: _Optional[int] = ...) -> None: ...

class GpuShare(_message.Message):
    __slots__ = ("compute_milli", "memory_bytes", "group")
    COMPUTE_MILLI_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    compute_milli: int
    memory_bytes: int
    group: str
    def __init__(self, compute_milli: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., group: _Optional[str] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("id", "device_class", "model", "canonical_model", "memory_bytes", "index", "healthy", "mig_enabled", "mig_slices", "tpu_slice_id", "tpu_topology", "stats", "sharing", "mig_plan", "links")
    ID_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CANONICAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    MIG_ENABLED_FIELD_NUMBER: _ClassVar[int]
    MIG_SLICES_FIELD_NUMBER: _ClassVar[int]
    TPU_SLICE_ID_FIELD_NUMBER: _ClassVar[int]
    TPU_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    SHARING_FIELD_NUMBER: _ClassVar[int]
    MIG_PLAN_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    id: str
    device_class: _accelerator_type_pb2.DeviceClass
    model: str
    canonical_model: str
    memory_bytes: int
    index: int
    healthy: bool
    mig_enabled: bool
    mig_slices: _containers.RepeatedCompositeFieldContainer[MigSlice]
    tpu_slice_id: str
    tpu_topology: str
    stats: DeviceStats
    sharing: GpuSharing
    mig_plan: MigLayout
    links: _containers.RepeatedCompositeFieldContainer[DeviceLink]
    def __init__(self, id: _Optional[str] = ..., device_class: _Optional[_Union[_accelerator_type_pb2.DeviceClass, str]] = ..., model: _Optional[str] = ..., canonical_model: _Optional[str] = ..., memory_bytes: _Optional[int] = ..., index: _Optional[int] = ..., healthy: _Optional[bool] = ..., mig_enabled: _Optional[bool] = ..., mig_slices: _Optional[_Iterable[_Union[MigSlice, _Mapping]]] = ..., tpu_slice_id: _Optional[str] = ..., tpu_topology: _Optional[str] = ..., stats: _Optional[_Union[DeviceStats, _Mapping]] = ..., sharing: _Optional[_Union[GpuSharing, str]] = ..., mig_plan: _Optional[_Union[MigLayout, _Mapping]] = ..., links: _Optional[_Iterable[_Union[DeviceLink, _Mapping]]] = ...) -> None: ...

class DeviceLink(_message.Message):
    __slots__ = ("peer_device_id", "kind", "count")
    PEER_DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    peer_device_id: str
    kind: str
    count: int
    def __init__(self, peer_device_id: _Optional[str] = ..., kind: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class MigLayout(_message.Message):
    __slots__ = ("slices", "generation", "allocation_id", "deadline")
    SLICES_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    slices: _containers.RepeatedCompositeFieldContainer[MigSlice]
    generation: int
    allocation_id: str
    deadline: _timestamp_pb2.Timestamp
    def __init__(self, slices: _Optional[_Iterable[_Union[MigSlice, _Mapping]]] = ..., generation: _Optional[int] = ..., allocation_id: _Optional[str] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeviceStats(_message.Message):
    __slots__ = ("utilization", "memory_used_bytes", "temperature_celsius", "power_watts", "time")
    UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_CELSIUS_FIELD_NUMBER: _ClassVar[int]
    POWER_WATTS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    utilization: float
    memory_used_bytes: int
    temperature_celsius: float
    power_watts: float
    time: _timestamp_pb2.Timestamp
    def __init__(self, utilization: _Optional[float] = ..., memory_used_bytes: _Optional[int] = ..., temperature_celsius: _Optional[float] = ..., power_watts: _Optional[float] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class MigSlice(_message.Message):
    __slots__ = ("id", "profile", "start", "stats")
    ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    id: str
    profile: str
    start: int
    stats: DeviceStats
    def __init__(self, id: _Optional[str] = ..., profile: _Optional[str] = ..., start: _Optional[int] = ..., stats: _Optional[_Union[DeviceStats, _Mapping]] = ...) -> None: ...

class RegisterNodeRequest(_message.Message):
    __slots__ = ("node",)
    NODE_FIELD_NUMBER: _ClassVar[int]
    node: Node
    def __init__(self, node: _Optional[_Union[Node, _Mapping]] = ...) -> None: ...

class GetNodeRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListNodesRequest(_message.Message):
    __slots__ = ("label_selector", "page_size", "page_token")
    LABEL_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    label_selector: str
    page_size: int
    page_token: str
    def __init__(self, label_selector: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListNodesResponse(_message.Message):
    __slots__ = ("nodes", "next_page_token")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[Node]
    next_page_token: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[Node, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class RemoveNodeRequest(_message.Message):
    __slots__ = ("name", "force")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FORCE_FIELD_NUMBER: _ClassVar[int]
    name: str
    force: bool
    def __init__(self, name: _Optional[str] = ..., force: _Optional[bool] = ...) -> None: ...

class RemoveNodeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SetNodeSchedulableRequest(_message.Message):
    __slots__ = ("name", "schedulable")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCHEDULABLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    schedulable: bool
    def __init__(self, name: _Optional[str] = ..., schedulable: _Optional[bool] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("name", "unhealthy_device_ids", "device_stats", "mig_relayout_failures")
    class DeviceStatsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: DeviceStats
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[DeviceStats, _Mapping]] = ...) -> None: ...
    class MigRelayoutFailuresEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MigRelayoutFailure
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MigRelayoutFailure, _Mapping]] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_DEVICE_IDS_FIELD_NUMBER: _ClassVar[int]
    DEVICE_STATS_FIELD_NUMBER: _ClassVar[int]
    MIG_RELAYOUT_FAILURES_FIELD_NUMBER: _ClassVar[int]
    name: str
    unhealthy_device_ids: _containers.RepeatedScalarFieldContainer[str]
    device_stats: _containers.MessageMap[str, DeviceStats]
    mig_relayout_failures: _containers.MessageMap[str, MigRelayoutFailure]
    def __init__(self, name: _Optional[str] = ..., unhealthy_device_ids: _Optional[_Iterable[str]] = ..., device_stats: _Optional[_Mapping[str, DeviceStats]] = ..., mig_relayout_failures: _Optional[_Mapping[str, MigRelayoutFailure]] = ...) -> None: ...

class MigRelayoutFailure(_message.Message):
    __slots__ = ("generation", "error")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    generation: int
    error: str
    def __init__(self, generation: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("mig_plans",)
    class MigPlansEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: MigLayout
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[MigLayout, _Mapping]] = ...) -> None: ...
    MIG_PLANS_FIELD_NUMBER: _ClassVar[int]
    mig_plans: _containers.MessageMap[str, MigLayout]
    def __init__(self, mig_plans: _Optional[_Mapping[str, MigLayout]] = ...) -> None: ...

class GetCapacityRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CapacityEntry(_message.Message):
    __slots__ = ("device_class", "model", "partition", "total", "allocated", "free", "unhealthy", "free_compute_milli", "free_memory_bytes")
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    UNHEALTHY_FIELD_NUMBER: _ClassVar[int]
    FREE_COMPUTE_MILLI_FIELD_NUMBER: _ClassVar[int]
    FREE_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    device_class: _accelerator_type_pb2.DeviceClass
    model: str
    partition: str
    total: int
    allocated: int
    free: int
    unhealthy: int
    free_compute_milli: int
    free_memory_bytes: int
    def __init__(self, device_class: _Optional[_Union[_accelerator_type_pb2.DeviceClass, str]] = ..., model: _Optional[str] = ..., partition: _Optional[str] = ..., total: _Optional[int] = ..., allocated: _Optional[int] = ..., free: _Optional[int] = ..., unhealthy: _Optional[int] = ..., free_compute_milli: _Optional[int] = ..., free_memory_bytes: _Optional[int] = ...) -> None: ...

class GetCapacityResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[CapacityEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[CapacityEntry, _Mapping]]] = ...) -> None: ...

class AllocateRequest(_message.Message):
    __slots__ = ("request_id", "accelerator", "count", "node_selector", "tenant", "priority", "lease", "queue", "replicas", "topology_key", "required_topology", "preferred_topology", "alternative_devices", "container_name", "pod_resources", "share", "expected_duration")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ACCELERATOR_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_KEY_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    ALTERNATIVE_DEVICES_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_NAME_FIELD_NUMBER: _ClassVar[int]
    POD_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_DURATION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    accelerator: Accelerator
    count: int
    node_selector: _containers.ScalarMap[str, str]
    tenant: str
    priority: int
    lease: _duration_pb2.Duration
    queue: bool
    replicas: int
    topology_key: str
    required_topology: str
    preferred_topology: str
    alternative_devices: _containers.RepeatedScalarFieldContainer[str]
    container_name: str
    pod_resources: NodeResources
    share: GpuShare
    expected_duration: _duration_pb2.Duration
    def __init__(self, request_id: _Optional[str] = ..., accelerator: _Optional[_Union[Accelerator, _Mapping]] = ..., count: _Optional[int] = ..., node_selector: _Optional[_Mapping[str, str]] = ..., tenant: _Optional[str] = ..., priority: _Optional[int] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., queue: _Optional[bool] = ..., replicas: _Optional[int] = ..., topology_key: _Optional[str] = ..., required_topology: _Optional[str] = ..., preferred_topology: _Optional[str] = ..., alternative_devices: _Optional[_Iterable[str]] = ..., container_name: _Optional[str] = ..., pod_resources: _Optional[_Union[NodeResources, _Mapping]] = ..., share: _Optional[_Union[GpuShare, _Mapping]] = ..., expected_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Allocation(_message.Message):
    __slots__ = ("id", "request_id", "state", "node", "devices", "placement", "tenant", "created_at", "expires_at", "placements", "model", "queue_position", "pending_reason", "priority", "admitted_at", "preempted_by", "pod_resources", "estimated_start", "expected_duration")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    PENDING_REASON_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ADMITTED_AT_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_BY_FIELD_NUMBER: _ClassVar[int]
    POD_RESOURCES_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_DURATION_FIELD_NUMBER: _ClassVar[int]
    id: str
    request_id: str
    state: AllocationState
    node: str
    devices: _containers.RepeatedCompositeFieldContainer[AllocatedDevice]
    placement: Placement
    tenant: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    placements: _containers.RepeatedCompositeFieldContainer[Placement]
    model: str
    queue_position: int
    pending_reason: str
    priority: int
    admitted_at: _timestamp_pb2.Timestamp
    preempted_by: str
    pod_resources: NodeResources
    estimated_start: _timestamp_pb2.Timestamp
    expected_duration: _duration_pb2.Duration
    def __init__(self, id: _Optional[str] = ..., request_id: _Optional[str] = ..., state: _Optional[_Union[AllocationState, str]] = ..., node: _Optional[str] = ..., devices: _Optional[_Iterable[_Union[AllocatedDevice, _Mapping]]] = ..., placement: _Optional[_Union[Placement, _Mapping]] = ..., tenant: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., placements: _Optional[_Iterable[_Union[Placement, _Mapping]]] = ..., model: _Optional[str] = ..., queue_position: _Optional[int] = ..., pending_reason: _Optional[str] = ..., priority: _Optional[int] = ..., admitted_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., preempted_by: _Optional[str] = ..., pod_resources: _Optional[_Union[NodeResources, _Mapping]] = ..., estimated_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expected_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class AllocatedDevice(_message.Message):
    __slots__ = ("node", "device_id", "mig_slice_id", "profile", "share")
    NODE_FIELD_NUMBER: _ClassVar[int]
    DEVICE_ID_FIELD_NUMBER: _ClassVar[int]
    MIG_SLICE_ID_FIELD_NUMBER: _ClassVar[int]
    PROFILE_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    node: str
    device_id: str
    mig_slice_id: str
    profile: str
    share: GpuShare
    def __init__(self, node: _Optional[str] = ..., device_id: _Optional[str] = ..., mig_slice_id: _Optional[str] = ..., profile: _Optional[str] = ..., share: _Optional[_Union[GpuShare, _Mapping]] = ...) -> None: ...

class Toleration(_message.Message):
    __slots__ = ("key", "operator", "value", "effect")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    value: str
    effect: str
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., value: _Optional[str] = ..., effect: _Optional[str] = ...) -> None: ...

class NodeSelectorRequirement(_message.Message):
    __slots__ = ("key", "operator", "values")
    KEY_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    key: str
    operator: str
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, key: _Optional[str] = ..., operator: _Optional[str] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class Placement(_message.Message):
    __slots__ = ("node_selector", "resource_name", "resource_count", "env", "tolerations", "node_affinity", "pod_spec_patch", "resource_claim")
    class NodeSelectorEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NODE_SELECTOR_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_COUNT_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    TOLERATIONS_FIELD_NUMBER: _ClassVar[int]
    NODE_AFFINITY_FIELD_NUMBER: _ClassVar[int]
    POD_SPEC_PATCH_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_CLAIM_FIELD_NUMBER: _ClassVar[int]
    node_selector: _containers.ScalarMap[str, str]
    resource_name: str
    resource_count: int
    env: _containers.ScalarMap[str, str]
    tolerations: _containers.RepeatedCompositeFieldContainer[Toleration]
    node_affinity: _containers.RepeatedCompositeFieldContainer[NodeSelectorRequirement]
    pod_spec_patch: str
    resource_claim: str
    def __init__(self, node_selector: _Optional[_Mapping[str, str]] = ..., resource_name: _Optional[str] = ..., resource_count: _Optional[int] = ..., env: _Optional[_Mapping[str, str]] = ..., tolerations: _Optional[_Iterable[_Union[Toleration, _Mapping]]] = ..., node_affinity: _Optional[_Iterable[_Union[NodeSelectorRequirement, _Mapping]]] = ..., pod_spec_patch: _Optional[str] = ..., resource_claim: _Optional[str] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("allocation_id", "request_id")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    request_id: str
    def __init__(self, allocation_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class RenewLeaseRequest(_message.Message):
    __slots__ = ("allocation_id", "lease")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    lease: _duration_pb2.Duration
    def __init__(self, allocation_id: _Optional[str] = ..., lease: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class GetAllocationRequest(_message.Message):
    __slots__ = ("allocation_id", "request_id")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    request_id: str
    def __init__(self, allocation_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ListAllocationsRequest(_message.Message):
    __slots__ = ("state", "node", "tenant", "page_size", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    TENANT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: AllocationState
    node: str
    tenant: str
    page_size: int
    page_token: str
    def __init__(self, state: _Optional[_Union[AllocationState, str]] = ..., node: _Optional[str] = ..., tenant: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAllocationsResponse(_message.Message):
    __slots__ = ("allocations", "next_page_token")
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    allocations: _containers.RepeatedCompositeFieldContainer[Allocation]
    next_page_token: str
    def __init__(self, allocations: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class NodeVerdict(_message.Message):
    __slots__ = ("node", "reasons")
    NODE_FIELD_NUMBER: _ClassVar[int]
    REASONS_FIELD_NUMBER: _ClassVar[int]
    node: str
    reasons: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node: _Optional[str] = ..., reasons: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeScore(_message.Message):
    __slots__ = ("node", "score", "detail")
    NODE_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    node: str
    score: float
    detail: str
    def __init__(self, node: _Optional[str] = ..., score: _Optional[float] = ..., detail: _Optional[str] = ...) -> None: ...

class CycleStep(_message.Message):
    __slots__ = ("plugin", "extension_point", "nodes_in", "nodes_out", "detail")
    PLUGIN_FIELD_NUMBER: _ClassVar[int]
    EXTENSION_POINT_FIELD_NUMBER: _ClassVar[int]
    NODES_IN_FIELD_NUMBER: _ClassVar[int]
    NODES_OUT_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    plugin: str
    extension_point: str
    nodes_in: int
    nodes_out: int
    detail: str
    def __init__(self, plugin: _Optional[str] = ..., extension_point: _Optional[str] = ..., nodes_in: _Optional[int] = ..., nodes_out: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class ExplainResponse(_message.Message):
    __slots__ = ("feasible", "would_allocate", "nodes", "summary", "queue_position", "pending_reason", "scores", "estimated_start", "steps")
    FEASIBLE_FIELD_NUMBER: _ClassVar[int]
    WOULD_ALLOCATE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    PENDING_REASON_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    ESTIMATED_START_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    feasible: bool
    would_allocate: Allocation
    nodes: _containers.RepeatedCompositeFieldContainer[NodeVerdict]
    summary: str
    queue_position: int
    pending_reason: str
    scores: _containers.RepeatedCompositeFieldContainer[NodeScore]
    estimated_start: _timestamp_pb2.Timestamp
    steps: _containers.RepeatedCompositeFieldContainer[CycleStep]
    def __init__(self, feasible: _Optional[bool] = ..., would_allocate: _Optional[_Union[Allocation, _Mapping]] = ..., nodes: _Optional[_Iterable[_Union[NodeVerdict, _Mapping]]] = ..., summary: _Optional[str] = ..., queue_position: _Optional[int] = ..., pending_reason: _Optional[str] = ..., scores: _Optional[_Iterable[_Union[NodeScore, _Mapping]]] = ..., estimated_start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., steps: _Optional[_Iterable[_Union[CycleStep, _Mapping]]] = ...) -> None: ...

class GetQueueRequest(_message.Message):
    __slots__ = ("tenant", "page_size", "page_token")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    page_size: int
    page_token: str
    def __init__(self, tenant: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class PoolUsage(_message.Message):
    __slots__ = ("device_class", "model", "partition", "used", "nominal_quota", "borrowed", "used_milli", "nominal_quota_milli", "borrowed_milli")
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    USED_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_QUOTA_FIELD_NUMBER: _ClassVar[int]
    BORROWED_FIELD_NUMBER: _ClassVar[int]
    USED_MILLI_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_QUOTA_MILLI_FIELD_NUMBER: _ClassVar[int]
    BORROWED_MILLI_FIELD_NUMBER: _ClassVar[int]
    device_class: _accelerator_type_pb2.DeviceClass
    model: str
    partition: str
    used: int
    nominal_quota: int
    borrowed: int
    used_milli: int
    nominal_quota_milli: int
    borrowed_milli: int
    def __init__(self, device_class: _Optional[_Union[_accelerator_type_pb2.DeviceClass, str]] = ..., model: _Optional[str] = ..., partition: _Optional[str] = ..., used: _Optional[int] = ..., nominal_quota: _Optional[int] = ..., borrowed: _Optional[int] = ..., used_milli: _Optional[int] = ..., nominal_quota_milli: _Optional[int] = ..., borrowed_milli: _Optional[int] = ...) -> None: ...

class TenantUsage(_message.Message):
    __slots__ = ("tenant", "dominant_share", "weight", "usage", "pending", "cohort")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    DOMINANT_SHARE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    dominant_share: float
    weight: float
    usage: _containers.RepeatedCompositeFieldContainer[PoolUsage]
    pending: int
    cohort: str
    def __init__(self, tenant: _Optional[str] = ..., dominant_share: _Optional[float] = ..., weight: _Optional[float] = ..., usage: _Optional[_Iterable[_Union[PoolUsage, _Mapping]]] = ..., pending: _Optional[int] = ..., cohort: _Optional[str] = ...) -> None: ...

class GetQueueResponse(_message.Message):
    __slots__ = ("pending", "tenants", "next_page_token")
    PENDING_FIELD_NUMBER: _ClassVar[int]
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    pending: _containers.RepeatedCompositeFieldContainer[Allocation]
    tenants: _containers.RepeatedCompositeFieldContainer[TenantUsage]
    next_page_token: str
    def __init__(self, pending: _Optional[_Iterable[_Union[Allocation, _Mapping]]] = ..., tenants: _Optional[_Iterable[_Union[TenantUsage, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ("tenant", "request_id", "node")
    TENANT_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    tenant: str
    request_id: str
    node: str
    def __init__(self, tenant: _Optional[str] = ..., request_id: _Optional[str] = ..., node: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("type", "time", "allocation", "node", "reason", "sequence")
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        TYPE_UNSPECIFIED: _ClassVar[Event.Type]
        ALLOCATED: _ClassVar[Event.Type]
        RELEASED: _ClassVar[Event.Type]
        EXPIRED: _ClassVar[Event.Type]
        NODE_REGISTERED: _ClassVar[Event.Type]
        NODE_REMOVED: _ClassVar[Event.Type]
        NODE_SCHEDULABLE_CHANGED: _ClassVar[Event.Type]
        DEVICE_HEALTH_CHANGED: _ClassVar[Event.Type]
        PREEMPTED: _ClassVar[Event.Type]
        ADMITTED: _ClassVar[Event.Type]
        MIG_RELAYOUT_PLANNED: _ClassVar[Event.Type]
        MIG_RELAYOUT_DROPPED: _ClassVar[Event.Type]
    TYPE_UNSPECIFIED: Event.Type
    ALLOCATED: Event.Type
    RELEASED: Event.Type
    EXPIRED: Event.Type
    NODE_REGISTERED: Event.Type
    NODE_REMOVED: Event.Type
    NODE_SCHEDULABLE_CHANGED: Event.Type
    DEVICE_HEALTH_CHANGED: Event.Type
    PREEMPTED: Event.Type
    ADMITTED: Event.Type
    MIG_RELAYOUT_PLANNED: Event.Type
    MIG_RELAYOUT_DROPPED: Event.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    type: Event.Type
    time: _timestamp_pb2.Timestamp
    allocation: Allocation
    node: str
    reason: str
    sequence: int
    def __init__(self, type: _Optional[_Union[Event.Type, str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., allocation: _Optional[_Union[Allocation, _Mapping]] = ..., node: _Optional[str] = ..., reason: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class ListAcceleratorTypesRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListAcceleratorTypesResponse(_message.Message):
    __slots__ = ("types",)
    TYPES_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedCompositeFieldContainer[_accelerator_type_pb2.AcceleratorType]
    def __init__(self, types: _Optional[_Iterable[_Union[_accelerator_type_pb2.AcceleratorType, _Mapping]]] = ...) -> None: ...
