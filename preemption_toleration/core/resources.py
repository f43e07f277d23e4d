"""Resource quantities and a pod's summed requests, as the kube-scheduler computes them.

A pod's request for a resource is the larger of (the sum of its containers plus its restartable init
containers, the sidecars) and (each init container's request plus the sidecars started before it), plus
the pod's overhead (`resourcehelper.PodRequests`; without sidecars, the larger of the sum of the
containers and the largest init container). Pod-level requests (`spec.resources.requests`) of CPU, memory
and huge pages replace the containers' sum for those resources, before the overhead is added. CPU counts
in millicores and everything else in whole units, both rounded up, as `Quantity.MilliValue()` and
`Quantity.Value()` do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from preemption_toleration.core.shapes import as_list

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGE_PAGES_PREFIX = "hugepages-"

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
MAX_QUANTITY_LENGTH = 64
INT64_MAX = 2**63 - 1


class QuantityError(ValueError):
    pass


def parse_quantity(text: object) -> Fraction:
    """The exact value of a Kubernetes quantity such as `500m`, `1.5Gi`, `2e3` or a JSON number."""
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int | float):
        text = repr(text)
    if not isinstance(text, str) or len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(f"{str(text)[:MAX_QUANTITY_LENGTH]!r} is not a quantity")
    match = _QUANTITY.fullmatch(text.strip())
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity")
    number, exponent, suffix = match.groups()
    value = Fraction(number)
    if exponent:
        power = int(exponent[1:])
        if abs(power) > 30:  # far outside int64 either way; never build a huge integer
            return Fraction(0) if power < 0 else Fraction(INT64_MAX)
        return value * Fraction(10) ** power
    return value * _SUFFIXES[suffix or ""]


def _ceil(value: Fraction) -> int:
    return min(-(-value.numerator // value.denominator), INT64_MAX)


def scaled(resource: str, value: Fraction) -> int:
    """Millicores for CPU, whole units (bytes, devices) for everything else, rounded up."""
    return _ceil(value * 1000) if resource == CPU else _ceil(value)


def _requests(container: Any) -> dict[str, int]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    requests = resources.get("requests") if isinstance(resources, Mapping) else None
    found: dict[str, int] = {}
    for name, quantity in requests.items() if isinstance(requests, Mapping) else ():
        try:
            found[str(name)] = scaled(str(name), parse_quantity(quantity))
        except QuantityError:
            continue  # the API server validates quantities; an unreadable one counts as nothing
    return found


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if value > total.get(name, 0):
            total[name] = value


def _is_pod_level(resource: str) -> bool:
    """`IsSupportedPodLevelResource`: CPU, memory and huge pages may be requested for the pod as a whole."""
    return resource in (CPU, MEMORY) or resource.startswith(HUGE_PAGES_PREFIX)


def _pod_level_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The pod-level requests (`spec.resources.requests`, PodLevelResources: beta and on by default since
    1.34) that stand for the containers' sum: none unless one of them is a resource the pod may request."""
    return {name: value for name, value in _requests(spec).items() if _is_pod_level(name)}


def pod_requests(spec: Mapping[str, Any]) -> dict[str, int]:
    """The summed requests of a pod spec, by resource name; resources requested by nobody are absent."""
    total: dict[str, int] = {}
    for container in as_list(spec.get("containers")):
        _add(total, _requests(container))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in as_list(spec.get("initContainers")):
        requests = _requests(container)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, requests)
            _max(init_peak, running)
    _add(total, sidecars)
    _max(total, init_peak)
    total.update(_pod_level_requests(spec))
    overhead = spec.get("overhead")
    if isinstance(overhead, Mapping):
        _add(total, _requests({"resources": {"requests": overhead}}))
    return {name: value for name, value in total.items() if value}


def allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """A node's allocatable resources, scaled like requests (CPU in millicores)."""
    status = node.get("status")
    values = status.get("allocatable") if isinstance(status, Mapping) else None
    return _requests({"resources": {"requests": values}}) if isinstance(values, Mapping) else {}
