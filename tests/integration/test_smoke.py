"""Baseline of the real control plane: what it does before any preemption-toleration component runs."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import eventually, unique_name
from tests.integration.objects import low_and_high
from tests.integration.pods import unpinned_pod

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


async def test_api_server_is_ready_and_has_system_classes(cluster: LocalCluster, kubectl: Kubectl) -> None:
    assert cluster.is_ready()
    names = kubectl("get", "priorityclasses", "-o", "name").stdout.split()
    assert "priorityclass.scheduling.k8s.io/system-cluster-critical" in names
    assert "priorityclass.scheduling.k8s.io/system-node-critical" in names


async def test_priority_class_applied_with_kubectl_is_read_back(kubectl: Kubectl) -> None:
    name = unique_name("smoke-pc")
    manifest = f"""
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: {name}
  annotations:
    preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority: "10000"
value: 8000
description: smoke test
"""
    try:
        kubectl("apply", "-f", "-", input=manifest)
        read = json.loads(kubectl("get", "priorityclass", name, "-o", "json").stdout)
        assert read["value"] == 8000
        assert (
            read["metadata"]["annotations"]["preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority"]
            == "10000"
        )
    finally:
        kubectl("delete", "priorityclass", name, "--ignore-not-found")


async def test_custom_resources_are_stored(api: ApiClient, namespace: str) -> None:
    """Guards the reflect2 swap: a Go >= 1.18 build with v1.0.1 crashes on the first custom resource."""
    extensions = client.ApiextensionsV1Api(api)
    custom = client.CustomObjectsApi(api)
    group, plural = "smoke.example.com", "widgets"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    await extensions.create_custom_resource_definition(crd)
    try:
        await eventually(
            lambda: extensions.read_custom_resource_definition(f"{plural}.{group}"),
            lambda c: any(x.type == "Established" and x.status == "True" for x in c.status.conditions or []),
            what="CRD established",
        )
        body = {
            "apiVersion": f"{group}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b", "c": "d"}, "annotations": {"k": "v"}},
            "spec": {"size": 3, "nested": {"x": "y"}},
        }
        await eventually(
            lambda: _create_ignoring_not_found(custom, group, namespace, plural, body),
            lambda created: created,
            what="custom resource created",
        )
        await custom.patch_namespaced_custom_object(
            group,
            "v1",
            namespace,
            plural,
            "w",
            {"spec": {"size": 4}},
            _content_type="application/merge-patch+json",
        )
        read = await custom.get_namespaced_custom_object(group, "v1", namespace, plural, "w")
        assert read["spec"] == {"size": 4, "nested": {"x": "y"}}
        assert read["metadata"]["labels"] == {"a": "b", "c": "d"}
    finally:
        await extensions.delete_custom_resource_definition(f"{plural}.{group}")


async def _create_ignoring_not_found(
    custom: client.CustomObjectsApi, group: str, namespace: str, plural: str, body: dict[str, Any]
) -> bool:
    """Create the object; False while the new API is not served yet (404)."""
    try:
        await custom.create_namespaced_custom_object(group, "v1", namespace, plural, body)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


async def test_node_agent_runs_bound_pods(api: ApiClient, namespace: str, make_node: MakeNode) -> None:
    core = client.CoreV1Api(api)
    node = await make_node(cpu="1")
    assert not [t for t in node.spec.taints or [] if t.key == "node.kubernetes.io/not-ready"]
    await core.create_namespaced_pod(namespace, unpinned_pod("p", cpu="500m"))
    pod = await eventually(
        lambda: core.read_namespaced_pod("p", namespace),
        lambda p: p.status.phase == "Running",
        what="pod Running",
    )
    assert pod.spec.node_name == node.metadata.name
    assert pod.spec.service_account_name == "default"


async def test_scheduler_preempts_lower_priority_pods(api: ApiClient, namespace: str, make_node: MakeNode) -> None:
    core = client.CoreV1Api(api)
    async with low_and_high(api) as (low, high):
        node = await make_node(cpu="3")
        for i in range(3):
            await core.create_namespaced_pod(namespace, unpinned_pod(f"low-{i}", cpu="1", priority_class=low))

        async def pods() -> list[client.V1Pod]:
            return (await core.list_namespaced_pod(namespace)).items

        await eventually(
            pods,
            lambda items: len(items) == 3 and all(p.status.phase == "Running" for p in items),
            what="three low pods Running",
        )
        await core.create_namespaced_pod(namespace, unpinned_pod("high", cpu="2", priority_class=high))
        final = await eventually(
            pods,
            lambda items: (
                {p.metadata.name for p in items if p.spec.node_name}
                in ({"high", "low-0"}, {"high", "low-1"}, {"high", "low-2"})
                and len(items) == 2
            ),
            what="high bound after preempting two low pods",
        )
        by_name = {p.metadata.name: p for p in final}
        assert by_name["high"].spec.node_name == node.metadata.name
        assert by_name["high"].spec.priority == 2000
