"""The boost that keeps Kueue's preemption off a protected Workload.

Kueue takes a victim only for a preemptor of higher *effective* priority (`spec.priority` plus the
`kueue.x-k8s.io/priority-boost` annotation) under `LowerPriority`. While a Workload is protected, an
effective priority of its minimum − 1 lets exactly the preemptors at or above the minimum take it, as the
contract's check 5 does; below, Kueue looks for other victims. The toleration runs from its last pod's
`PodScheduled` time, as a `disruptionMode: all` group's (the Workload is evicted whole).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from preemption_toleration.core.annotations import ClassToleration
from preemption_toleration.core.intparse import INT32_MAX
from preemption_toleration.core.protection import PriorityClassNotFound, Protection, protection_under


@dataclass(frozen=True, slots=True)
class WorkloadFacts:
    """What the contract reads of a Workload, as of a pod (`core.pods.PodFacts`): its base priority
    (`spec.priority`), the class it takes it from (`spec.priorityClassRef.name`), and the latest `PodScheduled`
    time among its scheduled pods (None while none is)."""

    priority: int
    priority_class: str | None
    last_scheduled: datetime | None
    preempts_never: bool = False  # a victim's: never read

    def scheduled_since(self) -> datetime | None:
        return self.last_scheduled


@dataclass(frozen=True, slots=True)
class Boost:
    """The annotation's value the Workload should carry (None: none of ours), until when (None: until something
    changes), the protection it stands for, and why none could be written when one is wanted."""

    value: int | None
    until: datetime | None
    protection: Protection | None
    problem: str | None = None


def boost_for(workload: WorkloadFacts, toleration: ClassToleration | None, now: datetime) -> Boost:
    """The boost of `workload` at `now` under its class's `toleration` (None: the class is not known)."""
    try:
        protection = protection_under(workload, toleration, now)
    except PriorityClassNotFound as error:
        return Boost(None, None, None, f"{error}: the Workload's toleration cannot be read")
    if not protection.protected or protection.refuse_below is None:
        return Boost(None, None, protection)
    value = protection.refuse_below - 1 - workload.priority  # > 0: a protection refuses some higher priority
    if value > INT32_MAX:
        return Boost(
            None,
            protection.until,
            protection,
            f"a boost of {value} (minimum {protection.refuse_below} - 1 - priority {workload.priority}) exceeds the "
            f"annotation's int32",
        )
    return Boost(value, protection.until, protection)
