"""The boost's worker (`kueue.adapter.booster`) over real stores and a recorder of its writes in place of the API
server's answers: what it writes on each Workload, once, and when (Kueue's own behaviour is the live tests')."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kueue.adapter.booster import GATE_OFF, Booster
from preemption_toleration.kueue.adapter.hold import HoldEndpoint
from preemption_toleration.kueue.adapter.workloads import DEPARTED_KEPT, WorkloadStore
from preemption_toleration.kueue.adapter.writes import Gate
from preemption_toleration.kueue.plan import FIELD_MANAGER
from preemption_toleration.kueue.policy_condition import Cause, Unwritten
from preemption_toleration.records.cluster_queue import ClusterQueueRecord, PreemptionPolicy
from preemption_toleration.records.priority_class import class_view
from preemption_toleration.records.workload import PRIORITY_BOOST, WorkloadRecord
from preemption_toleration.telemetry.declared import KueueBoostOutcome
from tests.unit import admission_payloads

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MIN, TOL = (
    "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority",
    "preemption-toleration.scheduling.x-k8s.io/toleration-seconds",
)


class Writes:
    """Records each write as (workload, value); `gate_is` and `refuse` (a status, and the API server's message)
    say what the API server answers."""

    def __init__(self, gate_is: Gate = Gate.ON, refuse: int | None = None, message: str = "refused") -> None:
        self.written: list[tuple[str, str | None]] = []
        self.gate_is = gate_is
        self.refuse = refuse
        self.message = message
        self.gates_asked = 0

    async def apply(self, workload: WorkloadRecord, value: str | None, dry_run: bool = False) -> None:
        if self.refuse is not None:
            error = ApiException(status=self.refuse, reason="Conflict")
            error.body = json.dumps({"kind": "Status", "message": self.message})
            raise error
        self.written.append((workload.name, value))

    async def gate(self, workload: WorkloadRecord) -> Gate:
        self.gates_asked += 1
        return self.gate_is


def workload(
    name: str, klass: str, priority: int, reserved: bool = True, boost: str | None = None, queue: str | None = None
) -> dict:
    conditions = [{"type": "QuotaReserved", "status": "True" if reserved else "False"}]
    metadata: dict = {
        "name": name,
        "namespace": "team",
        "uid": f"uid-{name}",
        "labels": {"kueue.x-k8s.io/job-uid": f"job-{name}"},
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "controller": True}],
        "creationTimestamp": f"2026-11-29T11:00:0{len(name) % 10}Z",
    }
    if boost is not None:
        metadata["annotations"] = {PRIORITY_BOOST: boost}
        metadata["managedFields"] = [
            {"manager": FIELD_MANAGER, "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{PRIORITY_BOOST}": {}}}}}
        ]
    return {
        "metadata": metadata,
        "spec": {
            "priority": priority,
            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": klass},
        },
        "status": {"conditions": conditions, **({"admission": {"clusterQueue": queue}} if queue else {})},
    }


def threat(name: str = "high", priority: int = 9000) -> dict:
    """A pending Workload of `priority`, which may take a protected one of 8000 below its minimum of 10000."""
    return workload(name, "plain", priority, reserved=False)


def job_pod(job: str, scheduled: datetime) -> dict:
    return {
        "metadata": {
            "name": f"{job}-pod",
            "namespace": "team",
            "uid": f"uid-{job}-pod",
            "labels": {"batch.kubernetes.io/controller-uid": f"job-{job}"},
        },
        "spec": {"nodeName": "n1", "priority": 8000, "containers": []},
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled.isoformat()},
            ],
        },
    }


CLASSES = {
    name: class_view({"metadata": {"name": name, "annotations": annotations}, "value": value})
    for name, value, annotations in (
        ("forever", 8000, {MIN: "10000", TOL: "-1"}),
        ("window", 8000, {MIN: "10000", TOL: "600"}),
        ("plain", 8000, {}),
    )
}


class World:
    def __init__(self, writes: Writes, queues: dict[str, ClusterQueueRecord] | None = None) -> None:
        self.problems: list[str] = []
        self.now = NOW
        self.monotonic = 0.0
        self.counted: list[KueueBoostOutcome] = []
        self.workloads = WorkloadStore()
        self.pods = PodIndex(jobs=True)
        self.writes = writes
        self.booster = Booster(
            writes,  # type: ignore[arg-type]
            self.workloads,
            self.pods,
            lambda: CLASSES,
            lambda: 1,
            lambda: list(self.problems),
            self.counted.append,
            now=lambda: self.now,
            clock=lambda: self.monotonic,
            cluster_queues=lambda: queues or {},
        )

    async def settle(self) -> bool:
        return await self.booster.step()


@pytest.mark.asyncio
async def test_a_protected_workload_is_boosted_once_and_a_plain_one_not() -> None:
    world = World(Writes())
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(workload("other", "plain", 8000))
    world.workloads.put(threat())
    await world.settle()
    assert world.writes.written == [("kept", "1999")]
    world.workloads.put(workload("kept", "forever", 8000))  # a change seen before our write shows in the cache
    await world.settle()
    assert world.writes.written == [("kept", "1999")], "the write not repeated from a cache behind it"
    assert world.counted == [KueueBoostOutcome.APPLIED]


@pytest.mark.asyncio
async def test_at_the_windows_end_the_boost_is_removed_and_the_waiting_preemptors_nudged() -> None:
    world = World(Writes())
    world.pods.put(job_pod("kept", NOW - timedelta(seconds=60)))
    world.workloads.put(workload("kept", "window", 8000, boost="1999"))
    world.workloads.put(workload("waiting", "plain", 9000, reserved=False))
    world.workloads.put(workload("strong", "plain", 10000, reserved=False))  # the boost never kept it out
    await world.settle()
    assert world.writes.written == [], "the window runs: ours stands"
    world.now = NOW + timedelta(seconds=540)  # 600 s after its pod was scheduled
    await world.settle()
    assert world.writes.written == [("kept", None), ("waiting", "-1"), ("waiting", None)]
    assert world.counted == [KueueBoostOutcome.REMOVED, KueueBoostOutcome.NUDGED]


@pytest.mark.asyncio
async def test_a_later_pod_moves_the_windows_end() -> None:
    world = World(Writes())
    world.pods.put(job_pod("kept", NOW - timedelta(seconds=60)))
    world.workloads.put(workload("kept", "window", 8000, boost="1999"))
    await world.settle()
    second = job_pod("kept", NOW)
    second["metadata"].update(name="kept-pod-2", uid="uid-2")
    world.pods.put(second)  # the Job's last pod scheduled now: its window runs 600 s from now
    world.now = NOW + timedelta(seconds=540)
    await world.settle()
    assert world.writes.written == []


@pytest.mark.asyncio
async def test_with_kueues_gate_off_nothing_is_written_and_it_is_said() -> None:
    world = World(Writes(gate_is=Gate.OFF))
    world.workloads.put(workload("kept", "forever", 8000))  # said before any Workload threatens it
    await world.settle()
    assert world.writes.written == [] and world.counted == [KueueBoostOutcome.NOT_WRITTEN]
    assert world.booster._said["team/kept"] == GATE_OFF
    world.booster.changed("team/kept")
    await world.settle()
    assert world.writes.gates_asked == 1, "the gate is asked again only after a while"
    assert world.booster.unwritten == [Unwritten("team/kept", ClassKind.PRIORITY_CLASS, "forever", Cause.GATE_OFF)]
    world.writes.gate_is = Gate.ON
    world.monotonic += 301  # the gate asked again: on
    world.booster.changed("team/kept")
    await world.settle()
    assert world.booster.unwritten == [] and "team/kept" not in world.booster._said, "the policy's condition clears"
    world.workloads.put(threat())
    await world.settle()
    assert world.writes.written == [("kept", "1999")]


@pytest.mark.asyncio
async def test_a_write_another_manager_refuses_is_not_written_and_planned_again() -> None:
    world = World(Writes(refuse=409))
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(threat())
    await world.settle()
    assert world.counted == [KueueBoostOutcome.NOT_WRITTEN]
    assert "another writer holds the annotation" in world.booster._said["team/kept"]
    assert [one.cause for one in world.booster.unwritten] == [Cause.HELD_BY_ANOTHER_WRITER]
    world.writes.refuse = None
    world.now += timedelta(seconds=6)  # its retry is due
    await world.settle()
    assert world.writes.written == [("kept", "1999")]


@pytest.mark.asyncio
async def test_nothing_is_planned_while_a_cache_is_not_current_and_all_of_it_once_it_is() -> None:
    world = World(Writes())
    world.problems.append("pods: not listed yet")  # a Job's pods unknown: its window cannot be read
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(threat())
    assert not await world.settle() and world.writes.written == []
    assert not world.booster.planned_all, "no policy condition is written from a plan not yet made"
    world.problems.clear()
    assert await world.settle() and world.writes.written == [("kept", "1999")]
    assert world.booster.planned_all


@pytest.mark.asyncio
async def test_a_workload_planned_again_and_again_keeps_one_timer() -> None:
    """Each pod change of a Job plans its Workload again: its window's end is kept once, not once per plan."""
    world = World(Writes())
    world.pods.put(job_pod("kept", NOW - timedelta(seconds=60)))
    world.workloads.put(workload("kept", "window", 8000, boost="1999"))
    for _ in range(50):
        world.booster.changed("team/kept")
        await world.settle()
    assert len(world.booster._timers) == 1


@pytest.mark.asyncio
async def test_a_workload_made_again_under_its_name_is_left_to_its_own_change() -> None:
    """The apply names the planned Workload's UID: one deleted and made again meanwhile is not written on, and
    that is no other writer's annotation (its own watch event plans the new one)."""
    uid_mismatch = 'Operation cannot be fulfilled on workloads.kueue.x-k8s.io "kept": uid mismatch: the provided ...'
    world = World(Writes(refuse=409, message=uid_mismatch))
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(threat())
    await world.settle()
    assert world.counted == [] and "team/kept" not in world.booster._said


class Events:
    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str, str]] = []

    def post(self, ref, kind: str, reason: str, message: str, name: str = "", component: str = "") -> None:
        self.posted.append((ref.name, kind, reason, message))


