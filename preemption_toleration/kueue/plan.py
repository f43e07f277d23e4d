"""What the boost adapter does to one Workload: write our boost, remove it, or leave the annotation alone, and
why (docs/contract.md, "Kueue").

The annotation is ours alone: it is written only where no other field manager holds it, and removed only where
we hold it. A boost stands only on a Workload holding quota (the ones Kueue may preempt): a pending Workload's
boost would move it up Kueue's queue, so ours is removed when the Workload is evicted or finishes. A nudge
(`kueue.nudge`) writes and removes ours on a pending Workload at once; one left there is removed.

A boost is first written only once a pending Workload may take the Workload below its minimum (`kueue.threat`):
until then the plan keeps it unwritten, naming the exposure a pending priority would have to fall in. Once
written, ours stands until the window ends or the Workload stops holding quota.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from preemption_toleration.core.annotations import ClassToleration
from preemption_toleration.core.protection import Protection
from preemption_toleration.kueue.boost import WorkloadFacts, boost_for
from preemption_toleration.kueue.threat import Exposure, exposure_of
from preemption_toleration.records.cluster_queue import PreemptionPolicy
from preemption_toleration.records.workload import WorkloadRecord

FIELD_MANAGER: Final = "preemption-toleration-kueue"  # the field manager of every write on a Workload
NOT_WRITTEN: Final = "PriorityBoostNotWritten"  # the Warning Event's reason, on a Workload whose boost is not written


class Action(enum.Enum):
    KEEP = "keep"  # the annotation stays as it is
    APPLY = "apply"  # our boost written (server-side apply under FIELD_MANAGER)
    REMOVE = "remove"  # our boost removed (an apply that no longer holds the annotation)


@dataclass(frozen=True, slots=True)
class BoostPlan:
    action: Action
    value: str | None = None  # with APPLY
    until: datetime | None = None  # when to plan the Workload again (None: on its next change)
    problem: str | None = None  # why a wanted boost is not written (for an Event and the logs)
    wanted: int | None = None  # the boost the contract wants, written or not
    protection: Protection | None = None  # with `wanted`: what it stands for (its kind, the minimum it refuses below)
    # with a wanted boost not written because no pending Workload threatens: the priorities that would
    exposure: Exposure | None = None

    @property
    def writes(self) -> bool:
        return self.action is not Action.KEEP


KEEP: Final = BoostPlan(Action.KEEP)


def holds_quota(workload: WorkloadRecord) -> bool:
    """Among the Workloads Kueue may preempt: quota reserved, not evicted, not finished."""
    return workload.reserved and not workload.evicted and not workload.finished


def other_owners(workload: WorkloadRecord) -> tuple[str, ...]:
    """The field managers other than ours that hold the annotation (an annotation no manager holds, as one
    written before managedFields existed, counts as another's)."""
    if workload.boost is None:
        return ()
    others = tuple(owner for owner in workload.boost_owners if owner != FIELD_MANAGER)
    return others or (() if FIELD_MANAGER in workload.boost_owners else ("an unknown writer",))


def _always(exposure: Exposure) -> bool:
    return True


def plan_boost(
    workload: WorkloadRecord,
    toleration: ClassToleration | None,
    last_scheduled: datetime | None,
    now: datetime,
    policy: PreemptionPolicy = PreemptionPolicy.ANY,
    threatened: Callable[[Exposure], bool] = _always,
) -> BoostPlan:
    """The plan for `workload` at `now`: `toleration` is that of the class it takes its priority from (a
    PriorityClass or a WorkloadPriorityClass; None: not known), `last_scheduled` the latest PodScheduled time
    among its pods (None: none scheduled), `policy` the one under which preemptors may take it
    (`threat.exposure_policy`), `threatened` whether a pending Workload's priority lies in an exposure (the
    defaults: any preemptor, always one: the boost as soon as it is wanted)."""
    wanted, until, problem, protection = None, None, None, None
    ref = workload.class_ref
    if holds_quota(workload) and ref is not None:
        if not workload.of_batch_job:
            problem = "it is not a batch/v1 Job's: its pods, whose scheduling starts its toleration, are not found"
        elif ref.class_kind is None:
            problem = f"its priority comes from {ref.kind} {ref.name}, of a kind no policy governs"
        else:
            facts = WorkloadFacts(workload.priority, ref.name, last_scheduled)
            boost = boost_for(facts, toleration, now)
            wanted, until, problem = boost.value, boost.until, boost.problem
            protection = boost.protection if wanted is not None else None
    ours = FIELD_MANAGER in workload.boost_owners and workload.boost is not None
    others = other_owners(workload)
    if wanted is not None:
        if others:
            problem = (
                f"the annotation {workload.boost!r} is held by {', '.join(others)}: a boost of {wanted} is not written"
            )
            return BoostPlan(Action.KEEP, until=until, problem=problem, wanted=wanted, protection=protection)
        if workload.boost == str(wanted):
            return BoostPlan(Action.KEEP, until=until, wanted=wanted, protection=protection)
        if not ours:  # none of ours stands yet: written once a pending Workload may take it below its minimum
            assert protection is not None and protection.refuse_below is not None  # as `wanted` says
            exposure = exposure_of(workload.priority, protection.refuse_below, policy)
            if exposure is None or not threatened(exposure):
                return BoostPlan(Action.KEEP, until=until, wanted=wanted, protection=protection, exposure=exposure)
        return BoostPlan(Action.APPLY, str(wanted), until, wanted=wanted, protection=protection)
    if ours and problem is None:
        return BoostPlan(Action.REMOVE, until=until)
    # a toleration that cannot be read (its class gone, say) leaves ours as it is: upstream protects a pod
    # whose class is not found, and nothing is decided half
    return BoostPlan(Action.KEEP, until=until, problem=problem)
