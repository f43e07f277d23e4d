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
the plan (the protocol is `steering_leases`'). Each victim is judged again right before its DELETE
(`steering.recheck`): a policy applied meanwhile wins, and the action stops there. A write that fails, or an
action that stops, gives the action up: its Lease is released, nothing of it is remembered as in progress,
and the preemptor is planned again after a wait (1 s, doubled up to 10 s). A replica that starts finds the
Leases left acting by one that stopped in the middle; a Lease only says which preemptor it acted for
(`steering.resumption`): a fresh plan chooses the victims, under the claim and rate limit of a live action.
Actions are rate-limited per replica (`steering.pacing.TokenBucket`). In audit mode the plan is logged,
counted and posted as an Event on the preemptor, and nothing else is written, not even a Lease.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import pod_ref
from preemption_toleration.core.exemption import PriorityClassNotFound
from preemption_toleration.core.pods import PREEMPTION_MARK
from preemption_toleration.core.times import rfc3339
from preemption_toleration.extender.decisions import ExemptionCheck
from preemption_toleration.guard.waste import stock_choice_refused
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.kube.client import (
    API_ERRORS,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    answer_of,
    api_problem,
    patch_pod_status,
)
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kube.informer import DEFAULT_STALE_AFTER_SECONDS, DictStore, Informer
from preemption_toleration.records.pod import DEFAULT_SCHEDULER, NO_CONSTRAINTS, PodRecord, SlimPod
from preemption_toleration.records.pod_group import MemberRecord
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.steering_leases import (
    DONE,
    LEASE_PREFIX,
    NODE,
    REFUSED,
    RELEASED,
    LeaseState,
    SteeringLeases,
    acted_lately,
    steered_nominations,
    victims_elsewhere,
    victims_of,
)
from preemption_toleration.steering.pacing import DEFAULT_PACE, DeclinedPlans, Pace, TokenBucket, shape_of
from preemption_toleration.steering.plan import (
    EVERY_NOMINATION,
    Declined,
    NotSteered,
    RefusedFor,
    SteeringPlan,
    Steps,
    blocking_search,
    fits_on,
    refusal_search,
    search_plan,
)
from preemption_toleration.steering.recheck import victim_now
from preemption_toleration.steering.resumption import LeftPlan, borne_out, preemptor_of_left_plan
from preemption_toleration.telemetry.declared import SteeringOutcome

T = TypeVar("T")
logger = logging.getLogger("preemption_toleration.steering")
COMPONENT = "preemption-toleration-steering"
QUEUE_LIMIT = 1000
# A blocking nomination cleared is cleared again, once the stock scheduler has made it again, no sooner. Well
# under the guard's retry hold (1 s), which paces both pods' attempts: the blocking pod nominates itself again
# at the start of each of its attempts and the preemptor tries a moment later; a limit as long as the hold
# locks the clearing in step with the preemptor's refusal, just after its attempt, and it never binds (1.35).
CLEAR_AGAIN_SECONDS = 0.25
LOOK_AGAIN_SECONDS = 0.5  # a refusal with no preemptor to steer is looked at once more this much later
REQUEST_TIMEOUT = 10
LIST_AGAIN_SECONDS = (1.0, 30.0)  # the first and the longest wait before the Leases left are listed again
_ACROSS_NODES = " (the scheduler preempts groups across nodes; steering makes a pod's preemption on one node)"


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


def scheduler_of(pod: SlimPod) -> str:
    return str((pod.constraints or NO_CONSTRAINTS).pod["spec"].get("schedulerName") or DEFAULT_SCHEDULER)


def disruption_target(scheduler: str, now: datetime) -> dict[str, Any]:
    """The condition kube-scheduler's executor gives a victim before deleting it (a strategic merge patch:
    conditions merge by type)."""
    kind, state, reason = PREEMPTION_MARK
    return {
        "status": {
            "conditions": [
                {
                    "type": kind,
                    "status": state,
                    "reason": reason,
                    "message": f"{scheduler}: preempting to accommodate a higher priority pod",
                    "lastTransitionTime": rfc3339(now),
                }
            ]
        }
    }


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
        self.core = client.CoreV1Api(api)
        self.leases = SteeringLeases(api, namespace, holder, window_seconds)
        # every replica's steering Leases, watched: the nominations any replica's steering made (`_ours`)
        self.lease_store: DictStore[LeaseState] = DictStore(LeaseState.from_json)
        self.lease_watch = Informer("steering-leases", self.leases.list_leases, self.lease_store, logger)
        # the server's recorder (its Events name this component each), else one of its own, run with steering
        self.own_events = events is None
        self.events = events or EventRecorder(self.core, COMPONENT, logger, instance=holder)
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
        self.recent: dict[str, float] = {}  # preemptor UID -> when this replica last acted or audited
        # preemptor UID -> (node, victims) this replica steered it to: in progress while a victim is there
        self.steered: dict[str, tuple[str, tuple[tuple[str, str, str], ...]]] = {}
        self.declined: dict[tuple[str, Declined], float] = {}  # (preemptor or victim, reason) -> last report
        self.cleared: dict[str, float] = {}  # pod UID -> when its blocking nomination was last cleared
        self.room_taken: set[str] = set()  # preemptors steered whose room another pod took: their Lease is retaken
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
        detail += _ACROSS_NODES
        self._report_declined(subject, NotSteered(Declined.POD_GROUP, detail), pending)
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
            self.sending.add(asyncio.create_task(self.lease_watch.run(), name="steering-lease-watch"))
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
                self._report_declined(
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

    def _report_declined(self, subject: str, result: NotSteered, preemptor: SlimPod | None) -> None:
        self.metrics.count(result.reason)
        now = time.monotonic()
        key = (subject, result.reason)
        if now - self.declined.get(key, -1e9) < self.window:
            return  # reported at most once per window
        if len(self.declined) > 10 * QUEUE_LIMIT:
            self.declined.clear()
        self.declined[key] = now
        logger.info(
            "preemption not steered", extra={"subject": subject, "reason": result.reason.value, "detail": result.detail}
        )
        if preemptor is not None and result.reason in (Declined.UNJUDGED, Declined.POD_GROUP):
            self._event(
                preemptor, "PreemptionNotSteered", f"Not steered: {result.detail}; the guard alone stands", "Warning"
            )

    def _stale(self, subject: str, preemptor: SlimPod | None) -> bool:
        problems = self.problems()
        if problems:
            self._report_declined(subject, NotSteered(Declined.STALE_CACHE, "; ".join(problems)), preemptor)
        return bool(problems)

    async def _plan(self, preemptor: SlimPod, view: ClusterView, now: datetime) -> SteeringPlan | NotSteered:
        """The plan, made in slices of the event loop (`_paced`). The nodes are tried from a random offset, as
        the scheduler's dry run tries them."""
        others = {uid for owner, (_, victims) in self.steered.items() if owner != preemptor.uid for *_, uid in victims}
        if self.lease_watch.health(DEFAULT_STALE_AFTER_SECONDS) is None:  # and those other replicas steered
            others |= victims_elsewhere(self.lease_store.items.values(), preemptor.uid, now)
        offset = random.randrange(max(len(view.nodes), 1))
        return await self._paced(search_plan(preemptor, view, now, offset, others, self._ours()), self.metrics.planned)

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
        if self._stale(f"{item.namespace}/{item.name}", None):
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
            acted_at = self.recent.get(candidate.uid)
            if acted_at is None or time.monotonic() - acted_at >= self.window:
                return self._steered_elsewhere(candidate, view, now)
            return not self._room_taken(candidate, view)

        nominated = list(view.pods.nominated_to(item.node))
        found = await self._paced(refusal_search(item.node, victim.priority, nominated, refused_for, steered_lately))
        if isinstance(found, NotSteered):
            self._report_declined(f"{item.namespace}/{item.name}", found, None)
            self._look_again(item)
            return False
        if self._for_a_group(found):
            return False
        await self._unblock(found.first, view, now)
        if found.to_steer is None:
            self._look_again(item)
            return any(pod.uid in self.steered for pod in found.steered_lately)
        return await self._steer(found.to_steer, view, now)

    def _for_a_group(self, found: RefusedFor) -> bool:
        """Whether the pod steering would act for (clear the nominations that block it, or plan for it) is a
        member of a pod group, which steering declines before doing either: the scheduler preempts for the
        group across nodes, and an action for one member would be an action for the group in part."""
        member = next((pod for pod in (found.first, found.to_steer) if pod and pod.pod_group is not None), None)
        if member is None:
            return False
        detail = f"the preemptor is a member of PodGroup {member.namespace}/{member.pod_group}" + _ACROSS_NODES
        self._report_declined(
            f"podgroup {member.namespace}/{member.pod_group}", NotSteered(Declined.POD_GROUP, detail), member
        )
        return True

    async def _steer(self, found: SlimPod, view: ClusterView, now: datetime) -> bool:
        """Plans and carries out the preemption for one preemptor; True as `_consider`."""
        terminating = self._still_terminating(found.uid, view)
        if terminating is not None:
            # the scheduler waits for that node while they go; a plan elsewhere would preempt twice
            self._report_declined(f"{found.namespace}/{found.name}", terminating, found)
            return True
        self.steered.pop(found.uid, None)  # an earlier action for it is over: it is planned afresh
        generation, shape = self.generation(), shape_of(found)
        if not self.declined_plans.due(found.uid, generation, time.monotonic(), shape):
            # declined before (it, or its shape for want of a node), and nothing changed or its wait is not over
            self.metrics.count(SteeringOutcome.UNCHANGED)
            return False
        plan = await self._fresh_plan(found, view, now)
        if isinstance(plan, NotSteered):
            no_node = shape if plan.reason is Declined.NO_NODE else None
            self.declined_plans.declined(found.uid, generation, time.monotonic(), no_node)
            self._report_declined(f"{found.namespace}/{found.name}", plan, found)
            return False
        if self._stale(f"{found.namespace}/{found.name}", found):  # the caches went stale while it was planned
            return False
        if self.audit:
            self.declined_plans.forget(found.uid, shape)
            self._audit(plan)
            return False
        retake = found.uid in self.room_taken
        self.room_taken.discard(found.uid)
        if not await self._act(plan, retake=retake):
            return False  # an action given up waits longer each time in a row (`_give_up`)
        self.declined_plans.forget(found.uid, shape)
        self.metrics.count(SteeringOutcome.STEERED)
        return True

    async def _fresh_plan(self, found: SlimPod, view: ClusterView, now: datetime) -> SteeringPlan | NotSteered:
        """The plan for `found` from the caches, declined when a victim is a pod group's member."""
        plan = await self._plan(found, view, now)
        if not isinstance(plan, NotSteered) and (members := [v for v in plan.victims if v.pod_group is not None]):
            # the scheduler would take their groups whole, across nodes: a plan of this node's pods cannot say
            groups = ", ".join(sorted({f"{member.namespace}/{member.pod_group}" for member in members}))
            plan = NotSteered(Declined.POD_GROUP, f"its victims on {plan.node} include members of PodGroup {groups}")
        return plan

    def _audit(self, plan: SteeringPlan, left_by: str | None = None) -> None:
        """Audit mode: the plan logged, counted and told on the preemptor; nothing else is written."""
        found, fields = plan.preemptor, _fields(plan)
        _remember(self.recent, found.uid, time.monotonic())
        self.metrics.count(SteeringOutcome.AUDITED)
        logger.info("preemption would be steered", extra={**fields, "left_by": left_by})
        after = f" (finishing the action of Lease {left_by}, left acting)" if left_by else ""
        self._event(
            found,
            "PreemptionWouldBeSteered",
            f"Would preempt {fields['victims']} on node {plan.node} for this pod{after} (steering in audit mode)",
            "Normal",
        )

    async def _act(self, plan: SteeringPlan, retake: bool = False, left_version: str | None = None) -> bool:
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
        _remember(self.recent, uid, time.monotonic())  # settled: this replica's action, or another's in this window
        if not claimed:
            self.bucket.refund()
            self.metrics.count(SteeringOutcome.CLAIMED_ELSEWHERE)
            return False
        logger.info("steering a preemption", extra=_fields(plan))
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
        self.steered.pop(found.uid, None)
        self.recent.pop(found.uid, None)
        self.declined_plans.declined(found.uid, None, time.monotonic())
        self.metrics.count(outcome)
        logger.warning("steering: an action was given up", extra={**_fields(plan), "problem": problem})
        self._event(
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
        for pod in await self._paced(blocking_search(preemptor, view, now, self._ours())):
            await self._clear_blocking(pod, node, preemptor.ref)

    def _steered_elsewhere(self, preemptor: SlimPod, view: ClusterView, now: datetime) -> bool:
        """Another replica acted for this preemptor within the window, by its Lease (`acted_lately`),
        and the preemptor waits for its victims to go or fits on its node once they went; not when another pod
        took that room (`_room_taken`), nor while the watch of the Leases is not current."""
        if self.lease_watch.health(DEFAULT_STALE_AFTER_SECONDS) is not None:
            return False
        lease = self.lease_store.items.get(LEASE_PREFIX + preemptor.uid)
        if lease is None or lease.holder == self.holder or not acted_lately(lease, self.window, now):
            return False
        node = lease.annotations.get(NODE)
        if not node:
            return False
        victims = {uid for *_, uid in victims_of(lease.annotations)}
        return any(pod.uid in victims for pod in view.pods.on_node(node)) or fits_on(preemptor, node, view)

    def _ours(self) -> Mapping[str, str]:
        """The pods steering nominated, this replica or another (by their Leases), by UID, to the node of each:
        their nominations are never cleared; every nomination, while the watch of the Leases is not current
        (another replica's could not be told apart)."""
        if self.lease_watch.health(DEFAULT_STALE_AFTER_SECONDS) is not None:
            return EVERY_NOMINATION
        found = steered_nominations(self.lease_store.items.values(), datetime.now(UTC))
        found.update((uid, node) for uid, (node, _) in self.steered.items())
        return found

    async def _clear_blocking(self, pod: SlimPod, node: str, preemptor: str) -> None:
        """Clears one nomination upstream would not have made, at most once per CLEAR_AGAIN_SECONDS a pod;
        counted, logged and told on the pod by an Event."""
        last = self.cleared.get(pod.uid)
        if last is not None and time.monotonic() - last < CLEAR_AGAIN_SECONDS:
            return
        self.cleared[pod.uid] = time.monotonic()
        if len(self.cleared) > 10 * QUEUE_LIMIT:
            del self.cleared[next(iter(self.cleared))]
        fields = {"pod": f"{pod.namespace}/{pod.name}", "node": node, "preemptor": preemptor}
        if self.audit:
            logger.info("a blocking nomination would be cleared", extra=fields)
            return
        if not await self._clear_nomination(pod, node):
            return
        self.metrics.count(SteeringOutcome.UNBLOCKED)
        logger.info("a blocking nomination cleared", extra=fields)
        self._event(
            pod,
            "NominationCleared",
            f"Nominated to node {node}, where it fits only if pods that tolerate it go, ahead of {preemptor}, "
            "which is placed there: cleared, as upstream's PreemptionToleration would not have nominated it",
            "Normal",
        )

    async def _clear_nomination(self, pod: SlimPod, node: str) -> bool:
        """Removes the pod's `status.nominatedNodeName` if it is still `node`, under its UID; False when the
        pod is gone, another, or nominated elsewhere now."""
        patch = [
            {"op": "test", "path": "/metadata/uid", "value": pod.uid},
            {"op": "test", "path": "/status/nominatedNodeName", "value": node},
            {"op": "remove", "path": "/status/nominatedNodeName"},
        ]
        try:
            await patch_pod_status(self.core, pod.namespace, pod.name, patch, JSON_PATCH, REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status not in (404, 409, 422):  # gone, or a test failed (another pod, another node)
                raise
            return False
        return True

    def _still_terminating(self, preemptor_uid: str, view: ClusterView) -> NotSteered | None:
        """In progress: victims this replica deleted for the preemptor are still in the cache."""
        steered = self.steered.get(preemptor_uid)
        if steered is None:
            return None
        node, victims = steered
        left = [f"{n}/{v}" for n, v, uid in victims if (pod := view.pods.get((n, v))) is not None and pod.uid == uid]
        if not left:
            return None
        return NotSteered(Declined.IN_PROGRESS, f"its victims on {node} are still terminating: {', '.join(left)}")

    def _room_taken(self, preemptor: SlimPod, view: ClusterView) -> bool:
        """Steered by this replica, its victims gone, and yet the preemptor, still pending, does not fit on the
        node it was steered to beside the pods placed there: another pod took the room (the stock scheduler may
        have preempted the same victims for a pod it served first). Planned again without waiting for the
        window."""
        steered = self.steered.get(preemptor.uid)
        if steered is None or self._still_terminating(preemptor.uid, view) is not None:
            return False
        node = steered[0]
        if fits_on(preemptor, node, view):
            return False
        logger.info(
            "a steered preemptor's room was taken: planned again",
            extra={"preemptor": f"{preemptor.namespace}/{preemptor.name}", "node": node},
        )
        del self.steered[preemptor.uid]
        self.recent.pop(preemptor.uid, None)
        self.room_taken.add(preemptor.uid)
        if len(self.room_taken) > 10 * QUEUE_LIMIT:
            self.room_taken.clear()
        return True

    async def _carry_out(self, plan: SteeringPlan) -> bool:
        """The scheduler's executor, for one plan: nominate the preemptor first (while its victims terminate
        by preemption there, the scheduler waits for that node instead of preempting elsewhere), clear the
        nominations there upstream would not have made (`plan.cleared`), then mark and delete each victim,
        each judged again against the caches of that moment (ActionStopped when one may not be preempted any
        more) and each write under the pod's UID; post the Events and record the Lease done."""
        preemptor, node = plan.preemptor, plan.node
        namespace, name, uid = preemptor.namespace, preemptor.name, preemptor.uid
        scheduler = scheduler_of(preemptor)
        preemptor_ref = pod_ref(namespace, name, uid)
        if not await self._still_pending(namespace, name, uid) or not await self._nominate(namespace, name, uid, node):
            # bound (or gone) since the plan: the scheduler got there first
            self.metrics.count(SteeringOutcome.OVERTAKEN)
            await self._finish(uid)
            return False
        # in progress from its first write on: kept while its victims are there (`_still_terminating`)
        _remember(self.steered, uid, (node, tuple((pod.namespace, pod.name, pod.uid) for pod in plan.to_delete)))
        for pod in plan.cleared:
            await self._clear_blocking(pod, node, f"{namespace}/{name}")
        deleted: list[str] = []
        for victim in plan.to_delete:
            if await self._preempt(preemptor, node, victim, scheduler):
                deleted.append(f"{victim.namespace}/{victim.name}")
        self.events.post(
            preemptor_ref,
            "Normal",
            "PreemptionSteered",
            f"Preempted {', '.join(deleted) or 'no pod'} on node {node} for this pod and nominated it there, as "
            "upstream's PreemptionToleration would: the scheduler's own choice of victims was refused",
            component=COMPONENT,
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
        try:
            mark = {"metadata": {"uid": victim.uid}, **disruption_target(scheduler, datetime.now(UTC))}
            await patch_pod_status(
                self.core, victim.namespace, victim.name, mark, STRATEGIC_MERGE_PATCH, REQUEST_TIMEOUT
            )
            await answer_of(  # the pod the API server returns is not read: bytes, no model built
                self.core.delete_namespaced_pod(
                    victim.name,
                    victim.namespace,
                    body=client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=victim.uid)),
                    _request_timeout=REQUEST_TIMEOUT,
                    _preload_content=False,
                )
            )
        except ApiException as error:
            # gone, or another pod of that name now (its UID differs: 409, or 422 for the mark)
            if error.status not in (404, 409, 422):
                raise
            return False
        self.events.post(
            pod_ref(victim.namespace, victim.name, victim.uid),
            "Normal",
            "Preempted",
            f"Preempted by pod {preemptor.uid} on node {node} (steered by preemption-toleration, as upstream's "
            "PreemptionToleration would: the scheduler's own choice was refused)",
            related=pod_ref(preemptor.namespace, preemptor.name, preemptor.uid),
            component=COMPONENT,
        )
        return True

    async def _nominate(self, namespace: str, name: str, uid: str, node: str) -> bool:
        """The preemptor's `status.nominatedNodeName`, under its UID; False when it is gone or bound."""
        try:
            nomination = {"metadata": {"uid": uid}, "status": {"nominatedNodeName": node}}
            await patch_pod_status(self.core, namespace, name, nomination, MERGE_PATCH, REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status not in (404, 409, 422):  # gone, another pod, or bound (a bound pod takes none)
                raise
            return False
        return True

    async def _still_pending(self, namespace: str, name: str, uid: str) -> bool:
        """Read from the API server, not the cache: the scheduler may have bound it a moment ago."""
        try:
            pod = await self.core.read_namespaced_pod(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return bool(pod.metadata.uid == uid and not pod.spec.node_name and not pod.metadata.deletion_timestamp)

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
        """Acts for the preemptors of the Leases left acting by a replica that stopped in the middle, each as a
        fresh plan says (`steering.resumption`), its errors logged and counted. Waits until the caches are
        current, since each is planned from them; the list is made again, after a growing wait, until it is
        made once."""
        wait, longest = LIST_AGAIN_SECONDS
        while True:
            while self.problems():  # noqa: ASYNC110 - "current" is several caches' health, polled
                await asyncio.sleep(1)
            try:
                left = await self.leases.left(datetime.now(UTC))
                break
            except API_ERRORS as error:
                if self.audit and isinstance(error, ApiException) and error.status == 403:
                    logger.info("steering (audit): no right to list Leases, so no action left acting is reported")
                    return
                self.metrics.count(SteeringOutcome.FAILED)
                logger.warning(
                    "steering: could not list the Leases left acting; listing again",
                    extra={"problem": api_problem(error), "after": wait},
                )
            except Exception:  # nothing foresaw it (a Lease of another shape): said, and listed again
                self.metrics.count(SteeringOutcome.FAILED)
                logger.exception("steering: could not read the Leases left acting; listing again")
            await asyncio.sleep(wait)
            wait = min(wait * 2, longest)
        for lease_name, plan in left:
            try:
                await self._resume_one(lease_name, plan)
            except Exception:
                self.metrics.count(SteeringOutcome.FAILED)
                logger.exception("steering: could not finish an action left in the middle", extra={"lease": lease_name})
        logger.info("steering: the actions left in the middle were looked at", extra={"leases": len(left)})

    async def _resume_one(self, lease_name: str, left: LeftPlan) -> None:
        """A Lease left acting asks for its preemptor: a fresh plan answers, and is carried out only where it
        bears the left one out."""
        view, now = self.view(), datetime.now(UTC)
        found = preemptor_of_left_plan(left, view, now)
        if isinstance(found, str):
            await self._refuse_left(lease_name, found, left.version)
            return
        plan = await self._fresh_plan(found, view, now)
        problem = f"a fresh plan declines it: {plan.detail}" if isinstance(plan, NotSteered) else borne_out(left, plan)
        if problem is not None:
            await self._refuse_left(lease_name, problem, left.version)
            return
        assert isinstance(plan, SteeringPlan)
        if self._stale(f"{found.namespace}/{found.name}", found):
            return  # left acting until its window ends; the guard's next refusal plans the preemption again
        if self.audit:
            self._audit(plan, left_by=lease_name)
            return
        logger.info("steering: finishing an action left in the middle", extra={"lease": lease_name})
        if await self._act(plan, left_version=left.version):
            self.metrics.count(SteeringOutcome.RESUMED)

    async def _refuse_left(self, lease_name: str, reason: str, version: str) -> None:
        """A Lease left acting that the cluster does not bear out: said, counted and (but in audit) marked, if
        nobody wrote it since it was read (a replica starting beside this one may have taken it over)."""
        self.metrics.count(SteeringOutcome.RESUME_REFUSED)
        logger.warning(
            "steering: an action left in the middle is not finished", extra={"lease": lease_name, "reason": reason}
        )
        if not self.audit:
            await self.leases.mark(lease_name.removeprefix(LEASE_PREFIX), REFUSED, version=version)

    # --- Events ----------------------------------------------------------------------------------------------

    def _event(self, pod: SlimPod, reason: str, message: str, kind: str) -> None:
        self.events.post(pod_ref(pod.namespace, pod.name, pod.uid), kind, reason, message, component=COMPONENT)


def _fields(plan: SteeringPlan) -> dict[str, str]:
    preemptor = plan.preemptor
    victims = ", ".join(f"{pod.namespace}/{pod.name}" for pod in plan.victims)
    return {"preemptor": f"{preemptor.namespace}/{preemptor.name}", "node": plan.node, "victims": victims}


def _remember(memory: dict[str, Any], key: str, value: Any) -> None:
    """Kept within 10 x QUEUE_LIMIT entries: the oldest goes first."""
    memory.pop(key, None)
    memory[key] = value
    if len(memory) > 10 * QUEUE_LIMIT:
        del memory[next(iter(memory))]