def preempted_by(raw: dict, preemptor_uid: str) -> dict:
    """`raw` as Kueue's preemption leaves it: Evicted=True reason Preempted, and the Preempted condition naming the
    preemptor's UID."""
    message = f"Preempted to accommodate a workload (UID: {preemptor_uid}, JobUID: job-x) due to prioritization"
    raw["status"]["conditions"] += [
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": message},
        {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": message},
    ]
    return raw


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("rule", "preemptor_priority", "reported"),
    [
        ("a preemptor below the minimum: reported on the Workload and counted", 9000, True),
        ("a preemptor at the minimum: Kueue's to take, nothing said", 10000, False),
    ],
)
async def test_kueues_preemption_of_a_protected_workload_is_reported_not_refused(
    rule: str, preemptor_priority: int, reported: bool
) -> None:
    world = World(Writes())
    events = Events()
    world.booster.events = events  # type: ignore[assignment]
    evictions: list[ProtectionKind] = []
    world.booster.count_protected_eviction = evictions.append
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(workload("preemptor", "plain", preemptor_priority, reserved=False))
    await world.settle()
    world.workloads.put(preempted_by(workload("kept", "forever", 8000, boost="1999"), "uid-preemptor"))
    assert evictions == ([ProtectionKind.FOREVER] if reported else []), rule
    said = [(name, reason) for name, _, reason, _ in events.posted]
    assert said == ([("kept", "PreemptionWouldBeRefused")] if reported else []), rule
    world.workloads.put(preempted_by(workload("kept", "forever", 8000), "uid-preemptor"))
    assert len(evictions) == (1 if reported else 0), "an eviction seen again is not told again"


