"""One reconcile over everything the watches saw: plan, write what differs, report in the status.

Reconciles are serialized by a lock: the plan is global (ownership, conflicts), and each run reads the
latest caches, so a burst of events converges in a few runs and a converged state writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.governance.plan import (
    PolicyOutcome,
    Reason,
    apply_body,
    failed_outcome,
    plan,
)
from preemption_toleration.governance.status import READY, build_status, status_differs
from preemption_toleration.governance.views import ClassView, PolicyView
from preemption_toleration.operator.metrics import OperatorMetrics
from preemption_toleration.operator.writes import apply_class_annotations, patch_policy_status

# (object reference, type "Normal"/"Warning", reason, message)
EventPoster = Callable[[Mapping[str, Any], str, str, str], None]
ClassApplier = Callable[[ApiClient, Mapping[str, Any], str], Awaitable[Any]]
StatusPatcher = Callable[[ApiClient, str, Mapping[str, Any], Mapping[str, Any]], Awaitable[None]]


@dataclass
class ReconcileResult:
    writes: int = 0
    status_patches: int = 0
    failures: list[str] = field(default_factory=list)


def _api_problem(error: Exception) -> str:
    if isinstance(error, ApiException):
        return f"{error.status} {error.reason}".strip()
    return f"{type(error).__name__}: {error}"


def _ready_reason(status: Mapping[str, Any]) -> tuple[str | None, str | None]:
    for condition in status.get("conditions") or []:
        if condition.get("type") == READY:
            return condition.get("reason"), condition.get("message")
    return None, None


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
    ) -> None:
        self.metrics = metrics or OperatorMetrics()
        self.api = api
        self.field_manager = field_manager
        self.post_event = post_event
        self.logger = logger
        self.apply_class = apply_class
        self.patch_status = patch_status
        self.lock = asyncio.Lock()

    async def reconcile(
        self, policies: Iterable[PolicyView], classes: Iterable[ClassView], now: datetime | None = None
    ) -> ReconcileResult:
        async with self.lock:
            policies, classes = list(policies), list(classes)
            result = await self._reconcile(policies, classes, now or datetime.now(timezone.utc))
        self.metrics.reconciles.labels("failed" if result.failures else "ok").inc()
        self.metrics.objects.labels("priorityclasses").set(len(classes))
        self.metrics.objects.labels("preemptiontolerationpolicies").set(len(policies))
        return result

    async def _reconcile(
        self, policies: list[PolicyView], classes: list[ClassView], now: datetime
    ) -> ReconcileResult:
        result = ReconcileResult()
        decided = plan(policies, classes)
        outcomes: dict[str, PolicyOutcome] = dict(decided.outcomes)
        views = {view.name: view for view in classes}
        policy_by_name = {policy.name: policy for policy in policies}

        for write in decided.writes:
            view = views[write.class_name]
            try:
                await self.apply_class(self.api, apply_body(view, write.annotations), self.field_manager)
            except (ApiException, OSError, asyncio.TimeoutError) as error:
                problem = _api_problem(error)
                action = "applied" if write.policy_name else "released"
                self.metrics.writes.labels(action, "failed").inc()
                result.failures.append(f"PriorityClass {write.class_name}: {problem}")
                self.logger.warning(
                    "write failed", extra={"priorityClass": write.class_name, "problem": problem}
                )
                if write.policy_name is not None and write.policy_name in outcomes:
                    outcomes[write.policy_name] = failed_outcome(outcomes[write.policy_name], write.class_name, problem)
                continue
            result.writes += 1
            self.metrics.writes.labels("applied" if write.policy_name else "released", "ok").inc()
            self._report_write(write.class_name, write.annotations, write.policy_name, policy_by_name, view)

        reasons = [outcome.reason.value for outcome in outcomes.values()]
        for reason in ("Applied", "PriorityClassNotFound", "Conflict", "Invalid", "ApplyFailed"):
            self.metrics.policies.labels(reason).set(reasons.count(reason))
        for name, outcome in sorted(outcomes.items()):
            policy = policy_by_name[name]
            wanted = build_status(outcome, policy.generation, policy.status, now)
            if not status_differs(wanted, policy.status):
                continue
            previous = _ready_reason(policy.status)
            try:
                await self.patch_status(self.api, name, wanted, policy.status)
            except ApiException as error:
                if error.status != 404:  # a policy deleted meanwhile needs no status
                    result.failures.append(f"PreemptionTolerationPolicy {name} status: {_api_problem(error)}")
                continue
            except (OSError, asyncio.TimeoutError) as error:  # one policy's network error spares the others
                result.failures.append(f"PreemptionTolerationPolicy {name} status: {_api_problem(error)}")
                continue
            result.status_patches += 1
            self.metrics.status_patches.inc()
            if previous != (outcome.reason.value, outcome.message) and outcome.reason is not Reason.APPLIED:
                self.post_event(policy.ref, "Warning", outcome.reason.value, outcome.message)
        return result

    def _report_write(
        self,
        class_name: str,
        annotations: Mapping[str, str],
        policy_name: str | None,
        policies: Mapping[str, PolicyView],
        view: ClassView,
    ) -> None:
        values = ", ".join(f"{key.rsplit('/', 1)[1]}={value}" for key, value in annotations.items())
        if policy_name is None:
            message = "Removed the toleration annotations: no policy governs this class any more."
            self.logger.info("released", extra={"priorityClass": class_name})
            self.post_event(view.ref, "Normal", "Released", message)
            return
        message = f"Applied {values or 'no annotations'} to PriorityClass {class_name}."
        self.logger.info(
            "applied", extra={"priorityClass": class_name, "policy": policy_name, "annotations": dict(annotations)}
        )
        self.post_event(policies[policy_name].ref, "Normal", "Applied", message)
