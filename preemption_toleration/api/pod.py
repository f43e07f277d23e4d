"""The fields of a pod that the guard, the extender and the toleration contract read, with their types.

An AdmissionReview or an extender call carries whole pods as JSON. The API server never sends a pod whose
`spec.priority` is a list, but a forged or broken client can, and the decision must then answer with
what is wrong rather than fail. `pod_problem` checks exactly the fields our pure code reads of a pod, and
the guard's reader (`guard_review`) those of a victim (`VictimFields`); every other field passes unread.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, StrictStr, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from preemption_toleration.api.base import Int32, first_error
from preemption_toleration.core.pods import parse_time


def _rfc3339(text: str) -> str:
    if text:
        parse_time(text)  # ValueError: pydantic reports it with the field's location
    return text


Time = Annotated[StrictStr, AfterValidator(_rfc3339)]


# TypedDicts, validated by pydantic-core without building a model instance per object: a pod's status
# alone holds several conditions, and the guard checks the victim of every preemption it judges (a model
# per condition made the check of a realistic pod cost 7 µs; these, about 4). Keys are the API's own
# camelCase names; fields we do not read are ignored, as newer API servers add some.


class _Metadata(TypedDict, total=False):
    name: StrictStr | None
    namespace: StrictStr | None
    uid: StrictStr | None
    labels: dict[str, StrictStr] | None
    annotations: dict[str, StrictStr] | None
    creationTimestamp: Time | None
    deletionTimestamp: Time | None


class _SchedulingGroup(TypedDict, total=False):
    podGroupName: StrictStr | None


class _VictimSpec(TypedDict, total=False):
    nodeName: StrictStr | None
    priority: Int32 | None
    priorityClassName: StrictStr | None
    preemptionPolicy: StrictStr | None
    schedulingGroup: _SchedulingGroup | None  # its PodGroup (Kubernetes 1.37, `GenericWorkload`)


class _Spec(_VictimSpec, total=False):
    """A preemptor's spec, or a pod of the extender's: its scheduling constraints are read too."""

    nodeSelector: dict[str, StrictStr] | None
    containers: list[dict[str, Any]] | None
    initContainers: list[dict[str, Any]] | None
    tolerations: list[dict[str, Any]] | None
    affinity: dict[str, Any] | None
    overhead: dict[str, Any] | None


class _Condition(TypedDict, total=False):
    type: StrictStr | None
    status: StrictStr | None
    reason: StrictStr | None
    message: StrictStr | None  # the scheduler's DisruptionTarget mark names the scheduler in it
    lastTransitionTime: Time | None


class _Status(TypedDict, total=False):
    phase: StrictStr | None
    nominatedNodeName: StrictStr | None
    conditions: list[_Condition] | None


class PodFields(TypedDict, total=False):
    metadata: _Metadata | None
    spec: _Spec | None
    status: _Status | None


class VictimFields(TypedDict, total=False):
    """A pod the guard judges as a victim: it reads no container, toleration or affinity of it."""

    metadata: _Metadata | None
    spec: _VictimSpec | None
    status: _Status | None


_POD: TypeAdapter[PodFields] = TypeAdapter(PodFields)


def pod_problem(value: Any, where: str) -> str | None:
    """What is wrong with the fields we read of a pod (`where` names it, e.g. "Pod"), or None."""
    try:
        _POD.validate_python(value)
    except ValidationError as error:
        return first_error(error, where)
    return None
