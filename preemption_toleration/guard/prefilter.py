"""Is a guard request a preemption? The rule, written once (`is_preemption`), and its reading of the raw
AdmissionReview request, before parsing (`may_be_preemption`).

Most requests the guard receives (kubelet status updates, deletions by users and controllers, drains)
cannot be preemptions; the server may allow them at once. `judge` asks the same rule of the checked request
(see docs/eviction-guard.md), and the guard's matchConditions say it in CEL, tested against `is_preemption`
row by row. Pure, stdlib only, never raises.

The raw reading is conservative: False only when the request certainly is not a preemption; True (run the
full parse and judgement) also when a field the rule reads has a JSON type the API server never sends.
"""

from __future__ import annotations

from collections.abc import Collection
from enum import StrEnum
from typing import Any, Final, Protocol

from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.core.pods import PREEMPTION_MARK
from preemption_toleration.core.shapes import is_mapping

PREEMPTOR_ANNOTATIONS: Final = (PREEMPTOR, PREEMPTOR_PRIORITY)


class _Unreadable:
    """A value of a JSON type the rule cannot read (stands for "maybe")."""


_UNREADABLE: Final = _Unreadable()


def _get(value: Any, key: str) -> Any:
    """`value[key]` of a JSON object; None when `value` is null or has no `key`; unreadable otherwise."""
    if value is None:
        return None
    if is_mapping(value):
        return value.get(key)
    return _UNREADABLE


def _string(value: Any) -> str | _Unreadable:
    if value is None:
        return ""
    return value if isinstance(value, str) else _UNREADABLE


class RequestFacts(Protocol):
    """What the rule reads of a pod request. A method raises `Unreadable` when the field it reads has a
    JSON type the API server never sends (the raw reading's "maybe")."""

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


class Unreadable(Exception):
    """A field the rule reads has a JSON type the API server never sends."""


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


def has_mark(pod: Any) -> bool:
    """Whether a checked pod (JSON) carries PREEMPTION_MARK."""
    return _marked(pod) is True


def _names_preemptor(eviction: Any) -> bool:
    annotations = _get(_get(eviction, "metadata"), "annotations")
    if annotations is None:
        return False
    if not is_mapping(annotations):
        return True
    return any(key in annotations for key in PREEMPTOR_ANNOTATIONS)


def _marked(pod: Any) -> bool | None:
    """Whether `pod` carries PREEMPTION_MARK; None when its conditions are unreadable."""
    conditions = _get(_get(pod, "status"), "conditions")
    if conditions is None:
        return False
    if not isinstance(conditions, list):
        return None
    unreadable = False
    for condition in conditions:
        if not is_mapping(condition):
            unreadable = True
        elif (condition.get("type"), condition.get("status"), condition.get("reason")) == PREEMPTION_MARK:
            return True
    return None if unreadable else False


class _RawFacts:
    """`RequestFacts` of the raw JSON of a request, unchecked."""

    __slots__ = ("kind", "operation", "request", "sub_resource")

    def __init__(self, request: Any) -> None:
        if not is_mapping(request):
            raise Unreadable
        operation, sub_resource = request.get("operation"), _string(request.get("subResource"))
        if not isinstance(operation, str) or isinstance(sub_resource, _Unreadable):
            raise Unreadable
        self.request = request
        self.operation: str = operation
        self.sub_resource: str = sub_resource
        self.kind = operation_of(operation, sub_resource)

    def username(self) -> str:
        username = _string(_get(self.request.get("userInfo"), "username"))
        if isinstance(username, _Unreadable):
            raise Unreadable
        return username

    def names_preemptor(self) -> bool:
        return _names_preemptor(self.request.get("object"))

    def newly_marked(self) -> bool:
        marked = _marked(self.request.get("object"))
        if marked is None:
            raise Unreadable
        return marked and _marked(self.request.get("oldObject")) is not True


def may_be_preemption(request: Any, preemptor_identities: Collection[str], every_eviction: bool = False) -> bool:
    """Whether `request` (the `request` of an AdmissionReview, JSON-decoded, unchecked) may be a preemption.
    `every_eviction`: an Eviction that names no preemptor is judged too (`GuardConfig.judges_every_eviction`)."""
    try:
        return is_preemption(_RawFacts(request), preemptor_identities, every_eviction)
    except Unreadable:
        return True
