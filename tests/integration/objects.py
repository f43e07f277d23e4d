"""Building and reading the objects the integration tests work with."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from tests.builders import pod, policy, priority_class
from tests.integration.helpers import REACTION_SECONDS, eventually, unique_name

MIN = "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority"
TOL = "preemption-toleration.scheduling.x-k8s.io/toleration-seconds"


T = TypeVar("T")


def class_manifest(
    name: str,
    value: int = 8000,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    description: str = "test class",
) -> str:
    """A PriorityClass as `kubectl apply -f -` reads it."""
    return json.dumps(priority_class(name, value, labels=labels or {}, description=description, **(annotations or {})))


def policy_manifest(name: str, spec: dict[str, Any]) -> str:
    """A policy as `kubectl apply -f -` reads it."""
    return json.dumps(policy(name, spec))


def apply(kubectl: Callable[..., T], manifest: str) -> T:
    """`kubectl apply -f -` of `manifest`, as a user applies one; a refusal fails the test with kubectl's message."""
    return kubectl("apply", "-f", "-", input=manifest)


def apply_class_and_policy(kubectl: Callable[..., object], pc: str, ptp: str, *, toleration_seconds: int = -1) -> None:
    """`kubectl apply` of class `pc`, then of policy `ptp` for it: not preempted below priority 10000 (for
    `toleration_seconds` of running time; by default for ever)."""
    spec = {"priorityClassName": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": toleration_seconds}
    apply(kubectl, class_manifest(pc))
    apply(kubectl, policy_manifest(ptp, spec))


async def read_class(api: ApiClient, name: str) -> dict[str, Any] | None:
    try:
        return api.sanitize_for_serialization(await client.SchedulingV1Api(api).read_priority_class(name))
    except ApiException as error:
        if error.status == 404:
            return None
        raise


async def read_policy(api: ApiClient, name: str) -> dict[str, Any] | None:
    try:
        return await client.CustomObjectsApi(api).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def ours(pc: dict[str, Any] | None) -> dict[str, str]:
    annotations = ((pc or {}).get("metadata") or {}).get("annotations") or {}
    return {key: value for key, value in annotations.items() if key in (MIN, TOL)}


def ready(policy: dict[str, Any] | None) -> tuple[str | None, str | None, str]:
    for condition in ((policy or {}).get("status") or {}).get("conditions") or []:
        if condition["type"] == "Ready":
            return condition["status"], condition.get("reason"), condition.get("message", "")
    return None, None, ""


def described_events(kubectl: Callable[..., Any], kind: str, name: str) -> list[tuple[str, str, str, str]]:
    """The Events `kubectl describe KIND NAME` lists: (type, reason, from, message) per row."""
    lines = kubectl("describe", kind, name).stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("Events:")), len(lines))
    if lines[start:] and lines[start].split() == ["Events:", "<none>"]:
        return []
    rows = [line.split(None, 4) for line in lines[start + 3 :] if line.startswith("  ")]
    return [(row[0], row[1], row[3], row[4]) for row in rows if len(row) == 5]


async def wait_annotations(
    api: ApiClient, name: str, expected: dict[str, str], timeout: float = REACTION_SECONDS, what: str = ""
) -> dict[str, Any]:
    """Class `name` once its annotations of ours are `expected` (`what`: whose writes they are)."""
    return await eventually(
        lambda: read_class(api, name),
        lambda pc: ours(pc) == expected,
        timeout=timeout,
        what=what or f"annotations {expected} on {name}",
    )


async def wait_ready(api: ApiClient, name: str, status: str, reason: str) -> dict[str, Any]:
    return await eventually(
        lambda: read_policy(api, name),
        lambda p: ready(p)[:2] == (status, reason),
        timeout=REACTION_SECONDS,
        what=f"policy {name} Ready={status} {reason}",
    )


@asynccontextmanager
async def low_and_high(api: ApiClient) -> AsyncIterator[tuple[str, str]]:
    """Two plain classes, low (1000) and high (2000), with unique names; deleted after."""
    scheduling = client.SchedulingV1Api(api)
    low, high = unique_name("low"), unique_name("high")
    for name, value in ((low, 1000), (high, 2000)):
        await scheduling.create_priority_class(priority_class(name, value))
    try:
        yield low, high
    finally:
        for name in (low, high):
            await scheduling.delete_priority_class(name)


async def pods_in(api: ApiClient, namespace: str) -> list[Any]:
    return list((await client.CoreV1Api(api).list_namespaced_pod(namespace)).items)


async def low_pods_running(api: ApiClient, namespace: str, low: str, count: int) -> list[Any]:
    """`count` pods of class `low` asking one CPU each ("low-0", ...), once all run."""
    for i in range(count):
        await client.CoreV1Api(api).create_namespaced_pod(
            namespace, pod(f"low-{i}", class_name=low, namespace=None, cpu="1")
        )
    return await eventually(
        lambda: pods_in(api, namespace),
        lambda items: len(items) == count and all(p.status.phase == "Running" for p in items),
        what=f"{count} low pods Running",
    )
