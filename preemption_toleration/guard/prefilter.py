"""Can a guard request be a preemption at all? Read from the raw AdmissionReview request, before parsing.

Most requests the guard receives (kubelet status updates, deletions by users and controllers, drains)
cannot be preemptions; the server may allow them at once. The rule is `judge`'s (see docs/eviction-guard.md),
and the guard's matchConditions say the same in CEL. Pure, stdlib only, never raises.

The answer is conservative: False only when the request certainly is not a preemption; True (run the
full parse and judgement) also when a field the rule reads has a JSON type the API server never sends.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.core.shapes import is_mapping

# The condition a scheduler (Kubernetes >= 1.26) puts on a victim before deleting it: (type, status, reason).
PREEMPTION_MARK: Final = ("DisruptionTarget", "True", "PreemptionByScheduler")
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


def may_be_preemption(request: Any, preemptor_identities: Collection[str], every_eviction: bool = False) -> bool:
    """Whether `request` (the `request` of an AdmissionReview, JSON-decoded, unchecked) may be a preemption.
    `every_eviction`: an Eviction that names no preemptor is judged too (`GuardConfig.judges_every_eviction`)."""
    if not is_mapping(request):
        return True
    operation = request.get("operation")
    sub_resource = _string(request.get("subResource"))
    if not isinstance(operation, str) or isinstance(sub_resource, _Unreadable):
        return True
    if operation == "CREATE" and sub_resource == "eviction":  # whoever asks: the Eviction names its preemptor
        return every_eviction or _names_preemptor(request.get("object"))
    if (operation, sub_resource) not in (("DELETE", ""), ("UPDATE", "status")):
        return False
    username = _string(_get(request.get("userInfo"), "username"))
    if isinstance(username, _Unreadable):
        return True
    if username not in preemptor_identities:
        return False
    if operation == "DELETE":
        return True
    marked = _marked(request.get("object"))  # a status update: does it newly mark the pod?
    if marked is None:
        return True
    return marked and _marked(request.get("oldObject")) is not True
