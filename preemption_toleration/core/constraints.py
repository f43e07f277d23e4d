"""Which scheduling constraints of a pod the project judges exactly.

The project models the scheduler's filters for resources (extended ones included), the pod count, node
selector, required node affinity, taints and tolerations, and a node marked unschedulable. A pod that asks
for anything else a filter checks (required pod affinity or anti-affinity, a topology spread that refuses
nodes, host ports, volumes that may be bound to nodes, resource claims) can fit or not for reasons the
project does not see, so a choice made for it on resources alone could be wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from preemption_toleration.core.shapes import as_list, as_mapping

POD_AFFINITY = "pod affinity"
POD_ANTI_AFFINITY = "pod anti-affinity"
TOPOLOGY_SPREAD = "topology spread"
HOST_PORTS = "host ports"
VOLUMES = "volumes bound to nodes"
RESOURCE_CLAIMS = "resource claims"
# Volume sources whose binding or per-node limits a filter checks (VolumeBinding, VolumeZone,
# NodeVolumeLimits); configMap, secret, emptyDir and the like fit anywhere
_NODE_BOUND_VOLUMES = ("persistentVolumeClaim", "ephemeral", "csi")


def _required_terms(affinity: Mapping[str, Any], kind: str) -> bool:
    return bool(as_list(as_mapping(affinity.get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution")))


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for key in ("initContainers", "containers"):
        for container in as_list(spec.get(key)):
            yield as_mapping(container)


def unjudged_constraints(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The constraints of a pod's spec that the project does not judge, by name; () when it judges all."""
    found: list[str] = []
    affinity = as_mapping(spec.get("affinity"))
    if _required_terms(affinity, "podAffinity"):
        found.append(POD_AFFINITY)
    if _required_terms(affinity, "podAntiAffinity"):
        found.append(POD_ANTI_AFFINITY)
    if any(
        as_mapping(constraint).get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
        for constraint in as_list(spec.get("topologySpreadConstraints"))
    ):
        found.append(TOPOLOGY_SPREAD)
    if any(as_mapping(port).get("hostPort") for c in _containers(spec) for port in as_list(c.get("ports"))):
        found.append(HOST_PORTS)
    if any(key in as_mapping(volume) for volume in as_list(spec.get("volumes")) for key in _NODE_BOUND_VOLUMES):
        found.append(VOLUMES)
    if as_list(spec.get("resourceClaims")):
        found.append(RESOURCE_CLAIMS)
    return tuple(found)
