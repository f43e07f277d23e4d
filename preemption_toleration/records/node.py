"""Slim records of nodes: what matching and fitting read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preemption_toleration.core.shapes import as_mapping


def slim_node(node: Mapping[str, Any]) -> dict[str, Any]:
    """Name, labels, taints, whether it is cordoned, and allocatable resources: what matching and fitting
    read."""
    metadata = as_mapping(node.get("metadata"))
    spec = as_mapping(node.get("spec"))
    status = as_mapping(node.get("status"))
    slim: dict[str, Any] = {
        "metadata": {"name": metadata.get("name"), "labels": metadata.get("labels") or {}},
        "spec": {"taints": spec.get("taints") or []},
    }
    if spec.get("unschedulable") is True:
        slim["spec"]["unschedulable"] = True
    if status.get("allocatable"):
        slim["status"] = {"allocatable": status["allocatable"]}
    return slim
