"""Go `strconv.ParseInt(s, 10, bits)` semantics, which the upstream plugin uses for both annotations."""

from __future__ import annotations

import re
from enum import Enum

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# Go accepts one optional sign and ASCII digits only: no spaces, underscores (base 10), or exponent.
_GO_BASE10 = re.compile(r"[+-]?[0-9]+")
_CANONICAL = re.compile(r"-?(0|[1-9][0-9]*)")


class IntProblem(str, Enum):
    EMPTY = "empty"
    SYNTAX = "syntax"
    RANGE = "range"


class IntParseError(ValueError):
    def __init__(self, text: str, bits: int, problem: IntProblem) -> None:
        self.text = text
        self.bits = bits
        self.problem = problem
        shown = text if len(text) <= 64 else text[:63] + "…"
        super().__init__(f'strconv.ParseInt: parsing "{shown}": {describe_problem(problem, bits)}')


def describe_problem(problem: IntProblem, bits: int) -> str:
    if problem is IntProblem.EMPTY:
        return "empty"
    if problem is IntProblem.SYNTAX:
        return "not a base-10 integer"
    low, high = int_range(bits)
    return f"out of the int{bits} range {low}..{high}"


def int_range(bits: int) -> tuple[int, int]:
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


_RANGES = {bits: int_range(bits) for bits in (32, 64)}


def parse_go_int(text: str, bits: int) -> int:
    """Parse `text` exactly as Go's strconv.ParseInt(text, 10, bits) does, or raise IntParseError."""
    low, high = _RANGES.get(bits) or int_range(bits)
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():  # the common case, with no sign to read
        value = int(text, 10)  # 18 digits: below 2**63, never limited by int()'s digit cap
        if value <= high:
            return value
        raise IntParseError(text, bits, IntProblem.RANGE)
    if text == "":
        raise IntParseError(text, bits, IntProblem.EMPTY)
    if not _GO_BASE10.fullmatch(text):
        raise IntParseError(text, bits, IntProblem.SYNTAX)
    sign = -1 if text[0] == "-" else 1
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 20:  # beyond any int64, and beyond what int() may parse at all
        raise IntParseError(text, bits, IntProblem.RANGE)
    value = sign * int(digits, 10)
    if not low <= value <= high:
        raise IntParseError(text, bits, IntProblem.RANGE)
    return value


def is_canonical(text: str) -> bool:
    """True for the spelling Go's strconv.Itoa would print (no '+', no leading zeros, no '-0')."""
    if text.isascii() and text.isdigit():
        return text[0] != "0" or text == "0"
    return bool(_CANONICAL.fullmatch(text)) and text != "-0"


def wrap_int32(value: int) -> int:
    return (value - INT32_MIN) % 2**32 + INT32_MIN


def wrap_int64(value: int) -> int:
    return (value - INT64_MIN) % 2**64 + INT64_MIN


def at_most_pattern(bound: int) -> str:
    """RE2 alternatives (unanchored) matching exactly the strings of len(str(bound)) digits whose value is at
    most `bound`."""
    digits = str(bound)
    width = len(digits)
    options = []
    for i, digit in enumerate(digits):
        if digit != "0":
            rest = width - i - 1
            below = "0" if digit == "1" else f"[0-{int(digit) - 1}]"
            options.append(digits[:i] + below + (f"[0-9]{{{rest}}}" if rest else ""))
    return "|".join([*options, digits])


def go_int_pattern(bits: int) -> str:
    """An anchored RE2 pattern matching exactly the strings `parse_go_int(text, bits)` accepts: a sign, any
    leading zeros, then fewer digits than the range's bound or as many but not above it. CEL's `matches()`
    takes it, so an admission policy checks the range with no arithmetic that could overflow."""
    low, high = int_range(bits)
    shorter = f"[0-9]{{1,{len(str(high)) - 1}}}"
    return f"^(?:[+]?0*(?:{shorter}|{at_most_pattern(high)})|-0*(?:{shorter}|{at_most_pattern(-low)}))$"
