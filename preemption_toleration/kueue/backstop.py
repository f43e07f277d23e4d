"""The backstop: Kueue's preemption of a Workload that its class's toleration protected from that preemptor, which
the boost did not keep off (a `reclaimWithinCohort: Any` queue, an equal priority under
`LowerOrNewerEqualPriority`, a boost not written, a race at a window's end). It is reported, never refused: Kueue
answers a refused eviction by trying the same victims again at once (docs/contract.md, "Kueue").

The Workload is judged as its last plan found it (`Guarded`, kept by the boost's worker) against the preemptor's
effective priority in Kueue's eyes, at the time the eviction is seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kueue.eviction import KueuePreemption
from preemption_toleration.kueue.plan import BoostPlan
from preemption_toleration.records.workload import WorkloadRecord

REASON = "PreemptionWouldBeRefused"  # the Event's reason, as the guard's in audit mode


@dataclass(frozen=True, slots=True)
class Guarded:
    """What the last plan of a Workload found: protected from effective priorities below `refuse_below`, until
    `until` (None: for ever, or until a pod of it is scheduled), as `kind` says."""

    refuse_below: int
    until: datetime | None
    kind: ProtectionKind = ProtectionKind.FOREVER


@dataclass(frozen=True, slots=True)
class ProtectedEviction:
    """Kueue's preemption of a protected Workload, as it is told (an Event on the Workload, a metric)."""

    victim: str  # namespace/name
    preemptor: str  # namespace/name
    preemptor_priority: int  # effective
    refuse_below: int
    until: datetime | None
    reason: str  # Kueue's (InClusterQueue, InCohortReclamation, ...)
    protection: ProtectionKind = ProtectionKind.FOREVER

    @property
    def message(self) -> str:
        window = {
            ProtectionKind.FOREVER: "for ever",
            ProtectionKind.NOT_SCHEDULED: "until a pod of it is scheduled",
        }.get(self.protection, f"until {self.until.isoformat() if self.until else '?'}")
        why = f" ({self.reason})" if self.reason else ""
        return (
            f"Kueue preempted this Workload{why} for Workload {self.preemptor} of effective priority "
            f"{self.preemptor_priority}, which its class's toleration refuses (below {self.refuse_below}, {window}); "
            "Kueue's eviction is reported, not refused (docs/tasks/kueue.md)"
        )


def guarded_by(plan: BoostPlan) -> Guarded | None:
    """What `plan` found protected (None: nothing, or nothing a boost stands for)."""
    protection = plan.protection
    if plan.wanted is None or protection is None or protection.refuse_below is None:
        return None
    return Guarded(protection.refuse_below, plan.until, protection.kind)


def protected_eviction(
    victim: WorkloadRecord,
    guarded: Guarded | None,
    preemption: KueuePreemption,
    preemptor: WorkloadRecord | None,
    at: datetime,
) -> ProtectedEviction | None:
    """The protected eviction Kueue's `preemption` of `victim` (as it was before) made at `at`; None where the
    victim was not protected from that preemptor, or where the preemptor is not known (its priority unknown)."""
    if guarded is None or preemptor is None or preemptor.uid != preemption.preemptor_uid:
        return None
    if guarded.until is not None and at >= guarded.until:
        return None
    priority = preemptor.effective_priority()
    if priority >= guarded.refuse_below:
        return None
    return ProtectedEviction(
        victim.ref, preemptor.ref, priority, guarded.refuse_below, guarded.until, preemption.reason, guarded.kind
    )
