"""Shared pydantic conventions: camelCase on the wire, snake_case in Python, typed Kubernetes integers,
and validation errors told in the API's terms."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from preemption_toleration.core.intparse import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN

Int32 = Annotated[int, Field(strict=True, ge=INT32_MIN, le=INT32_MAX, json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(strict=True, ge=INT64_MIN, le=INT64_MAX, json_schema_extra={"format": "int64"})]


class KubeModel(BaseModel):
    """A Kubernetes API object part: camelCase fields, unknown fields refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        validate_assignment=True,
    )

    def to_kube(self) -> dict[str, Any]:
        """Kubernetes JSON: camelCase, unset fields omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(BaseModel):
    """The metadata fields we read; the API server adds many more, which are kept as they are."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    generation: int | None = None
    uid: str | None = None
    resource_version: str | None = None


# pydantic's wording for the error types a JSON field can give, in the API's terms (pydantic's own names
# Python types and our model classes: "a valid dictionary or instance of UserInfo").
_EXPECTED = {
    "model_type": "should be an object",
    "dict_type": "should be an object",
    "list_type": "should be a list",
    "int_type": "should be an integer",
    "string_type": "should be a string",
    "bool_type": "should be a boolean",
}


def first_error(error: ValidationError, where: str = "") -> str:
    """`error`'s first error as "path: what is wrong", and how many more there are; the path starts with
    `where` (the whole value, "body" without one)."""
    return errors_told(error.errors(), where)


def errors_told(errors: Sequence[ErrorDetails], where: str = "") -> str:
    """`first_error` of some of a ValidationError's errors."""
    first = errors[0]
    path = ".".join(str(part) for part in ((where,) if where else ()) + tuple(first["loc"])) or "body"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path}: {_EXPECTED.get(first['type'], first['msg'])}{more}"
