from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DeviceClass(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    NVIDIA_GPU: _ClassVar[DeviceClass]
    GOOGLE_TPU: _ClassVar[DeviceClass]
    AMAZON_NEURON: _ClassVar[DeviceClass]
    AMD_GPU: _ClassVar[DeviceClass]
    HABANA_GAUDI: _ClassVar[DeviceClass]
NVIDIA_GPU: DeviceClass
GOOGLE_TPU: DeviceClass
AMAZON_NEURON: DeviceClass
AMD_GPU: DeviceClass
HABANA_GAUDI: DeviceClass

class MigProfile(_message.Message):
    __slots__ = ("name", "memory_slices", "compute_slices", "starts", "max_instances")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_SLICES_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_SLICES_FIELD_NUMBER: _ClassVar[int]
    STARTS_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    memory_slices: int
    compute_slices: int
    starts: _containers.RepeatedScalarFieldContainer[int]
    max_instances: int
    def __init__(self, name: _Optional[str] = ..., memory_slices: _Optional[int] = ..., compute_slices: _Optional[int] = ..., starts: _Optional[_Iterable[int]] = ..., max_instances: _Optional[int] = ...) -> None: ...

class FlyteNodeLabel(_message.Message):
    __slots__ = ("name", "node_label_value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    node_label_value: str
    def __init__(self, name: _Optional[str] = ..., node_label_value: _Optional[str] = ...) -> None: ...

class TpuTopology(_message.Message):
    __slots__ = ("topology", "chips", "hosts")
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    CHIPS_FIELD_NUMBER: _ClassVar[int]
    HOSTS_FIELD_NUMBER: _ClassVar[int]
    topology: str
    chips: int
    hosts: int
    def __init__(self, topology: _Optional[str] = ..., chips: _Optional[int] = ..., hosts: _Optional[int] = ...) -> None: ...

class TpuTopologyRule(_message.Message):
    __slots__ = ("dimension_multiple", "max_chips", "chips_per_host", "ascending")
    DIMENSION_MULTIPLE_FIELD_NUMBER: _ClassVar[int]
    MAX_CHIPS_FIELD_NUMBER: _ClassVar[int]
    CHIPS_PER_HOST_FIELD_NUMBER: _ClassVar[int]
    ASCENDING_FIELD_NUMBER: _ClassVar[int]
    dimension_multiple: int
    max_chips: int
    chips_per_host: int
    ascending: bool
    def __init__(self, dimension_multiple: _Optional[int] = ..., max_chips: _Optional[int] = ..., chips_per_host: _Optional[int] = ..., ascending: _Optional[bool] = ...) -> None: ...

class AcceleratorType(_message.Message):
    __slots__ = ("canonical_model", "device_class", "aliases", "memory_bytes", "mig_profiles", "tpu_topologies", "node_label_value", "resource_name", "mig_memory_slices", "mig_compute_slices", "tpu_topology_rules", "flyte_node_labels")
    CANONICAL_MODEL_FIELD_NUMBER: _ClassVar[int]
    DEVICE_CLASS_FIELD_NUMBER: _ClassVar[int]
    ALIASES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MIG_PROFILES_FIELD_NUMBER: _ClassVar[int]
    TPU_TOPOLOGIES_FIELD_NUMBER: _ClassVar[int]
    NODE_LABEL_VALUE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_NAME_FIELD_NUMBER: _ClassVar[int]
    MIG_MEMORY_SLICES_FIELD_NUMBER: _ClassVar[int]
    MIG_COMPUTE_SLICES_FIELD_NUMBER: _ClassVar[int]
    TPU_TOPOLOGY_RULES_FIELD_NUMBER: _ClassVar[int]
    FLYTE_NODE_LABELS_FIELD_NUMBER: _ClassVar[int]
    canonical_model: str
    device_class: DeviceClass
    aliases: _containers.RepeatedScalarFieldContainer[str]
    memory_bytes: int
    mig_profiles: _containers.RepeatedCompositeFieldContainer[MigProfile]
    tpu_topologies: _containers.RepeatedCompositeFieldContainer[TpuTopology]
    node_label_value: str
    resource_name: str
    mig_memory_slices: int
    mig_compute_slices: int
    tpu_topology_rules: _containers.RepeatedCompositeFieldContainer[TpuTopologyRule]
    flyte_node_labels: _containers.RepeatedCompositeFieldContainer[FlyteNodeLabel]
    def __init__(self, canonical_model: _Optional[str] = ..., device_class: _Optional[_Union[DeviceClass, str]] = ..., aliases: _Optional[_Iterable[str]] = ..., memory_bytes: _Optional[int] = ..., mig_profiles: _Optional[_Iterable[_Union[MigProfile, _Mapping]]] = ..., tpu_topologies: _Optional[_Iterable[_Union[TpuTopology, _Mapping]]] = ..., node_label_value: _Optional[str] = ..., resource_name: _Optional[str] = ..., mig_memory_slices: _Optional[int] = ..., mig_compute_slices: _Optional[int] = ..., tpu_topology_rules: _Optional[_Iterable[_Union[TpuTopologyRule, _Mapping]]] = ..., flyte_node_labels: _Optional[_Iterable[_Union[FlyteNodeLabel, _Mapping]]] = ...) -> None: ...

class AcceleratorTypeRegistry(_message.Message):
    __slots__ = ("types",)
    TYPES_FIELD_NUMBER: _ClassVar[int]
    types: _containers.RepeatedCompositeFieldContainer[AcceleratorType]
    def __init__(self, types: _Optional[_Iterable[_Union[AcceleratorType, _Mapping]]] = ...) -> None: ...