@pytest.mark.asyncio
async def test_a_preemptor_gone_before_its_victims_eviction_is_seen_is_still_judged_by_its_priority() -> None:
    """A watch that ended and was listed again can show the preemptor gone before its victim evicted: the store
    keeps the departed by UID, so the eviction is still reported."""
    world = World(Writes())
    events = Events()
    world.booster.events = events  # type: ignore[assignment]
    world.workloads.put(workload("kept", "forever", 8000))
    world.workloads.put(preemptor := workload("preemptor", "plain", 9000, reserved=False))
    await world.settle()
    world.workloads.prune({"team/kept"})  # the list that no longer has the preemptor
    assert world.workloads.of_uid("uid-preemptor") is not None and "team/preemptor" not in world.workloads.items
    world.workloads.put(preempted_by(workload("kept", "forever", 8000, boost="1999"), preemptor["metadata"]["uid"]))
    assert [(name, reason) for name, _, reason, _ in events.posted] == [("kept", "PreemptionWouldBeRefused")]


def test_the_store_keeps_a_bounded_number_of_departed_workloads() -> None:
    store = WorkloadStore()
    for index in range(DEPARTED_KEPT + 5):
        store.put(raw := workload(f"w{index}", "plain", 8000))
        store.remove(raw)
    assert store.of_uid("uid-w0") is None, "the oldest dropped"
    assert store.of_uid(f"uid-w{DEPARTED_KEPT + 4}") is not None and len(store) == 0


