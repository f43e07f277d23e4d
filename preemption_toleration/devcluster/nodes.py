"""Namespaces and Nodes of the local control plane, made as a user makes them and waited for as one waits.

The controllers do the rest, as in any cluster: the controller-manager gives a new namespace its `default`
ServiceAccount and removes the not-ready taint of a Node once it is Ready; KWOK makes every Node Ready and
keeps its Lease renewed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

# Taints that keep pods off a Node until the node lifecycle controller sees it Ready and reachable.
UNREADY_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})
WAIT_SECONDS = 60.0


class NotReadyError(TimeoutError):
    """A namespace or Node did not become usable in time; the message says what was missing."""


async def ensure_namespace(api: ApiClient, name: str, labels: Mapping[str, str] | None = None) -> None:
    """Create the namespace (if missing) and wait for its `default` ServiceAccount (the controller's work):
    until it exists, the API server refuses pods in the namespace."""
    core = client.CoreV1Api(api)
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=dict(labels or {})))
    await _create_or_ignore_conflict(core.create_namespace(body))

    async def has_default_account() -> bool:
        try:
            await core.read_namespaced_service_account("default", name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    await _wait_until(has_default_account, f"namespace {name} has no `default` ServiceAccount")


async def delete_namespace(api: ApiClient, name: str) -> None:
    """Remove every pod at once (grace 0), so their nodes' capacity is free now, then delete the namespace
    (the namespace controller finishes it)."""
    core = client.CoreV1Api(api)
    try:
        await core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        await core.delete_namespace(name)
    except ApiException as error:
        if error.status != 404:
            raise


async def create_node(
    api: ApiClient,
    name: str,
    *,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
    labels: Mapping[str, str] | None = None,
) -> client.V1Node:
    """Create a Node with this capacity (as `kubectl apply` of a Node does) and wait until pods can be
    scheduled on it: Ready (KWOK) and without the not-ready taint (the node lifecycle controller)."""
    core = client.CoreV1Api(api)
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    node_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    body = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels},
        "status": {"capacity": capacity, "allocatable": capacity},  # a Node keeps the status given on create
    }
    try:
        await core.create_node(body)
    except ApiException as error:
        if error.status != 409:
            raise
        await core.patch_node(name, {"metadata": {"labels": node_labels}})
        await core.patch_node_status(name, {"status": {"capacity": capacity, "allocatable": capacity}})
    return await wait_node_schedulable(api, name)


async def wait_node_schedulable(api: ApiClient, name: str, timeout: float = WAIT_SECONDS) -> client.V1Node:
    """The Node once it is Ready and carries none of `UNREADY_TAINTS`."""
    core = client.CoreV1Api(api)
    latest: client.V1Node | None = None

    async def schedulable() -> bool:
        nonlocal latest
        latest = await core.read_node(name)
        return node_is_schedulable(latest)

    await _wait_until(schedulable, f"node {name} is not Ready and untainted", timeout)
    assert latest is not None
    return latest


def node_is_schedulable(node: client.V1Node) -> bool:
    """Ready=True and no taint that the node lifecycle controller keeps on an unready node."""
    conditions = (node.status.conditions or []) if node.status else []
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    return ready and not any(t.key in UNREADY_TAINTS for t in (node.spec.taints or []))


async def delete_node(api: ApiClient, name: str) -> None:
    try:
        await client.CoreV1Api(api).delete_node(name)
    except ApiException as error:
        if error.status != 404:
            raise


async def _wait_until(condition: Callable[[], Awaitable[bool]], what: str, timeout: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        if time.monotonic() > deadline:
            raise NotReadyError(f"{what} after {timeout:.0f} s")
        await asyncio.sleep(0.2)


async def _create_or_ignore_conflict(call: Awaitable[Any]) -> None:
    try:
        await call
    except ApiException as error:
        if error.status != 409:
            raise
