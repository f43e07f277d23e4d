"""Which pending Workloads may take an admitted one in Kueue's preemption, so that a protected Workload's boost
is written only once one that its boost would keep away is pending (docs/contract.md, "Kueue").

Kueue takes a victim only for a preemptor its ClusterQueue's policy lets take it (`SatisfiesPreemptionPolicy`:
`LowerPriority`, higher effective priority; `LowerOrNewerEqualPriority`, or equal and queued first; `Any`), in
classical preemption, fair sharing, reclaim and borrowWithinCohort alike. So a boost matters only while some
pending Workload's effective priority lies between the lowest its policy lets take the victim and the minimum its
toleration refuses below: its *exposure*. Where none does, no boost is needed, and none is written: one write
per protected Workload is what Kueue's admission of a thousand protected Jobs cannot afford (docs/benchmarks.md).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from preemption_toleration.records.cluster_queue import ClusterQueueRecord, PreemptionPolicy

LOWEST: Final = -(2**63)  # below every effective priority (int32 priority plus int32 boost)


def lowest_taker(victim_priority: int, policy: PreemptionPolicy) -> int | None:
    """The lowest effective priority of a preemptor that `policy` lets take a victim of effective priority
    `victim_priority` (None: no preemptor may). An equal one under `LowerOrNewerEqualPriority` counts, whichever
    was queued first."""
    if policy is PreemptionPolicy.NEVER:
        return None
    if policy is PreemptionPolicy.LOWER_PRIORITY:
        return victim_priority + 1
    if policy is PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY:
        return victim_priority
    return LOWEST


def exposure_policy(queue: ClusterQueueRecord | None, cohort_reclaim: PreemptionPolicy) -> PreemptionPolicy:
    """The policy under which preemptors may take a Workload `queue` admitted: its `withinClusterQueue` for its
    own queue's preemptors and, where it is in a cohort, `cohort_reclaim` for the others' (the most permissive
    `reclaimWithinCohort` of any ClusterQueue in a cohort: cohorts' trees are not followed). A queue not known
    (None) lets any preemptor in."""
    if queue is None:
        return PreemptionPolicy.ANY
    if queue.cohort is None:
        return queue.within
    return max(queue.within, cohort_reclaim)


def most_permissive_reclaim(queues: Iterable[ClusterQueueRecord]) -> PreemptionPolicy:
    """The most permissive `reclaimWithinCohort` among the ClusterQueues in a cohort."""
    return max((queue.reclaim for queue in queues if queue.cohort is not None), default=PreemptionPolicy.NEVER)


@dataclass(frozen=True, slots=True)
class Exposure:
    """The effective priorities of the preemptors a protected Workload's boost would keep away: from `lowest`
    (the lowest its queue's policy lets take it) up to, not including, `minimum` (its toleration's)."""

    lowest: int
    minimum: int

    def threatened_by(self, priority: int) -> bool:
        return self.lowest <= priority < self.minimum


def exposure_of(victim_priority: int, minimum: int, policy: PreemptionPolicy) -> Exposure | None:
    """The exposure of a Workload of effective priority `victim_priority` refusing preemptors below `minimum`
    under `policy` (None: no preemptor its boost would keep away may take it)."""
    lowest = lowest_taker(victim_priority, policy)
    if lowest is None or lowest >= minimum:
        return None
    return Exposure(lowest, minimum)


class PendingPriorities:
    """The effective priorities of the pending Workloads, each counted, kept sorted: whether one lies in an
    exposure is a binary search."""

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}
        self._sorted: list[int] = []

    def add(self, priority: int) -> bool:
        """Counts one more pending Workload of `priority`; True when none was of it before."""
        count = self._counts.get(priority, 0)
        self._counts[priority] = count + 1
        if count == 0:
            bisect.insort(self._sorted, priority)
        return count == 0

    def discard(self, priority: int) -> None:
        count = self._counts.get(priority, 0)
        if count > 1:
            self._counts[priority] = count - 1
        elif count == 1:
            del self._counts[priority]
            del self._sorted[bisect.bisect_left(self._sorted, priority)]

    def threaten(self, exposure: Exposure) -> bool:
        """Whether a pending Workload's priority lies in `exposure`."""
        at = bisect.bisect_left(self._sorted, exposure.lowest)
        return at < len(self._sorted) and self._sorted[at] < exposure.minimum

    def __len__(self) -> int:
        return sum(self._counts.values())


class Unboosted:
    """The protected Workloads whose boost is not written for want of a threat, grouped by exposure: the ones a
    new pending priority threatens are found by looking at each distinct exposure (a few: one per class and
    queue policy), not at each Workload."""

    def __init__(self) -> None:
        self._groups: dict[Exposure, set[str]] = {}
        self._of: dict[str, Exposure] = {}

    def put(self, key: str, exposure: Exposure) -> None:
        if self._of.get(key) == exposure:
            return
        self.discard(key)
        self._of[key] = exposure
        self._groups.setdefault(exposure, set()).add(key)

    def discard(self, key: str) -> None:
        exposure = self._of.pop(key, None)
        if exposure is None:
            return
        group = self._groups[exposure]
        group.discard(key)
        if not group:
            del self._groups[exposure]

    def threatened_by(self, priority: int) -> list[str]:
        """The Workloads a pending Workload of effective priority `priority` threatens, sorted."""
        return sorted(
            key for exposure, group in self._groups.items() if exposure.threatened_by(priority) for key in group
        )

    def __len__(self) -> int:
        return len(self._of)
