"""The guard's reading of an AdmissionReview body: one pass, building Python objects only for the fields the
guard reads, with their types checked in the same pass.

A scheduler's DELETE carries its whole victim: 8 KB for a realistic pod, three quarters of it
managedFields, containers and their status, none of which the guard reads. pydantic-core still parses
every byte (so a body that is not JSON, or nests deeper than 200 levels, is refused as before), but builds
no Python object for a field these schemas leave out.

`read_checked_review` reads a review with the AdmissionReview model's fields and constraints, as plain
dicts (no model instance), and the fields the guard reads of its pods (`VictimFields`). Every review the
API server sends passes; the guard makes its record of it (`guard.request`). A body that fails it is read
again by `read_review_leniently`, every level accepting any JSON value, which refuses nothing but invalid
JSON: the guard's fast path reads that JSON, and the checks after it (`AdmissionReview`, `victim_problem`)
say what is wrong. The lenient reading keeps the keys those checks read: the model's fields, by alias and
by name, and `VICTIM_KEYS` for `request.object` and `request.oldObject`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Required, Union

from pydantic import AliasChoices, BaseModel, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12

from preemption_toleration.api.admission import AdmissionRequest, AdmissionReview
from preemption_toleration.api.pod import VICTIM_KEYS, VictimFields

# Types built from models and key lists at run time, which a type checker cannot follow
_typed_dict: Any = TypedDict
_annotated: Any = Annotated
_required: Any = Required


def _fields_of(model: type[BaseModel], replaced: Mapping[str, Any] | None = None) -> Any:
    """`model`'s fields as a TypedDict, which pydantic-core validates into plain dicts: the same types and
    constraints, each field stored under its name and read by its alias or its name (as the model, which
    populates by name, reads it); an optional field the body leaves out stays out (its reader gives the
    model's default). Nested models become TypedDicts too; `replaced` gives fields another type."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation = (replaced or {}).get(name, info.annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = _fields_of(annotation)
        read_as = Field(validation_alias=AliasChoices(info.alias or name, name))
        typed = _annotated[(annotation, *info.metadata, read_as)]
        fields[name] = _required[typed] if info.is_required() else typed
    return _typed_dict(f"{model.__name__}Fields", fields, total=False)


_CHECKED: TypeAdapter[Any] = TypeAdapter(
    _fields_of(
        AdmissionReview,
        {"request": _fields_of(AdmissionRequest, dict.fromkeys(("object", "old_object"), VictimFields | None))},
    )
)


def read_checked_review(body: bytes) -> dict[str, Any] | None:
    """`body` as an AdmissionReview the guard may judge: the review model's fields by their Python names
    (`api_version`, `request.user_info`...) and its pods' fields the guard reads, each of its type. None when
    the body is not JSON, not such a review, or a field the guard reads of a pod has the wrong type."""
    try:
        review: dict[str, Any] = _CHECKED.validate_json(body)
    except ValidationError:
        return None
    return review


def _or_any_value(kept: Any) -> Any:
    """`kept` for a JSON object; any other JSON value as it is."""
    return Annotated[Union[kept, Any], Field(union_mode="left_to_right")]  # noqa: UP007 - a runtime type


def _object(name: str, keys: Iterable[str], nested: Mapping[str, Any]) -> Any:
    fields: dict[str, Any] = dict.fromkeys(sorted(keys), Any)
    fields.update(nested)
    return _or_any_value(_typed_dict(name, fields, total=False))


def _spellings(model: type[BaseModel], name: str) -> set[str]:
    """The keys `model` accepts for its field `name`: its alias, and its name (it populates by name too)."""
    return {model.model_fields[name].alias or name, name}


def _model_keys(model: type[BaseModel]) -> set[str]:
    return {key for name in model.model_fields for key in _spellings(model, name)}


def _nested(model: type[BaseModel], names: Iterable[str], value: Any) -> dict[str, Any]:
    """`value` under each key `model` accepts for each of `names`."""
    return {key: value for name in names for key in _spellings(model, name)}


_POD = _object("KeptPod", (), {section: _object(f"Kept_{section}", keys, {}) for section, keys in VICTIM_KEYS.items()})
_REQUEST = _object(
    "KeptRequest", _model_keys(AdmissionRequest), _nested(AdmissionRequest, ("object", "old_object"), _POD)
)
_REVIEW: TypeAdapter[Any] = TypeAdapter(
    _object("KeptReview", _model_keys(AdmissionReview), _nested(AdmissionReview, ("request",), _REQUEST))
)


def read_review_leniently(body: bytes) -> Any:
    """The JSON value of `body`, its objects cut to what the guard reads when they stand where an
    AdmissionReview has them, each as the JSON has it, for the checks after it to say what is wrong.
    Raises ValueError with the parser's message when `body` is not JSON."""
    try:
        return _REVIEW.validate_json(body)
    except ValidationError as error:
        first = error.errors()[0]
        raise ValueError(str(first.get("ctx", {}).get("error") or first["msg"])) from None
