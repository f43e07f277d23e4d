"""Reading the few pod fields the contract needs from a pod as Kubernetes JSON."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol

from preemption_toleration.core.shapes import as_mapping, is_mapping

# The condition a scheduler (Kubernetes >= 1.26) puts on a victim before deleting it: (type, status, reason).
PREEMPTION_MARK: Final = ("DisruptionTarget", "True", "PreemptionByScheduler")
# Go's zero time.Time: what a condition without lastTransitionTime decodes to.
GO_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)

PodKey = tuple[str, str]  # (namespace, name)


def pod_priority(pod: Mapping[str, Any]) -> int:
    """corev1helpers.PodPriority: spec.priority, 0 when absent."""
    priority = (pod.get("spec") or {}).get("priority")
    return 0 if priority is None else int(priority)


def priority_class_name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("priorityClassName") or "")


def preempts_never(pod: Mapping[str, Any]) -> bool:
    return (pod.get("spec") or {}).get("preemptionPolicy") == "Never"


def pod_key(pod: Mapping[str, Any]) -> PodKey:
    metadata = as_mapping(pod.get("metadata"))
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def ref_of(key: PodKey) -> str:
    """ "namespace/name", as messages and logs name a pod."""
    namespace, name = key
    return f"{namespace}/{name or '?'}" if namespace else name or "?"


def pod_ref(pod: Mapping[str, Any]) -> str:
    return ref_of(pod_key(pod))


def interned(value: Any) -> str | None:
    """A name read from a pod (a node, a class, a group), one string for every pod that names it; None when
    absent or not a string."""
    return sys.intern(value) if isinstance(value, str) and value else None


def group_name(spec: Mapping[str, Any]) -> str | None:
    """The PodGroup a pod's spec names (`schedulingGroup.podGroupName`); None when it names none."""
    return interned(as_mapping(spec.get("schedulingGroup")).get("podGroupName"))


def parse_time(text: str) -> datetime:
    """RFC 3339 as the API server writes it ('2024-05-01T10:00:00Z', optional fraction)."""
    try:
        parsed = datetime.fromisoformat(text)  # reads a trailing "Z" since Python 3.11: the API server's form
    except ValueError:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))  # "z", or the error
    if parsed.tzinfo is None:
        raise ValueError(f"time {text!r} has no time zone")
    return parsed


def preemption_mark(pod: Any) -> Mapping[str, Any] | None:
    """The scheduler's PREEMPTION_MARK condition on a pod as JSON, if it carries one."""
    conditions = as_mapping(as_mapping(pod).get("status")).get("conditions")
    if not isinstance(conditions, list):
        return None
    kind, status, reason = PREEMPTION_MARK
    for condition in conditions:
        # any condition, as the guard's matchConditions read it (`exists`); its reason is the rarest match
        if (
            is_mapping(condition)
            and condition.get("reason") == reason
            and condition.get("type") == kind
            and condition.get("status") == status
        ):
            return condition
    return None


def has_mark(pod: Any) -> bool:
    """Whether a pod as JSON carries PREEMPTION_MARK."""
    return preemption_mark(pod) is not None


def scheduled_since(pod: Mapping[str, Any]) -> datetime | None:
    """lastTransitionTime of the PodScheduled=True condition, or None when the pod is not scheduled."""
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled":
            if condition.get("status") != "True":
                return None
            when = condition.get("lastTransitionTime")
            return GO_ZERO_TIME if not when else parse_time(str(when))
    return None


class PreemptorFacts(Protocol):
    """What the exemption check reads of a preemptor."""

    @property
    def priority(self) -> int: ...

    @property
    def preempts_never(self) -> bool: ...


class PodFacts(PreemptorFacts, Protocol):
    """What the contract reads of a victim: a pod record of `records.pod`, or `PodJson` over a pod's JSON."""

    @property
    def priority_class(self) -> str | None: ...

    def scheduled_since(self) -> datetime | None: ...


class Named:
    """A pod's namespace, name and reference, from its `key`."""

    __slots__ = ()
    key: PodKey

    @property
    def namespace(self) -> str:
        return self.key[0]

    @property
    def name(self) -> str:
        return self.key[1]

    @property
    def ref(self) -> str:
        return ref_of(self.key)


class PodJson(Named):
    """A pod as Kubernetes JSON, read as each field is asked for (a view: nothing is copied): the contract's
    `PodFacts`, and the `records.pod.PodRecord` of a pod a request carries (a victim in a review, the
    preemptor of an extender call)."""

    __slots__ = ("body",)

    def __init__(self, body: Mapping[str, Any]) -> None:
        self.body = body

    @property
    def key(self) -> PodKey:  # type: ignore[override]
        return pod_key(self.body)

    @property
    def uid(self) -> str:
        return str(as_mapping(self.body.get("metadata")).get("uid") or "")

    @property
    def priority(self) -> int:
        return pod_priority(self.body)

    @property
    def priority_class(self) -> str | None:
        return priority_class_name(self.body) or None

    @property
    def preempts_never(self) -> bool:
        return preempts_never(self.body)

    @property
    def node_name(self) -> str | None:
        return interned(as_mapping(self.body.get("spec")).get("nodeName"))

    @property
    def deletion(self) -> str | None:
        deletion = as_mapping(self.body.get("metadata")).get("deletionTimestamp")
        return str(deletion) if deletion else None

    @property
    def pod_group(self) -> str | None:
        return group_name(as_mapping(self.body.get("spec")))

    def scheduled_since(self) -> datetime | None:
        return scheduled_since(self.body)


def priority_only(priority: int) -> PodJson:
    """A preemptor known by its priority alone (an Eviction's annotation, the guard's configured one)."""
    return PodJson({"spec": {"priority": priority}})
