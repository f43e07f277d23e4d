"""Steering's action under faults and beside another replica, against the real API server: steerers in this
process over the webhook server's own caches, which watch the test cluster. Nobody schedules the preemptors
(their scheduler does not exist); the test nominates them as the scheduler would have, and hands a steerer
the refusal the guard would have made. A policy applied while an action waits wins over the plan; a write
the API server refuses gives the action up without wedging its preemptor; a replica keeps the nomination
another replica's steering made."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.steerer import RefusedVictim, Steerer
from preemption_toleration.steering.adapter.steering_leases import DONE, LEASE_PREFIX, RELEASED
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.webhooks.caches import AdmissionCaches
from tests.integration import steering as bed
from tests.integration.components import install_crd
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, START_SECONDS, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.pods import create_bound, read_pod, until_gone

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
async def caches(api: ApiClient, cluster: LocalCluster) -> AsyncIterator[AdmissionCaches]:
    """The webhook server's caches, in this process, once listed (the policies' CRD installed first)."""
    install_crd(cluster)
    found = AdmissionCaches(api, logging.getLogger("test-caches"), guard=True)
    tasks = found.tasks()
    deadline = time.monotonic() + START_SECONDS
    while not found.synced:
        assert time.monotonic() < deadline, "the caches were not listed in time"
        await asyncio.sleep(0.1)
    yield found
    for task in tasks:
        task.cancel()


def in_process_steerer(api: ApiClient, caches: AdmissionCaches, **options: float) -> Steerer:
    return Steerer(
        api,
        caches.view,
        "on",
        "default",
        unique_name("replica"),
        SteeringMetrics(CollectorRegistry()),
        problems=lambda: caches.problems("all"),
        generation=caches.generation,
        **options,  # type: ignore[arg-type]
    )


async def until_cached(caches: AdmissionCaches, done: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + REACTION_SECONDS
    while not done():
        assert time.monotonic() < deadline, f"the caches never saw {what}"
        await asyncio.sleep(0.05)


def outcome(steerer: Steerer, name: str) -> float:
    return float(steerer.metrics.outcome_counter.labels(name)._value.get())


async def nominated_preemptor(
    api: ApiClient, caches: AdmissionCaches, namespace: str, class_name: str, node: str
) -> dict[str, str]:
    return await nominated_preemptor_named(api, caches, namespace, "pending", class_name, node)


async def test_a_policy_applied_while_an_action_waits_wins_over_its_plan(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    caches: AdmissionCaches,
    steering_classes: dict[str, str],
    kubectl: Kubectl,
) -> None:
    """The plan preempts a plain pod; while the action waits for its turn in the rate limit, the pod's class is
    annotated to tolerate the preemptor. Judged again before its DELETE, the pod is left alone: the action
    stops, its Lease is released."""
    victim_class = unique_name("sturn")
    apply(kubectl, class_manifest(victim_class, 8000))
    lease = ""
    try:
        node = (await make_node(cpu="1", memory="8Gi")).metadata.name
        plain = await create_bound(api, namespace, "plain", victim_class, node, cpu="1")
        preemptor = await nominated_preemptor(api, caches, namespace, steering_classes["high"], node)
        lease = LEASE_PREFIX + preemptor["uid"]
        steerer = in_process_steerer(api, caches, rate=0.2, burst=1)
        steerer.bucket.wait_seconds()  # the burst spent: the next action waits 5 s for its turn
        refusal = RefusedVictim(namespace, "plain", plain["metadata"]["uid"], node, f"{namespace}/pending")
        action = asyncio.create_task(steerer._consider(refusal))
        while steerer.bucket.tokens >= 0:  # planned; now waiting for its turn
            assert not action.done(), action
            await asyncio.sleep(0.01)
        kubectl("annotate", "priorityclass", victim_class, f"{MIN}=10000", f"{TOL}=-1", "--overwrite")
        await until_cached(
            caches, lambda: caches.view().classes[victim_class].toleration is not None, "the class annotated"
        )
        assert not action.done(), "the action did not wait for the class to change: the test proves nothing"
        assert await action is False
        still = await read_pod(api, namespace, "plain")
        assert still is not None and still["metadata"]["uid"] == plain["metadata"]["uid"]
        assert not still["metadata"].get("deletionTimestamp")
        assert not any(c["type"] == "DisruptionTarget" for c in still["status"].get("conditions") or [])
        assert outcome(steerer, "stopped") == 1
        assert await bed.state_of(api, lease) == RELEASED
    finally:
        kubectl("delete", "priorityclass", victim_class, "--ignore-not-found", check=False)
        await _forget_lease(api, lease)


async def test_a_refused_write_gives_the_action_up_and_the_preemptor_is_steered_once_it_may(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    caches: AdmissionCaches,
    steering_classes: dict[str, str],
    kubectl: Kubectl,
) -> None:
    """The victim's mark is refused (403, a ValidatingAdmissionPolicy): the action is given up, its Lease
    released, nothing deleted. Once the policy is gone, the next refusal steers the preemption: the victim
    is deleted, the Lease done (a preemptor left "in progress" would never be steered again)."""
    policy = unique_name("fault")
    bed.fault_policy(kubectl, policy)
    node = (await make_node(cpu="1", memory="8Gi")).metadata.name
    plain = await bed.faulty_pod(api, namespace, "plain", steering_classes["low"], node)
    preemptor = await nominated_preemptor(api, caches, namespace, steering_classes["high"], node)
    steerer = in_process_steerer(api, caches)
    refusal = RefusedVictim(namespace, "plain", plain["metadata"]["uid"], node, f"{namespace}/pending")
    lease = LEASE_PREFIX + preemptor["uid"]
    try:
        assert await steerer._consider(refusal) is False
        assert outcome(steerer, "failed") == 1
        assert await bed.state_of(api, lease) == RELEASED
        assert (await read_pod(api, namespace, "plain")) is not None
        kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy)
        deadline = time.monotonic() + REACTION_SECONDS
        while not await steerer._consider(refusal):  # the scheduler's next attempts, each refused again
            assert time.monotonic() < deadline, "never steered again"
            await asyncio.sleep(0.5)
        await until_gone(api, namespace, "plain")
        await bed.until_state(api, lease, DONE)
        assert outcome(steerer, "steered") == 1
    finally:
        kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy, check=False)
        await _forget_lease(api, lease)


async def test_a_replica_keeps_the_nomination_another_replicas_steering_made(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    caches: AdmissionCaches,
    steering_classes: dict[str, str],
) -> None:
    """Node n (2 CPUs) runs a protected pod of 1 CPU. Replica A steered `second` there (its Lease, acting, names
    n; `second` is nominated there). Then the stock scheduler nominates `first`, of the same priority and
    served first, to n and the guard refuses the protected pod for it. Replica B, judging `first`, would find
    `second`'s nomination one upstream would not have made (`second` fits there only if the protected pod
    goes, once `first` is counted) and clear it, had it only its own memory; it reads A's Lease and keeps it."""
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    protected = await create_bound(api, namespace, "protected", steering_classes["prot"], node, cpu="1")
    first = await bed.held_pending(api, namespace, "first", steering_classes["high"])
    second = await nominated_preemptor_named(api, caches, namespace, "second", steering_classes["high"], node)
    replica_a, replica_b = in_process_steerer(api, caches), in_process_steerer(api, caches)
    cached_second = caches.pod_index.get((namespace, "second"))
    assert cached_second is not None
    lease = LEASE_PREFIX + second["uid"]
    watch = asyncio.create_task(replica_b.replicas.lease_watch.run())
    try:
        assert await replica_a.leases.claim(SteeringPlan(cached_second, node, (), 0))
        await client.CoreV1Api(api).patch_namespaced_pod_status(
            "first", namespace, {"status": {"nominatedNodeName": node}}
        )
        await until_cached(
            caches,
            lambda: (pod := caches.pod_index.get((namespace, "first"))) is not None and pod.nominated_node == node,
            "first's nomination",
        )
        await until_cached(
            caches, lambda: lease in replica_b.replicas.lease_store.items, "replica A's Lease, by replica B"
        )
        refusal = RefusedVictim(namespace, "protected", protected["metadata"]["uid"], node, f"{namespace}/first")
        await replica_b._consider(refusal)
        assert outcome(replica_b, "unblocked") == 0
        kept = await read_pod(api, namespace, "second")
        assert (kept or {}).get("status", {}).get("nominatedNodeName") == node
        assert first["uid"] not in replica_b.record.steered
    finally:
        watch.cancel()
        await _forget_lease(api, lease)


async def nominated_preemptor_named(
    api: ApiClient, caches: AdmissionCaches, namespace: str, name: str, class_name: str, node: str
) -> dict[str, str]:
    preemptor = await bed.held_pending(api, namespace, name, class_name, nominated=node)
    await until_cached(
        caches,
        lambda: (pod := caches.pod_index.get((namespace, name))) is not None and pod.nominated_node == node,
        f"{name}'s nomination",
    )
    return preemptor


async def _forget_lease(api: ApiClient, name: str) -> None:
    if not name:
        return
    try:
        await client.CoordinationV1Api(api).delete_namespaced_lease(name, "default")
    except client.ApiException as error:
        if error.status != 404:
            raise
