"""Builders of Kubernetes JSON for unit tests (pods and PriorityClasses as the API returns them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS


def rfc3339(moment: datetime) -> str:
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{moment.microsecond:06d}Z" if moment.microsecond else "Z")


def priority_class(
    name: str,
    value: int,
    minimum: str | None = None,
    toleration: str | None = None,
    **annotations: str,
) -> dict[str, Any]:
    notes = dict(annotations)
    if minimum is not None:
        notes[MINIMUM_PREEMPTABLE_PRIORITY] = minimum
    if toleration is not None:
        notes[TOLERATION_SECONDS] = toleration
    metadata: dict[str, Any] = {"name": name}
    if notes:
        metadata["annotations"] = notes
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": metadata, "value": value}


def pod(
    name: str,
    priority: int | None = None,
    class_name: str | None = None,
    scheduled_at: datetime | None = None,
    preemption_policy: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "pause"}]}
    if priority is not None:
        spec["priority"] = priority
    if class_name is not None:
        spec["priorityClassName"] = class_name
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    status: dict[str, Any] = {"phase": "Pending"}
    if scheduled_at is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(scheduled_at)}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
        "status": status,
    }
