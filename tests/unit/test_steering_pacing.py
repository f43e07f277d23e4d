"""Steering never holds the event loop that answers the API server: a plan runs in slices with the loop given
back between them, a preemptor declined before is not planned again until a cache changes, and nothing is
planned from a cache that is not current. One row or test per rule."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio.client import ApiClient
from prometheus_client import CollectorRegistry

from preemption_toleration.core.pods import PodJson
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter import steerer as steerer_module
from preemption_toleration.steering.adapter import steering_leases as leases
from preemption_toleration.steering.adapter.steerer import RefusedVictim, Steerer
from preemption_toleration.steering.pacing import DeclinedPlans, Pace, shape_of
from preemption_toleration.steering.plan import Declined
from preemption_toleration.telemetry.declared import SteeringOutcome
from tests.unit.test_extender import CLASS_RECORDS, node, pod
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

PAUSES = [
    ("a quarter of the loop: three times the slice", Pace(0.002, 0.25), 0.002, 0.006),
    ("half of the loop: as long as the slice", Pace(0.002, 0.5), 0.004, 0.004),
    ("all of the loop: no pause", Pace(0.002, 1.0), 0.002, 0.0),
    ("a clock gone backwards: no pause", Pace(0.002, 0.25), -1.0, 0.0),
]


@pytest.mark.parametrize(("rule", "pace", "worked", "pause"), PAUSES, ids=[case[0] for case in PAUSES])
def test_the_pause_after_a_slice_keeps_planning_to_its_share(rule, pace, worked, pause) -> None:
    assert pace.pause_after(worked) == pytest.approx(pause), rule


DUE = [
    # (rule, declines at (generation, time) in a row, asked at (generation, time), due)
    ("never declined", [], (1, 0.0), True),
    ("declined, nothing changed", [(1, 0.0)], (1, 60.0), False),
    ("a cache changed, but within the first wait of 1 s", [(1, 0.0)], (2, 0.5), False),
    ("a cache changed and the wait is over", [(1, 0.0)], (2, 1.0), True),
    ("the second decline in a row waits 2 s", [(1, 0.0), (2, 1.0)], (3, 2.5), False),
    ("... and is due after them", [(1, 0.0), (2, 1.0)], (3, 3.0), True),
    ("the wait stops growing at 10 s", [(n, 100.0 * n) for n in range(8)], (99, 710.0), True),
]


@pytest.mark.parametrize(("rule", "declines", "asked", "due"), DUE, ids=[case[0] for case in DUE])
def test_a_declined_preemptor_is_planned_again_after_a_change_and_its_wait(rule, declines, asked, due) -> None:
    plans = DeclinedPlans()
    for generation, when in declines:
        plans.declined("a", generation, when)
    assert plans.due("a", *asked) is due, rule
    assert plans.due("b", *asked), "another preemptor"


def test_an_action_given_up_is_due_after_its_wait_whatever_the_caches_do() -> None:
    """A failed write changes no cache: the preemptor is planned again once its wait is over, doubled each
    time in a row."""
    plans = DeclinedPlans()
    plans.declined("a", None, 0.0)
    assert not plans.due("a", 7, 0.5) and plans.due("a", 7, 1.0)
    plans.declined("a", None, 1.0)
    assert not plans.due("a", 7, 2.5) and plans.due("a", 7, 3.0)


SHAPES = [
    # (rule, the other preemptor, same shape)
    ("another pod of the same template", pod("high-2", "high", cpu="2", node=None), True),
    ("more CPU", pod("high-3", "high", cpu="3", node=None), False),
    ("another priority", pod("high-4", "low", cpu="2", node=None), False),
    ("a node selector", pod("high-5", "high", cpu="2", node=None, spec__nodeSelector={"zone": "a"}), False),
]


@pytest.mark.parametrize(("rule", "other", "same"), SHAPES, ids=[case[0] for case in SHAPES])
def test_a_shape_is_what_a_plan_reads_of_its_preemptor(rule, other, same) -> None:
    index = PodIndex.of([pod("high-1", "high", cpu="2", node=None), other])
    shapes = {shape_of(found) for found in index.pods.values()}
    assert len(index.pods) == 2 and (len(shapes) == 1) is same, rule


def test_no_node_for_a_shape_makes_its_other_preemptors_wait() -> None:
    plans, shape, other_shape = DeclinedPlans(), (1000, (("cpu", 2000),), "{}"), (1000, (("cpu", 3000),), "{}")
    plans.declined("a", 1, 0.0, shape)
    assert not plans.due("b", 2, 0.5, shape), "within the shape's first wait"
    assert plans.due("b", 2, 1.0, shape), "its wait over, a cache changed"
    assert not plans.due("b", 1, 60.0, shape), "nothing changed since"
    assert plans.due("c", 1, 0.0, other_shape) and plans.due("c", 1, 0.0), "another shape, or none given"
    plans.declined("b", 2, 1.0, shape)
    assert not plans.due("d", 3, 2.5, shape) and plans.due("d", 3, 3.0, shape), "in a row: 2 s"
    plans.forget("d", shape)
    assert plans.due("e", 3, 0.0, shape), "a node was found for the shape"


def test_a_carried_out_plan_starts_the_wait_again() -> None:
    plans = DeclinedPlans()
    for generation in range(5):
        plans.declined("a", generation, 0.0)
    plans.forget("a")
    assert plans.due("a", 4, 0.0)
    plans.declined("a", 5, 0.0)
    assert plans.due("a", 6, 1.0)


def test_declined_plans_keep_the_newest_within_their_bound() -> None:
    plans = DeclinedPlans(remembered=2)
    for uid in ("a", "b", "c"):
        plans.declined(uid, 1, 0.0)
    assert plans.due("a", 1, 0.0) and not plans.due("b", 1, 0.0) and not plans.due("c", 1, 0.0)


# --- the steerer, with no API server: every path below declines before any request -----------------------


def protected_cluster(nodes: int) -> tuple[ClusterView, dict]:
    """`nodes` full nodes, each with a protected pod of 2 CPUs; a preemptor of 2 CPUs nominated to n000: no
    node where it fits without a pod that tolerates it (a plan tries every node)."""
    pods = [pod(f"p{i:03d}", "low-non-preempted", cpu="2", node=f"n{i:03d}") for i in range(nodes)]
    preemptor = pod("high", "high", cpu="2", node=None, status__nominatedNodeName="n000")
    index = PodIndex.of([*pods, preemptor])
    view = ClusterView(index, {f"n{i:03d}": node(f"n{i:03d}", cpu="2") for i in range(nodes)}, CLASS_RECORDS)
    return view, pods[0]


class Counted(SteeringMetrics):
    """Steering's metrics, with what was counted kept in order."""

    def __init__(self) -> None:
        super().__init__(CollectorRegistry())
        self.outcomes: list[str] = []
        self.plans: list[float] = []

    def count(self, outcome: SteeringOutcome | Declined) -> None:
        super().count(outcome)
        self.outcomes.append(outcome.value)

    def planned(self, seconds: float) -> None:
        super().planned(seconds)
        self.plans.append(seconds)


