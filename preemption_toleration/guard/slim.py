"""The fields of pods and nodes the guard decides on; everything else is dropped from its caches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _pick(source: Mapping[str, Any] | None, keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: source[key] for key in keys if source and source.get(key) is not None}


def slim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    slim_spec = _pick(spec, ("priority", "priorityClassName", "preemptionPolicy", "nodeName", "nodeSelector",
                             "tolerations"))
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required:
        slim_spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    conditions = [c for c in status.get("conditions") or [] if c.get("type") in ("PodScheduled", "DisruptionTarget")]
    return {
        "metadata": _pick(pod.get("metadata"), ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp")),
        "spec": slim_spec,
        "status": {**_pick(status, ("phase", "nominatedNodeName")), "conditions": conditions},
    }


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "metadata": _pick(node.get("metadata"), ("name", "labels")),
        "spec": _pick(node.get("spec"), ("taints",)),
    }


def pod_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    metadata = pod.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
