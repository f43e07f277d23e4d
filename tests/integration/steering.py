"""The issue's managed-cluster scenario, for the steering tests: two full nodes of 2 CPUs, a protected pod on
node-a started after node-b's plain pod (the stock scheduler's tie-break then picks node-a), and a preemptor
of 2 CPUs that may go to either node."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.webhooks.steering_leases import ACTING, LABEL, LEASE_PREFIX, NODE, PREEMPTOR, STATE, VICTIMS
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import START_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, class_manifest
from tests.integration.pods import create_bound, pod_body
from tests.integration.test_extender_victims import on_nodes


@pytest.fixture(scope="module")
def steering_classes(kubectl: Kubectl) -> Iterator[dict[str, str]]:
    suffix = unique_name("s").split("-")[-1]
    names = {"high": f"shigh-{suffix}", "low": f"slow-{suffix}", "prot": f"sprot-{suffix}"}
    kubectl("apply", "-f", "-", input=class_manifest(names["high"], 9000))
    kubectl("apply", "-f", "-", input=class_manifest(names["low"], 8000))
    kubectl("apply", "-f", "-", input=class_manifest(names["prot"], 8000, annotations={MIN: "10000", TOL: "-1"}))
    yield names
    for name in names.values():
        kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)


async def two_full_nodes(
    api: ApiClient, namespace: str, make_node: MakeNode, classes: dict[str, str]
) -> tuple[str, str, dict[str, Any]]:
    """(node-a, node-b, the preemptor's body): node-b's plain pod first, node-a's protected pod 3 s later."""
    node_a = (await make_node(cpu="2", memory="8Gi")).metadata.name
    node_b = (await make_node(cpu="2", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "plain", classes["low"], node_b, cpu="2")
    await asyncio.sleep(3)  # the scenario itself: status.startTime 3 s apart, whole seconds
    await create_bound(api, namespace, "protected", classes["prot"], node_a, cpu="2")
    return node_a, node_b, on_nodes(pod_body("high", classes["high"], node_a, cpu="2"), node_a, node_b)


async def events(api: ApiClient, namespace: str, name: str, reason: str) -> list[Any]:
    found = await client.CoreV1Api(api).list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
    return [event for event in found.items if event.reason == reason]


async def event_of(api: ApiClient, namespace: str, name: str, reason: str, timeout: float = START_SECONDS) -> Any:
    found = await eventually(
        lambda: events(api, namespace, name, reason), bool, timeout=timeout, what=f"a {reason} Event on {name}"
    )
    return found[0]


def left_lease(uid: str, preemptor: str, node: str, victims: str, age_seconds: float) -> dict[str, Any]:
    """A steering Lease left "acting" `age_seconds` ago, as a replica that stopped in the middle (or a forger)
    leaves it: for the preemptor of that UID ("namespace/name"), on `node`, with `victims`
    ("namespace/name=uid,...")."""
    renewed = (datetime.now(UTC) - timedelta(seconds=age_seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    annotations = {STATE: ACTING, PREEMPTOR: preemptor, NODE: node, VICTIMS: victims}
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE_PREFIX + uid, "labels": {LABEL: "true"}, "annotations": annotations},
        "spec": {"holderIdentity": "a-stopped-replica", "leaseDurationSeconds": 60, "renewTime": renewed},
    }