@pytest.fixture
async def api():
    api = ApiClient()  # never called: every path tested declines before a request
    yield api
    await api.close()


def steerer(api: ApiClient, view: ClusterView, counted: Counted, **options) -> Steerer:
    return Steerer(
        api,
        lambda: view,
        "on",
        "default",
        "test",
        counted,
        **options,
    )


def refused(victim: dict) -> RefusedVictim:
    metadata = victim["metadata"]
    return RefusedVictim(metadata["namespace"], metadata["name"], metadata["uid"], victim["spec"]["nodeName"])


async def test_a_declined_preemptor_is_planned_again_only_once_a_cache_changed_and_its_wait_is_over(api) -> None:
    view, victim = protected_cluster(3)
    counted, generation = Counted(), [1]
    subject = steerer(api, view, counted, generation=lambda: generation[0])
    for _ in range(3):
        await subject._consider(refused(victim))
    generation[0] = 2
    await subject._consider(refused(victim))
    subject.declined_plans.at["uid-high"] = (1, 0.0, 1.0)  # as if declined long ago
    for shape in subject.declined_plans.shapes:
        subject.declined_plans.shapes[shape] = (1, 0.0, 1.0)
    await subject._consider(refused(victim))
    assert counted.outcomes == ["no-node", "unchanged", "unchanged", "unchanged", "no-node"]
    assert len(counted.plans) == 2


async def test_pods_of_one_template_found_no_node_make_one_plan_until_the_wait_is_over(api) -> None:
    """Two pending pods of one shape, each nominated to a node of a protected pod: the second's refusal
    waits on the first's plan; a pod of another shape is planned."""
    nodes = 3
    pods = [pod(f"p{i:03d}", "low-non-preempted", cpu="2", node=f"n{i:03d}") for i in range(nodes)]
    preemptors = [
        pod("high-a", "high", cpu="2", node=None, status__nominatedNodeName="n000"),
        pod("high-b", "high", cpu="2", node=None, status__nominatedNodeName="n001"),
        pod("high-c", "high", cpu="1", node=None, status__nominatedNodeName="n002"),
    ]
    index = PodIndex.of([*pods, *preemptors])
    view = ClusterView(index, {f"n{i:03d}": node(f"n{i:03d}", cpu="2") for i in range(nodes)}, CLASS_RECORDS)
    counted, generation = Counted(), [1]
    subject = steerer(api, view, counted, generation=lambda: generation[0])
    for victim in pods:
        await subject._consider(refused(victim))
        generation[0] += 1
    assert counted.outcomes == ["no-node", "unchanged", "no-node"]
    assert len(counted.plans) == 2


