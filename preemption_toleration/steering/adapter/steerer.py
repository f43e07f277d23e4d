"""Steering, carried out (`--steering`): where no extender is called, a preemption the guard refused is
made the way upstream's plugin would have made it, with the scheduler's own writes.

The guard hands over each refused scheduler write (off the request path). For the pod the scheduler is
preempting for (`steering.plan`: known only from its nomination to the refused victim's node), the plan's
victims each get `DisruptionTarget` (reason `PreemptionByScheduler`) and are deleted, with their UID as a
precondition; then the preemptor is nominated to the plan's node, and Events on the preemptor and each
victim name each other, as kube-scheduler's executor does. Its `PodEligibleToPreemptOthers` then keeps the
preemptor from preempting elsewhere while a victim on its nominated node terminates, and binds it there.

One action per preemptor per window, whichever replica: a Lease named after the preemptor's UID, in the
server's namespace, is created before anything is written (a second replica's create fails) and records
the plan (the protocol is `steering_leases`'; what the other replicas did is read from their Leases,
`replicas`). Each victim is judged again right before its DELETE
(`steering.recheck`): a policy applied meanwhile wins, and the action stops there. A write that fails, or an
action that stops, gives the action up: its Lease is released, nothing of it is remembered as in progress,
and the preemptor is planned again after a wait (1 s, doubled up to 10 s). A replica that starts finds the
Leases left acting by one that stopped in the middle (`resume`); a Lease only says which preemptor it acted
for (`steering.resumption`): a fresh plan chooses the victims, under the claim and rate limit of a live
action.
Actions are rate-limited per replica (`steering.pacing.TokenBucket`). In audit mode the plan is logged,
counted and posted as an Event on the preemptor, and nothing else is written, not even a Lease.

This module is the worker: the refusals queued, the preemptor found, planned and acted for. Its other
jobs are modules of their own: the writes on pods (`pod_writes`), clearing a blocking nomination
(`clearing`), this replica's memory of its actions (`record`), the other replicas' (`replicas`), what it
tells (`reports`) and the start-up's resumption (`resume`).

Planning shares the event loop that answers the API server, so it never holds it for long
(`steering.pacing`): a plan runs in slices of about 2 ms and takes at most a quarter of the loop's time, a
preemptor whose plan was declined is planned again only once the caches have changed and a wait of 1 to
10 s is over, and nothing is planned or done while a cache is not current.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.resources import pod_ref
from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.guard.waste import stock_choice_refused
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.kube.client import API_ERRORS, api_problem
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.records.pod import PodRecord, SlimPod
from preemption_toleration.records.pod_group import MemberRecord
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.clearing import Clearing
from preemption_toleration.steering.adapter.pod_writes import PodWrites, scheduler_of
from preemption_toleration.steering.adapter.record import QUEUE_LIMIT, SteeringRecord
from preemption_toleration.steering.adapter.replicas import OtherReplicas
from preemption_toleration.steering.adapter.reports import ACROSS_NODES, COMPONENT, SteeringReports, plan_fields
from preemption_toleration.steering.adapter.resume import resume_left
from preemption_toleration.steering.adapter.steering_leases import DONE, RELEASED, SteeringLeases
from preemption_toleration.steering.pacing import DEFAULT_PACE, DeclinedPlans, Pace, TokenBucket, shape_of
from preemption_toleration.steering.plan import (
    Declined,
    NotSteered,
    RefusedFor,
    SteeringPlan,
    Steps,
    blocking_search,
    refusal_search,
    search_plan,
)
from preemption_toleration.steering.recheck import victim_now
from preemption_toleration.telemetry.declared import SteeringOutcome

T = TypeVar("T")
logger = logging.getLogger("preemption_toleration.steering")
LOOK_AGAIN_SECONDS = 0.5  # a refusal with no preemptor to steer is looked at once more this much later


@dataclass(frozen=True)
class RefusedVictim:
    namespace: str
    name: str
    uid: str
    node: str
    preemptor: str | None = None  # "namespace/name" the guard refused it for
    again: bool = False  # looked at once already: the scheduler's nomination had not reached the cache


def refused_victim(victim: PodRecord) -> RefusedVictim | None:
    node = victim.node_name
    if not node:
        return None
    return RefusedVictim(victim.namespace, victim.name, victim.uid, node)


class ActionStopped(Exception):
    """A victim may not be preempted any more (judged again right before its DELETE): the rest are left."""


class Steerer:
    def __init__(
        self,
        api: ApiClient,
        view: Callable[[], ClusterView],
        mode: str,
        namespace: str,
        holder: str,
        metrics: SteeringMetrics,
        window_seconds: int = 60,
        rate: float = 2.0,
        burst: int = 5,
        problems: Callable[[], list[str]] = list,
        generation: Callable[[], int] = lambda: 0,
        pace: Pace = DEFAULT_PACE,
        clock: Callable[[], float] = time.perf_counter,
        events: EventRecorder | None = None,
    ) -> None:
        core = client.CoreV1Api(api)
        self.writes = PodWrites(core)
        self.leases = SteeringLeases(api, namespace, holder, window_seconds)
        # every replica's steering Leases, watched: what the other replicas' steering did
        self.replicas = OtherReplicas(self.leases, holder, window_seconds, logger)
        # the server's recorder (its Events name this component each), else one of its own, run with steering
        self.own_events = events is None
        self.events = events or EventRecorder(core, COMPONENT, logger, instance=holder)
        self.reports = SteeringReports(self.events, metrics, window_seconds)
        self.view = view
        self.audit = mode == "audit"
        self.namespace = namespace
        self.holder = holder
        self.metrics = metrics  # each outcome (a SteeringOutcome or the Declined reason), each plan's time
        self.problems = problems  # why the caches may not be decided from (empty: they may)
        self.generation = generation  # changes whenever a cache does
        self.pace = pace
        self.clock = clock
        self.declined_plans = DeclinedPlans()
        self.window = window_seconds
        self.bucket = TokenBucket(rate, burst)
        self.queue: asyncio.Queue[RefusedVictim] = asyncio.Queue(QUEUE_LIMIT)
        self.queued: dict[tuple[str, str], asyncio.Event] = {}  # victims queued, and when each is steered
        self.record = SteeringRecord()
        self.clearing = Clearing(self.writes, self.record, self.reports, metrics, self.audit)
        self.sending: set[asyncio.Task[Any]] = set()

    # --- the request path --------------------------------------------------------------------------------

    def refused(self, victim: PodRecord, preemptor: str | None = None) -> asyncio.Event | None:
        """The guard refused a scheduler's write on `victim`, judged against `preemptor`: look for the
        preemption to steer (no I/O). The event returned is set once that preemption is steered: the
        refusal's hold need not last, the scheduler's next attempt finds the preemptor nominated."""
        found = refused_victim(victim)
        if found is None:
            return None
        if self._of_groups(victim, preemptor):
            return None
        return self._enqueue(RefusedVictim(found.namespace, found.name, found.uid, found.node, preemptor))

    def _of_groups(self, victim: PodRecord, preemptor: str | None) -> bool:
        """Whether the refused preemption is one of or for a pod group, which steering declines (reported
        once per window and group, with an Event on the preemptor)."""
        namespace, _, name = (preemptor or "").partition("/")
        pending = self.view().pods.get((namespace, name)) if preemptor else None
        if isinstance(victim, MemberRecord):
            subject, detail = f"podgroup {victim.group.ref}", f"the victim is a member of PodGroup {victim.group.ref}"
        elif pending is not None and pending.pod_group is not None:
            subject = f"podgroup {pending.namespace}/{pending.pod_group}"
            detail = f"the preemptor is a member of PodGroup {pending.namespace}/{pending.pod_group}"
        else:
            return False
        detail += ACROSS_NODES
        self.reports.not_steered(subject, NotSteered(Declined.POD_GROUP, detail), pending)
        return True

    def _enqueue(self, item: RefusedVictim) -> asyncio.Event | None:
        """Queues the refused victim unless it is queued already; the event set once its preemption is steered
        (the queued one's, for a victim queued already), None when the queue is full (the scheduler retries:
        a later refusal brings it back)."""
        key = (item.namespace, item.name)
        if key in self.queued:
            return self.queued[key]
        try:
            self.queue.put_nowait(item)
        except asyncio.QueueFull:
            return None
        steered = self.queued[key] = asyncio.Event()
        return steered

    # --- the worker ----------------------------------------------------------------------------------------

    async def run_supervised(self, restart_after: float = 1.0) -> None:
        """The Event poster, the look at the Leases left acting, the Lease sweep and watch (not in audit, which
        writes nothing but Events and metrics and needs no right to Leases), and `run`, started again after an
        error nothing foresaw (logged with its traceback, counted `restarted`): steering never ends silently
        while the server runs. Ended, it ends them all."""
        if self.own_events:
            self.sending.add(asyncio.create_task(self.events.run(), name="steering-events"))
        self.sending.add(asyncio.create_task(self._resume(), name="steering-resume"))
        if not self.audit:
            self.sending.add(asyncio.create_task(self.leases.sweep_forever(), name="steering-lease-sweep"))
            self.sending.add(asyncio.create_task(self.replicas.lease_watch.run(), name="steering-lease-watch"))
        try:
            while True:
                try:
                    await self.run()
                except Exception:
                    self.metrics.count(SteeringOutcome.RESTARTED)
                    logger.exception("steering stopped by an error; it starts again", extra={"after": restart_after})
                await asyncio.sleep(restart_after)
        finally:
            for task in self.sending:
                task.cancel()

    async def run(self) -> None:
        while True:
            item = await self.queue.get()
            steered = self.queued.pop((item.namespace, item.name), None)
            await asyncio.sleep(0)  # a get from a non-empty queue does not yield: the loop's answers come first
            try:
                if await self._consider(item) and steered is not None:
                    steered.set()
            except GroupsNotCurrent as problem:  # a pod names a PodGroup the cache cannot tell of yet
                self.reports.not_steered(
                    f"{item.namespace}/{item.name}", NotSteered(Declined.STALE_CACHE, str(problem)), None
                )
            except Exception:
                self.metrics.count(SteeringOutcome.FAILED)
                logger.exception("steering failed", extra={"victim": f"{item.namespace}/{item.name}"})

    def _look_again(self, item: RefusedVictim) -> None:
        """The scheduler writes the nomination of the pod it preempts for after its preemption fails, so the
        refusal can reach steering first; and a pod nominated to a node where pods terminate by preemption
        preempts no more until they are gone (`PodEligibleToPreemptOthers`), so the scheduler may not try again
        for a long while. A refusal with no preemptor to steer is looked at once more, a moment later."""
        if item.again:
            return
        asyncio.get_running_loop().call_later(LOOK_AGAIN_SECONDS, self._enqueue, replace(item, again=True))

    def stale(self, subject: str, preemptor: SlimPod | None) -> bool:
        """Whether a cache is not current (reported so): nothing is planned or done then."""
        problems = self.problems()
        if problems:
            self.reports.not_steered(subject, NotSteered(Declined.STALE_CACHE, "; ".join(problems)), preemptor)
        return bool(problems)

    async def _plan(self, preemptor: SlimPod, view: ClusterView, now: datetime) -> SteeringPlan | NotSteered:
        """The plan, made in slices of the event loop (`_paced`). The nodes are tried from a random offset, as
        the scheduler's dry run tries them."""
        steered = self.record.steered.items()
        others = {uid for owner, (_, victims) in steered if owner != preemptor.uid for *_, uid in victims}
        others |= self.replicas.victims_for_others(preemptor.uid, now)  # and those other replicas steered
        offset = random.randrange(max(len(view.nodes), 1))
        ours = self.replicas.nominations(self.record, datetime.now(UTC))
        return await self._paced(search_plan(preemptor, view, now, offset, others, ours), self.metrics.planned)

    async def _paced(self, steps: Steps[T], spent: Callable[[float], None] = lambda seconds: None) -> T:
        """A search's result, its steps taken in slices of the event loop (`Pace`): the guard's answers wait
        for one slice at most. `spent`: told the loop's time the search took."""
        took = 0.0
        try:
            while True:
                started = reading = self.clock()
                try:
                    while reading - started < self.pace.slice_seconds:
                        next(steps)
                        reading = self.clock()
                finally:
                    took += reading - started
                await asyncio.sleep(self.pace.pause_after(reading - started))
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        finally:
            spent(took)

    async def _consider(self, item: RefusedVictim) -> bool:
        """Steers the preemption of one refused victim if it may; True when the preemption is steered (now,
        within the window, or its victims still terminating): the refusal's hold may end."""
        if self.stale(f"{item.namespace}/{item.name}", None):
            return False
        view = self.view()
        now = datetime.now(UTC)
        victim = view.pods.get((item.namespace, item.name))
        if victim is None or victim.uid != item.uid or victim.node_name != item.node:
            return False

        def refused_for(candidate: SlimPod) -> bool:
            """The guard refused the victim for this pod: it was judged against it, the victim tolerates it,
            or the stock scheduler's choice for it on the victim's node includes the victim and a pod that
            tolerates it (the guard judged another pod nominated there, of which it cannot tell this one)."""
            if item.preemptor == candidate.ref:
                return True
            exempt = ExemptionCheck(candidate, view, now)
            node = view.nodes.get(item.node)
            try:
                return exempt(victim) or (
                    node is not None and stock_choice_refused(candidate, victim, node, view.pods, view.budgets, exempt)
                )
            except PriorityClassNotFound:
                return False

        def steered_lately(candidate: SlimPod) -> bool:
            """This replica acted for it within the window, or another did (its Lease says so)."""
            acted_at = self.record.recent.get(candidate.uid)
            if acted_at is None or time.monotonic() - acted_at >= self.window:
                return self.replicas.acted_for(candidate, view, now)
            return not self.record.room_was_taken(candidate, view)

        nominated = list(view.pods.nominated_to(item.node))
        found = await self._paced(refusal_search(item.node, victim.priority, nominated, refused_for, steered_lately))
        if isinstance(found, NotSteered):
            self.reports.not_steered(f"{item.namespace}/{item.name}", found, None)
            self._look_again(item)
            return False
        if self._for_a_group(found):
            return False
        await self._unblock(found.first, view, now)
        if found.to_steer is None:
            self._look_again(item)
            return any(pod.uid in self.record.steered for pod in found.steered_lately)
        return await self._steer(found.to_steer, view, now)

    def _for_a_group(self, found: RefusedFor) -> bool:
        """Whether the pod steering would act for (clear the nominations that block it, or plan for it) is a
        member of a pod group, which steering declines before doing either: the scheduler preempts for the
        group across nodes, and an action for one member would be an action for the group in part."""
        member = next((pod for pod in (found.first, found.to_steer) if pod and pod.pod_group is not None), None)
        if member is None:
            return False
        detail = f"the preemptor is a member of PodGroup {member.namespace}/{member.pod_group}" + ACROSS_NODES
        self.reports.not_steered(
            f"podgroup {member.namespace}/{member.pod_group}", NotSteered(Declined.POD_GROUP, detail), member
        )
        return True

    async def _steer(self, found: SlimPod, view: ClusterView, now: datetime) -> bool:
        """Plans and carries out the preemption for one preemptor; True as `_consider`."""
        terminating = self.record.still_terminating(found.uid, view)
        if terminating is not None:
            # the scheduler waits for that node while they go; a plan elsewhere would preempt twice
            self.reports.not_steered(f"{found.namespace}/{found.name}", terminating, found)
            return True
        self.record.steered.pop(found.uid, None)  # an earlier action for it is over: it is planned afresh
        generation, shape = self.generation(), shape_of(found)
        if not self.declined_plans.due(found.uid, generation, time.monotonic(), shape):
            # declined before (it, or its shape for want of a node), and nothing changed or its wait is not over
            self.metrics.count(SteeringOutcome.UNCHANGED)
            return False
        plan = await self.fresh_plan(found, view, now)
        if isinstance(plan, NotSteered):
            no_node = shape if plan.reason is Declined.NO_NODE else None
            self.declined_plans.declined(found.uid, generation, time.monotonic(), no_node)
            self.reports.not_steered(f"{found.namespace}/{found.name}", plan, found)
            return False
        if self.stale(f"{found.namespace}/{found.name}", found):  # the caches went stale while it was planned
            return False
        if self.audit:
            self.declined_plans.forget(found.uid, shape)
            self.audited(plan)
            return False
        if not await self.act(plan, retake=self.record.retaken(found.uid)):
            return False  # an action given up waits longer each time in a row (`_give_up`)
        self.declined_plans.forget(found.uid, shape)
        self.metrics.count(SteeringOutcome.STEERED)
        return True

    async def fresh_plan(self, found: SlimPod, view: ClusterView, now: datetime) -> SteeringPlan | NotSteered:
        """The plan for `found` from the caches, declined when a victim is a pod group's member."""
        plan = await self._plan(found, view, now)
        if not isinstance(plan, NotSteered) and (members := [v for v in plan.victims if v.pod_group is not None]):
            # the scheduler would take their groups whole, across nodes: a plan of this node's pods cannot say
            groups = ", ".join(sorted({f"{member.namespace}/{member.pod_group}" for member in members}))
            plan = NotSteered(Declined.POD_GROUP, f"its victims on {plan.node} include members of PodGroup {groups}")
        return plan

    def audited(self, plan: SteeringPlan, left_by: str | None = None) -> None:
        """Audit mode: the plan logged, counted and told on the preemptor; nothing else is written."""
        found, fields = plan.preemptor, plan_fields(plan)
        self.record.acted(found.uid, time.monotonic())
        self.metrics.count(SteeringOutcome.AUDITED)
        logger.info("preemption would be steered", extra={**fields, "left_by": left_by})
        after = f" (finishing the action of Lease {left_by}, left acting)" if left_by else ""
        self.reports.on_pod(
            found,
            "PreemptionWouldBeSteered",
            f"Would preempt {fields['victims']} on node {plan.node} for this pod{after} (steering in audit mode)",
            "Normal",
        )

    async def act(self, plan: SteeringPlan, retake: bool = False, left_version: str | None = None) -> bool:
        """The plan carried out once its turn in the rate limit came and its Lease is claimed (`left_version`:
        taken over from a Lease left acting at that version); True when done. A write that fails, or a victim
        that may not be preempted any more, gives the action up (`_give_up`)."""
        wait = self.bucket.wait_seconds()
        if wait > 0:
            await asyncio.sleep(wait)
        uid = plan.preemptor.uid
        try:
            claimed = await self.leases.claim(plan, retake=retake, left_version=left_version)
        except API_ERRORS as error:  # a create that timed out may have been written: released if so
            self.bucket.refund()
            await self._give_up(plan, SteeringOutcome.FAILED, api_problem(error))
            return False
        self.record.acted(uid, time.monotonic())  # settled: this replica's action, or another's in this window
        if not claimed:
            self.bucket.refund()
            self.metrics.count(SteeringOutcome.CLAIMED_ELSEWHERE)
            return False
        logger.info("steering a preemption", extra=plan_fields(plan))
        try:
            return await self._carry_out(plan)
        except ActionStopped as stopped:
            await self._give_up(plan, SteeringOutcome.STOPPED, str(stopped))
        except API_ERRORS as error:
            await self._give_up(plan, SteeringOutcome.FAILED, api_problem(error))
        return False

    async def _give_up(self, plan: SteeringPlan, outcome: SteeringOutcome, problem: str) -> None:
        """An action that failed or stopped leaves nothing behind in this replica: not in progress, not lately
        steered; its preemptor is planned again after a wait (1 s, doubled up to 10 s), whatever the caches
        do, and its Lease is released so that any replica may. What it deleted already stays deleted."""
        found = plan.preemptor
        self.record.forget(found.uid)
        self.declined_plans.declined(found.uid, None, time.monotonic())
        self.metrics.count(outcome)
        logger.warning("steering: an action was given up", extra={**plan_fields(plan), "problem": problem})
        self.reports.on_pod(
            found,
            "PreemptionSteeringStopped",
            f"Steering gave up its preemption on node {plan.node} for this pod: {problem}; the scheduler's next "
            "attempt is judged afresh",
            "Warning",
        )
        await self._mark(found.uid, RELEASED)  # failing, it holds the other replicas off until its window ends

    async def _unblock(self, preemptor: SlimPod, view: ClusterView, now: datetime) -> None:
        """Clears the nominations that alone keep the preemptor from its nominated node, where upstream's
        plugin would not have made them (`blocking_nominations`); the scheduler then binds it there."""
        node = preemptor.nominated_node
        if node is None:
            return
        ours = self.replicas.nominations(self.record, datetime.now(UTC))
        for pod in await self._paced(blocking_search(preemptor, view, now, ours)):
            await self.clearing.clear(pod, node, preemptor.ref)

    async def _carry_out(self, plan: SteeringPlan) -> bool:
        """The scheduler's executor, for one plan: nominate the preemptor first (while its victims terminate
        by preemption there, the scheduler waits for that node instead of preempting elsewhere), clear the
        nominations there upstream would not have made (`plan.cleared`), then mark and delete each victim,
        each judged again against the caches of that moment (ActionStopped when one may not be preempted any
        more) and each write under the pod's UID; post the Events and record the Lease done."""
        preemptor, node = plan.preemptor, plan.node
        namespace, name, uid = preemptor.namespace, preemptor.name, preemptor.uid
        scheduler = scheduler_of(preemptor)
        pending = await self.writes.still_pending(namespace, name, uid)
        if not pending or not await self.writes.nominate(namespace, name, uid, node):
            # bound (or gone) since the plan: the scheduler got there first
            self.metrics.count(SteeringOutcome.OVERTAKEN)
            await self._finish(uid)
            return False
        self.record.in_progress(plan)  # from its first write on, while its victims are there
        for pod in plan.cleared:
            await self.clearing.clear(pod, node, f"{namespace}/{name}")
        deleted: list[str] = []
        for victim in plan.to_delete:
            if await self._preempt(preemptor, node, victim, scheduler):
                deleted.append(f"{victim.namespace}/{victim.name}")
        self.reports.on_pod(
            preemptor,
            "PreemptionSteered",
            f"Preempted {', '.join(deleted) or 'no pod'} on node {node} for this pod and nominated it there, as "
            "upstream's PreemptionToleration would: the scheduler's own choice of victims was refused",
            "Normal",
        )
        await self._finish(uid)
        return True

    async def _preempt(self, preemptor: SlimPod, node: str, victim: SlimPod, scheduler: str) -> bool:
        """One victim judged again, marked and deleted, under its UID; False when it is gone already (or another
        pod of that name is there now); ActionStopped when it may not be preempted any more."""
        problems = self.problems()
        if problems:
            raise ActionStopped("a cache is not current: " + "; ".join(problems))
        judged = victim_now(victim, node, preemptor, self.view(), datetime.now(UTC))
        if isinstance(judged, str):
            raise ActionStopped(judged)
        if judged is None:
            return False
        if not await self.writes.mark_and_delete(victim, scheduler):
            return False
        self.reports.on_pod(
            victim,
            "Preempted",
            f"Preempted by pod {preemptor.uid} on node {node} (steered by preemption-toleration, as upstream's "
            "PreemptionToleration would: the scheduler's own choice was refused)",
            "Normal",
            related=pod_ref(preemptor.namespace, preemptor.name, preemptor.uid),
        )
        return True

    async def _finish(self, uid: str) -> None:
        await self._mark(uid, DONE)  # failing, done all the same: the Lease holds the others off for its window

    async def _mark(self, uid: str, state: str) -> None:
        """This replica's Lease for the preemptor says `state`, if this replica still holds it; a failure is
        logged, not raised (the Lease's window ends its hold)."""
        try:
            if not await self.leases.mark(uid, state):
                logger.info("steering: a Lease was not ours to mark any more", extra={"preemptor": uid, "state": state})
        except API_ERRORS as error:
            logger.warning("steering: could not mark a Lease", extra={"state": state, "problem": api_problem(error)})

    async def _resume(self) -> None:
        """The Leases left acting by a replica that stopped in the middle, looked at once (`resume`)."""
        await resume_left(self)
