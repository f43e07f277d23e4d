"""The guard's reading of an AdmissionReview body: one pass, strict, building Python objects only for the
fields the guard reads, with their types checked in the same pass.

A scheduler's DELETE carries its whole victim: 8 KB for a realistic pod, three quarters of it
managedFields, containers and their status, none of which the guard reads. pydantic-core still parses
every byte (so a body that is not JSON, or nests deeper than 200 levels, is refused), but builds no Python
object for a field these schemas leave out.

`read_checked_review` reads a review with the AdmissionReview model's fields and constraints, as plain
dicts (no model instance), and of its pods (`request.object`, `request.oldObject`) the fields the guard
reads (`VictimFields`). Every review the API server sends passes. Any other body is refused with what the
review model would say of it, or, when only a pod's field is wrong, with that field's problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Required

from pydantic import AliasChoices, BaseModel, Field, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from preemption_toleration.api.admission import AdmissionRequest, AdmissionReview
from preemption_toleration.api.base import errors_told
from preemption_toleration.api.bodies import BadRequest, body_problem
from preemption_toleration.api.pod import VictimFields

# Types built from models at run time, which a type checker cannot follow
_typed_dict: Any = TypedDict
_annotated: Any = Annotated
_required: Any = Required

_POD_FIELDS = ("object", "old_object")


def _spellings(model: type[BaseModel], name: str) -> tuple[str, str]:
    """The keys `model` reads its field `name` by: its alias, then its name (it populates by name too)."""
    return model.model_fields[name].alias or name, name


def _fields_of(model: type[BaseModel], replaced: Mapping[str, Any] | None = None) -> Any:
    """`model`'s fields as a TypedDict, which pydantic-core validates into plain dicts: the same types and
    constraints, each field stored under its name and read by its alias or its name (as the model reads
    it); an optional field the body leaves out stays out (its reader gives the model's default). Nested
    models become TypedDicts too; `replaced` gives fields another type."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = (replaced or {}).get(name, info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = _fields_of(annotation)
        read_as = Field(validation_alias=AliasChoices(*_spellings(model, name)))
        typed = _annotated[(annotation, *info.metadata, read_as)]
        fields[name] = _required[typed] if info.is_required() else typed
    return _typed_dict(f"{model.__name__}Fields", fields, total=False)


_CHECKED: TypeAdapter[Any] = TypeAdapter(
    _fields_of(
        AdmissionReview, {"request": _fields_of(AdmissionRequest, dict.fromkeys(_POD_FIELDS, VictimFields | None))}
    )
)
# Where a pod stands in a review, by each key the review model reads it by
_PODS = frozenset(("request", key) for name in _POD_FIELDS for key in _spellings(AdmissionRequest, name))


def read_checked_review(body: bytes) -> dict[str, Any]:
    """`body` as an AdmissionReview the guard may judge: the review model's fields by their Python names
    (`api_version`, `request.user_info`...) and its pods' fields the guard reads, each of its type. Raises
    BadRequest with what the review model says of any other body, or else (the review is well-formed) with
    the first problem of a pod's field the guard reads."""
    try:
        review: dict[str, Any] = _CHECKED.validate_json(body)
    except ValidationError as error:
        raise BadRequest(_problem(error)) from None
    return review


def _problem(error: ValidationError) -> str:
    if (problem := body_problem(error, "an AdmissionReview")) is not None:
        return problem
    errors = error.errors()
    envelope = [each for each in errors if not _in_pod(each)]
    if envelope:  # what the review model, which reads a pod as any JSON object, says
        return f"request body is not an AdmissionReview: {errors_told(envelope)}"
    pod = errors[0]["loc"][:2]
    return errors_told([each for each in errors if each["loc"][:2] == pod])


def _in_pod(error: ErrorDetails) -> bool:
    """A problem inside a pod (not of the pod as a whole: one that is no object is the review's)."""
    location = error["loc"]
    return len(location) > 2 and location[:2] in _PODS
