"""The demo's objects, built as plain Kubernetes JSON (pure)."""

from __future__ import annotations

from typing import Any

from preemption_toleration.api.policy import API_VERSION, KIND

NAMESPACE = "demo"
NODE = "demo-node"
CLASSES = {"critical": 10000, "high": 9000, "low": 8000, "low-non-preempted": 8000, "low-guaranteed": 8000}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": "preemption-toleration demo"}


def policies(guarantee_seconds: int) -> list[dict[str, Any]]:
    def policy(name: str, seconds: int) -> dict[str, Any]:
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name},
                "spec": {"priorityClassName": name, "minimumPreemptablePriority": 10000,
                         "tolerationSeconds": seconds}}

    return [policy("low-non-preempted", -1), policy("low-guaranteed", guarantee_seconds)]


def pod(name: str, class_name: str, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "priorityClassName": class_name,
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "work", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def render_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
             for row in [headers, *rows]]
    return "\n".join(lines)
