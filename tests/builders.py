"""One builder per kind of object the tests and benchmarks make: a pod, a PriorityClass, a policy and a Node,
as the JSON the API server takes and returns. Pure: no client, no I/O.

Benchmarks run as scripts (`python benchmarks/X.py`) and import this module through `benchmarks/_common.py`,
which puts the repository root on their path.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.api.policy import GROUP, VERSION
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY, TOLERATION_SECONDS

HOSTNAME_LABEL = "kubernetes.io/hostname"


def rfc3339(moment: datetime) -> str:
    """`moment` in UTC as the API server writes times (with microseconds only when it has some)."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return text + (f".{moment.microsecond:06d}Z" if moment.microsecond else "Z")


def priority_class(
    name: str,
    value: int,
    minimum: str | None = None,
    toleration: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    description: str | None = None,
    **annotations: str,
) -> dict[str, Any]:
    """A PriorityClass; `minimum` and `toleration` are our two annotations, `annotations` any others."""
    notes = dict(annotations)
    if minimum is not None:
        notes[MINIMUM_PREEMPTABLE_PRIORITY] = minimum
    if toleration is not None:
        notes[TOLERATION_SECONDS] = toleration
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if notes:
        metadata["annotations"] = notes
    body: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": metadata}
    body["value"] = value
    if description is not None:
        body["description"] = description
    return body


def policy(name: str, spec: Mapping[str, Any], **metadata: Any) -> dict[str, Any]:
    """A PreemptionTolerationPolicy with this spec; `metadata` adds fields such as `creationTimestamp`."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": name, **metadata},
        "spec": dict(spec),
    }


def pod(
    name: str,
    priority: int | None = None,
    class_name: str | None = None,
    scheduled_at: datetime | None = None,
    preemption_policy: str | None = None,
    *,
    namespace: str | None = "default",
    pinned_to: str | None = None,
    cpu: str | None = None,
    grace_seconds: int | None = None,
) -> dict[str, Any]:
    """A pending pod of one container, as the API server returns it (`namespace=None` for a pod to create in
    a namespace of the caller's). `pinned_to` keeps it to that node (a nodeSelector on its hostname), `cpu`
    is its request, `grace_seconds` its termination grace period."""
    container: dict[str, Any] = {"name": "c", "image": "pause"}  # never pulled: KWOK only pretends to run it
    if cpu is not None:
        container["resources"] = {"requests": {"cpu": cpu}}
    spec: dict[str, Any] = {"containers": [container]}
    if priority is not None:
        spec["priority"] = priority
    if class_name is not None:
        spec["priorityClassName"] = class_name
    if preemption_policy is not None:
        spec["preemptionPolicy"] = preemption_policy
    if pinned_to is not None:
        spec["nodeSelector"] = {HOSTNAME_LABEL: pinned_to}
    if grace_seconds is not None:
        spec["terminationGracePeriodSeconds"] = grace_seconds
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    status: dict[str, Any] = {"phase": "Pending"}
    if scheduled_at is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": rfc3339(scheduled_at)}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
    taints: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A Node with this capacity (allocatable alike) and the labels the kubelet gives it."""
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {HOSTNAME_LABEL: name, "kubernetes.io/os": "linux", **(labels or {})}},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": capacity, "allocatable": capacity},
    }
    return body
