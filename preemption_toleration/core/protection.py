"""What a pod's toleration means at a given moment: which preemptor priorities it refuses, until when.

This is the readable form of the exemption check: the webhooks' messages, `ptol explain` and the guard's
429 "retry after" all build on it. For any preemptor of higher priority than the pod and without
`preemptionPolicy: Never`, `protection.refuses(priority)` equals `exempted_from_preemption(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from preemption_toleration.core.annotations import PolicyParseError, parse_toleration_policy
from preemption_toleration.core.exemption import (
    NANOSECONDS_PER_SECOND,
    PriorityClassNotFound,
    require_aware,
    to_nanoseconds,
    toleration_deadline_ns,
)
from preemption_toleration.core.pods import (
    GO_ZERO_TIME,
    pod_priority,
    priority_class_name,
    scheduled_since,
)


class ProtectionKind(str, Enum):
    NONE = "None"  # every higher priority may preempt the pod now
    FOREVER = "Forever"  # priorities in the refused range never preempt it
    UNTIL = "Until"  # refused until `until`
    NOT_SCHEDULED = "NotScheduled"  # refused; the clock starts when the pod is scheduled


@dataclass(frozen=True)
class Protection:
    kind: ProtectionKind
    reason: str
    # Refused preemptor priorities are victim priority < p < refuse_below (empty when kind is NONE).
    victim_priority: int
    refuse_below: int | None = None
    until: datetime | None = None
    toleration_seconds: int | None = None

    @property
    def protected(self) -> bool:
        return self.kind is not ProtectionKind.NONE

    def refuses(self, preemptor_priority: int) -> bool:
        return self.refuse_below is not None and self.victim_priority < preemptor_priority < self.refuse_below

    def seconds_left(self, now: datetime) -> int | None:
        """Whole seconds (rounded up) until a time-limited protection ends; None otherwise."""
        if self.kind is not ProtectionKind.UNTIL or self.until is None:
            return None
        left = to_nanoseconds(self.until) - to_nanoseconds(now)
        return max(0, -(-left // NANOSECONDS_PER_SECOND))


def _from_nanoseconds(nanoseconds: int) -> datetime:
    return GO_ZERO_TIME + timedelta(microseconds=(nanoseconds - to_nanoseconds(GO_ZERO_TIME)) // 1000)


def protection_of(pod: Mapping[str, Any], priority_class: Mapping[str, Any] | None, now: datetime) -> Protection:
    """The protection `pod` has at `now` under `priority_class` (the class its spec names).

    Raises PriorityClassNotFound when the pod names a class and `priority_class` is None.
    """
    require_aware(now)
    victim_priority = pod_priority(pod)
    class_name = priority_class_name(pod)
    if not class_name:
        return Protection(ProtectionKind.NONE, "the pod has no priorityClassName", victim_priority)
    if priority_class is None:
        raise PriorityClassNotFound(class_name)
    try:
        policy = parse_toleration_policy(priority_class)
    except PolicyParseError as error:
        return Protection(
            ProtectionKind.NONE,
            f"the toleration policy is ignored: {error.key}={error.value!r} is invalid",
            victim_priority,
        )
    minimum = policy.minimum_preemptable_priority
    if minimum <= victim_priority + 1:
        return Protection(
            ProtectionKind.NONE,
            f"minimum-preemptable-priority {minimum} admits every higher priority",
            victim_priority,
        )
    seconds = policy.toleration_seconds
    if seconds < 0:
        return Protection(
            ProtectionKind.FOREVER,
            f"toleration-seconds {seconds} tolerates forever",
            victim_priority,
            refuse_below=minimum,
            toleration_seconds=seconds,
        )
    scheduled_at = scheduled_since(pod)
    if scheduled_at is None:
        return Protection(
            ProtectionKind.NOT_SCHEDULED,
            f"not scheduled yet; protected for {seconds}s once scheduled",
            victim_priority,
            refuse_below=minimum,
            toleration_seconds=seconds,
        )
    deadline_ns = toleration_deadline_ns(scheduled_at, seconds)
    if deadline_ns <= to_nanoseconds(now):
        return Protection(
            ProtectionKind.NONE,
            f"the guaranteed running time of {seconds}s has passed",
            victim_priority,
            toleration_seconds=seconds,
        )
    return Protection(
        ProtectionKind.UNTIL,
        f"guaranteed running time of {seconds}s since scheduling",
        victim_priority,
        refuse_below=minimum,
        until=_from_nanoseconds(deadline_ns),
        toleration_seconds=seconds,
    )
