"""The `PriorityBoost` condition of a policy: whether Kueue sees the boosts its toleration needs on the Workloads
of the classes it governs. False while a boost the contract wants is not written (Kueue's `PriorityBoost` gate
off, or the annotation held by another writer): Kueue may then preempt those Workloads below their minimum.
True once every such boost is written again; absent from a policy that never had one not written.

The operator owns the policy's status and its `Ready` condition, and keeps a condition of another type as it
finds it; the webhook server's booster writes this one, from what its plans found (pure: the plans' findings
and the policies in, the conditions to write out).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.times import rfc3339
from preemption_toleration.governance.status import condition_of, conditions_except
from preemption_toleration.records.policy import PolicyView

CONDITION: Final = "PriorityBoost"
WRITTEN: Final = "BoostsWritten"


class Cause(enum.Enum):
    """Why a wanted boost is not written: the condition's reason."""

    GATE_OFF = "PriorityBoostGateOff"
    HELD_BY_ANOTHER_WRITER = "AnnotationHeldByAnotherWriter"

    @property
    def says(self) -> str:
        if self is Cause.GATE_OFF:
            return "Kueue's PriorityBoost feature gate is off, so Kueue ignores the annotation and none is written"
        return "another writer holds their kueue.x-k8s.io/priority-boost annotation"


@dataclass(frozen=True, slots=True)
class Unwritten:
    """A Workload whose wanted boost is not written, and why."""

    workload: str  # namespace/name
    class_kind: ClassKind
    class_name: str
    cause: Cause


def governing(policies: Iterable[PolicyView]) -> dict[tuple[ClassKind, str], str]:
    """Each governed class (its kind, its name) and the policy that governs it, as the policies' status says (the
    operator's word: the classes it applied each policy to)."""
    found: dict[tuple[ClassKind, str], str] = {}
    for policy in policies:
        if policy.spec is None or policy.deleting:
            continue
        for applied in policy.status.get("priorityClasses") or ():
            if isinstance(applied, Mapping) and isinstance(name := applied.get("name"), str):
                found.setdefault((policy.class_kind, name), policy.name)
    return found


def _wanted(unwritten: Sequence[Unwritten], generation: int) -> dict[str, Any]:
    status, reason = "True", WRITTEN
    message = "Every boost that this policy's Workloads need is written: Kueue sees their toleration."
    if unwritten:
        gate_off = any(one.cause is Cause.GATE_OFF for one in unwritten)
        cause = Cause.GATE_OFF if gate_off else Cause.HELD_BY_ANOTHER_WRITER
        example = min(one.workload for one in unwritten if one.cause is cause)
        count = len(unwritten)
        status, reason = "False", cause.value
        message = (
            f"Kueue may preempt {count} Workload{'s' if count != 1 else ''} of this policy's classes below their "
            f"minimum: {cause.says} (for example Workload {example}; `ptol explain workload {example}`)."
        )
    return {"type": CONDITION, "status": status, "reason": reason, "message": message, "observedGeneration": generation}


def conditions_to_write(
    unwritten: Iterable[Unwritten], policies: Iterable[PolicyView], now: datetime
) -> dict[str, list[dict[str, Any]]]:
    """Each policy whose `PriorityBoost` condition must change, and its whole `conditions` list to write: the
    others as they are, ours replaced. A policy with none not written and no condition of ours is left alone;
    `lastTransitionTime` moves only when the condition's status does."""
    policies = list(policies)
    owner = governing(policies)
    by_policy: dict[str, list[Unwritten]] = {}
    for one in unwritten:
        if (name := owner.get((one.class_kind, one.class_name))) is not None:
            by_policy.setdefault(name, []).append(one)
    changed: dict[str, list[dict[str, Any]]] = {}
    for policy in policies:
        current = condition_of(policy.status, CONDITION)
        found = by_policy.get(policy.name, [])
        if current is None and not found:
            continue
        wanted = _wanted(found, policy.generation)
        same = current is not None and current.get("status") == wanted["status"]
        wanted["lastTransitionTime"] = current.get("lastTransitionTime") if current and same else rfc3339(now)
        if current is not None and dict(current) == wanted:
            continue
        changed[policy.name] = [*conditions_except(policy.status, CONDITION), wanted]
    return changed