async def test_nothing_is_planned_from_a_cache_that_is_not_current(api, caplog) -> None:
    view, victim = protected_cluster(3)
    counted = Counted()
    subject = steerer(api, view, counted, problems=lambda: ["pods: no successful list or watch for 75 s"])
    with caplog.at_level(logging.INFO, "preemption_toleration.steering"):
        await subject._consider(refused(victim))
    assert counted.outcomes == ["stale-cache"] and counted.plans == []
    assert [record.detail for record in caplog.records] == ["pods: no successful list or watch for 75 s"]


async def test_a_plan_gives_the_loop_back_between_its_slices(api) -> None:
    """A clock that advances a tick (1/1024 s, exact in floating point) at each reading, slices of 2 ticks and
    a quarter of the loop: a plan of 200 nodes runs in 100 slices of 2 nodes, another task runs between
    them, and the pauses asked for keep planning to a quarter of the time."""
    view, victim = protected_cluster(200)
    readings = iter(range(10**6))
    counted = Counted()
    subject = steerer(api, view, counted, pace=Pace(2 / 1024, 0.25), clock=lambda: next(readings) / 1024)
    pauses: list[float] = []
    ran_between: list[int] = []
    real_sleep = asyncio.sleep

    async def recorded_sleep(seconds: float) -> None:
        pauses.append(seconds)
        await real_sleep(0)

    async def other_work() -> None:
        while True:
            ran_between.append(len(pauses))
            await real_sleep(0)

    other = asyncio.create_task(other_work())
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(asyncio, "sleep", recorded_sleep)
    try:
        await subject._consider(refused(victim))
    finally:
        monkeypatch.undo()
        other.cancel()
    assert counted.outcomes == ["no-node"]
    slices = [pause for pause in pauses if pause > 0]
    assert len(slices) == 100, "200 nodes, 2 a slice"
    assert set(slices) == {6 / 1024}, "3 x each slice's 2 ticks"
    assert len(set(ran_between)) >= len(slices), "the other task ran between the slices"


async def test_steering_that_stops_on_an_error_starts_again_and_says_so(api, caplog) -> None:
    view, _ = protected_cluster(1)
    counted = Counted()
    subject = steerer(api, view, counted)
    runs: list[int] = []

    async def run() -> None:
        runs.append(len(runs))
        if len(runs) == 1:
            raise RuntimeError("a bug")
        await asyncio.Event().wait()  # runs on

    async def nothing_left() -> None:  # the Leases left are listed beside `run`, once: not this test's
        pass

    subject.run = run  # type: ignore[method-assign]
    subject._resume = nothing_left  # type: ignore[method-assign]
    supervised = asyncio.create_task(subject.run_supervised(restart_after=0))
    try:
        while len(runs) < 2:
            await asyncio.sleep(0)
    finally:
        supervised.cancel()
        for task in subject.sending:
            task.cancel()
    assert counted.outcomes == ["restarted"]
    assert any(record.exc_info and "starts again" in record.getMessage() for record in caplog.records)


async def test_a_preemptor_steered_before_is_in_progress_while_its_victims_are_there(api) -> None:
    """Steered to n001 earlier, whose victim is still in the cache (terminating): a refusal elsewhere makes
    no second plan, which would preempt twice; once the victim is gone, the preemptor is planned again."""
    view, victim = protected_cluster(3)
    counted = Counted()
    subject = steerer(api, view, counted)
    subject.record.steered["uid-high"] = ("n001", (("team", "p001", "uid-p001"),))
    await subject._consider(refused(victim))
    assert counted.outcomes == ["in-progress"] and counted.plans == []
    view.pods.remove(pod("p001", "low-non-preempted", cpu="2", node="n001"))
    await subject._consider(refused(victim))
    # planned again: n001 is free now, so the scheduler will place it there
    assert counted.outcomes == ["in-progress", "fits"] and "uid-high" not in subject.record.steered


async def test_the_refusals_hold_is_released_once_the_preemption_is_steered(api) -> None:
    """Each refusal of a queued victim gets the same event; the worker sets it when the preemption is steered
    (here: in progress, its victims still there), not when steering declines."""
    view, victim = protected_cluster(3)
    counted = Counted()
    subject = steerer(api, view, counted)

    async def nothing_left() -> None:
        pass

    subject._resume = nothing_left  # type: ignore[method-assign]
    subject.record.steered["uid-high"] = ("n001", (("team", "p001", "uid-p001"),))
    first = subject.refused(PodJson(victim))
    assert first is not None and subject.refused(PodJson(victim)) is first
    worker = asyncio.create_task(subject.run())
    try:
        await asyncio.wait_for(first.wait(), timeout=10)
        del subject.record.steered["uid-high"]  # now steering plans, and declines (no-node)
        second = subject.refused(PodJson(victim))
        assert second is not None and second is not first
        while "no-node" not in counted.outcomes:
            await asyncio.sleep(0.01)
        assert not second.is_set()
    finally:
        worker.cancel()


