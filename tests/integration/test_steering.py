"""Steering, live (`ptol run --extender off --steering on`: the guard alone, as on a managed cluster whose
scheduler calls no extender). The stock scheduler picks the protected pod's node; the guard refuses; steering
preempts the plain pod upstream's plugin would have chosen and the scheduler binds the preemptor there."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from preemption_toleration.devcluster import LocalCluster
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.manifests.webhook_configurations import GUARD_WEBHOOK
from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.records.priority_class import class_view
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.steerer import Steerer
from preemption_toleration.steering.adapter.steering_leases import (
    ACTING,
    DONE,
    LABEL,
    LEASE_PREFIX,
    RELEASED,
    STATE,
    SWEEP_AFTER_SECONDS,
    SteeringLeases,
)
from preemption_toleration.steering.plan import SteeringPlan
from tests.integration import steering as bed
from tests.integration.components import RunProcess, Server, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import REACTION_SECONDS, eventually, unique_name
from tests.integration.pods import create_bound, pod_body, read_pod, until_bound, until_gone
from tests.integration.test_extender_victims import on_nodes, pod_names_on
from tests.metrics import total

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


components = ptol_run_fixture("--extender", "off", "--steering", "on")


async def test_the_preemption_upstream_would_make_happens(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
) -> None:
    node_a, node_b, preemptor = await bed.two_full_nodes(api, namespace, make_node, steering_classes)
    created = time.monotonic()
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    await until_bound(api, namespace, "high", node_b)
    print(f"bound to node-b {time.monotonic() - created:.1f} s after its creation")
    assert await pod_names_on(api, namespace) == {"protected": node_a, "high": node_b}
    steered = await bed.event_of(api, namespace, "high", "PreemptionSteered")
    assert f"{namespace}/plain on node {node_b}" in steered.message
    preempted = await bed.event_of(api, namespace, "plain", "Preempted")
    assert preempted.related.name == "high" and node_b in preempted.message
    assert (await server.metric("ptol_steering_total", "outcome")).get("steered", 0) >= 1


async def test_a_preemptor_with_constraints_the_project_does_not_judge_is_not_steered(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
) -> None:
    node_a, node_b, preemptor = await bed.two_full_nodes(api, namespace, make_node, steering_classes)
    preemptor["spec"]["affinity"]["podAntiAffinity"] = {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "none"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    }
    await client.CoreV1Api(api).create_namespaced_pod(namespace, preemptor)
    declined = await bed.event_of(api, namespace, "high", "PreemptionNotSteered")
    assert "pod anti-affinity" in declined.message
    assert (await server.metric("ptol_steering_total", "outcome")).get("unjudged", 0) >= 1
    assert await pod_names_on(api, namespace) == {"protected": node_a, "plain": node_b, "high": None}
    assert await bed.events(api, namespace, "high", "PreemptionSteered") == []


async def test_a_restart_in_the_middle_finishes_the_action_and_deletes_no_other_pod(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    components: RunProcess,
    steering_classes: dict[str, str],
    cluster: LocalCluster,
) -> None:
    """A replica claimed a preemptor, nominated it and stopped in the middle: its Lease says "acting", with two
    victims. One of them was deleted already and a new pod of the same name runs now (started before the other
    victim, so a fresh plan preempts that one). After a restart, the server deletes the other victim, not the
    new pod, and the preemptor stays nominated there."""
    process = components
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    again = await create_bound(api, namespace, "again", steering_classes["low"], node, cpu="1")
    await asyncio.sleep(1.1)  # status.startTime is in whole seconds: plain is the least important
    plain = await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="1")
    created = await bed.held_pending(api, namespace, "pending", steering_classes["high"], nominated=node)
    preemptor = await client.CoreV1Api(api).read_namespaced_pod("pending", namespace)
    assert preemptor.metadata.uid == created["uid"]
    uid = preemptor.metadata.uid
    # left 20 s ago: past RESUME_AFTER_SECONDS (15 s), within the Lease's window (60 s)
    victims = f"{namespace}/plain={plain['metadata']['uid']},{namespace}/again=uid-of-a-deleted-pod"
    lease = bed.left_lease(uid, f"{namespace}/pending", node, victims, 20)
    coordination = client.CoordinationV1Api(api)
    await coordination.create_namespaced_lease("default", lease)
    try:
        process.stop()
        process.start()
        await until_gone(api, namespace, "plain")
        pending = await eventually(
            lambda: read_pod(api, namespace, "pending"),
            lambda pod: (pod or {}).get("status", {}).get("nominatedNodeName") == node,
            timeout=REACTION_SECONDS,
            what="pending nominated",
        )
        assert pending["metadata"]["uid"] == uid
        left_alone = await read_pod(api, namespace, "again")
        assert left_alone is not None and left_alone["metadata"]["uid"] == again["metadata"]["uid"]
        # the mark too is written under the victim's UID: the pod of the same name now gets none
        conditions = left_alone["status"].get("conditions") or []
        assert not any(condition["type"] == "DisruptionTarget" for condition in conditions)
        finished = await coordination.read_namespaced_lease(LEASE_PREFIX + uid, "default")
        assert finished.metadata.annotations[STATE] == "done"
    finally:
        await coordination.delete_namespaced_lease(LEASE_PREFIX + uid, "default")


async def test_two_replicas_never_act_twice_for_one_preemptor(api: ApiClient) -> None:
    """Two replicas' steerers claim the same preemptor at the same moment against the real API server: one
    Lease is created, the other replica's claim fails; a later claim within the window fails too."""
    preemptor = slim_pod(
        {"metadata": {"namespace": "team", "name": "p", "uid": f"claim-{unique_name('u')}"}, "spec": {}}, Shared()
    )
    plan = SteeringPlan(preemptor, "node-x", (), 0)

    def replica(holder: str) -> SteeringLeases:
        return SteeringLeases(api, "default", holder, 60)

    claims = await asyncio.gather(*(replica(f"replica-{n}").claim(plan) for n in range(2)))
    try:
        assert sorted(claims) == [False, True]
        assert await replica("replica-2").claim(plan) is False
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(LEASE_PREFIX + preemptor.uid, "default")


