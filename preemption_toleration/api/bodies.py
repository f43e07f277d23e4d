"""A request body read into its model once, strictly, with a 400's words for what is wrong with it: not
JSON, a JSON value that is no object, or the first field's problem."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from pydantic import ValidationError

from preemption_toleration.api.base import first_error

ModelT = TypeVar("ModelT")


class BadRequest(Exception):
    """Input that is not a request the endpoint judges; its text is the 400's message."""


def body_problem(error: ValidationError, expected: str) -> str | None:
    """What makes a body no `expected` ("an AdmissionReview") at all: not JSON, or a JSON value that is not
    an object; None when it is a JSON object (a field has the problem)."""
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return f"request body is not JSON: {first['msg'].removeprefix('Invalid JSON: ')}"
    if not first["loc"] and first["type"] in ("model_type", "dict_type"):
        return f"request body is a JSON {type(first['input']).__name__}, not {expected} object"
    return None


def read_model(body: bytes, read: Callable[[bytes], ModelT], expected: str) -> ModelT:
    """`body` read into its model by `read` (a model's `model_validate_json`: pydantic-core parses and
    validates in one pass, and refuses nesting deeper than 200 levels with an error instead of exhausting
    the stack), or BadRequest saying what is wrong."""
    try:
        return read(body)
    except ValidationError as error:
        raise BadRequest(
            body_problem(error, expected) or f"request body is not {expected}: {first_error(error)}"
        ) from None
