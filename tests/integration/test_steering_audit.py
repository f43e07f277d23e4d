"""Steering in audit mode (`--steering audit`): the plan is reported on the preemptor, and nothing is written,
not even for a Lease left acting by a replica that stopped in the middle."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.steering.adapter.steering_leases import ACTING, STATE
from tests.integration.components import RunProcess, Server, ptol_run_fixture
from tests.integration.conftest import MakeNode
from tests.integration.pods import create_bound, read_pod
from tests.integration.steering import event_of, held_pending, left_acting, restart, two_full_nodes
from tests.integration.test_extender_victims import pod_names_on

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


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


async def test_audit_acts_on_no_lease_left_acting(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    components: RunProcess,
    steering_classes: dict[str, str],
) -> None:
    """A Lease left acting by a replica that stopped in the middle, for a preemptor nominated to a full node
    whose plain pod a fresh plan would preempt: a server restarted in audit reports what it would do and
    writes nothing, neither the pod's DELETE nor the Lease."""
    node = (await make_node(cpu="1", memory="8Gi")).metadata.name
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    preemptor = await held_pending(api, namespace, "pending", steering_classes["high"], nominated=node)
    lease = await left_acting(api, namespace, preemptor, node, [plain], age=20)
    coordination = client.CoordinationV1Api(api)
    before = (await coordination.read_namespaced_lease(lease, "default")).metadata.resource_version
    try:
        restart(components)
        would = await event_of(api, namespace, "pending", "PreemptionWouldBeSteered")
        assert f"Would preempt {namespace}/plain on node {node}" in would.message
        assert f"finishing the action of Lease {lease}" in would.message
        still = await read_pod(api, namespace, "plain")
        assert still is not None and still["metadata"]["uid"] == plain["metadata"]["uid"]
        assert not still["metadata"].get("deletionTimestamp")
        assert not any(c["type"] == "DisruptionTarget" for c in still["status"].get("conditions") or [])
        after = await coordination.read_namespaced_lease(lease, "default")
        assert after.metadata.resource_version == before and after.metadata.annotations[STATE] == ACTING
    finally:
        await coordination.delete_namespaced_lease(lease, "default")
