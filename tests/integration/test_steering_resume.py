"""Steering's Leases are input, not truth (`ptol run --extender off --steering on`): after a restart, a Lease
left "acting" only says which preemptor a replica was acting for, and a fresh plan from the caches chooses
the victims. A forged Lease deletes nothing, neither a protected pod nor pods the preemptor does not need or
cannot use, a two-day-old one is not carried out, and an API error while one is finished ends neither the
others nor steering itself."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.steering.adapter.steering_leases import DONE, REFUSED, RELEASED
from tests.integration import steering as bed
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import unique_name
from tests.integration.pods import create_bound, pod_body, read_pod, until_bound, until_gone
from tests.integration.test_extender_victims import on_nodes

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

components = ptol_run_fixture("--extender", "off", "--steering", "on")


async def test_a_forged_lease_deletes_nothing(
    api: ApiClient, namespace: str, make_node: MakeNode, components: RunProcess, steering_classes: dict[str, str]
) -> None:
    """Anyone who may write Leases in the steering namespace writes one naming a protected pod as the victim of
    a pending pod: the restarted server refuses it (the pod was never nominated there, and no plan would
    preempt a pod that tolerates it)."""
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    protected = await create_bound(api, namespace, "protected", steering_classes["prot"], node, cpu="1")
    preemptor = await bed.held_pending(api, namespace, "pending", steering_classes["high"])
    lease = await bed.left_acting(api, namespace, preemptor, node, [protected], age=20)
    try:
        bed.restart(components)
        await bed.until_state(api, lease, REFUSED)
        still = await read_pod(api, namespace, "protected")
        assert still is not None and still["metadata"]["uid"] == protected["metadata"]["uid"]
        assert not still["metadata"].get("deletionTimestamp")
        assert not ((await read_pod(api, namespace, "pending")) or {}).get("status", {}).get("nominatedNodeName")
        assert "an action left in the middle is not finished" in components.log()
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")


async def test_a_lease_naming_pods_a_fresh_plan_would_not_preempt_deletes_none_of_them(
    api: ApiClient, namespace: str, make_node: MakeNode, components: RunProcess, steering_classes: dict[str, str]
) -> None:
    """A Lease renewed 25 s ago names three plain pods of a node the preemptor may not use (its node affinity
    keeps it to another node, where a plain pod of its size runs), and the preemptor is nominated to the
    Lease's node. A fresh plan preempts on the preemptor's own node, not on the Lease's: the Lease is refused
    and none of the three is deleted, nor the pod of the preemptor's node."""
    excluded = (await make_node(cpu="3", memory="8Gi")).metadata.name
    usable = (await make_node(cpu="1", memory="8Gi")).metadata.name
    named = [
        await create_bound(api, namespace, f"plain-{n}", steering_classes["low"], excluded, cpu="1") for n in range(3)
    ]
    other = await create_bound(api, namespace, "other", steering_classes["low"], usable, cpu="1")
    body = on_nodes(pod_body("pending", steering_classes["high"], usable, cpu="1"), usable)
    body["spec"]["schedulerName"] = "no-such-scheduler"
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_pod(namespace, body)
    await core.patch_namespaced_pod_status("pending", namespace, {"status": {"nominatedNodeName": excluded}})
    preemptor = {"name": "pending", "uid": created.metadata.uid}
    lease = await bed.left_acting(api, namespace, preemptor, excluded, named, age=25)
    try:
        bed.restart(components)
        await bed.until_state(api, lease, REFUSED)
        for pod in [*named, other]:
            still = await read_pod(api, namespace, pod["metadata"]["name"])
            assert still is not None and still["metadata"]["uid"] == pod["metadata"]["uid"]
            assert not still["metadata"].get("deletionTimestamp"), pod["metadata"]["name"]
        assert f"a fresh plan preempts on {usable}, not on its node {excluded}" in components.log()
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")


async def test_a_two_day_old_lease_is_not_carried_out(
    api: ApiClient, namespace: str, make_node: MakeNode, components: RunProcess, steering_classes: dict[str, str]
) -> None:
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    preemptor = await bed.held_pending(api, namespace, "pending", steering_classes["high"])
    lease = await bed.left_acting(api, namespace, preemptor, node, [plain], age=2 * 86400)
    try:
        bed.restart(components)
        await bed.until_state(api, lease, REFUSED)
        still = await read_pod(api, namespace, "plain")
        assert still is not None and not still["metadata"].get("deletionTimestamp")
        assert "longer ago than its window of 60 s" in components.log()
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")


async def test_an_api_error_while_resuming_ends_neither_the_other_leases_nor_steering(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    components: RunProcess,
    steering_classes: dict[str, str],
    kubectl: Kubectl,
) -> None:
    """Two Leases left acting, each for a preemptor nominated to its own full node: the first one's victim
    cannot be marked (the API server answers 403), so that action is given up and its Lease released; the
    second one is finished all the same, and steering then makes a preemption as usual."""
    policy = unique_name("fault")
    bed.fault_policy(kubectl, policy)
    node = (await make_node(cpu="1", memory="8Gi")).metadata.name
    other_node = (await make_node(cpu="1", memory="8Gi")).metadata.name
    faulty = await bed.faulty_pod(api, namespace, "faulty", steering_classes["low"], node)
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], other_node, cpu="1")
    first = await bed.held_pending(api, namespace, "first", steering_classes["high"], nominated=node)
    second = await bed.held_pending(api, namespace, "second", steering_classes["high"], nominated=other_node)
    leases = [
        await bed.left_acting(api, namespace, first, node, [faulty], age=20),
        await bed.left_acting(api, namespace, second, other_node, [plain], age=20),
    ]
    try:
        bed.restart(components)
        await until_gone(api, namespace, "plain")
        await bed.until_state(api, leases[1], DONE)
        # the Leases are taken in name order (their preemptors' UIDs): the faulty one may come second
        await bed.until_state(api, leases[0], RELEASED)  # any replica may act for it again at once
        assert (await read_pod(api, namespace, "faulty")) is not None
        assert "steering: an action was given up" in components.log()
        node_a, node_b, preemptor = await bed.two_full_nodes(api, namespace, make_node, steering_classes)
        await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
        await until_bound(api, namespace, "high", node_b)
    finally:
        for lease in leases:
            await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")
        kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy, check=False)
