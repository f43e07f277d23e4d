"""The guard's reading of an AdmissionReview body: only the fields it reads become Python objects.

A scheduler's DELETE carries its whole victim: 8 KB for a realistic pod, three quarters of it
managedFields, containers and their status, none of which the guard reads. pydantic-core still parses
every byte (so a body that is not JSON, or nests deeper than 200 levels, is refused as before), but builds
no Python object for a field this schema leaves out: 18 µs instead of 28 for `from_json` on such a body.

It reads in one pass with the types of the fields the guard reads of a pod checked as well (`VictimFields`):
every review the API server sends passes, and is returned as a `CheckedReview`, which spares the request
its separate type check (`request_problem`). A body that fails that pass is read again with every level
accepting any JSON value, so this reader refuses nothing but invalid JSON: a field of the wrong type
reaches the checks after it (`AdmissionReview`, `victim_problem`) and gets their message. The kept
keys are derived from those checks: the AdmissionReview model's fields, by alias and by name, and
`VICTIM_KEYS` for `request.object` and `request.oldObject`. A field the guard starts to read must be
checked there, and is then kept here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Union

from pydantic import BaseModel, Field, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from preemption_toleration.api.admission import AdmissionRequest, AdmissionReview
from preemption_toleration.api.pod import VICTIM_KEYS, VictimFields

_typed_dict: Any = TypedDict  # built from key lists, which a type checker cannot follow


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


# The same reading, with the pods' read fields type-checked in the same pass (VictimFields, which holds an
# Eviction's metadata too): what `request_problem` would check after, for the reviews the API server sends.
_CHECKED_POD = VictimFields | None
_CHECKED: TypeAdapter[Any] = TypeAdapter(
    _typed_dict(
        "CheckedReview",
        {
            **dict.fromkeys(sorted(_model_keys(AdmissionReview)), Any),
            **_nested(
                AdmissionReview,
                ("request",),
                _typed_dict(
                    "CheckedRequest",
                    {
                        **dict.fromkeys(sorted(_model_keys(AdmissionRequest)), Any),
                        **_nested(AdmissionRequest, ("object", "old_object"), _CHECKED_POD),
                    },
                    total=False,
                ),
            ),
        },
        total=False,
    )
)


class CheckedReview(dict[str, Any]):
    """A review read with its pods' fields type-checked: `request_problem` has nothing to find in it."""


def read_guard_review(body: bytes) -> Any:
    """The JSON value of `body`, its objects cut to what the guard reads when they stand where an
    AdmissionReview has them: a `CheckedReview` when the fields the guard reads of its pods have the right
    types (every review the API server sends), else as read, for the checks after it to say what is wrong.
    Raises ValueError with the parser's message when `body` is not JSON."""
    try:
        return CheckedReview(_CHECKED.validate_json(body))
    except ValidationError:
        pass  # not JSON, or a field of the wrong type: read it leniently, for the later checks' messages
    try:
        return _REVIEW.validate_json(body)
    except ValidationError as error:
        first = error.errors()[0]
        raise ValueError(str(first.get("ctx", {}).get("error") or first["msg"])) from None