def plan_for(uid_hint: str) -> SteeringPlan:
    preemptor = slim_pod(
        {"metadata": {"namespace": "team", "name": "p", "uid": f"{uid_hint}-{unique_name('u')}"}, "spec": {}}, Shared()
    )
    return SteeringPlan(preemptor, "node-x", (), 0)


async def test_a_claim_is_dated_when_it_is_written_not_when_its_plan_was_made(api: ApiClient) -> None:
    """A plan takes seconds at 5,000 nodes; a claim dated from its start would read as left (15 s) to a replica
    starting meanwhile. The Lease's times are those of its write."""
    plan = plan_for("dated")
    before = datetime.now(UTC)
    assert await SteeringLeases(api, "default", "r", 60).claim(plan)
    try:
        lease = await client.CoordinationV1Api(api).read_namespaced_lease(LEASE_PREFIX + plan.preemptor.uid, "default")
        assert lease.spec.renew_time >= before - timedelta(milliseconds=1)
        assert lease.spec.acquire_time >= before - timedelta(milliseconds=1)
    finally:
        await client.CoordinationV1Api(api).delete_namespaced_lease(LEASE_PREFIX + plan.preemptor.uid, "default")


async def test_two_replicas_starting_together_take_over_a_left_lease_once(api: ApiClient) -> None:
    """Both read one Lease left acting and take it over at the version they read: one write wins, the other
    fails, whatever their order; only the one that holds it may mark it, and once it is released another replica
    claims it at once."""
    plan = plan_for("left")
    name = LEASE_PREFIX + plan.preemptor.uid
    coordination = client.CoordinationV1Api(api)
    await coordination.create_namespaced_lease(
        "default", bed.left_lease(plan.preemptor.uid, "team/p", "node-x", "", 20)
    )
    try:
        [left] = [lease for lease in await SteeringLeases(api, "default", "r", 60).listed() if lease.name == name]
        claims = await asyncio.gather(
            *(
                SteeringLeases(api, "default", f"replica-{n}", 60).claim(plan, left_version=left.version)
                for n in range(2)
            )
        )
        assert sorted(claims) == [False, True]
        winner, loser = (f"replica-{claims.index(won)}" for won in (True, False))
        assert not await SteeringLeases(api, "default", loser, 60).mark(plan.preemptor.uid, RELEASED), "not its own"
        assert await SteeringLeases(api, "default", winner, 60).mark(plan.preemptor.uid, RELEASED)
        assert await SteeringLeases(api, "default", "replica-2", 60).claim(plan)
        taken = await coordination.read_namespaced_lease(name, "default")
        assert (taken.spec.holder_identity, taken.metadata.annotations[STATE]) == ("replica-2", ACTING)
    finally:
        await coordination.delete_namespaced_lease(name, "default")


