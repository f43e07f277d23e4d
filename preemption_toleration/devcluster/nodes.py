"""What a control plane without controller-manager and kubelets lacks: service accounts and Nodes.

Nodes created here carry `SIMULATED_NODE_LABEL`; the node agent plays the kubelet for the pods bound to them.
"""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

SIMULATED_NODE_LABEL = "preemption-toleration.dev/simulated-node"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


async def ensure_namespace(api: ApiClient, name: str, labels: Mapping[str, str] | None = None) -> None:
    """Create the namespace (if missing) and its `default` ServiceAccount."""
    core = client.CoreV1Api(api)
    body = client.V1Namespace(metadata=client.V1ObjectMeta(name=name, labels=dict(labels or {})))
    await _create_or_ignore_conflict(core.create_namespace(body))
    await ensure_default_service_account(api, name)


async def ensure_default_service_account(api: ApiClient, namespace: str) -> None:
    """Create `default` in `namespace`, which the ServiceAccount admission plugin requires of pods.

    Without the token controller no token Secret ever appears, and 1.20's admission plugin refuses pods that
    would mount one: so the account opts out of token automounting.
    """
    body = client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="default"), automount_service_account_token=False)
    await _create_or_ignore_conflict(client.CoreV1Api(api).create_namespaced_service_account(namespace, body))


async def delete_namespace(api: ApiClient, name: str) -> None:
    """Remove every pod at once (grace 0), then delete the namespace.

    The namespace itself stays Terminating (no namespace controller), which is harmless: its pods, which
    would hold node capacity, are gone.
    """
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
    """Create a Ready Node with this capacity and without the not-ready taint, or update it if it exists."""
    core = client.CoreV1Api(api)
    capacity = {"cpu": cpu, "memory": memory, "pods": pods}
    now = datetime.datetime.now(datetime.UTC)
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        SIMULATED_NODE_LABEL: "true",
        **(labels or {}),
    }
    status = {
        "capacity": capacity,
        "allocatable": capacity,
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "simulated by the preemption-toleration node agent",
                "lastHeartbeatTime": now.isoformat(),
                "lastTransitionTime": now.isoformat(),
            }
        ],
    }
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": node_labels}}
    try:
        await core.create_node({**body, "status": status})  # Nodes keep the status given on create
    except ApiException as error:
        if error.status != 409:
            raise
        await core.patch_node(name, {"metadata": {"labels": node_labels}})
        await core.patch_node_status(name, {"status": status})
    return await remove_not_ready_taint(api, name)


async def remove_not_ready_taint(api: ApiClient, name: str) -> client.V1Node:
    """Drop the taint the TaintNodesByCondition admission plugin puts on every new Node."""
    core = client.CoreV1Api(api)
    node = await core.read_node(name)
    taints = [t for t in (node.spec.taints or []) if t.key != NOT_READY_TAINT]
    if len(taints) == len(node.spec.taints or []):
        return node
    patch = {
        "metadata": {"resourceVersion": node.metadata.resource_version},
        "spec": {"taints": [api.sanitize_for_serialization(t) for t in taints] or None},
    }
    return await core.patch_node(name, patch, _content_type="application/merge-patch+json")


async def delete_node(api: ApiClient, name: str) -> None:
    try:
        await client.CoreV1Api(api).delete_node(name)
    except ApiException as error:
        if error.status != 404:
            raise


async def _create_or_ignore_conflict(call: Awaitable[Any]) -> None:
    try:
        await call
    except ApiException as error:
        if error.status != 409:
            raise
