"""The fields of a pod that the guard, the extender and the toleration contract read, with their types.

An AdmissionReview or an extender call carries whole pods as JSON. The API server never sends a pod whose
`spec.priority` is a list, but a forged or broken client can, and the decision must then answer with
what is wrong rather than fail. `pod_problem` checks exactly the fields our pure code reads; every other
field passes unread.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, StrictStr, ValidationError
from pydantic.alias_generators import to_camel

from preemption_toleration.api.base import Int32
from preemption_toleration.core.pods import parse_time


def _rfc3339(text: str) -> str:
    if text:
        parse_time(text)  # ValueError: pydantic reports it with the field's location
    return text


Time = Annotated[StrictStr, AfterValidator(_rfc3339)]


class _Read(BaseModel):
    """Only the fields we read are checked; unknown ones are ignored, as newer API servers add some."""

    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True)


class _Metadata(_Read):
    name: StrictStr | None = None
    namespace: StrictStr | None = None
    uid: StrictStr | None = None
    labels: dict[str, StrictStr] | None = None
    annotations: dict[str, StrictStr] | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None


class _Spec(_Read):
    node_name: StrictStr | None = None
    priority: Int32 | None = None
    priority_class_name: StrictStr | None = None
    preemption_policy: StrictStr | None = None
    node_selector: dict[str, StrictStr] | None = None
    containers: list[dict[str, Any]] | None = None
    init_containers: list[dict[str, Any]] | None = None
    tolerations: list[dict[str, Any]] | None = None
    affinity: dict[str, Any] | None = None
    overhead: dict[str, Any] | None = None


class _Condition(_Read):
    type: StrictStr | None = None
    status: StrictStr | None = None
    reason: StrictStr | None = None
    last_transition_time: Time | None = None


class _Status(_Read):
    phase: StrictStr | None = None
    nominated_node_name: StrictStr | None = None
    conditions: list[_Condition] | None = None


class PodFields(_Read):
    metadata: _Metadata | None = None
    spec: _Spec | None = None
    status: _Status | None = None


class ObjectWithMetadata(_Read):
    """An Eviction, say: only its metadata is read."""

    metadata: _Metadata | None = None


# pydantic's wording for the error types a JSON field can give, in the API's terms
_EXPECTED = {
    "model_type": "should be an object",
    "dict_type": "should be an object",
    "list_type": "should be a list",
    "int_type": "should be an integer",
    "string_type": "should be a string",
}


def _first_problem(model: type[BaseModel], value: Any, where: str) -> str | None:
    try:
        model.model_validate(value)
    except ValidationError as error:
        first = error.errors()[0]
        path = ".".join(str(part) for part in (where, *first["loc"]))
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        return f"{path}: {_EXPECTED.get(first['type'], first['msg'])}{more}"
    return None


def pod_problem(value: Any, where: str) -> str | None:
    """What is wrong with the fields we read of a pod (`where` names it, e.g. "request.oldObject"), or None."""
    return _first_problem(PodFields, value, where)


def metadata_problem(value: Any, where: str) -> str | None:
    """What is wrong with an object's metadata as we read it, or None."""
    return _first_problem(ObjectWithMetadata, value, where)