def queue(name: str, within: PreemptionPolicy, cohort: str | None = None, reclaim=PreemptionPolicy.NEVER):
    return ClusterQueueRecord(name, cohort, within, reclaim)


LOWER, NEWER_EQUAL, ANY, NEVER = (
    PreemptionPolicy.LOWER_PRIORITY,
    PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    PreemptionPolicy.ANY,
    PreemptionPolicy.NEVER,
)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("rule", "queues", "pending", "boosted"),
    [
        ("no pending Workload: no boost", [queue("cq", LOWER)], None, False),
        ("LowerPriority: a higher one below the minimum threatens", [queue("cq", LOWER)], 9000, True),
        ("LowerPriority: an equal one does not", [queue("cq", LOWER)], 8000, False),
        ("LowerPriority: one at the minimum needs no boost", [queue("cq", LOWER)], 10000, False),
        ("LowerOrNewerEqualPriority: an equal one threatens", [queue("cq", NEWER_EQUAL)], 8000, True),
        ("Never: no preemptor may take it", [queue("cq", NEVER)], 9000, False),
        ("a queue not known: any preemptor may", [], 7000, True),
        (
            "in a cohort, another queue's reclaimWithinCohort Any: a lower one threatens",
            [queue("cq", LOWER, "co"), queue("other", NEVER, "co", ANY)],
            7000,
            True,
        ),
        (
            "in no cohort, reclaim elsewhere does not count",
            [queue("cq", LOWER), queue("x", NEVER, "co", ANY)],
            7000,
            False,
        ),
    ],
)
async def test_a_boost_is_written_only_where_a_pending_workload_may_take_the_workload_below_its_minimum(
    rule: str, queues: list[ClusterQueueRecord], pending: int | None, boosted: bool
) -> None:
    world = World(Writes(), {one.name: one for one in queues})
    world.workloads.put(workload("kept", "forever", 8000, queue="cq"))
    if pending is not None:
        world.workloads.put(threat(priority=pending))
    await world.settle()
    assert world.writes.written == ([("kept", "1999")] if boosted else []), rule


@pytest.mark.asyncio
async def test_a_pending_workload_seen_later_boosts_the_ones_it_threatens_and_no_other() -> None:
    world = World(Writes(), {"cq": queue("cq", LOWER)})
    world.workloads.put(workload("kept", "forever", 8000, queue="cq"))
    world.workloads.put(workload("window", "window", 8000, queue="cq"))
    world.workloads.put(workload("low", "forever", 7000, queue="cq"))
    await world.settle()
    assert world.writes.written == [] and world.writes.gates_asked == 1, "the gate learnt before any boost is needed"
    world.workloads.put(threat(priority=7500))  # below 8000: threatens only the Workload of 7000
    await world.settle()
    assert world.writes.written == [("low", "2999")]
    world.workloads.put(threat("higher", 9000))
    await world.settle()
    assert sorted(world.writes.written) == [("kept", "1999"), ("low", "2999"), ("window", "1999")]


@pytest.mark.asyncio
async def test_before_a_threatening_workload_is_created_the_boosts_it_needs_are_written() -> None:
    """The webhook on Workloads' creation waits for `before_pending`: the boosts are written before the
    preemptor exists, so Kueue never tries it against an unboosted victim."""
    world = World(Writes(), {"cq": queue("cq", LOWER)})
    for name in ("a", "b", "c"):
        world.workloads.put(workload(name, "forever", 8000, queue="cq"))
    world.workloads.put(workload("plain", "plain", 8000, queue="cq"))
    await world.settle()
    assert await world.booster.before_pending(8000) == 0, "an equal priority may not take them (LowerPriority)"
    assert await world.booster.before_pending(10000) == 0, "at the minimum: none needed"
    assert world.writes.written == []
    assert await world.booster.before_pending(9000) == 3
    assert sorted(world.writes.written) == [("a", "1999"), ("b", "1999"), ("c", "1999")]
    world.workloads.put(threat())  # the preemptor created, seen by the watch
    await world.settle()
    assert len(world.writes.written) == 3, "not written again from a cache behind the writes"
    world.problems.append("workloads: not listed yet")
    world.workloads.put(workload("d", "forever", 8000, queue="cq"))
    assert await world.booster.before_pending(9000) == 0, "nothing while a cache is not current"


WORKLOAD_RESOURCE = {"group": "kueue.x-k8s.io", "version": "v1beta2", "resource": "workloads"}
WORKLOAD_KIND = {"group": "kueue.x-k8s.io", "version": "v1beta2", "kind": "Workload"}


