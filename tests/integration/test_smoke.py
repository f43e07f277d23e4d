"""Baseline of the real control plane: what it does before any preemption-toleration component runs.

The release and the controllers a real cluster has (service accounts, disruption budgets, node lifecycle,
namespace lifecycle) are shown here, as a user sees them with kubectl.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.devcluster import LocalCluster
from tests.builders import pod
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, START_SECONDS, eventually, unique_name
from tests.integration.objects import apply, low_and_high, low_pods_running, pods_in

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
        apply(kubectl, manifest)
        read = json.loads(kubectl("get", "priorityclass", name, "-o", "json").stdout)
        assert read["value"] == 8000
        assert (
            read["metadata"]["annotations"]["preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority"]
            == "10000"
        )
    finally:
        kubectl("delete", "priorityclass", name, "--ignore-not-found")


async def test_kubectl_and_the_api_server_are_the_release_built(cluster: LocalCluster, kubectl: Kubectl) -> None:
    versions = json.loads(kubectl("version", "-o", "json").stdout)
    release = f"v{cluster.kubernetes_version}"
    assert versions["clientVersion"]["gitVersion"] == release
    assert versions["serverVersion"]["gitVersion"] == release
    assert versions["serverVersion"]["minor"] == cluster.kubernetes_version.split(".")[1]


async def test_a_new_namespace_gets_its_default_service_account_from_the_controller(
    api: ApiClient, kubectl: Kubectl
) -> None:
    name = unique_name("sa-controller")
    kubectl("create", "namespace", name)
    try:
        accounts = await eventually(
            lambda: client.CoreV1Api(api).list_namespaced_service_account(name),
            lambda found: [a.metadata.name for a in found.items] == ["default"],
            timeout=REACTION_SECONDS,
            what="the default ServiceAccount",
        )
        assert accounts.items[0].metadata.name == "default"
    finally:
        kubectl("delete", "namespace", name, "--wait=false")


async def test_a_deleted_namespace_is_finished_by_the_namespace_controller(api: ApiClient, kubectl: Kubectl) -> None:
    name = unique_name("ns-lifecycle")
    kubectl("create", "namespace", name)
    kubectl("delete", "namespace", name, "--wait=false")

    async def still_there() -> bool:
        try:
            await client.CoreV1Api(api).read_namespace(name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    await eventually(still_there, lambda there: not there, timeout=START_SECONDS, what="the namespace gone")


async def test_the_disruption_controller_fills_a_budget_and_an_eviction_that_breaks_it_gets_429(
    api: ApiClient, namespace: str, make_node: MakeNode, kubectl: Kubectl
) -> None:
    core = client.CoreV1Api(api)
    await make_node(cpu="1")
    guarded = pod("guarded", namespace=None, cpu="100m")
    guarded["metadata"]["labels"] = {"app": "guarded"}
    await core.create_namespaced_pod(namespace, guarded)
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "guarded"}}},
    }
    await client.PolicyV1Api(api).create_namespaced_pod_disruption_budget(namespace, budget)
    status = await eventually(
        lambda: client.PolicyV1Api(api).read_namespaced_pod_disruption_budget("guarded", namespace),
        lambda b: b.status is not None and b.status.current_healthy == 1 and b.status.observed_generation == 1,
        timeout=START_SECONDS,
        what="the budget's status",
    )
    assert status.status.disruptions_allowed == 0
    eviction = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "guarded", "namespace": namespace}}
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_pod_eviction("guarded", namespace, eviction)
    assert refused.value.status == 429
    assert "Cannot evict pod as it would violate the pod's disruption budget" in refused.value.body


async def test_the_eviction_subresource_still_accepts_a_policy_v1beta1_body(
    api: ApiClient, namespace: str, make_node: MakeNode
) -> None:
    """policy/v1beta1 is served no more, but an Eviction body of that version is still accepted: older clients
    send it, and the guard reads it."""
    core = client.CoreV1Api(api)
    await make_node(cpu="1")
    await core.create_namespaced_pod(namespace, pod("old-client", namespace=None, cpu="100m"))
    await eventually(
        lambda: core.read_namespaced_pod("old-client", namespace),
        lambda p: p.status.phase == "Running",
        what="pod Running",
    )
    eviction = {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "old-client"}}
    await core.create_namespaced_pod_eviction("old-client", namespace, eviction)
    await eventually(
        lambda: core.list_namespaced_pod(namespace),
        lambda pods: not pods.items,
        what="the evicted pod gone",
    )


async def test_custom_resources_are_stored(api: ApiClient, namespace: str) -> None:
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


async def test_kwok_runs_bound_pods_on_a_node_applied_with_kubectl(
    api: ApiClient, namespace: str, kubectl: Kubectl
) -> None:
    core = client.CoreV1Api(api)
    name = unique_name("applied-node")
    manifest = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": "10"}},
    }
    apply(kubectl, json.dumps(manifest))
    try:
        node = await eventually(
            lambda: core.read_node(name),
            lambda n: (
                any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or [])
                and not [t for t in n.spec.taints or [] if t.key == "node.kubernetes.io/not-ready"]
            ),
            what="the applied node Ready and untainted",
        )
        # The node's heartbeat, which the node lifecycle controller reads (KWOK holds it under its own id).
        lease = await client.CoordinationV1Api(api).read_namespaced_lease(name, "kube-node-lease")
        assert lease.spec.renew_time is not None and lease.spec.lease_duration_seconds == 40
        await _a_pod_runs_on(api, namespace, node)
    finally:
        kubectl("delete", "node", name, "--wait=false")


async def _a_pod_runs_on(api: ApiClient, namespace: str, node: client.V1Node) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, pod("p", namespace=None, pinned_to=node.metadata.name, cpu="500m"))
    running = await eventually(
        lambda: core.read_namespaced_pod("p", namespace),
        lambda p: p.status.phase == "Running",
        what="pod Running",
    )
    assert running.spec.node_name == node.metadata.name
    assert running.spec.service_account_name == "default"
    true_conditions = {c.type for c in running.status.conditions if c.status == "True"}
    assert {"PodScheduled", "Initialized", "ContainersReady", "Ready"} <= true_conditions
    await core.delete_namespaced_pod("p", namespace)  # graceful: KWOK finishes it as a kubelet would
    await eventually(
        lambda: core.list_namespaced_pod(namespace),
        lambda pods: not pods.items,
        what="the deleted pod gone",
    )


async def test_scheduler_preempts_lower_priority_pods(api: ApiClient, namespace: str, make_node: MakeNode) -> None:
    core = client.CoreV1Api(api)
    async with low_and_high(api) as (low, high):
        node = await make_node(cpu="3")
        await low_pods_running(api, namespace, low, 3)
        await core.create_namespaced_pod(namespace, pod("high", class_name=high, namespace=None, cpu="2"))
        final = await eventually(
            lambda: pods_in(api, namespace),
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
