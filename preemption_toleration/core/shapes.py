"""Reading JSON whose shape is not guaranteed (admission requests can carry malformed objects): a value of
the wrong type reads as absent."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeGuard

# JSON's other types, never a Mapping: answered without the ABC check, which costs ten times more.
_NOT_MAPPINGS = frozenset({type(None), str, int, float, bool, list})


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    kind = type(value)
    return kind is dict or (kind not in _NOT_MAPPINGS and isinstance(value, Mapping))


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if is_mapping(value) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int:
    """An integer, booleans excluded (JSON `true` is no number); 0 otherwise."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
