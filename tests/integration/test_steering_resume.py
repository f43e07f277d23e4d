"""Steering's Leases are input, not truth (`ptol run --extender off --steering on`): after a restart, a Lease
left "acting" is finished only as far as the cluster bears it out. A forged Lease deletes nothing, a
two-day-old one is not carried out, and an API error while one is finished ends neither the others nor
steering itself."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.webhooks.steering_leases import ACTING, DONE, REFUSED, STATE
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, eventually, unique_name
from tests.integration.pods import create_bound, pod_body, read_pod, until_bound, until_gone
from tests.integration.steering import left_lease, steering_classes, two_full_nodes

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]
__all__ = ["steering_classes"]  # a fixture

components = ptol_run_fixture("--extender", "off", "--steering", "on")
FAULT_LABEL = "ptol-test-fault"


async def held_pending(api: ApiClient, namespace: str, name: str, class_name: str) -> dict[str, Any]:
    """A pending preemptor nobody schedules until the test says so."""
    body = pod_body(name, class_name, "no-node", cpu="1")
    del body["spec"]["nodeSelector"]
    body["spec"]["schedulerName"] = "no-such-scheduler"
    created = await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    return {"name": name, "uid": created.metadata.uid}


async def left_acting(
    api: ApiClient, namespace: str, preemptor: dict[str, Any], node: str, victims: list[dict[str, Any]], age: float
) -> str:
    """A Lease in the steering namespace, as a replica that stopped in the middle (or a forger) leaves it."""
    listed = ",".join(f"{namespace}/{victim['metadata']['name']}={victim['metadata']['uid']}" for victim in victims)
    body = left_lease(preemptor["uid"], f"{namespace}/{preemptor['name']}", node, listed, age)
    await client.CoordinationV1Api(api).create_namespaced_lease("default", body)
    return str(body["metadata"]["name"])


async def state_of(api: ApiClient, lease: str) -> str | None:
    found = await client.CoordinationV1Api(api).read_namespaced_lease(lease, "default")
    return (found.metadata.annotations or {}).get(STATE)


async def until_state(api: ApiClient, lease: str, state: str) -> None:
    await eventually(lambda: state_of(api, lease), lambda found: found == state, timeout=REACTION_SECONDS, what=state)


def restart(process: RunProcess) -> None:
    process.stop()
    process.start()


async def test_a_forged_lease_deletes_nothing(
    api: ApiClient, namespace: str, make_node: MakeNode, components: RunProcess, steering_classes: dict[str, str]
) -> None:
    """Anyone who may write Leases in the steering namespace writes one naming a protected pod as the victim of
    a pending pod: the restarted server refuses it, since the pod tolerates that preemptor."""
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    protected = await create_bound(api, namespace, "protected", steering_classes["prot"], node, cpu="1")
    preemptor = await held_pending(api, namespace, "pending", steering_classes["high"])
    lease = await left_acting(api, namespace, preemptor, node, [protected], age=20)
    try:
        restart(components)
        await until_state(api, lease, REFUSED)
        still = await read_pod(api, namespace, "protected")
        assert still is not None and still["metadata"]["uid"] == protected["metadata"]["uid"]
        assert not still["metadata"].get("deletionTimestamp")
        assert not ((await read_pod(api, namespace, "pending")) or {}).get("status", {}).get("nominatedNodeName")
        assert "tolerates the preemptor" in components.log()
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")


async def test_a_two_day_old_lease_is_not_carried_out(
    api: ApiClient, namespace: str, make_node: MakeNode, components: RunProcess, steering_classes: dict[str, str]
) -> None:
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    preemptor = await held_pending(api, namespace, "pending", steering_classes["high"])
    lease = await left_acting(api, namespace, preemptor, node, [plain], age=2 * 86400)
    try:
        restart(components)
        await until_state(api, lease, REFUSED)
        still = await read_pod(api, namespace, "plain")
        assert still is not None and not still["metadata"].get("deletionTimestamp")
        assert "longer ago than its window of 60 s" in components.log()
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")


def fault_policy(kubectl: Kubectl, name: str) -> None:
    """A ValidatingAdmissionPolicy that forbids status writes of pods labelled FAULT_LABEL (a 403, as a
    missing right or another admission controller gives it)."""
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/status"]}
                ]
            },
            "validations": [
                {
                    "expression": f"!has(object.metadata.labels) || !('{FAULT_LABEL}' in object.metadata.labels)",
                    "reason": "Forbidden",
                    "message": "status writes of this pod are forbidden by the test",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [policy, binding]}))


async def test_an_api_error_while_resuming_ends_neither_the_other_leases_nor_steering(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    components: RunProcess,
    steering_classes: dict[str, str],
    kubectl: Kubectl,
) -> None:
    """Two Leases left acting: the first one's victim cannot be marked (the API server answers 403), the
    second one is finished all the same, and steering then makes a preemption as usual."""
    policy = unique_name("fault")
    fault_policy(kubectl, policy)
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    faulty_body = pod_body("faulty", steering_classes["low"], node, cpu="1")
    faulty_body["metadata"]["labels"] = {FAULT_LABEL: "true"}
    await client.CoreV1Api(api).create_namespaced_pod(namespace, faulty_body)
    faulty = await until_bound(api, namespace, "faulty", node)
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    first = await held_pending(api, namespace, "first", steering_classes["high"])
    second = await held_pending(api, namespace, "second", steering_classes["high"])
    leases = [
        await left_acting(api, namespace, first, node, [faulty], age=20),
        await left_acting(api, namespace, second, node, [plain], age=20),
    ]
    try:
        restart(components)
        await until_gone(api, namespace, "plain")
        await until_state(api, leases[1], DONE)
        assert await state_of(api, leases[0]) == ACTING  # left for the sweep; its window ends
        assert (await read_pod(api, namespace, "faulty")) is not None
        # the Leases are taken in name order (their preemptors' UIDs): the faulty one may come second

        async def log() -> str:
            return components.log()

        await eventually(
            log,
            lambda text: "could not finish an action left in the middle" in text,
            timeout=REACTION_SECONDS,
            what="the failed resume logged",
        )
        node_a, node_b, preemptor = await two_full_nodes(api, namespace, make_node, steering_classes)
        await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
        await until_bound(api, namespace, "high", node_b)
    finally:
        for lease in leases:
            await client.CoordinationV1Api(api).delete_namespaced_lease(lease, "default")
        kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy, check=False)
