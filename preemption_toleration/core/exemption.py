"""ExemptedFromPreemption of the upstream plugin: may this victim refuse this preemptor now?"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from preemption_toleration.core.annotations import PolicyParseError, parse_toleration_policy
from preemption_toleration.core.intparse import wrap_int64
from preemption_toleration.core.pods import (
    pod_priority,
    preempts_never,
    priority_class_name,
    scheduled_since,
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NANOSECONDS_PER_SECOND = 1_000_000_000


class PriorityClassNotFound(LookupError):
    """The victim names a PriorityClass that does not exist (upstream skips the node)."""

    def __init__(self, class_name: str) -> None:
        self.class_name = class_name
        super().__init__(f'PriorityClass "{class_name}" not found')


def require_aware(now: datetime) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be a timezone-aware datetime")


def to_nanoseconds(moment: datetime) -> int:
    """Exact integer nanoseconds since the epoch (datetime arithmetic would overflow near year 1)."""
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * NANOSECONDS_PER_SECOND + delta.microseconds * 1000


def toleration_deadline_ns(scheduled_at: datetime, toleration_seconds: int) -> int:
    """scheduledAt.Add(time.Duration(seconds) * time.Second): the product wraps in int64 as in Go."""
    return to_nanoseconds(scheduled_at) + wrap_int64(toleration_seconds * NANOSECONDS_PER_SECOND)


def exempted_from_preemption(
    victim: Mapping[str, Any],
    preemptor: Mapping[str, Any],
    priority_classes: Mapping[str, Mapping[str, Any]],
    now: datetime,
) -> bool:
    """The eight checks of architecture §2, in upstream's order."""
    require_aware(now)
    class_name = priority_class_name(victim)
    if not class_name:  # 1
        return False
    victim_class = priority_classes.get(class_name)
    if victim_class is None:  # 2
        raise PriorityClassNotFound(class_name)
    if preempts_never(preemptor):  # 3
        return True
    try:
        policy = parse_toleration_policy(victim_class)
    except PolicyParseError:  # 4
        return False
    if pod_priority(preemptor) >= policy.minimum_preemptable_priority:  # 5
        return False
    if policy.toleration_seconds < 0:  # 6
        return True
    scheduled_at = scheduled_since(victim)
    if scheduled_at is None:  # 7
        return True
    return toleration_deadline_ns(scheduled_at, policy.toleration_seconds) > to_nanoseconds(now)  # 8