async def test_leases_are_swept_after_a_while_whatever_their_state(api: ApiClient) -> None:
    """A Lease left acting that long is past any window: resuming would refuse it, so it goes too."""
    coordination = client.CoordinationV1Api(api)
    suffix = unique_name("s")
    old = (datetime.now(UTC) - timedelta(seconds=SWEEP_AFTER_SECONDS + 60)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    fresh = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    leases = {
        "old-done": (DONE, old),
        "fresh-done": (DONE, fresh),
        "old-acting": (ACTING, old),
        "fresh-acting": (ACTING, fresh),
    }
    for name, (state, renewed) in leases.items():
        await coordination.create_namespaced_lease(
            "default",
            {
                "metadata": {
                    "name": f"{LEASE_PREFIX}{name}-{suffix}",
                    "labels": {LABEL: "true"},
                    "annotations": {STATE: state},
                },
                "spec": {"holderIdentity": "r", "leaseDurationSeconds": 60, "renewTime": renewed},
            },
        )
    await SteeringLeases(api, "default", "r", 60).sweep(datetime.now(UTC))
    left = {
        lease.metadata.name
        for lease in (await coordination.list_namespaced_lease("default", label_selector=f"{LABEL}=true")).items
    }
    try:
        assert {f"{LEASE_PREFIX}old-done-{suffix}", f"{LEASE_PREFIX}old-acting-{suffix}"}.isdisjoint(left)
        assert {f"{LEASE_PREFIX}fresh-done-{suffix}", f"{LEASE_PREFIX}fresh-acting-{suffix}"} <= left
    finally:
        for name in left:
            if name.endswith(suffix):
                await coordination.delete_namespaced_lease(name, "default")


async def test_a_cluster_full_of_protected_pods_costs_a_plan_per_change_not_per_refusal(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
    kubectl: Kubectl,
) -> None:
    """The scale scenario of #43, small: every node full with protected pods, preemptors pending. Upstream
    preempts nothing. The scheduler tries again and again and the guard refuses each victim; steering plans,
    declines (`no-node`), and plans a preemptor again only once a cache changed. No protected pod is
    deleted, and the API server never lets a DELETE through for want of an answer (fail-open)."""
    fail_open_before = guard_fail_open(kubectl)
    nodes = [(await make_node(cpu="2", memory="8Gi")).metadata.name for _ in range(4)]
    protected = {}
    for node in nodes:
        for slot in range(2):
            name = f"prot-{node[-6:]}-{slot}"
            protected[name] = (await create_bound(api, namespace, name, steering_classes["prot"], node, cpu="1"))[
                "metadata"
            ]["uid"]
    metrics_before = await server.metric("ptol_steering_total", "outcome")
    core = client.CoreV1Api(api)
    for index in range(3):
        body = on_nodes(pod_body(f"high-{index}", steering_classes["high"], nodes[0], "1"), *nodes)
        await core.create_namespaced_pod(namespace, body)

    async def outcomes() -> dict[str, float]:
        now = await server.metric("ptol_steering_total", "outcome")
        return {key: value - metrics_before.get(key, 0) for key, value in now.items()}

    seen = await eventually(
        outcomes,
        lambda found: found.get("no-node", 0) >= 1 and found.get("unchanged", 0) >= 1,
        timeout=REACTION_SECONDS,
        what="a declined plan, then a refusal that made no new plan",
    )
    print(f"steering outcomes: {seen}")
    left = {pod.metadata.name: pod for pod in (await core.list_namespaced_pod(namespace)).items}
    for name, uid in protected.items():
        assert left[name].metadata.uid == uid and left[name].metadata.deletion_timestamp is None, name
    assert all(not left[f"high-{index}"].spec.node_name for index in range(3))
    assert guard_fail_open(kubectl) == fail_open_before


def guard_fail_open(kubectl: Kubectl) -> float:
    """The API server's count of guard calls it let through without an answer (a timeout, an error)."""
    page = kubectl("get", "--raw", "/metrics").stdout
    return total(page, "apiserver_admission_webhook_fail_open_count", name=GUARD_WEBHOOK)


async def test_every_write_of_an_action_is_made_under_the_pods_uid(
    api: ApiClient, namespace: str, make_node: MakeNode, steering_classes: dict[str, str], kubectl: Kubectl
) -> None:
    """A plan names a victim whose pod was replaced by another of the same name: neither the mark nor the
    DELETE reaches the new pod; the preemptor is nominated first, under its own UID."""
    node = (await make_node(cpu="2", memory="8Gi")).metadata.name
    again = await create_bound(api, namespace, "again", steering_classes["low"], node, cpu="1")
    body = pod_body("pending", steering_classes["high"], node, cpu="1")
    body["spec"]["schedulerName"] = "no-such-scheduler"  # nobody schedules it
    pending = await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    # the cache still holds the replaced pod: judged again before its DELETE, it may be preempted
    replaced = dict(again, metadata={**again["metadata"], "uid": "uid-of-a-replaced-pod"})
    low = kubectl("get", "priorityclass", steering_classes["low"], "-o", "json").stdout
    view = ClusterView(PodIndex.of([replaced]), {}, {steering_classes["low"]: class_view(json.loads(low))})
    steerer = Steerer(api, lambda: view, "on", "default", "r", SteeringMetrics(CollectorRegistry()))
    shared = Shared()
    preemptor = slim_pod(api.sanitize_for_serialization(pending), shared)
    try:
        await steerer._carry_out(SteeringPlan(preemptor, node, (slim_pod(replaced, shared),), 0))
        left_alone = await read_pod(api, namespace, "again")
        assert left_alone is not None and left_alone["metadata"]["uid"] == again["metadata"]["uid"]
        conditions = left_alone["status"].get("conditions") or []
        assert not any(condition["type"] == "DisruptionTarget" for condition in conditions)
        nominated = await read_pod(api, namespace, "pending")
        assert (nominated or {}).get("status", {}).get("nominatedNodeName") == node
        # a stale UID for the preemptor: no nomination, nothing done
        assert not await steerer.writes.nominate(namespace, "pending", "uid-of-another-pod", "elsewhere")
    finally:
        for task in steerer.sending:
            task.cancel()


async def _asks_two_cpus_at_pod_level(api: ApiClient, namespace: str, body: dict[str, Any], node: str) -> None:
    """b's container asks nothing; b asks 2 CPUs at pod level (PodLevelResources)."""
    del body["spec"]["containers"][0]["resources"]
    body["spec"]["resources"] = {"requests": {"cpu": "2"}}
    await client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    await until_bound(api, namespace, "b", node)


async def _resized_down_to_one_cpu_not_yet_actuated(
    api: ApiClient, namespace: str, body: dict[str, Any], node: str
) -> None:
    """b ran with 2 CPUs (its status says the kubelet allocated and actuated them, as KWOK does not) and was
    resized in place to 1 CPU (the `resize` subresource), which its node has not actuated yet: the scheduler
    counts the larger, 2 CPUs, in every release."""
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, body)
    await eventually(
        lambda: read_pod(api, namespace, "b"),
        lambda pod: bool(pod and pod["status"].get("containerStatuses")),
        timeout=REACTION_SECONDS,
        what="b running",
    )

    def allocated(pod: dict[str, Any]) -> None:
        pod["status"]["containerStatuses"][0].update(
            {"allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}}
        )

    def resized(pod: dict[str, Any]) -> None:
        pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}

    await _changed(api, namespace, "b", allocated, core.replace_namespaced_pod_status)
    await _changed(api, namespace, "b", resized, core.replace_namespaced_pod_resize)
    after = await read_pod(api, namespace, "b")
    assert after is not None and after["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"
    assert after["status"]["containerStatuses"][0]["allocatedResources"] == {"cpu": "2"}, after["status"]


async def _changed(
    api: ApiClient,
    namespace: str,
    name: str,
    change: Callable[[dict[str, Any]], None],
    replace: Callable[[str, str, dict[str, Any]], Awaitable[Any]],
) -> None:
    """Reads the pod, changes it and writes it back, again while KWOK's own writes conflict."""
    for _ in range(10):
        pod = await read_pod(api, namespace, name)
        assert pod is not None
        change(pod)
        try:
            await replace(name, namespace, pod)
            return
        except ApiException as error:
            if error.status != 409:
                raise
    raise AssertionError(f"{name}: every write conflicted")


ASKS_TWO_CPUS = {
    "pod-level requests": _asks_two_cpus_at_pod_level,
    "resized in place": _resized_down_to_one_cpu_not_yet_actuated,
}


@pytest.mark.parametrize("asks", ASKS_TWO_CPUS.values(), ids=ASKS_TWO_CPUS.keys())
async def test_requests_count_as_the_scheduler_counts_them(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
    asks: Callable[[ApiClient, str, dict[str, Any], str], Awaitable[None]],
) -> None:
    """#43's scenario: node m (4 CPUs) runs b, protected, which the scheduler counts at 2 CPUs (its pod-level
    requests, or the status of a resize in place where its spec says 1), and two plain pods of 1 CPU; node n
    runs a protected pod of 4 CPUs. A preemptor of 3 CPUs fits nowhere without a protected pod, so upstream
    deletes nothing; steering, counting b as the scheduler does, declines (`no-node`) and deletes nothing
    either (counting b at 1 CPU, or at none, it would delete l1 and l2 in vain)."""
    node_m = (await make_node(cpu="4", memory="8Gi")).metadata.name
    node_n = (await make_node(cpu="4", memory="8Gi")).metadata.name
    core = client.CoreV1Api(api)
    await asks(api, namespace, pod_body("b", steering_classes["prot"], node_m, cpu="2"), node_m)
    plain = {
        name: await create_bound(api, namespace, name, steering_classes["low"], node_m, cpu="1")
        for name in ("l1", "l2")
    }
    await create_bound(api, namespace, "t", steering_classes["prot"], node_n, cpu="4")
    before = (await server.metric("ptol_steering_total", "outcome")).get("no-node", 0)
    preemptor = on_nodes(pod_body("high", steering_classes["high"], node_m, cpu="3"), node_m, node_n)
    await core.create_namespaced_pod(namespace, preemptor)
    await eventually(
        lambda: server.metric("ptol_steering_total", "outcome"),
        lambda found: found.get("no-node", 0) > before,
        timeout=REACTION_SECONDS,
        what="steering declines: no node",
    )
    await asyncio.sleep(2)  # the scheduler's next attempts, and anything steering would do after them
    for name, body in plain.items():
        still = await read_pod(api, namespace, name)
        assert still is not None and still["metadata"]["uid"] == body["metadata"]["uid"], name
        assert not still["metadata"].get("deletionTimestamp"), name
    assert await pod_names_on(api, namespace) == {"b": node_m, "l1": node_m, "l2": node_m, "t": node_n, "high": None}


async def test_two_preemptors_of_one_priority_do_not_wait_for_each_other_for_good(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
) -> None:
    """Node n (4 CPUs) runs a plain pod and a protected one, 2 CPUs each; two pods of one class, `first` then
    `second`, 2 CPUs each, may run only there. Upstream preempts the plain pod for `first`, binds it, and
    leaves `second` pending, un-nominated: only the protected pod could make room for it. The stock scheduler
    nominates `second` to n too, for a preemption the guard refuses, and counts each against the other: left
    alone, neither binds. Steering clears `second`'s nomination; `first` binds."""
    node = (await make_node(cpu="4", memory="8Gi")).metadata.name
    await create_bound(api, namespace, "plain", steering_classes["low"], node, cpu="2")
    await create_bound(api, namespace, "protected", steering_classes["prot"], node, cpu="2")
    core = client.CoreV1Api(api)
    for name in ("first", "second"):
        await core.create_namespaced_pod(namespace, pod_body(name, steering_classes["high"], node, cpu="2"))
    await until_bound(api, namespace, "first", node)
    await until_gone(api, namespace, "plain")
    await asyncio.sleep(2)  # the scheduler's next attempts for `second`
    assert await pod_names_on(api, namespace) == {"protected": node, "first": node, "second": None}
    unblocked = (await server.metric("ptol_steering_total", "outcome")).get("unblocked", 0)
    print(f"nominations cleared: {unblocked:.0f}")


async def test_the_second_of_two_preemptors_is_steered_once_the_first_is(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
) -> None:
    """`bed.second_of_two_preemptors`, with one replica."""
    await bed.second_of_two_preemptors(api, namespace, make_node, steering_classes)


async def test_a_steered_preemptor_whose_room_another_pod_took_is_steered_again_at_once(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    server: Server,
    steering_classes: dict[str, str],
) -> None:
    """Three full nodes of 2 CPUs: c runs plain w, b plain v (started after w; a finalizer keeps it
    terminating until released), a a protected pod (started last: the stock scheduler's choice). Steering
    preempts v for `high` (2 CPUs, any of the three). While v terminates, a protected pod q is placed on b
    by its nodeName, and v is released: `high` no longer fits where it was steered. Upstream would preempt
    again, now w on c; steering must not wait for the end of its window (60 s) to do it."""
    node_a, node_b, node_c = [(await make_node(cpu="2", memory="8Gi")).metadata.name for _ in range(3)]
    core = client.CoreV1Api(api)
    await create_bound(api, namespace, "w", steering_classes["low"], node_c, cpu="2")
    await asyncio.sleep(1.1)  # status.startTime is in whole seconds
    held = pod_body("v", steering_classes["low"], node_b, cpu="2")
    held["metadata"]["finalizers"] = [bed.HOLD]
    await core.create_namespaced_pod(namespace, held)
    try:
        await until_bound(api, namespace, "v", node_b)
        await asyncio.sleep(1.1)
        await create_bound(api, namespace, "protected", steering_classes["prot"], node_a, cpu="2")
        await core.create_namespaced_pod(
            namespace, on_nodes(pod_body("high", steering_classes["high"], node_a, cpu="2"), node_a, node_b, node_c)
        )
        await eventually(
            lambda: read_pod(api, namespace, "v"),
            lambda p: p is not None and bool(p["metadata"].get("deletionTimestamp")),
            timeout=REACTION_SECONDS,
            what="v deleted by steering",
        )
        taker = pod_body("q", steering_classes["prot"], node_b, cpu="2")
        taker["spec"]["nodeName"] = node_b
        await core.create_namespaced_pod(namespace, taker)
    finally:
        await core.patch_namespaced_pod("v", namespace, {"metadata": {"finalizers": None}})
    released = time.monotonic()
    # well within the window: planned again as soon as the scheduler's next choice is refused
    await until_bound(api, namespace, "high", node_c, timeout=40)
    print(f"bound {time.monotonic() - released:.1f} s after its room was taken")
    assert await pod_names_on(api, namespace) == {"protected": node_a, "q": node_b, "high": node_c}
