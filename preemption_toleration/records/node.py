"""Records of nodes: what matching and fitting read, with allocatable parsed once as the node is decoded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from preemption_toleration.core.quantities import allocatable
from preemption_toleration.core.shapes import as_list, as_mapping


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """Name, labels, taints, whether it is cordoned, and allocatable resources scaled like requests (CPU in
    millicores)."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    unschedulable: bool = False
    allocatable: Mapping[str, int] = field(default_factory=dict)


def node_record(node: Mapping[str, Any]) -> NodeRecord:
    """The record of a Node as the API server returns it; a field of the wrong shape reads as absent."""
    metadata = as_mapping(node.get("metadata"))
    spec = as_mapping(node.get("spec"))
    labels = as_mapping(metadata.get("labels"))
    return NodeRecord(
        name=str(metadata.get("name") or ""),
        labels={str(key): str(value) for key, value in labels.items()},
        taints=tuple(taint for taint in as_list(spec.get("taints")) if isinstance(taint, Mapping)),
        unschedulable=spec.get("unschedulable") is True,
        allocatable=allocatable(node),
    )
