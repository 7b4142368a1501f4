from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TenantsConfig(_message.Message):
    __slots__ = ("tenants",)
    TENANTS_FIELD_NUMBER: _ClassVar[int]
    tenants: _containers.RepeatedCompositeFieldContainer[TenantConfig]
    def __init__(self, tenants: _Optional[_Iterable[_Union[TenantConfig, _Mapping]]] = ...) -> None: ...

class TenantConfig(_message.Message):
    __slots__ = ("name", "weight", "quotas", "cohort", "non_preemptible")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    QUOTAS_FIELD_NUMBER: _ClassVar[int]
    COHORT_FIELD_NUMBER: _ClassVar[int]
    NON_PREEMPTIBLE_FIELD_NUMBER: _ClassVar[int]
    name: str
    weight: float
    quotas: _containers.RepeatedCompositeFieldContainer[QuotaConfig]
    cohort: str
    non_preemptible: bool
    def __init__(self, name: _Optional[str] = ..., weight: _Optional[float] = ..., quotas: _Optional[_Iterable[_Union[QuotaConfig, _Mapping]]] = ..., cohort: _Optional[str] = ..., non_preemptible: _Optional[bool] = ...) -> None: ...

class QuotaConfig(_message.Message):
    __slots__ = ("model", "partition", "nominal", "borrowing_limit", "nominal_milli", "borrowing_limit_milli")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_FIELD_NUMBER: _ClassVar[int]
    BORROWING_LIMIT_FIELD_NUMBER: _ClassVar[int]
    NOMINAL_MILLI_FIELD_NUMBER: _ClassVar[int]
    BORROWING_LIMIT_MILLI_FIELD_NUMBER: _ClassVar[int]
    model: str
    partition: str
    nominal: int
    borrowing_limit: int
    nominal_milli: int
    borrowing_limit_milli: int
    def __init__(self, model: _Optional[str] = ..., partition: _Optional[str] = ..., nominal: _Optional[int] = ..., borrowing_limit: _Optional[int] = ..., nominal_milli: _Optional[int] = ..., borrowing_limit_milli: _Optional[int] = ...) -> None: ...
