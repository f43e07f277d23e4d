"""At start-up: the Leases left acting by a replica that stopped in the middle of an action. Each only asks
which preemptor it acted for (`steering.resumption`); a fresh plan from the caches answers, and is carried
out, under the claim and rate limit of a live action, only where it bears the left one out. A left plan the
cluster does not bear out is refused: said, counted and marked."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Protocol

from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.kube.client import API_ERRORS, api_problem
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.serving.webhook_metrics import SteeringMetrics
from preemption_toleration.steering.adapter.steering_leases import LEASE_PREFIX, REFUSED, SteeringLeases
from preemption_toleration.steering.plan import NotSteered, SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan, borne_out, preemptor_of_left_plan
from preemption_toleration.telemetry.declared import SteeringOutcome

logger = logging.getLogger("preemption_toleration.steering")
LIST_AGAIN_SECONDS = (1.0, 30.0)  # the first and the longest wait before the Leases left are listed again


class Acting(Protocol):
    """What resuming asks of steering: the same plan, checks and action as a live refusal's."""

    leases: SteeringLeases
    audit: bool
    metrics: SteeringMetrics

    def problems(self) -> list[str]: ...
    def view(self) -> ClusterView: ...
    async def fresh_plan(self, found: SlimPod, view: ClusterView, now: datetime) -> SteeringPlan | NotSteered: ...
    def stale(self, subject: str, preemptor: SlimPod | None) -> bool: ...
    def audited(self, plan: SteeringPlan, left_by: str | None = None) -> None: ...
    async def act(self, plan: SteeringPlan, retake: bool = False, left_version: str | None = None) -> bool: ...


async def resume_left(steering: Acting) -> None:
    """Acts for the preemptors of the Leases left acting, each as a fresh plan says, its errors logged and
    counted. Waits until the caches are current, since each is planned from them; the list is made again,
    after a growing wait, until it is made once."""
    wait, longest = LIST_AGAIN_SECONDS
    while True:
        while steering.problems():  # noqa: ASYNC110 - "current" is several caches' health, polled
            await asyncio.sleep(1)
        try:
            left = await steering.leases.left(datetime.now(UTC))
            break
        except API_ERRORS as error:
            if steering.audit and isinstance(error, ApiException) and error.status == 403:
                logger.info("steering (audit): no right to list Leases, so no action left acting is reported")
                return
            steering.metrics.count(SteeringOutcome.FAILED)
            logger.warning(
                "steering: could not list the Leases left acting; listing again",
                extra={"problem": api_problem(error), "after": wait},
            )
        except Exception:  # nothing foresaw it (a Lease of another shape): said, and listed again
            steering.metrics.count(SteeringOutcome.FAILED)
            logger.exception("steering: could not read the Leases left acting; listing again")
        await asyncio.sleep(wait)
        wait = min(wait * 2, longest)
    for lease_name, plan in left:
        try:
            await _resume_one(steering, lease_name, plan)
        except Exception:
            steering.metrics.count(SteeringOutcome.FAILED)
            logger.exception("steering: could not finish an action left in the middle", extra={"lease": lease_name})
    logger.info("steering: the actions left in the middle were looked at", extra={"leases": len(left)})


async def _resume_one(steering: Acting, lease_name: str, left: LeftPlan) -> None:
    """A Lease left acting asks for its preemptor: a fresh plan answers, and is carried out only where it
    bears the left one out."""
    view, now = steering.view(), datetime.now(UTC)
    found = preemptor_of_left_plan(left, view, now)
    if isinstance(found, str):
        await _refuse_left(steering, lease_name, found, left.version)
        return
    plan = await steering.fresh_plan(found, view, now)
    problem = f"a fresh plan declines it: {plan.detail}" if isinstance(plan, NotSteered) else borne_out(left, plan)
    if problem is not None:
        await _refuse_left(steering, lease_name, problem, left.version)
        return
    assert isinstance(plan, SteeringPlan)
    if steering.stale(f"{found.namespace}/{found.name}", found):
        return  # left acting until its window ends; the guard's next refusal plans the preemption again
    if steering.audit:
        steering.audited(plan, left_by=lease_name)
        return
    logger.info("steering: finishing an action left in the middle", extra={"lease": lease_name})
    if await steering.act(plan, left_version=left.version):
        steering.metrics.count(SteeringOutcome.RESUMED)


async def _refuse_left(steering: Acting, lease_name: str, reason: str, version: str) -> None:
    """A Lease left acting that the cluster does not bear out: said, counted and (but in audit) marked, if
    nobody wrote it since it was read (a replica starting beside this one may have taken it over)."""
    steering.metrics.count(SteeringOutcome.RESUME_REFUSED)
    logger.warning(
        "steering: an action left in the middle is not finished", extra={"lease": lease_name, "reason": reason}
    )
    if not steering.audit:
        await steering.leases.mark(lease_name.removeprefix(LEASE_PREFIX), REFUSED, version=version)
