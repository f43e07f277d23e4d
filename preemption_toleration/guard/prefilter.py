"""Is a guard request a preemption? The rule, written once (`is_preemption`), over the request's facts.

Most requests the guard receives (kubelet status updates, deletions by users and controllers, drains)
cannot be preemptions: the guard's handler allows them at once, before anything else (its fast path), and
`judge` asks the same rule (see docs/eviction-guard.md). The guard's matchConditions say it in CEL, tested
against `is_preemption` row by row. Pure, stdlib only, never raises.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import Final, Protocol

from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY

PREEMPTOR_ANNOTATIONS: Final = (PREEMPTOR, PREEMPTOR_PRIORITY)


class RequestFacts(Protocol):
    """What the rule reads of a pod request (the guard's record of it, `guard.request.GuardRequest`)."""

    @property
    def operation(self) -> str: ...

    @property
    def sub_resource(self) -> str: ...

    @property
    def kind(self) -> GuardOperation | None:
        """`operation_of` the operation and sub-resource, read once."""
        ...

    def username(self) -> str: ...

    def names_preemptor(self) -> bool:
        """The request's object (an Eviction) carries one of PREEMPTOR_ANNOTATIONS."""
        ...

    def newly_marked(self) -> bool:
        """The request's object carries PREEMPTION_MARK and its oldObject does not."""
        ...


class GuardOperation(StrEnum):
    """The pod requests that can be a preemption, each judged by its own entry (`guard.decisions`)."""

    DELETE = "delete"  # DELETE of a pod: the scheduler deletes its victim
    EVICTION = "eviction"  # CREATE of pods/eviction: whoever asks, when it names its preemptor
    STATUS = "status"  # UPDATE of pods/status: the scheduler marks its victim first (DisruptionTarget)

    @property
    def scheduler_write(self) -> bool:
        """One of the scheduler's own writes, which it retries at once when refused."""
        return self is not GuardOperation.EVICTION


_OPERATIONS = {
    ("DELETE", ""): GuardOperation.DELETE,
    ("CREATE", "eviction"): GuardOperation.EVICTION,
    ("UPDATE", "status"): GuardOperation.STATUS,
}


def operation_of(operation: str, sub_resource: str) -> GuardOperation | None:
    """The guard's operation of a pod request; None for one that is never a preemption."""
    return _OPERATIONS.get((operation, sub_resource))


def is_preemption(facts: RequestFacts, preemptor_identities: Collection[str], every_eviction: bool = False) -> bool:
    """The rule: an Eviction that names its preemptor (whoever asks; with `every_eviction`, any Eviction),
    or, by a preemptor identity, a DELETE or a status update that newly marks the pod as the scheduler's
    victim. Reads each fact only when the answer depends on it."""
    operation = facts.kind
    if operation is None:
        return False
    if operation is GuardOperation.EVICTION:  # whoever asks: the Eviction names its preemptor
        return every_eviction or facts.names_preemptor()
    if facts.username() not in preemptor_identities:
        return False
    return operation is GuardOperation.DELETE or facts.newly_marked()
