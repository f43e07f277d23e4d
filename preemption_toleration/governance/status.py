"""A policy's status from its planned outcome: the Ready condition, what was applied, the target."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any, Literal

from preemption_toleration.api.policy import (
    AppliedPriorityClass,
    Condition,
    PreemptionTolerationPolicyStatus,
)
from preemption_toleration.core.times import rfc3339
from preemption_toleration.governance.planner import PolicyOutcome

READY = "Ready"


def condition_of(status: Mapping[str, Any] | None, kind: str) -> Mapping[str, Any] | None:
    """The condition of type `kind` in a policy's `status` (None: it has none)."""
    for condition in (status or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def conditions_except(status: Mapping[str, Any] | None, *kinds: str) -> list[dict[str, Any]]:
    """The conditions of `status` of every type but `kinds`, as they are: each writer of the list writes the
    others' back unchanged (the operator owns Ready, the webhook server's booster PriorityBoost)."""
    return [
        dict(condition)
        for condition in (status or {}).get("conditions") or []
        if isinstance(condition, Mapping) and condition.get("type") not in kinds
    ]


def build_status(
    outcome: PolicyOutcome,
    generation: int,
    current: Mapping[str, Any] | None,
    now: datetime,
    dropped: Collection[str] = (),
) -> dict[str, Any]:
    """The status to write; lastTransitionTime only moves when the Ready status itself changes; conditions of
    other types are kept as `current` has them, except those of the `dropped` types, whose writer is not running."""
    status_value: Literal["True", "False"] = "True" if outcome.ready else "False"
    previous = condition_of(current, READY)
    if previous is not None and previous.get("status") == status_value and previous.get("lastTransitionTime"):
        transition = previous["lastTransitionTime"]
    else:
        transition = rfc3339(now)
    status = PreemptionTolerationPolicyStatus(
        observed_generation=generation,
        target=outcome.target or None,
        conditions=[
            Condition(
                type=READY,
                status=status_value,
                reason=outcome.reason.value,
                message=outcome.message,
                observed_generation=generation,
            )
        ],
        priority_classes=[
            AppliedPriorityClass(
                name=governed.name,
                minimum_preemptable_priority=governed.minimum_preemptable_priority,
                toleration_seconds=governed.toleration_seconds,
            )
            for governed in outcome.classes
        ],
    ).to_kube()
    status["conditions"][0]["lastTransitionTime"] = transition
    status["conditions"].extend(conditions_except(current, READY, *dropped))
    return status


def status_differs(wanted: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """True when writing `wanted` would change anything a person can see."""
    return dict(wanted) != {key: value for key, value in (current or {}).items() if key in _OUR_FIELDS}


_OUR_FIELDS = {"observedGeneration", "target", "conditions", "priorityClasses"}
