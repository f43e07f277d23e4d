"""Steering in audit mode (`--steering audit`): the plan is reported on the preemptor, and nothing is written."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import ptol_run, registered_extender
from tests.integration.conftest import MakeNode
from tests.integration.steering import event_of, steering_classes, two_full_nodes
from tests.integration.test_extender_victims import Server, pod_names_on

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["steering_classes"]  # a fixture


@pytest.fixture(scope="module")
def auditing(cluster: LocalCluster) -> Iterator[Server]:
    with ptol_run(cluster, "--extender", "off", "--steering", "audit") as process:
        yield Server(registered_extender(cluster), process.metrics_base)


async def test_audit_mode_reports_the_plan_and_deletes_nothing(
    api: ApiClient, namespace: str, make_node: MakeNode, auditing: Server, steering_classes: dict[str, str]
) -> None:
    node_a, node_b, preemptor = await two_full_nodes(api, namespace, make_node, steering_classes)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    would = await event_of(api, namespace, "high", "PreemptionWouldBeSteered")
    assert f"Would preempt {namespace}/plain on node {node_b}" in would.message
    assert (await auditing.metric("ptol_steering_total", "outcome")).get("audited", 0) >= 1
    assert await pod_names_on(api, namespace) == {"protected": node_a, "plain": node_b, "high": None}
