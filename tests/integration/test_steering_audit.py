"""Steering in audit mode (`--steering audit`): the plan is reported on the preemptor, and nothing is written."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.integration.components import Server, ptol_run_fixture
from tests.integration.conftest import MakeNode
from tests.integration.steering import event_of, steering_classes, two_full_nodes
from tests.integration.test_extender_victims import pod_names_on

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["steering_classes"]  # a fixture


components = ptol_run_fixture("--extender", "off", "--steering", "audit")


async def test_audit_mode_reports_the_plan_and_deletes_nothing(
    api: ApiClient, namespace: str, make_node: MakeNode, server: Server, steering_classes: dict[str, str]
) -> None:
    node_a, node_b, preemptor = await two_full_nodes(api, namespace, make_node, steering_classes)
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    would = await event_of(api, namespace, "high", "PreemptionWouldBeSteered")
    assert f"Would preempt {namespace}/plain on node {node_b}" in would.message
    assert (await server.metric("ptol_steering_total", "outcome")).get("audited", 0) >= 1
    assert await pod_names_on(api, namespace) == {"protected": node_a, "plain": node_b, "high": None}