def review(raw: dict, operation: str = "CREATE", dry_run: bool = False) -> bytes:
    body = admission_payloads.review(raw, operation=operation, resource=WORKLOAD_RESOURCE, kind=WORKLOAD_KIND)
    body["request"].update(namespace="team", dryRun=dry_run)
    return json.dumps(body).encode()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("rule", "body", "boosted"),
    [
        ("a threatening Workload's creation waits for the boost", review(threat()), True),
        ("a dry run writes nothing", review(threat(), dry_run=True), False),
        ("an update is no new preemptor", review(threat(), operation="UPDATE"), False),
        ("a Workload of the minimum needs none", review(threat(priority=10000)), False),
    ],
)
async def test_the_webhook_on_workloads_creation_allows_each_after_the_boosts_it_needs(
    rule: str, body: bytes, boosted: bool
) -> None:
    world = World(Writes())
    world.workloads.put(workload("kept", "forever", 8000))
    await world.settle()
    endpoint = HoldEndpoint(world.booster).endpoint()
    reply = await endpoint.handle(endpoint.read(body))  # type: ignore[misc]
    assert reply.verdict.allowed, "it holds, never refuses"
    assert world.writes.written == ([("kept", "1999")] if boosted else []), rule


def test_the_store_tells_each_pending_priority_once_however_many_workloads_are_queued_at_it() -> None:
    """Kueue queues Jobs by the thousand: the protected Workloads a priority threatens are planned again once for
    it, not once per Workload of it."""
    store = WorkloadStore()
    told: list[int] = []
    store.pending_arrived = told.append
    for index in range(100):
        store.put(threat(f"high-{index}"))
    store.put(threat("higher", 9500))
    assert told == [9000, 9500]
    for index in range(100):
        store.remove(threat(f"high-{index}"))
    store.put(threat("again"))
    assert told == [9000, 9500, 9000], "told again once none of it was left"
    admitted = threat("higher", 9500)
    admitted["status"]["conditions"] = [{"type": "QuotaReserved", "status": "True"}]
    store.put(admitted)
    assert len(store.pending) == 1, "a Workload holding quota is no longer pending"


class SlowWrites(Writes):
    """Each write takes a moment, as the API server's do: others run meanwhile."""

    async def apply(self, workload: WorkloadRecord, value: str | None, dry_run: bool = False) -> None:
        await asyncio.sleep(0.01)
        await super().apply(workload, value, dry_run)


@pytest.mark.asyncio
async def test_a_boost_a_creation_waits_for_is_written_once_though_the_worker_plans_it_meanwhile() -> None:
    """A hold that outlasts its wait goes on writing behind the creation; the worker, told of the new Workload,
    leaves those writes to it rather than making them a second time."""
    world = World(SlowWrites(), {"cq": queue("cq", LOWER)})
    for name in ("a", "b", "c"):
        world.workloads.put(workload(name, "forever", 8000, queue="cq"))
    await world.settle()
    held = asyncio.create_task(world.booster.before_pending(9000))
    await asyncio.sleep(0)  # the hold has claimed them and started writing
    world.workloads.put(threat())  # the preemptor created, seen by the watch
    for name in ("a", "b", "c"):
        world.booster.changed(f"team/{name}")  # planned by the worker meanwhile (a pod of theirs changed, say)
    await world.settle()
    assert await held == 3
    assert sorted(world.writes.written) == [("a", "1999"), ("b", "1999"), ("c", "1999")]


@pytest.mark.asyncio
async def test_a_workload_admitted_while_the_worker_writes_a_burst_is_known_to_a_hold_before_the_burst_ends() -> None:
    """The worker plans every change before each write: a protected Workload admitted while it writes fifty boosts
    is found by the hold of a creation that threatens it at once, not once the fifty are written."""
    world = World(SlowWrites(), {"cq": queue("cq", LOWER)})
    for index in range(50):
        world.workloads.put(workload(f"w{index}", "forever", 8000, queue="cq"))
    world.workloads.put(threat())  # 9000 threatens the fifty: fifty writes of 10 ms
    settling = asyncio.create_task(world.settle())
    await asyncio.sleep(0.05)
    world.workloads.put(workload("late", "forever", 9000, queue="cq"))  # 9000 may not take it: no boost yet
    await asyncio.sleep(0.02)
    assert await world.booster.before_pending(9500) == 1, "the hold finds it while the burst is written"
    assert not settling.done() and ("late", "999") in world.writes.written
    assert len(world.writes.written) < 51, "before the burst ends"
    await settling
    assert len(world.writes.written) == 51, "each written once"
