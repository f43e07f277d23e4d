"""Which pending Workloads to nudge when a boost falls, and how.

Kueue parks a preemptor that found no victim as inadmissible and tries it again only on an event of its
ClusterQueue (a Workload finished, deleted, evicted...). A fall of the boost of an admitted Workload whose
priority comes from a PriorityClass is no such event (Kueue's `workload.PriorityChanged` counts
WorkloadPriorityClasses only), so a preemptor that waited for a window's end would wait for some later event.

A change of a pending Workload's own boost moves it back to Kueue's queue, but only when its effective
priority changes too: Kueue keeps a parked Workload's equivalents parked by a hash of its scheduling shape,
effective priority included (`SchedulingEquivalenceHashing`, on by default since v0.18). The nudge writes a
boost of -1 on the preemptor and removes it at once: the first write moves it to Kueue's queue, the second
gives it its own priority back there. Between the two, the preemptor is one priority lower: it can only preempt
less, never more.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from preemption_toleration.records.workload import WorkloadRecord

NUDGE_VALUE: Final = "-1"
MOST_NUDGED: Final = 64  # pending Workloads nudged for one fall of a boost, highest priority first


def waiting_on(
    pending: Iterable[WorkloadRecord], base: int, boosted: int, most: int = MOST_NUDGED
) -> list[WorkloadRecord]:
    """The pending Workloads a boost from `boosted` down to `base` (effective priorities) kept from preempting,
    and that a nudge may touch (no boost of theirs: one another writer holds is not ours to change): those of
    effective priority above `base` and at most `boosted`, highest first, then the oldest; at most `most`."""
    kept = [
        workload
        for workload in pending
        if not workload.reserved
        and not workload.finished
        and workload.boost is None
        and base < workload.priority <= boosted
    ]
    kept.sort(key=lambda workload: (-workload.priority, workload.created, workload.ref))
    return kept[:most]
