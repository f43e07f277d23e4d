"""Resource quantities and a pod's summed requests, as the kube-scheduler computes them.

A pod's request for a resource is the larger of (the sum of its containers plus its restartable init
containers, the sidecars) and (each init container's request plus the sidecars started before it), plus
the pod's overhead (`resourcehelper.PodRequests`; without sidecars, the larger of the sum of the
containers and the largest init container). Pod-level requests (`spec.resources.requests`) of CPU, memory
and huge pages replace the containers' sum for those resources, before the overhead is added. CPU counts
in millicores and everything else in whole units, both rounded up, as `Quantity.MilliValue()` and
`Quantity.Value()` do.

A pod resized in place counts the larger of what its spec asks and what its status says the kubelet
allocated and actuated (`UseStatusResources`; InPlacePodVerticalScaling is GA since 1.35). How differs
between releases, so `ResizeRules` names the release's way: up to 1.36 the larger is taken per container
(sidecars only among the init containers), from 1.37 for the sums; the pod-level status
(`status.resources`, `status.allocatedResources`) is read from 1.36 on, where
InPlacePodLevelResourcesVerticalScaling is on by default. A resize the kubelet found infeasible
(condition PodResizePending, reason Infeasible) counts only the status.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from preemption_toleration.core.shapes import as_list, as_mapping, is_mapping

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGE_PAGES_PREFIX = "hugepages-"

# resource.Quantity's suffixes: decimal SI (n, u, m, "", k ... E, by powers of 1000) and binary (Ki ... Ei).
_SUFFIXES: dict[str, Fraction] = {
    **{
        suffix: Fraction(10) ** (3 * power)
        for power, suffix in enumerate(("n", "u", "m", "", "k", "M", "G", "T", "P", "E"), -3)
    },
    **{f"{suffix}i": Fraction(2) ** (10 * power) for power, suffix in enumerate("KMGTPE", 1)},
}
_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)")
MAX_QUANTITY_LENGTH = 64
INT64_MAX = 2**63 - 1
QUANTITIES_REMEMBERED = 4096


class QuantityError(ValueError):
    pass


def _quantity_text(text: object) -> str:
    if isinstance(text, bool):
        raise QuantityError(f"{text!r} is not a quantity")
    if isinstance(text, int | float):
        text = repr(text)
    if not isinstance(text, str) or len(text) > MAX_QUANTITY_LENGTH:
        raise QuantityError(f"{str(text)[:MAX_QUANTITY_LENGTH]!r} is not a quantity")
    return text


def parse_quantity(text: object) -> Fraction:
    """The exact value of a Kubernetes quantity such as `500m`, `1.5Gi`, `2e3` or a JSON number."""
    return _parsed(_quantity_text(text))


def _parsed(text: str) -> Fraction:
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


# A cluster's pods ask for a few distinct quantities ("250m", "1Gi"), and Fractions are slow: every pod the
# watch brings and every preemptor the extender judges would parse them again. Bounded, as the strings come
# from the cluster.
@functools.lru_cache(maxsize=QUANTITIES_REMEMBERED)
def _scaled_text(resource: str, text: str) -> int:
    return scaled(resource, _parsed(text))


def _ceil(value: Fraction) -> int:
    return min(-(-value.numerator // value.denominator), INT64_MAX)


def scaled(resource: str, value: Fraction) -> int:
    """Millicores for CPU, whole units (bytes, devices) for everything else, rounded up."""
    return _ceil(value * 1000) if resource == CPU else _ceil(value)


def _scaled_list(values: Any) -> dict[str, int]:
    found: dict[str, int] = {}
    for name, quantity in values.items() if is_mapping(values) else ():
        try:
            found[str(name)] = _scaled_text(str(name), _quantity_text(quantity))
        except QuantityError:
            continue  # the API server validates quantities; an unreadable one counts as nothing
    return found


def _requests(container: Any) -> dict[str, int]:
    return _scaled_list(as_mapping(as_mapping(container).get("resources")).get("requests"))


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _max(total: dict[str, int], *others: Mapping[str, int]) -> dict[str, int]:
    for other in others:
        for name, value in other.items():
            if value > total.get(name, 0):
                total[name] = value
    return total


def _is_pod_level(resource: str) -> bool:
    """`IsSupportedPodLevelResource`: CPU, memory and huge pages may be requested for the pod as a whole."""
    return resource in (CPU, MEMORY) or resource.startswith(HUGE_PAGES_PREFIX)


@dataclass(frozen=True)
class ResizeRules:
    """How one release's kube-scheduler reads the resources of a pod resized in place."""

    release: str
    sums_first: bool  # 1.37: max(spec, allocated, actuated) of the sums; before, of each container
    pod_level_status: bool  # InPlacePodLevelResourcesVerticalScaling on by default (beta since 1.36)


RULES_1_35 = ResizeRules("1.35", sums_first=False, pod_level_status=False)
RULES_1_36 = ResizeRules("1.36", sums_first=False, pod_level_status=True)
RULES_1_37 = ResizeRules("1.37", sums_first=True, pod_level_status=True)
LATEST_RULES = RULES_1_37


def resize_rules(minor: int) -> ResizeRules:
    """The rules of a server's minor release: older ones read as 1.35, newer as the latest known."""
    return RULES_1_35 if minor <= 35 else RULES_1_36 if minor == 36 else LATEST_RULES


ContainerReader = Callable[[Mapping[str, Any], bool], dict[str, int]]  # (container, is a sidecar or a container)


