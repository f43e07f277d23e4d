"""The record of a PreemptionTolerationPolicy: its spec as parsed (or the problems that stop it), its age
and its status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from preemption_toleration.api.policy import API_VERSION, KIND, PreemptionTolerationPolicySpec
from preemption_toleration.api.resources import ClassKind, ObjectRef
from preemption_toleration.core.pods import parse_time
from preemption_toleration.core.shapes import as_int, as_mapping
from preemption_toleration.validation.findings import Finding
from preemption_toleration.validation.policy import parse_policy

EPOCH = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class PolicyView:
    name: str
    created: datetime
    generation: int
    deleting: bool
    spec: PreemptionTolerationPolicySpec | None  # None when the object is invalid
    problems: tuple[Finding, ...] = ()
    uid: str = ""
    status: Mapping[str, Any] = field(default_factory=dict)
    resource_version: str = field(default="", compare=False)

    @property
    def class_kind(self) -> ClassKind:
        """The kind of class it governs (an invalid policy's counts as PriorityClass, whose planning reports it)."""
        return self.spec.class_kind if self.spec is not None else ClassKind.PRIORITY_CLASS

    @property
    def ref(self) -> ObjectRef:
        """The object an Event about it names (cluster-scoped: no namespace)."""
        return ObjectRef(API_VERSION, KIND, self.name, self.uid)


def _created(metadata: Mapping[str, Any]) -> datetime:
    """creationTimestamp; a manifest without one (or with one that does not parse) counts as the oldest."""
    try:
        return parse_time(str(metadata.get("creationTimestamp") or EPOCH))
    except ValueError:
        return parse_time(EPOCH)


def policy_view(obj: Mapping[str, Any]) -> PolicyView:
    metadata = as_mapping(obj.get("metadata"))
    model, findings = parse_policy(obj)
    return PolicyView(
        name=str(metadata.get("name")),
        created=_created(metadata),
        generation=as_int(metadata.get("generation")),
        deleting=bool(metadata.get("deletionTimestamp")),
        spec=model.spec if model is not None else None,
        problems=tuple(f for f in findings if f.is_error),
        uid=str(metadata.get("uid") or ""),
        status=dict(as_mapping(obj.get("status"))),
        resource_version=str(metadata.get("resourceVersion") or ""),
    )
