"""The boost's worker: plans each Workload that changed (its record, its class, its Job's pods, a pending
Workload that threatens it) or whose window ends, and writes what the plan says (`kueue.plan`), then nudges the
preemptors a fallen boost kept out (`kueue.nudge`). It keeps what each plan found protected, against which
Kueue's preemptions are judged (`kueue.backstop`), and the protected Workloads whose boost waits for a threat
(`kueue.threat`): the webhook on Workloads' creation (`kueue.adapter.hold`) has those a new one threatens
boosted before it exists (`before_pending`), so that Kueue never tries it against an unboosted victim.

Every replica runs it and plans from what every replica sees, so two replicas write the same annotation under the
same field manager (the second apply changes nothing). It plans nothing while a cache it reads is not current,
writes one Workload at a time (planning every change told meanwhile before the next write), and looks at every
Workload again once a minute (what a missed change would have changed). It posts an Event only for a boost it cannot
write, named after what it tells, so that two replicas telling it make one.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Final

from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import KUEUE_API_VERSION, ClassKind, ObjectRef
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube.client import API_ERRORS, api_problem
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kueue.adapter.workloads import WorkloadStore
from preemption_toleration.kueue.adapter.writes import BoostWrites, Gate
from preemption_toleration.kueue.backstop import REASON as BACKSTOP_REASON
from preemption_toleration.kueue.backstop import Guarded, guarded_by, protected_eviction
from preemption_toleration.kueue.eviction import KueuePreemption
from preemption_toleration.kueue.nudge import NUDGE_VALUE, waiting_on
from preemption_toleration.kueue.plan import NOT_WRITTEN, Action, BoostPlan, holds_quota, plan_boost
from preemption_toleration.kueue.policy_condition import Cause, Unwritten
from preemption_toleration.kueue.threat import Exposure, Unboosted, exposure_policy, most_permissive_reclaim
from preemption_toleration.records.cluster_queue import ClusterQueueRecord, PreemptionPolicy
from preemption_toleration.records.priority_class import ClassView
from preemption_toleration.records.workload import WorkloadRecord
from preemption_toleration.telemetry.declared import KueueBoostOutcome

logger = logging.getLogger("preemption_toleration.kueue")

RESYNC_SECONDS: Final = 60.0  # every Workload planned again this often
GATE_RECHECK_SECONDS: Final = 300.0  # Kueue's PriorityBoost gate asked again this often (a restart may flip it)
RETRY_SECONDS: Final = 5.0  # a failed write planned again after this long
WRITTEN_SECONDS: Final = 10.0  # how long a write of ours may take to show in the cache
PLANS_PER_SLICE: Final = 200  # plans between two yields of the event loop
HOLD_SECONDS: Final = 5.0  # how long a Workload's creation waits for the boosts it needs (then written behind it)
HOLD_WRITES: Final = 8  # the boosts a creation waits for written this many at a time
COMPONENT: Final = "preemption-toleration-kueue"
_UID_MISMATCH = "uid mismatch"  # the API server's 409 for an apply whose metadata.uid is not the object's
GATE_OFF = (
    "Kueue's PriorityBoost feature gate is off (its webhook takes any priority-boost), so Kueue ignores the "
    "annotation: no boost is written and Kueue may preempt this Workload below its minimum. Turn the gate on "
    "(--feature-gates=PriorityBoost=true on Kueue's manager)"
)


class Booster:
    def __init__(
        self,
        writes: BoostWrites,
        workloads: WorkloadStore,
        pods: PodIndex,
        classes: Callable[[], Mapping[str, ClassView]],
        class_generation: Callable[[], int],
        problems: Callable[[], list[str]],
        count: Callable[[KueueBoostOutcome], None],
        events: EventRecorder | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        clock: Callable[[], float] = time.monotonic,
        workload_classes: Callable[[], Mapping[str, ClassView]] = dict,
        count_protected_eviction: Callable[[ProtectionKind], None] = lambda protection: None,
        cluster_queues: Callable[[], Mapping[str, ClusterQueueRecord]] = dict,
    ) -> None:
        """`classes`: the PriorityClasses, `workload_classes` Kueue's WorkloadPriorityClasses, `cluster_queues`
        Kueue's ClusterQueues, by name; `class_generation` changes whenever any of them or the policies do (a
        ClusterQueue's status aside)."""
        self.writes = writes
        self.cluster_queues = cluster_queues
        self._cohort_reclaim = PreemptionPolicy.ANY  # as of the last generation planned
        self._unboosted = Unboosted()  # the protected Workloads whose boost waits for a threat
        self._hold_slots = asyncio.Semaphore(HOLD_WRITES)
        self._holding: set[asyncio.Task[bool]] = set()
        self._held: set[str] = set()  # the Workloads whose boost a creation's hold writes: the worker leaves it
        self.workload_classes = workload_classes
        self.count_protected_eviction = count_protected_eviction
        self._guarded: dict[str, Guarded] = {}  # what the last plan of each Workload found protected
        self.workloads = workloads
        self.pods = pods
        self.classes = classes
        self.class_generation = class_generation
        self.problems = problems
        self.count = count
        self.events = events
        self.now = now
        self.clock = clock
        self._dirty: dict[str, None] = {}  # keys to plan, in the order told
        self._to_write: dict[str, BoostPlan] = {}  # the writes planned, in the order planned
        self._wake = asyncio.Event()
        self._timers: list[tuple[datetime, str]] = []  # (when, key): a window's end, a retry
        self._due: dict[str, datetime] = {}  # each key's latest timer, so that planning again adds none
        self._generation = -1
        self._resynced = -RESYNC_SECONDS
        self._gate: Gate | None = None
        self._gate_at = 0.0
        self._said: dict[str, str] = {}  # the last problem told of each Workload
        self._unwritten: dict[str, Unwritten] = {}  # each Workload whose wanted boost is not written, and why
        # every Workload planned once since the start: `unwritten` is whole, and a hold finds every protected one
        self.planned = asyncio.Event()
        # What we wrote last on each Workload and when, until its cache shows it (at most WRITTEN_SECONDS): a
        # plan made from the cache meanwhile would write it again
        self._written: dict[str, tuple[str | None, float]] = {}
        workloads.changed = self.changed
        workloads.preempted = self.preempted
        workloads.pending_arrived = self.pending_arrived
        pods.job_changed = self.job_changed

    # --- what wakes it ---------------------------------------------------------------------------------

    @property
    def planned_all(self) -> bool:
        return self.planned.is_set()

    def changed(self, key: str) -> None:
        self._dirty[key] = None
        self._wake.set()

    def pending_arrived(self, priority: int) -> None:
        """A Workload pending at `priority`: the protected ones it threatens are planned again (boosted)."""
        for key in self._unboosted.threatened_by(priority):
            self.changed(key)

    def job_changed(self, job_uid: str) -> None:
        if (key := self.workloads.of_job(job_uid)) is not None:
            self.changed(key)

    # --- the loop --------------------------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), self._seconds_to_next())
            except TimeoutError:
                pass
            self._wake.clear()
            if not await self.step():
                await asyncio.sleep(1.0)
                self._wake.set()

    async def step(self) -> bool:
        """Plans what is told or due, and writes; False, planning nothing, while a cache it reads is not
        current."""
        if problems := self.problems():
            logger.debug("kueue boost waits for its caches", extra={"problems": problems})
            return False
        await self.plan_dirty(every=self._collect_due())
        return True

    def _seconds_to_next(self) -> float:
        seconds = self._resynced + RESYNC_SECONDS - self.clock()
        if self._timers:
            seconds = min(seconds, (self._timers[0][0] - self.now()).total_seconds())
        return max(seconds, 0.0)

    def _collect_due(self) -> bool:
        """Queues what is told or due; True when that is every Workload."""
        generation = self.class_generation()
        every = generation != self._generation or self.clock() - self._resynced >= RESYNC_SECONDS
        if every:
            self._generation, self._resynced = generation, self.clock()
            self._cohort_reclaim = most_permissive_reclaim(self.cluster_queues().values())
            self._dirty.update(dict.fromkeys(self.workloads.items))
        now = self.now()
        while self._timers and self._timers[0][0] <= now:
            when, key = heapq.heappop(self._timers)
            if self._due.get(key) == when:
                del self._due[key]
            self._dirty[key] = None
        return every

    async def plan_dirty(self, every: bool = False) -> None:
        """Plans every Workload told or due (`every`: that is every Workload), and writes what the plans say, one
        at a time: every change told meanwhile is planned before the next write, so that what a hold reads
        (`_unboosted`) is never behind a burst of writes."""
        await self._plan_told()
        if every:
            self.planned.set()
        while self._dirty or self._to_write:
            await self._plan_told()
            if self._to_write:
                key = next(iter(self._to_write))
                plan = self._to_write.pop(key)
                workload = self.workloads.items.get(key)
                # asked again: a nudge of an earlier write may have written it since
                if workload is not None and self._ours_to_write(key, workload, plan):
                    await self._write(workload, plan)

    async def _plan_told(self) -> None:
        """Plans every Workload told or due (no write: those the plans want wait in `_to_write`)."""
        planned = 0
        while self._dirty:
            key = next(iter(self._dirty))
            del self._dirty[key]
            self._to_write.pop(key, None)
            workload = self.workloads.items.get(key)
            self._unwritten.pop(key, None)
            if workload is None:
                for memo in (self._said, self._written, self._due, self._guarded):
                    memo.pop(key, None)
                self._unboosted.discard(key)
                continue
            plan = self.plan(workload)
            if plan.exposure is not None:
                self._unboosted.put(key, plan.exposure)
            else:
                self._unboosted.discard(key)
            if plan.wanted is not None and plan.problem is not None:  # another writer holds the annotation
                self._not_written(workload, Cause.HELD_BY_ANOTHER_WRITER)
            if (guarded := guarded_by(plan)) is not None:
                self._guarded[key] = guarded
            else:
                self._guarded.pop(key, None)
            if plan.until is not None:
                self._plan_again(key, plan.until)
            planned += 1
            if self._ours_to_write(key, workload, plan):
                self._to_write[key] = plan
            elif not (_waits_for_threat(workload, plan) and await self._gate_off(workload)):
                self._tell_problem(workload, plan.problem)
            if planned % PLANS_PER_SLICE == 0:
                await asyncio.sleep(0)

    def _ours_to_write(self, key: str, workload: WorkloadRecord, plan: BoostPlan) -> bool:
        """Whether the worker writes what `plan` says: a write, not left to a creation's hold, nor written lately."""
        return plan.writes and key not in self._held and not self._just_written(key, workload, plan.value)

    def _plan_again(self, key: str, when: datetime) -> None:
        if self._due.get(key) != when:
            self._due[key] = when
            heapq.heappush(self._timers, (when, key))

    def _just_written(self, key: str, workload: WorkloadRecord, value: str | None) -> bool:
        """Whether `value` is what we wrote on the Workload lately, which its cache does not show yet."""
        written = self._written.get(key)
        if written is None:
            return False
        if written[0] == workload.boost or self.clock() - written[1] > WRITTEN_SECONDS:
            del self._written[key]  # the cache shows it, or something else happened since
            return False
        return written[0] == value

    def _wrote(self, key: str, value: str | None) -> None:
        self._written[key] = (value, self.clock())

    def plan(self, workload: WorkloadRecord, also_pending: int | None = None) -> BoostPlan:
        """The plan of `workload` now, as if a Workload of effective priority `also_pending` were pending too."""
        ref = workload.class_ref
        kind = ref.class_kind if ref is not None else None
        classes = self.classes() if kind is ClassKind.PRIORITY_CLASS else self.workload_classes()
        klass = classes.get(ref.name) if ref is not None and kind is not None else None
        toleration = klass.toleration if klass is not None else None
        since = self.pods.job_pods(workload.job_uid).scheduled_since() if workload.job_uid else None
        queue = self.cluster_queues().get(workload.cluster_queue) if workload.cluster_queue else None
        pending = self.workloads.pending

        def threatened(exposure: Exposure) -> bool:
            return pending.threaten(exposure) or (also_pending is not None and exposure.threatened_by(also_pending))

        policy = exposure_policy(queue, self._cohort_reclaim)
        return plan_boost(workload, toleration, since, self.now(), policy, threatened)

    # --- before a Workload is created ------------------------------------------------------------------

    async def before_pending(self, priority: int, seconds: float = HOLD_SECONDS) -> int:
        """Writes the boosts of the protected Workloads a Workload of effective priority `priority`, about to be
        created, threatens, waiting at most `seconds` (those not written by then are written behind it); the
        count written meanwhile. Nothing while a cache it reads is not current (the worker's own plans catch up)."""
        if self.problems():
            return 0
        keys = self._unboosted.threatened_by(priority)
        if not keys:
            return 0
        for key in keys:  # this hold writes them: not another, nor the worker meanwhile
            self._unboosted.discard(key)
        self._held.update(keys)
        tasks = [asyncio.create_task(self._boost_before(key, priority)) for key in keys]
        self._holding.update(tasks)
        for task in tasks:
            task.add_done_callback(self._holding.discard)
        done, _ = await asyncio.wait(tasks, timeout=seconds)
        return sum(1 for task in done if not task.cancelled() and task.exception() is None and task.result())

    async def _boost_before(self, key: str, priority: int) -> bool:
        try:
            async with self._hold_slots:
                workload = self.workloads.items.get(key)
                if workload is None:
                    return False
                plan = self.plan(workload, also_pending=priority)
                if plan.action is not Action.APPLY or self._just_written(key, workload, plan.value):
                    return False
                return await self._write(workload, plan)
        finally:
            self._held.discard(key)

    # --- writes ----------------------------------------------------------------------------------------

    async def _write(self, workload: WorkloadRecord, plan: BoostPlan) -> bool:
        """Writes what `plan` says; whether it was written."""
        if plan.action is Action.APPLY:
            gate = await self._gate_of(workload)
            if gate is None:  # not known: planned again shortly
                self.count(KueueBoostOutcome.FAILED)
                self._plan_again(workload.ref, self.now() + timedelta(seconds=RETRY_SECONDS))
                return False
            if await self._gate_off(workload, gate):
                return False
        try:
            await self.writes.apply(workload, plan.value)
        except ApiException as error:
            if error.status == 404 or (error.status == 409 and _UID_MISMATCH in api_problem(error)):
                return False  # the Workload is gone, or made again under its name: its own change plans it
            self._failed(workload, error, conflict=error.status == 409)
            return False
        except API_ERRORS as error:
            self._failed(workload, error)
            return False
        self._said.pop(workload.ref, None)
        self._wrote(workload.ref, plan.value)
        before = workload.effective_priority()
        after = workload.priority + (int(plan.value) if plan.value else 0)
        # No Event for a boost written or removed: one per protected Workload would double the writes the boost
        # costs (Kueue's admission of a thousand Jobs); the annotation itself, the log line and the metric say it
        applied = plan.action is Action.APPLY
        self.count(KueueBoostOutcome.APPLIED if applied else KueueBoostOutcome.REMOVED)
        logger.info(
            "kueue priority boost written" if applied else "kueue priority boost removed",
            extra={
                "workload": workload.ref,
                "value": plan.value,
                "effective_priority": after,
                "until": plan.until.isoformat() if plan.until else None,
            },
        )
        if holds_quota(workload) and after < before:
            await self._nudge(before, after)
        return True

    async def _gate_off(self, workload: WorkloadRecord, gate: Gate | None = None) -> bool:
        """Whether Kueue's gate is off (`gate`, or as asked), which is then said: no boost of `workload` could be
        written."""
        if gate is None:
            gate = await self._gate_of(workload)
        if gate is not Gate.OFF:
            return False
        self.count(KueueBoostOutcome.NOT_WRITTEN)
        self._not_written(workload, Cause.GATE_OFF)
        self._tell_problem(workload, GATE_OFF)
        return True

    def _failed(self, workload: WorkloadRecord, error: BaseException, conflict: bool = False) -> None:
        problem = api_problem(error)
        if conflict:
            self.count(KueueBoostOutcome.NOT_WRITTEN)
            self._not_written(workload, Cause.HELD_BY_ANOTHER_WRITER)
            self._tell_problem(workload, f"another writer holds the annotation: {problem}")
        else:
            self.count(KueueBoostOutcome.FAILED)
            logger.warning("kueue priority boost not written", extra={"workload": workload.ref, "problem": problem})
        self._plan_again(workload.ref, self.now() + timedelta(seconds=RETRY_SECONDS))

    def _not_written(self, workload: WorkloadRecord, cause: Cause) -> None:
        if (ref := workload.class_ref) is not None and ref.class_kind is not None:
            self._unwritten[workload.ref] = Unwritten(workload.ref, ref.class_kind, ref.name, cause)

    @property
    def unwritten(self) -> list[Unwritten]:
        """The Workloads whose wanted boost their last plan did not write, and why (a policy's condition)."""
        return list(self._unwritten.values())

    async def _gate_of(self, workload: WorkloadRecord) -> Gate | None:
        """Kueue's PriorityBoost gate, asked again every GATE_RECHECK_SECONDS (None: never learnt yet)."""
        if self._gate is None or self.clock() - self._gate_at >= GATE_RECHECK_SECONDS:
            try:
                gate = await self.writes.gate(workload)
            except API_ERRORS as error:
                logger.warning("kueue's PriorityBoost gate not known", extra={"problem": api_problem(error)})
                return self._gate  # as last known
            if gate is not self._gate:
                logger.info("kueue's PriorityBoost gate", extra={"gate": gate.value})
            self._gate, self._gate_at = gate, self.clock()
        return self._gate

    async def _nudge(self, before: int, after: int) -> None:
        """Tries again, in Kueue, the pending Workloads a boost from `before` down to `after` kept out: each
        one's boost written and removed at once (`kueue.nudge`)."""
        for waiting in waiting_on(self.workloads.items.values(), after, before):
            try:
                await self.writes.apply(waiting, NUDGE_VALUE)
                await self.writes.apply(waiting, None)
                self._wrote(waiting.ref, None)
            except API_ERRORS as error:  # one left written is removed by the Workload's next plan
                logger.info("kueue nudge not written", extra={"workload": waiting.ref, "problem": api_problem(error)})
                continue
            self.count(KueueBoostOutcome.NUDGED)
            logger.info("kueue workload nudged", extra={"workload": waiting.ref})

    # --- the backstop ----------------------------------------------------------------------------------

    def preempted(self, before: WorkloadRecord, preemption: KueuePreemption) -> None:
        """Kueue's preemption evicted `before`: reported where its last plan found it protected from that
        preemptor (a Warning Event on it, a metric, a log line), never refused."""
        preemptor = self.workloads.of_uid(preemption.preemptor_uid)
        found = protected_eviction(before, self._guarded.get(before.ref), preemption, preemptor, self.now())
        if found is None:
            return
        self.count_protected_eviction(found.protection)
        logger.warning(
            "kueue preempted a protected workload",
            extra={
                "workload": found.victim,
                "preemptor": found.preemptor,
                "preemptor_priority": found.preemptor_priority,
                "refuse_below": found.refuse_below,
                "reason": found.reason,
            },
        )
        self._tell(before, "Warning", BACKSTOP_REASON, found.message, preemption.preemptor_uid or "")

    # --- what it tells ---------------------------------------------------------------------------------

    def _tell_problem(self, workload: WorkloadRecord, problem: str | None) -> None:
        """A Warning Event on the Workload, once per problem (not again while it stays the same)."""
        if problem is None:
            self._said.pop(workload.ref, None)
            return
        if self._said.get(workload.ref) == problem:
            return
        self._said[workload.ref] = problem
        logger.warning("kueue priority boost not written", extra={"workload": workload.ref, "problem": problem})
        self._tell(workload, "Warning", NOT_WRITTEN, problem, problem)

    def _tell(self, workload: WorkloadRecord, kind: str, reason: str, message: str, what: str) -> None:
        if self.events is None:
            return
        digest = hashlib.sha256(f"{workload.uid}/{reason}/{what}".encode()).hexdigest()[:16]
        ref = ObjectRef(KUEUE_API_VERSION, "Workload", workload.name, workload.uid, workload.namespace)
        self.events.post(ref, kind, reason, message, name=f"{workload.name[:200]}.{digest}", component=COMPONENT)


def _waits_for_threat(workload: WorkloadRecord, plan: BoostPlan) -> bool:
    """A boost wanted, none of another writer's in the way, and none written for want of a pending Workload that
    may take it: whether Kueue's gate would let it count is said before one is needed."""
    return (
        plan.action is Action.KEEP
        and plan.wanted is not None
        and plan.problem is None
        and workload.boost != str(plan.wanted)
    )