async def test_a_refusal_without_evidence_is_looked_at_once_more(api, monkeypatch) -> None:
    """The scheduler's nomination of its preemptor may reach the cache just after the refused write: the
    refusal is looked at again a moment later, once."""
    monkeypatch.setattr(steerer_module, "LOOK_AGAIN_SECONDS", 0.0)
    victim = pod("p000", "low-non-preempted", cpu="2", node="n000")
    index = PodIndex.of([victim, pod("high", "high", cpu="2", node=None)])  # not nominated (yet)
    view = ClusterView(index, {"n000": node("n000", cpu="2")}, CLASS_RECORDS)
    counted = Counted()
    subject = steerer(api, view, counted)
    await subject._consider(refused(victim))
    await asyncio.sleep(0.01)
    assert subject.queue.qsize() == 1 and ("team", "p000") in subject.queued
    again = subject.queue.get_nowait()
    assert again.again and (again.namespace, again.name) == ("team", "p000")
    subject.queued.clear()
    await subject._consider(again)
    await asyncio.sleep(0.01)
    assert subject.queue.empty(), "looked at once more, not for ever"
    assert counted.outcomes == ["no-evidence", "no-evidence"]


async def test_a_group_members_preemption_is_declined_before_any_nomination_is_cleared(api) -> None:
    """The pod the guard refused a victim for is a member of a pod group, nominated where a twin's
    nomination alone blocks it: steering declines it as a group's (the scheduler preempts for the group,
    across nodes) before it clears the twin's nomination, which would act for the group in part."""
    victim = pod("p000", "low-non-preempted", cpu="2", node="n000")
    member = pod(
        "high",
        "high",
        cpu="1",
        node=None,
        status__nominatedNodeName="n000",
        spec__schedulingGroup={"podGroupName": "job"},
    )
    twin = pod("twin", "high", cpu="1", node=None, status__nominatedNodeName="n000")
    view = ClusterView(PodIndex.of([victim, member, twin]), {"n000": node("n000", cpu="3")}, CLASS_RECORDS)
    counted = Counted()
    subject = steerer(api, view, counted)
    cleared: list[str] = []

    async def clear(pod, node, preemptor) -> None:
        cleared.append(pod.name)

    subject.clearing.clear = clear  # type: ignore[method-assign]
    assert not await subject._consider(refused(victim))
    assert counted.outcomes == ["pod-group"] and cleared == [] and counted.plans == []


def another_replicas_lease(preemptor_uid: str, node: str, victims: str) -> dict:
    """A steering Lease another replica wrote 5 s ago: done, for `preemptor_uid` on `node`, with `victims`."""
    renewed = (datetime.now(UTC) - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    annotations = {leases.STATE: leases.DONE, leases.NODE: node, leases.VICTIMS: victims}
    return {
        "metadata": {"name": leases.LEASE_PREFIX + preemptor_uid, "annotations": annotations},
        "spec": {"holderIdentity": "another-replica", "leaseDurationSeconds": 60, "renewTime": renewed},
    }


LATELY = [
    # (rule, the victims another replica's Lease for `first` names, whom steering plans for)
    ("its victims still terminating: the scheduler preempts for the next", "team/p000=uid-p000", "uid-second"),
    ("its victims gone and its room taken: planned again", "team/gone=uid-gone", "uid-first"),
]


@pytest.mark.parametrize(("rule", "victims", "planned"), LATELY, ids=[case[0] for case in LATELY])
async def test_a_preemptor_another_replica_steered_lately_is_passed_over_while_it_waits(
    api, rule, victims, planned
) -> None:
    """Two pods of one priority nominated to n000, `first` served first; another replica's Lease says it
    steered `first` there 5 s ago. While `first` waits for that action, steering takes `second`, as the
    scheduler does; once the action's victims are gone and `first` does not fit there, `first` again."""
    victim = pod("p000", "low-non-preempted", cpu="2", node="n000")
    pending = [pod(name, "high", cpu="2", node=None, status__nominatedNodeName="n000") for name in ("first", "second")]
    view = ClusterView(PodIndex.of([victim, *pending]), {"n000": node("n000", cpu="2")}, CLASS_RECORDS)
    subject = steerer(api, view, Counted())
    subject.replicas.lease_watch.synced.set()  # the Leases listed
    subject.replicas.lease_store.put(another_replicas_lease("uid-first", "n000", victims))
    await subject._consider(refused(victim))
    assert set(subject.declined_plans.at) == {planned}, rule
