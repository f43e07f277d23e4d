"""`ptol explain workload`'s facts and words: what the boost makes of one Workload now, from the same plan the
boost's worker makes (`kueue.plan`), and why a boost it wants is not written."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from preemption_toleration.core.annotations import ClassToleration
from preemption_toleration.kueue.backstop import REASON as PROTECTED_EVICTION
from preemption_toleration.kueue.plan import FIELD_MANAGER, NOT_WRITTEN, holds_quota, other_owners, plan_boost
from preemption_toleration.records.workload import WorkloadRecord

GATE_NOTE = (
    "Kueue counts the boost only with its PriorityBoost feature gate on; where it is off, the server writes none "
    f"and says so in a Warning Event {NOT_WRITTEN} on the Workload."
)
WAITS = (
    "The server writes it once a pending Workload may take this one below its minimum (a new one is created only "
    "after it is written)."
)
TOLD = (NOT_WRITTEN, PROTECTED_EVICTION)  # the reasons of the server's Events on a Workload that explain repeats


def explain_workload(
    workload: WorkloadRecord,
    toleration: ClassToleration | None,
    last_scheduled: datetime | None,
    now: datetime,
    told: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The facts of `workload` at `now`, its class's `toleration` given (None: the class is not found), with the
    latest message of each of the server's Events on it (`told`, by reason: those of TOLD)."""
    plan = plan_boost(workload, toleration, last_scheduled, now)
    ref = workload.class_ref
    ours = FIELD_MANAGER in workload.boost_owners
    return {
        "kind": "Workload",
        "workload": workload.ref,
        "priority": workload.priority,
        "class": {"kind": ref.kind, "name": ref.name} if ref is not None else None,
        "effectivePriority": workload.effective_priority(),
        "boost": workload.boost,
        "boostWriters": [FIELD_MANAGER] if ours and not other_owners(workload) else list(other_owners(workload)),
        "holdsQuota": holds_quota(workload),
        "lastScheduled": last_scheduled.isoformat() if last_scheduled else None,
        "wantedBoost": plan.wanted,
        "refusedBelow": plan.protection.refuse_below if plan.protection is not None else None,
        "until": plan.until.isoformat() if plan.until and plan.wanted is not None else None,
        "problem": plan.problem,
        "serverSaid": dict(told or {}),
    }


def render_workload(facts: Mapping[str, Any]) -> str:
    """The facts in plain words."""
    klass = facts["class"]
    source = f" (from {klass['kind']} {klass['name']})" if klass else " (no class)"
    boost = facts["boost"]
    lines = [f"Workload {facts['workload']}: priority {facts['priority']}{source}."]
    if boost is not None:
        writers = ", ".join(facts["boostWriters"]) or "an unknown writer"
        lines.append(
            f"Its priority-boost annotation is {boost!r}, written by {writers}: effective priority "
            f"{facts['effectivePriority']} in Kueue."
        )
    wanted = facts["wantedBoost"]
    if not facts["holdsQuota"]:
        lines.append("It holds no quota (pending, evicted or finished): Kueue does not preempt it; no boost stands.")
    elif wanted is None:
        lines.append("Not protected now: Kueue may preempt it for any higher effective priority.")
    else:
        window = f"until {facts['until']}" if facts["until"] else "for ever"
        lines.append(
            f"Protected from preemptors below {facts['refusedBelow']} {window}: the boost it needs is {wanted} "
            f"(effective priority {facts['refusedBelow'] - 1})."
        )
        if boost != str(wanted) and facts["problem"] is None and NOT_WRITTEN not in facts["serverSaid"]:
            lines.append(WAITS)
    if facts["problem"]:
        lines.append(f"Not written: {facts['problem']}.")
    said = facts["serverSaid"]
    if NOT_WRITTEN in said:
        lines.append(f"The server said it did not write the boost ({NOT_WRITTEN}): {said[NOT_WRITTEN]}.")
    if PROTECTED_EVICTION in said:
        lines.append(f"The server reported ({PROTECTED_EVICTION}): {said[PROTECTED_EVICTION]}.")
    lines.append(GATE_NOTE)
    return "\n".join(lines)
