"""One reconcile over everything the watches saw: plan, write what differs, report in the status.

Reconciles are serialized by a lock: the plan is global (ownership, conflicts), and each run reads the
latest caches, so a burst of events converges in a few runs and a converged state writes nothing.

Write-through: the watch caches see our own writes only later, so a run that starts before they do would
write the same change again. Each write's response (the object as the server stored it) is kept until
the cache moves past the version it was written over, and each run plans on the newer of the two.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, TypeVar

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import PLURAL
from preemption_toleration.api.resources import ClassKind, ObjectRef
from preemption_toleration.governance.planner import (
    ClassWrite,
    PolicyOutcome,
    Reason,
    apply_body,
    failed_outcome,
    plan_kinds,
)
from preemption_toleration.governance.status import READY, build_status, condition_of, status_differs
from preemption_toleration.kube.client import API_ERRORS, api_problem
from preemption_toleration.kueue.policy_condition import CONDITION as PRIORITY_BOOST
from preemption_toleration.operator.metrics import OperatorMetrics
from preemption_toleration.operator.writes import apply_class_annotations, patch_policy_status
from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import ClassView, class_view
from preemption_toleration.telemetry.declared import Result, WriteAction

# (object reference, type "Normal"/"Warning", reason, message)
EventPoster = Callable[[ObjectRef, str, str, str], None]
ClassApplier = Callable[[ApiClient, Mapping[str, Any], str], Awaitable[Any]]
StatusPatcher = Callable[[ApiClient, str, Mapping[str, Any], Mapping[str, Any], str], Awaitable[Any]]
V = TypeVar("V", ClassView, PolicyView)
ClassKey = tuple[ClassKind, str]


@dataclass
class ReconcileResult:
    writes: int = 0
    status_patches: int = 0
    failures: list[str] = field(default_factory=list)  # what failed: retried by the next reconcile
    # the policies whose status write found them changed since read (409): the change plans them again; not a
    # failure (the webhook server writes a policy's PriorityBoost condition beside ours)
    superseded: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Written(Generic[V]):
    """What one of our writes made of an object, until the watch cache shows it too."""

    over_version: str  # the resourceVersion the cache showed when we wrote
    view: V


# Writes in flight at once: a burst of thousands of classes is written in seconds, without flooding the
# API server (client-go's default client allows 5 queries per second, bursts of 10; we answer to
# API Priority and Fairness instead).
WRITE_CONCURRENCY = 16


async def _bounded(jobs: Iterable[Awaitable[None]], limit: int = WRITE_CONCURRENCY) -> None:
    """Runs the jobs with at most `limit` at once."""
    gate = asyncio.Semaphore(limit)

    async def gated(job: Awaitable[None]) -> None:
        async with gate:
            await job

    await asyncio.gather(*(gated(job) for job in jobs))


def _log_key(kind: ClassKind) -> str:
    """The log field that names a class of `kind` ("priorityClass", "workloadPriorityClass")."""
    return kind.value[0].lower() + kind.value[1:]


def _ready_reason(status: Mapping[str, Any]) -> tuple[str | None, str | None]:
    ready = condition_of(status, READY) or {}
    return ready.get("reason"), ready.get("message")


class Reconciler:
    def __init__(
        self,
        api: ApiClient,
        field_manager: str,
        post_event: EventPoster,
        logger: logging.Logger,
        apply_class: ClassApplier = apply_class_annotations,
        patch_status: StatusPatcher = patch_policy_status,
        metrics: OperatorMetrics | None = None,
        kinds: tuple[ClassKind, ...] = (ClassKind.PRIORITY_CLASS,),
    ) -> None:
        """`kinds`: the kinds of class it governs (Kueue's WorkloadPriorityClasses with --kueue on); a policy of
        another kind is told so in its status."""
        self.metrics = metrics or OperatorMetrics()
        self.api = api
        self.field_manager = field_manager
        self.post_event = post_event
        self.logger = logger
        self.apply_class = apply_class
        self.patch_status = patch_status
        self.kinds = kinds
        # Without Kueue's classes, no webhook server of ours writes a policy's PriorityBoost condition (the chart
        # and `ptol run` turn Kueue support on for both or neither): one left from before is dropped, not kept
        self.dropped_conditions = () if ClassKind.WORKLOAD_PRIORITY_CLASS in kinds else (PRIORITY_BOOST,)
        self.lock = asyncio.Lock()
        self._written_classes: dict[ClassKind, dict[str, _Written[ClassView]]] = {kind: {} for kind in kinds}
        self._written_policies: dict[str, _Written[PolicyView]] = {}
        self.known_classes: dict[ClassKey, ClassView] = {}  # as the last run planned on them
        self.known_policies: dict[str, PolicyView] = {}

    def is_known(self, view: ClassView) -> bool:
        """The class is as the last run saw it (e.g. the echo of our own write): planning again would
        change nothing."""
        return self.known_classes.get((view.kind, view.name)) == view

    def is_known_policy(self, view: PolicyView) -> bool:
        """The policy is as the last run saw it (e.g. the echo of our own status patch)."""
        return self.known_policies.get(view.name) == view

    @staticmethod
    def _fresh(cached: list[V], written: dict[str, _Written[V]]) -> list[V]:
        """The cache's views, each replaced by our write's result while the cache still shows the version
        that write changed; entries the cache has caught up with (or lost) are forgotten."""
        present = {view.name for view in cached}
        fresh: list[V] = []
        for view in cached:
            mine = written.get(view.name)
            if mine is not None and view.resource_version == mine.over_version:
                fresh.append(mine.view)
                continue
            written.pop(view.name, None)
            fresh.append(view)
        for name in [name for name in written if name not in present]:
            del written[name]
        return fresh

    async def reconcile(
        self,
        policies: Iterable[PolicyView],
        classes: Iterable[ClassView],
        now: datetime | None = None,
        kinds: Collection[ClassKind] | None = None,
    ) -> ReconcileResult:
        """`classes`: those of every kind it governs, each view saying its kind; `kinds`: those of its kinds that
        are listed now (default: all), the others' policies told that they are not served."""
        listed = self.kinds if kinds is None else [kind for kind in self.kinds if kind in kinds]
        by_kind: dict[ClassKind, list[ClassView]] = {kind: [] for kind in listed}
        for view in classes:
            if view.kind in by_kind:
                by_kind[view.kind].append(view)
        async with self.lock:
            policies = self._fresh(list(policies), self._written_policies)
            by_kind = {kind: self._fresh(views, self._written_classes[kind]) for kind, views in by_kind.items()}
            self.known_classes = {(view.kind, view.name): view for views in by_kind.values() for view in views}
            self.known_policies = {view.name: view for view in policies}
            result = await self._reconcile(policies, by_kind, now or datetime.now(UTC))
        self.metrics.reconciled(Result.FAILED if result.failures else Result.OK)
        for kind, views in by_kind.items():
            self.metrics.objects.labels(kind.plural).set(len(views))
        self.metrics.objects.labels(PLURAL).set(len(policies))
        return result

    async def _reconcile(
        self, policies: list[PolicyView], classes: Mapping[ClassKind, list[ClassView]], now: datetime
    ) -> ReconcileResult:
        result = ReconcileResult()
        decided = plan_kinds(policies, classes)
        outcomes: dict[str, PolicyOutcome] = dict(decided.outcomes)
        views = {(view.kind, view.name): view for kind_views in classes.values() for view in kind_views}
        policy_by_name = {policy.name: policy for policy in policies}

        async def write_class(write: ClassWrite) -> None:
            view = views[write.kind, write.class_name]
            action = WriteAction.APPLIED if write.policy_name else WriteAction.RELEASED
            try:
                stored = await self.apply_class(self.api, apply_body(view, write.annotations), self.field_manager)
            except API_ERRORS as error:
                problem = api_problem(error)
                self.metrics.wrote(action, Result.FAILED)
                result.failures.append(f"{write.kind.value} {write.class_name}: {problem}")
                self.logger.warning("write failed", extra={_log_key(write.kind): write.class_name, "problem": problem})
                if write.policy_name is not None and write.policy_name in outcomes:
                    outcomes[write.policy_name] = failed_outcome(
                        outcomes[write.policy_name], write.class_name, problem, write.kind
                    )
                return
            if isinstance(stored, Mapping):
                written = class_view(stored, self.field_manager, write.kind)
                self._written_classes[write.kind][view.name] = _Written(view.resource_version, written)
                self.known_classes[write.kind, view.name] = written
            result.writes += 1
            self.metrics.wrote(action, Result.OK)
            self._report_write(write.annotations, write.policy_name, policy_by_name, view)

        await _bounded(write_class(write) for write in decided.writes)

        reasons = [outcome.reason.value for outcome in outcomes.values()]
        for reason in Reason:
            self.metrics.policies.labels(reason.value).set(reasons.count(reason.value))

        async def update_status(name: str, outcome: PolicyOutcome) -> None:
            policy = policy_by_name[name]
            wanted = build_status(outcome, policy.generation, policy.status, now, self.dropped_conditions)
            if not status_differs(wanted, policy.status):
                return
            previous = _ready_reason(policy.status)
            try:
                stored = await self.patch_status(self.api, name, wanted, policy.status, policy.resource_version)
            except ApiException as error:
                if error.status == 409:  # changed since read: written again from what the change shows
                    result.superseded.append(name)
                elif error.status != 404:  # a policy deleted meanwhile needs no status
                    result.failures.append(f"PreemptionTolerationPolicy {name} status: {api_problem(error)}")
                return
            except API_ERRORS as error:  # one policy's network error spares the others
                result.failures.append(f"PreemptionTolerationPolicy {name} status: {api_problem(error)}")
                return
            if isinstance(stored, Mapping):
                written = policy_view(stored)
                self._written_policies[name] = _Written(policy.resource_version, written)
                self.known_policies[name] = written
            result.status_patches += 1
            self.metrics.status_patches.inc()
            if previous != (outcome.reason.value, outcome.message) and outcome.reason is not Reason.APPLIED:
                self.post_event(policy.ref, "Warning", outcome.reason.value, outcome.message)

        await _bounded(update_status(name, outcome) for name, outcome in sorted(outcomes.items()))
        return result

    def _report_write(
        self,
        annotations: Mapping[str, str],
        policy_name: str | None,
        policies: Mapping[str, PolicyView],
        view: ClassView,
    ) -> None:
        values = ", ".join(f"{key.rsplit('/', 1)[1]}={value}" for key, value in annotations.items())
        if policy_name is None:
            message = "Removed the toleration annotations: no policy governs this class any more."
            self.logger.info("released", extra={_log_key(view.kind): view.name})
            self.post_event(view.ref, "Normal", "Released", message)
            return
        message = f"Applied {values or 'no annotations'} to {view.kind.value} {view.name}."
        self.logger.info(
            "applied", extra={_log_key(view.kind): view.name, "policy": policy_name, "annotations": dict(annotations)}
        )
        self.post_event(policies[policy_name].ref, "Normal", "Applied", message)