def _summed(spec: Mapping[str, Any], read: ContainerReader) -> dict[str, int]:
    """The sidecar formula over the containers' requests as `read` gives them."""
    total: dict[str, int] = {}
    for container in as_list(spec.get("containers")):
        _add(total, read(as_mapping(container), True))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in as_list(spec.get("initContainers")):
        restartable = is_mapping(container) and container.get("restartPolicy") == "Always"
        requests = read(as_mapping(container), restartable)
        if restartable:
            _add(sidecars, requests)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, requests)
            _max(init_peak, running)
    _add(total, sidecars)
    return _max(total, init_peak)


def _infeasible(status: Mapping[str, Any]) -> bool:
    """`IsPodResizeInfeasible`: the first PodResizePending condition has the reason Infeasible."""
    for condition in as_list(status.get("conditions")):
        if is_mapping(condition) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def _container_statuses(status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for key in ("initContainerStatuses", "containerStatuses"):  # a container's own status wins a clash
        for entry in as_list(status.get(key)):
            if is_mapping(entry) and isinstance(entry.get("name"), str):
                found[entry["name"]] = entry
    return found


def _status_of(statuses: Mapping[str, Mapping[str, Any]], container: Mapping[str, Any]) -> Mapping[str, Any] | None:
    name = container.get("name")
    return statuses.get(name) if isinstance(name, str) else None


def _present(mapping: Mapping[str, Any], key: str) -> bool:
    """A Go map or pointer that is not nil: the key is there with an object."""
    return is_mapping(mapping.get(key))


def _per_container(spec: Mapping[str, Any], status: Mapping[str, Any], infeasible: bool) -> dict[str, int]:
    """Up to 1.36: each container (and sidecar) with a status counts max(spec, actuated, allocated)."""
    statuses = _container_statuses(status)

    def read(container: Mapping[str, Any], status_counts: bool) -> dict[str, int]:
        wanted = _requests(container)
        found = _status_of(statuses, container) if status_counts else None
        if found is None or not _present(found, "resources"):
            return wanted
        actuated = _scaled_list(as_mapping(found.get("resources")).get("requests"))
        allocated = _scaled_list(found.get("allocatedResources"))
        return _max({}, actuated, allocated) if infeasible else _max(wanted, actuated, allocated)

    return _summed(spec, read)


def _sums_first(
    spec: Mapping[str, Any], status: Mapping[str, Any], infeasible: bool, rules: ResizeRules
) -> dict[str, int]:
    """From 1.37: max(spec, actuated, allocated) of the sums; the pod-level status stands for the containers'
    allocated and actuated sums when both are there."""
    wanted = _summed(spec, lambda container, _: _requests(container))
    pod_actuated = as_mapping(status.get("resources"))
    if rules.pod_level_status and _present(status, "allocatedResources") and _present(pod_actuated, "requests"):
        allocated = _scaled_list(status["allocatedResources"])
        actuated = _scaled_list(pod_actuated["requests"])
    else:
        statuses = _container_statuses(status)
        fallback: Callable[[Mapping[str, Any]], dict[str, int]] = (lambda container: {}) if infeasible else _requests

        def allocated_of(container: Mapping[str, Any], _: bool) -> dict[str, int]:
            found = _status_of(statuses, container)
            if found is not None and _present(found, "allocatedResources"):
                return _scaled_list(found["allocatedResources"])
            return fallback(container)

        def actuated_of(container: Mapping[str, Any], _: bool) -> dict[str, int]:
            found = _status_of(statuses, container)
            if found is not None and _present(as_mapping(found.get("resources")), "requests"):
                return _scaled_list(found["resources"]["requests"])
            return allocated_of(container, _)

        allocated, actuated = _summed(spec, allocated_of), _summed(spec, actuated_of)
    return _max({}, actuated, allocated) if infeasible else _max(wanted, actuated, allocated)


def _pod_level(
    spec: Mapping[str, Any], status: Mapping[str, Any], infeasible: bool, rules: ResizeRules
) -> dict[str, int]:
    """The pod-level requests that stand for the containers' sum (PodLevelResources, on by default since
    1.34): none unless the spec asks for a resource the pod may request; read with the pod-level status
    where the release does."""
    wanted = {name: value for name, value in _requests(spec).items() if _is_pod_level(name)}
    if not wanted:
        return {}
    if not (rules.pod_level_status and _present(status, "resources")):
        return wanted
    actuated = as_mapping(status["resources"]).get("requests")
    statuses = (_scaled_list(actuated), _scaled_list(status.get("allocatedResources")))
    effective = _max({}, *statuses) if infeasible else _max(dict(wanted), *statuses)
    if rules.sums_first:  # every pod-level resource of the larger one
        return {name: value for name, value in effective.items() if _is_pod_level(name)}
    return {name: effective.get(name, 0) for name in wanted}  # up to 1.36: those the spec names


def pod_requests(
    spec: Mapping[str, Any], status: Mapping[str, Any] | None = None, rules: ResizeRules = LATEST_RULES
) -> dict[str, int]:
    """The summed requests of a pod (its spec, and its status for a resize in place), by resource name;
    resources requested by nobody are absent."""
    status = status or {}
    infeasible = _infeasible(status)
    if rules.sums_first:
        total = _sums_first(spec, status, infeasible, rules)
    else:
        total = _per_container(spec, status, infeasible)
    total.update(_pod_level(spec, status, infeasible, rules))
    _add(total, _scaled_list(spec.get("overhead")))
    return {name: value for name, value in total.items() if value}


def allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """A node's allocatable resources, scaled like requests (CPU in millicores)."""
    return _scaled_list(as_mapping(node.get("status")).get("allocatable"))
