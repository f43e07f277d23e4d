"""The issue's managed-cluster scenario, for the steering tests: two full nodes of 2 CPUs, a protected pod on
node-a started after node-b's plain pod (the stock scheduler's tie-break then picks node-a), and a preemptor
of 2 CPUs that may go to either node."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.steering.adapter.steering_leases import (
    ACTING,
    LABEL,
    LEASE_PREFIX,
    NODE,
    PREEMPTOR,
    STATE,
    VICTIMS,
)
from tests.integration.components import RunProcess
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, START_SECONDS, eventually
from tests.integration.pods import create_bound, pod_body, until_bound
from tests.integration.test_extender_victims import on_nodes, pod_names_on

FAULT_LABEL = "ptol-test-fault"  # pods whose status writes `fault_policy` forbids
HOLD = "example.com/hold"  # a finalizer that keeps a deleted pod terminating until the test releases it


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


async def held_pending(
    api: ApiClient, namespace: str, name: str, class_name: str, nominated: str | None = None, cpu: str = "1"
) -> dict[str, Any]:
    """A pending preemptor nobody schedules until the test says so; nominated to `nominated` as the scheduler
    (or the replica that stopped) nominated it, and then it may go to that node alone."""
    body = pod_body(name, class_name, "no-node", cpu=cpu)
    body["spec"]["schedulerName"] = "no-such-scheduler"
    if nominated is not None:
        body = on_nodes(body, nominated)
    else:
        del body["spec"]["nodeSelector"]
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_pod(namespace, body)
    if nominated is not None:
        await core.patch_namespaced_pod_status(name, namespace, {"status": {"nominatedNodeName": nominated}})
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


async def until_status_writes_refused(api: ApiClient, namespace: str, name: str) -> None:
    """Waits until `fault_policy` refuses status writes of the pod (the API server loads a new policy a moment
    after it is created): a harmless condition is written until it is refused."""
    probe = {"status": {"conditions": [{"type": "example.com/ProbedByTest", "status": "True"}]}}
    core = client.CoreV1Api(api)

    async def refused() -> bool:
        try:
            await core.patch_namespaced_pod_status(name, namespace, probe)
        except ApiException as error:
            if error.status == 403:
                return True
            raise
        return False

    await eventually(refused, bool, timeout=REACTION_SECONDS, what=f"status writes of {name} refused")


async def faulty_pod(api: ApiClient, namespace: str, name: str, class_name: str, node: str) -> dict[str, Any]:
    """A pod of 1 CPU bound to `node` whose status writes `fault_policy` refuses, once they are refused."""
    body = pod_body(name, class_name, node, cpu="1")
    body["metadata"]["labels"] = {FAULT_LABEL: "true"}
    await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    bound = await until_bound(api, namespace, name, node)
    await until_status_writes_refused(api, namespace, name)
    return bound


async def second_of_two_preemptors(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    classes: dict[str, str],
    lease_namespace: str = "default",
    between: Callable[[], Awaitable[None]] | None = None,
) -> dict[str, str]:
    """Node n (4 CPUs) runs plain p1, p2, p3 (started in that order; a finalizer keeps each terminating until
    released) and, started last (the least important of one priority), a protected pod, 1 CPU each. `first`
    (1.5 CPUs, only on n) comes: the stock scheduler's choice includes the protected pod, and steering
    preempts p2 and p3 for it, upstream's choice, and nominates it there. Then `second`, the same: the
    scheduler, which counts `first` there, preempts for `second`, and its choice includes the protected pod
    again. The guard cannot tell the two apart and names `first`, the queue's first; steering must take
    `second`, whose preemption is now the scheduler's, not `first` again (steered: nothing to do for a
    window of 60 s), and preempt p1 for it: both bind, the protected pod stays. Returns the replica that
    acted for each (its Lease's holder, in `lease_namespace`); `between`: awaited once `first` was steered,
    before `second` comes."""
    node = (await make_node(cpu="4", memory="8Gi")).metadata.name
    core = client.CoreV1Api(api)
    plain = ("p1", "p2", "p3")
    for name in plain:
        held = pod_body(name, classes["low"], node, cpu="1")
        held["metadata"]["finalizers"] = [HOLD]
        await core.create_namespaced_pod(namespace, held)
        await until_bound(api, namespace, name, node)
        await asyncio.sleep(1.1)  # status.startTime is in whole seconds: p1 is the most important
    try:
        await create_bound(api, namespace, "protected", classes["prot"], node, cpu="1")
        first = await core.create_namespaced_pod(namespace, pod_body("first", classes["high"], node, cpu="1500m"))

        async def terminating() -> set[str]:
            pods = (await core.list_namespaced_pod(namespace)).items
            return {pod.metadata.name for pod in pods if pod.metadata.deletion_timestamp}

        await eventually(terminating, lambda names: names == {"p2", "p3"}, timeout=REACTION_SECONDS, what="p2, p3")
        if between is not None:
            await between()
        created = await core.create_namespaced_pod(namespace, pod_body("second", classes["high"], node, cpu="1500m"))
        # steered for `second` itself: its Lease names it, the node and p1 (p2 and p3 count, terminating)
        leases = client.CoordinationV1Api(api)
        lease = await eventually(
            lambda: lease_or_none(leases, LEASE_PREFIX + created.metadata.uid, lease_namespace),
            lambda found: found is not None,
            timeout=40,  # within steering's window of 60 s, in which `first` is not planned again
            what="second's steering Lease",
        )
        annotations = lease.metadata.annotations
        assert (annotations[PREEMPTOR], annotations[NODE]) == (f"{namespace}/second", node)
        assert annotations[VICTIMS].split("=")[0] == f"{namespace}/p1"
    finally:
        for name in plain:
            await core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    await until_bound(api, namespace, "first", node)
    await until_bound(api, namespace, "second", node)
    assert await pod_names_on(api, namespace) == {"protected": node, "first": node, "second": node}
    return {
        name: (
            await leases.read_namespaced_lease(LEASE_PREFIX + found.metadata.uid, lease_namespace)
        ).spec.holder_identity
        for name, found in (("first", first), ("second", created))
    }


async def lease_or_none(leases: client.CoordinationV1Api, name: str, namespace: str = "default") -> Any:
    try:
        return await leases.read_namespaced_lease(name, namespace)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
