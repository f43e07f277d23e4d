"""A finding is one problem of one object: an error refuses it, a warning only informs."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    severity: Severity
    rule: str  # stable identifier, documented in docs/validation-rules.md
    message: str  # names the object, the key, the value and the fix

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR


def error(rule: str, message: str) -> Finding:
    return Finding(Severity.ERROR, rule, message)


def warning(rule: str, message: str) -> Finding:
    return Finding(Severity.WARNING, rule, message)


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.is_error]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if not finding.is_error]


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


def shown(value: object, limit: int = 64) -> str:
    """A value as messages show it: at most `limit` characters."""
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
