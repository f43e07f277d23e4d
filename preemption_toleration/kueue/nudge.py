"""Which pending Workloads to nudge when a boost falls, and how.

Kueue parks a preemptor that found no victim as inadmissible and tries it again only on an event of its
queue (a Workload finished, deleted, evicted...). A lower boost on an admitted Workload whose priority comes
from a PriorityClass is no such event (Kueue's `workload.PriorityChanged` counts WorkloadPriorityClasses
only), so a preemptor that waited on a window would wait for the next one. A change of a pending Workload's
own boost annotation does move it back to Kueue's queue (any change of the text, absent to "0" included):
the nudge writes "0" where the annotation is absent and removes our "0" where it is ours, a change that
moves no priority.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from preemption_toleration.kueue.plan import FIELD_MANAGER, NUDGE_VALUE
from preemption_toleration.records.workload import WorkloadRecord

MOST_NUDGED: Final = 64  # pending Workloads nudged for one fall of a boost, highest priority first


def waiting_on(
    pending: Iterable[WorkloadRecord], base: int, boosted: int, most: int = MOST_NUDGED
) -> list[WorkloadRecord]:
    """The pending Workloads a boost from `boosted` down to `base` (effective priorities) kept from preempting:
    those of effective priority above `base` and at most `boosted`, highest first, then the oldest; at most
    `most` of them."""
    kept = [
        workload
        for workload in pending
        if not workload.reserved and not workload.finished and base < workload.effective_priority() <= boosted
    ]
    kept.sort(key=lambda workload: (-workload.effective_priority(), workload.created, workload.ref))
    return kept[:most]


def nudge_value(workload: WorkloadRecord) -> tuple[bool, str | None]:
    """(whether to nudge, the annotation after it: None removes ours). A boost another writer holds, or a
    value other than our "0", is left alone."""
    if workload.boost is None:
        return True, NUDGE_VALUE
    if workload.boost == NUDGE_VALUE and workload.boost_owners == (FIELD_MANAGER,):
        return True, None
    return False, workload.boost
