"""A policy's status from its planned outcome: the Ready condition, what was applied, the target."""

from __future__ import annotations

from collections.abc import Mapping
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


def _previous_ready(current: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    for condition in (current or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == READY:
            return condition
    return None


def build_status(
    outcome: PolicyOutcome, generation: int, current: Mapping[str, Any] | None, now: datetime
) -> dict[str, Any]:
    """The status to write; lastTransitionTime only moves when the Ready status itself changes; conditions of
    other types are kept as `current` has them."""
    status_value: Literal["True", "False"] = "True" if outcome.ready else "False"
    previous = _previous_ready(current)
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
    status["conditions"].extend(_others(current))
    return status


def _others(current: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The conditions of other types, kept as they are: the operator owns Ready, and the webhook server's
    booster writes PriorityBoost (kueue/policy_condition.py)."""
    return [
        dict(condition)
        for condition in (current or {}).get("conditions") or []
        if isinstance(condition, Mapping) and condition.get("type") != READY
    ]


def status_differs(wanted: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """True when writing `wanted` would change anything a person can see."""
    return dict(wanted) != {key: value for key, value in (current or {}).items() if key in _OUR_FIELDS}


_OUR_FIELDS = {"observedGeneration", "target", "conditions", "priorityClasses"}
