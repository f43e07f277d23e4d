"""The demo's objects, built as plain Kubernetes JSON (pure)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from preemption_toleration.api.policy import API_VERSION, KIND
from preemption_toleration.api.resources import PRIORITY_CLASS_API_VERSION, PRIORITY_CLASS_KIND
from preemption_toleration.core.annotations import MINIMUM, MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION

NAMESPACE = "demo"
NODE = "demo-node"
CLASSES = {"critical": 10000, "high": 9000, "low": 8000, "low-non-preempted": 8000, "low-guaranteed": 8000}


def priority_class(name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": PRIORITY_CLASS_API_VERSION,
        "kind": PRIORITY_CLASS_KIND,
        "metadata": {"name": name},
        "value": value,
        "description": "preemption-toleration demo",
    }


def policies(guarantee_seconds: int) -> list[dict[str, Any]]:
    def policy(name: str, seconds: int) -> dict[str, Any]:
        return {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name},
            "spec": {"priorityClassName": name, MINIMUM.spec_field: 10000, TOLERATION.spec_field: seconds},
        }

    return [policy("low-non-preempted", -1), policy("low-guaranteed", guarantee_seconds)]


def pod(name: str, class_name: str, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "priorityClassName": class_name,
            "nodeSelector": {"kubernetes.io/hostname": NODE},
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "work", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def sample_objects(documents: Iterable[Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The PriorityClasses and the policies among parsed manifests (other kinds are not the demo's)."""
    classes, found = [], []
    for document in documents:
        if not isinstance(document, dict):
            continue
        if document.get("kind") == "PriorityClass":
            classes.append(document)
        elif document.get("kind") == KIND:
            found.append(document)
    return classes, found


def policy_row(policy: dict[str, Any]) -> list[str]:
    """NAME, TARGET, MINIMUM, TOLERATION, READY, REASON: what `kubectl get ptp` shows."""
    spec, status = policy.get("spec") or {}, policy.get("status") or {}
    ready: dict[str, Any] = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    return [
        policy["metadata"]["name"],
        str(status.get("target") or "-"),
        str(spec.get(MINIMUM.spec_field, "-")),
        str(spec.get(TOLERATION.spec_field, "-")),
        str(ready.get("status", "-")),
        str(ready.get("reason", "-")),
    ]


def mistake() -> dict[str, Any]:
    """A class with a typo the scheduler would silently ignore: the webhook must refuse it."""
    body = priority_class("demo-mistake", 8000)
    body["metadata"]["annotations"] = {MINIMUM_PREEMPTABLE_PRIORITY: "10k"}
    return body


def render_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, *rows]
    ]
    return "\n".join(lines)
