"""flytekit's accelerator objects, taken as they are, become accelsched.v1.Accelerator."""

from __future__ import annotations

import pytest
from flytekit.extras.accelerators import A100, T4

from accelsched import to_accelerator


def test_flytekit_objects_convert_field_for_field():
    for flytekit_accelerator in (A100.partition_2g_10gb, A100.unpartitioned, A100, T4):
        idl = flytekit_accelerator.to_flyte_idl()
        ours = to_accelerator(flytekit_accelerator)
        assert ours.device == idl.device
        assert ours.WhichOneof("partition_size_value") == idl.WhichOneof("partition_size_value")
        assert ours.unpartitioned == idl.unpartitioned
        assert ours.partition_size == idl.partition_size
        assert ours.SerializeToString() == idl.SerializeToString()
    with pytest.raises(TypeError):
        to_accelerator(42)
