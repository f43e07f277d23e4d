"""A finding is one problem of one object: an error refuses it, a warning only informs."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

# Where in an object a finding is, when its rule knows: keys and list positions from the top of the object
# (("metadata", "annotations", key), ("spec", "priorityClassSelector", "matchExpressions", 0)).
# `ptol validate` reports the line of the deepest of them written in the file.
Field = tuple[str | int, ...]


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"  # `ptol validate` only: what was skipped and why; never fails a run


@dataclass(frozen=True)
class Finding:
    severity: Severity
    rule: str  # stable identifier, documented in docs/validation-rules.md
    message: str  # names the object, the key, the value and the fix
    field: Field = ()  # the part of the object it is about; () for the object as a whole

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def error(rule: str, message: str, field: Field = ()) -> Finding:
    return Finding(Severity.ERROR, rule, message, field)


def warning(rule: str, message: str, field: Field = ()) -> Finding:
    return Finding(Severity.WARNING, rule, message, field)


def note(rule: str, message: str, field: Field = ()) -> Finding:
    return Finding(Severity.NOTE, rule, message, field)


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.is_error]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.severity is Severity.WARNING]


def edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]


def nearest(word: str, candidates: Sequence[str]) -> str:
    """The candidate closest to `word` by edit distance (ties: the first listed)."""
    return min(candidates, key=lambda candidate: edit_distance(word.lower(), candidate.lower()))


# Control characters (C0, DEL, C1) and the line and paragraph separators: `escaped` writes them as escapes
# where a message is printed (`ptol validate`), so that a value cannot start a line of output of its own or
# move the terminal's cursor. Messages themselves keep them: the admission policy's CEL messages, which
# cannot escape, must stay identical to the webhook's (tests/unit/test_admission_policy.py).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def escaped(text: str) -> str:
    """`text` with its control characters written as escapes (\\n, \\x1b, \\u2028)."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


def shown(value: object, limit: int = 64) -> str:
    """A value as messages show it: at most `limit` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def described(value: Any, limit: int = 64) -> str:
    """A value of a manifest as YAML and JSON write it, not as Python does: `null`, `true`, `"text"` (quoted,
    escaped), `8000`, `[a, b]`, `{tier: gold}`; at most `limit` characters, however large the value."""
    parts: list[str] = []
    _describe(value, parts, limit + 1)
    return shown("".join(parts), limit)


def _describe(value: Any, parts: list[str], budget: int) -> int:
    """Appends `value`'s text to `parts` until `budget` characters are written; returns what is left."""
    if budget <= 0:
        return 0
    if value is None:
        text = "null"
    elif value is True or value is False:
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = json.dumps(value[:budget], ensure_ascii=False)
    elif isinstance(value, float):
        text = str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
    elif isinstance(value, int):
        text = str(value) if value.bit_length() < 200 else "a number of more digits than fit"
    elif isinstance(value, Mapping) or isinstance(value, (list, tuple)):
        is_map = isinstance(value, Mapping)
        parts.append("{" if is_map else "[")
        budget -= 1
        entries: Iterable[Any] = value.items() if isinstance(value, Mapping) else value
        for position, item in enumerate(entries):
            if budget <= 0:
                return 0
            if position:
                parts.append(", ")
                budget -= 2
            if is_map:
                key, item = item
                budget = _describe(key, parts, budget)
                parts.append(": ")
                budget -= 2
            budget = _describe(item, parts, budget)
        parts.append("}" if is_map else "]")
        return budget - 1
    else:
        text = str(value)
    parts.append(text)
    return budget - len(text)


def kind_of_value(value: Any) -> str:
    """What a value is, in the manifest's terms: "a string", "a number", "true", "null", "a list", "a map"."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, list | tuple):
        return "a list"
    return "a value of another type"
