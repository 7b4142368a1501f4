"""A task pod's CPU and memory as accelsched.v1.NodeResources, from Kubernetes quantities.

accelsched counts CPU in thousandths of a core (``cpu_milli``) and memory in bytes
(``memory_bytes``); Kubernetes and flytekit write them as quantities ("500m", "2", 0.5, "4Gi",
"1G", 1024). :func:`parse_quantity` reads a quantity as Kubernetes does (k8s.io/apimachinery
v0.34.1 ``pkg/api/resource``: the grammar in quantity.go:37-64, the suffixes in
suffix.go:108-135, numbers as JSON numbers, quantity.go:732-750), and :func:`to_pod_resources`
rounds up as the API server and the scheduler do (``SetDefaults_ResourceList`` rounds every
value up to thousandths; ``Quantity.MilliValue`` and ``Quantity.Value``, quantity.go:812-829,
round up), so "1.5" CPUs is 1500 and "1500u" is 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from accelsched.v1 import accelsched_pb2 as pb

# What `pod_resources` may be: anything to_pod_resources takes.
PodResourcesLike = Any
# A Kubernetes quantity: its string, or a number as a pod spec's JSON or YAML writes one.
QuantityLike = str | int | float

# <signedNumber><suffix>, where <number> is <digits>, <digits>.<digits>, <digits>. or .<digits>,
# and <suffix> a binary SI suffix, a decimal exponent (e3, E-2) or a decimal SI suffix; "n"
# and "u" are the parser's too, though the grammar does not list them. "E" alone is exa.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|[numkMGTPE]?)"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# A quantity of 10^40 or more is out of any range; the cap keeps "1e999999999" from computing
# a billion-digit number.
_MAX_MAGNITUDE = 40
_INT64_MAX = 2**63 - 1


def parse_quantity(quantity: QuantityLike) -> Fraction:
    """The value of a Kubernetes quantity as Kubernetes holds it (exact, rounded up away from
    zero to a billionth): a string ("500m", "2", "4Gi", "1.5G", "1e3", surrounding whitespace
    ignored) or an int or float, read as its JSON text (2 is "2", 0.5 is "0.5"), as a pod
    spec's number is.

    Raises ValueError for a string that is no quantity (say "4GB", "1K" or ""), for one of
    10^40 or more, for NaN or infinity; TypeError for anything but a str, int or float (a
    bool included). A string without a digit ("m", ".", "e3") is refused too: the grammar
    needs one, although Kubernetes' scanner (quantity.go:160-272) reads it as 0.
    """
    if isinstance(quantity, bool) or not isinstance(quantity, (str, int, float)):
        raise TypeError(
            f"a Kubernetes quantity is a str, int or float, not {type(quantity).__name__}"
        )
    if isinstance(quantity, float) and not math.isfinite(quantity):
        raise ValueError(f"{quantity!r} is not a Kubernetes quantity")
    text = quantity.strip() if isinstance(quantity, str) else repr(quantity)
    match = _QUANTITY.fullmatch(text)
    if match is None or not (match["int"] or match["frac"]):
        raise ValueError(
            f"{quantity!r} is not a Kubernetes quantity (a number with an optional suffix: "
            "m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent e<n>)"
        )
    frac = match["frac"] or ""
    digits = int((match["int"] or "0") + frac)  # the value is digits * 10^power
    suffix = match["suffix"]
    if suffix in _BINARY:
        value = Fraction(digits * 2 ** _BINARY[suffix], 10 ** len(frac))
    else:
        power = (_DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])) - len(frac)
        magnitude = len(str(digits)) + power  # 10^(magnitude-1) <= value < 10^magnitude
        if digits == 0:
            value = Fraction(0)
        elif magnitude > _MAX_MAGNITUDE:
            raise ValueError(f"{quantity!r} is too large a quantity")
        elif magnitude < -9:
            value = Fraction(1, 10**10)  # below a billionth: rounded up to one below
        else:
            value = digits * Fraction(10) ** power
    # Kubernetes holds a quantity rounded up to a billionth (quantity.go:368-373).
    value = Fraction(math.ceil(value * 10**9), 10**9)
    return -value if match["sign"] == "-" else value


def _rounded(name: str, quantity: QuantityLike, scale: int) -> int:
    """``quantity`` times ``scale``, rounded up, as an int64."""
    try:
        value = parse_quantity(quantity)
    except (TypeError, ValueError) as e:
        raise type(e)(f"pod_resources {name}: {e}") from None
    if value < 0:
        raise ValueError(f"pod_resources {name} {quantity!r} is negative")
    rounded = math.ceil(value * scale)
    if rounded > _INT64_MAX:
        raise ValueError(f"pod_resources {name} {quantity!r} is too large")
    return rounded


def _other_resource(name: Any) -> bool:
    """A Kubernetes resource that pod_resources does not carry: an extended one (a domain's,
    "nvidia.com/gpu": the devices are the request's accelerator and count), ephemeral storage
    or huge pages."""
    return isinstance(name, str) and (
        "/" in name or name == "ephemeral-storage" or name.startswith("hugepages-"))


def _flytekit_value(value: Any) -> Any:
    """A flytekit Resources field: a value, or (request, limit)."""
    if isinstance(value, (tuple, list)):
        return value[0] if value else None
    return value


def to_pod_resources(resources: PodResourcesLike) -> pb.NodeResources | None:
    """``resources`` as the AllocateRequest's ``pod_resources``: one pod's CPU and memory.

    Accepts:

    - a flytekit ``ResourceSpec``, such as a task's ``resources`` (``my_task.resources``, made
      from ``@task(requests=..., limits=...)`` or ``@task(resources=...)``): per resource its
      request, else its limit (Kubernetes sets a missing request to the limit);
    - a flytekit ``Resources`` (``Resources(cpu="2", mem="8Gi")``), taken as requests; a
      ``(request, limit)`` pair gives its request;
    - a mapping of Kubernetes resource names to quantities, such as a container's
      ``resources.requests``: its ``"cpu"`` and ``"memory"`` (extended resources such as
      ``"nvidia.com/gpu"``, ``"ephemeral-storage"`` and ``"hugepages-*"`` are not pod_resources'
      and are left out; another name, say ``"mem"``, is refused);
    - an ``accelsched.v1.NodeResources``, taken as it is;
    - None: none is sent (the node's CPU and memory are not accounted for the task).

    Quantities are as :func:`parse_quantity` reads them (CPU "500m", "2", 0.5; memory "4Gi",
    "1G", 1024 bytes), rounded up to a thousandth of a CPU and to a byte. A CPU and memory of
    0 (or none set) give None. ``pods`` is 1.

    Raises ValueError for a quantity that is no quantity, negative or too large, or a mapping
    with a name it does not know (each message names it); TypeError for a value or
    an object of no known kind. flytekit is not imported: its objects are read by their fields.
    """
    if resources is None or isinstance(resources, pb.NodeResources):
        return resources
    if isinstance(resources, Mapping):
        known = ("cpu", "memory")
        unknown = sorted(str(k) for k in resources if k not in known and not _other_resource(k))
        if unknown:
            raise ValueError(
                f"pod_resources takes Kubernetes' cpu and memory, not {', '.join(unknown)}"
            )
        cpu, memory = resources.get("cpu"), resources.get("memory")
    elif hasattr(resources, "requests") and hasattr(resources, "limits"):
        def request(field: str) -> Any:
            value = _flytekit_value(getattr(resources.requests, field, None))
            if value is None:
                value = _flytekit_value(getattr(resources.limits, field, None))
            return value

        cpu, memory = request("cpu"), request("mem")
    elif hasattr(resources, "cpu") and hasattr(resources, "mem"):
        cpu, memory = _flytekit_value(resources.cpu), _flytekit_value(resources.mem)
    else:
        raise TypeError(
            "pod_resources must be None, a flytekit ResourceSpec or Resources, a mapping of cpu "
            f"and memory, or an accelsched.v1.NodeResources, not {type(resources).__name__}"
        )
    cpu_milli = 0 if cpu is None else _rounded("cpu", cpu, 1000)
    memory_bytes = 0 if memory is None else _rounded("memory", memory, 1)
    if cpu_milli == 0 and memory_bytes == 0:
        return None
    return pb.NodeResources(cpu_milli=cpu_milli, memory_bytes=memory_bytes, pods=1)
