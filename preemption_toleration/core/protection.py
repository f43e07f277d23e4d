"""What a pod's toleration means at a given moment: which preemptor priorities it refuses, until when.

This is the readable form of the exemption check: the webhooks' messages, `ptol explain` and the guard's
429 "retry after" all build on it. For any preemptor of higher priority than the pod and without
`preemptionPolicy: Never`, `protection.refuses(priority)` equals `exempted_from_preemption(...)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from preemption_toleration.core.annotations import ClassToleration, class_toleration
from preemption_toleration.core.intparse import wrap_int64
from preemption_toleration.core.pods import GO_ZERO_TIME, PodFacts, PodJson
from preemption_toleration.core.times import NANOSECONDS_PER_SECOND

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


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
    # The contract's raw answers, whatever the victim's priority (the exemption check reads them):
    # minimum-preemptable-priority (None when the policy does not parse, check 4), and whether the
    # toleration holds at `now` (checks 6 to 8).
    minimum: int | None = None
    tolerating: bool = False

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


def holds_back_no_preemptor(priority: int, minimum: int | None) -> bool:
    """A minimum-preemptable-priority that refuses no preemptor of pods of this priority (their class's
    value): the scheduler preempts a pod only for a preemptor of higher priority, and upstream refuses only
    preemptors below the minimum (check 5), so a toleration holds back priority < p < minimum, no priority
    when the minimum is at most priority + 1. Unset (None), it is priority + 1 (the contract's default)."""
    return minimum is None or minimum <= priority + 1


def _from_nanoseconds(nanoseconds: int) -> datetime:
    return GO_ZERO_TIME + timedelta(microseconds=(nanoseconds - to_nanoseconds(GO_ZERO_TIME)) // 1000)


def protection_of(pod: Mapping[str, Any], priority_class: Mapping[str, Any] | None, now: datetime) -> Protection:
    """The protection `pod` has at `now` under `priority_class` (the class its spec names).

    Raises PriorityClassNotFound when the pod names a class and `priority_class` is None.
    """
    toleration = class_toleration(priority_class) if priority_class is not None else None
    return protection_under(PodJson(pod), toleration, now)


def protection_under(pod: PodFacts, toleration: ClassToleration | None, now: datetime) -> Protection:
    """`protection_of` for a pod record, with its class's toleration as parsed once (a class record's
    `ClassToleration`, None when the class is not known).

    Raises PriorityClassNotFound when the pod names a class and `toleration` is None.
    """
    require_aware(now)
    victim_priority = pod.priority
    class_name = pod.priority_class
    if not class_name:
        return Protection(ProtectionKind.NONE, "the pod has no priorityClassName", victim_priority)
    if toleration is None:
        raise PriorityClassNotFound(class_name)
    policy = toleration.policy
    if policy is None:
        return Protection(
            ProtectionKind.NONE,
            f"the toleration policy is ignored: {toleration.invalid_key}={toleration.invalid_value!r} is invalid",
            victim_priority,
        )
    minimum = policy.minimum_preemptable_priority
    seconds = policy.toleration_seconds
    # Checks 6, 7 and 8 (for any preemptor below the minimum), in upstream's order: a negative toleration
    # holds without reading the pod's scheduling time.
    deadline_ns: int | None = None
    if seconds < 0:
        tolerating = True
    else:
        scheduled_at = pod.scheduled_since()
        deadline_ns = toleration_deadline_ns(scheduled_at, seconds) if scheduled_at is not None else None
        tolerating = deadline_ns is None or deadline_ns > to_nanoseconds(now)

    def protection(kind: ProtectionKind, reason: str, refused: bool, until: datetime | None = None) -> Protection:
        return Protection(
            kind,
            reason,
            victim_priority,
            refuse_below=minimum if refused else None,
            until=until,
            toleration_seconds=seconds,
            minimum=minimum,
            tolerating=tolerating,
        )

    if holds_back_no_preemptor(victim_priority, minimum):
        return protection(
            ProtectionKind.NONE, f"minimum-preemptable-priority {minimum} admits every higher priority", refused=False
        )
    if seconds < 0:
        return protection(ProtectionKind.FOREVER, f"toleration-seconds {seconds} tolerates forever", refused=True)
    if deadline_ns is None:
        return protection(
            ProtectionKind.NOT_SCHEDULED, f"not scheduled yet; protected for {seconds}s once scheduled", refused=True
        )
    if not tolerating:
        return protection(ProtectionKind.NONE, f"the guaranteed running time of {seconds}s has passed", refused=False)
    return protection(
        ProtectionKind.UNTIL,
        f"guaranteed running time of {seconds}s since scheduling",
        refused=True,
        until=_from_nanoseconds(deadline_ns),
    )
