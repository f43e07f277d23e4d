"""Annotation integers are parsed exactly like Go's strconv.ParseInt(s, 10, bits)."""

import pytest

from preemption_toleration.core.intparse import (
    IntParseError,
    IntProblem,
    is_canonical,
    parse_go_int,
    wrap_int32,
    wrap_int64,
)

ACCEPTED = [
    # (rule, text, bits, value)
    ("plain digits", "10000", 32, 10000),
    ("leading plus sign", "+200", 32, 200),
    ("leading minus sign", "-1", 64, -1),
    ("leading zeros are decimal, not octal", "007", 32, 7),
    ("negative zero", "-0", 32, 0),
    ("thousands of leading zeros (Python's int() would refuse)", "0" * 4400 + "9000", 32, 9000),
    ("int32 upper bound", "2147483647", 32, 2**31 - 1),
    ("int32 lower bound", "-2147483648", 32, -(2**31)),
    ("int64 upper bound", "9223372036854775807", 64, 2**63 - 1),
    ("int64 lower bound", "-9223372036854775808", 64, -(2**63)),
    ("18 digits (the longest the unsigned fast path reads)", "999999999999999999", 64, 10**18 - 1),
    ("19 digits (past the fast path)", "1000000000000000000", 64, 10**18),
    ("18 digits with leading zeros", "000000000000009000", 32, 9000),
]

REFUSED = [
    # (rule, text, bits, problem)
    ("empty is an error, not absent", "", 32, IntProblem.EMPTY),
    ("letters", "10k", 32, IntProblem.SYNTAX),
    ("leading space", " 100", 32, IntProblem.SYNTAX),
    ("trailing space", "100 ", 32, IntProblem.SYNTAX),
    ("trailing newline", "100\n", 32, IntProblem.SYNTAX),
    ("decimal point", "1.5", 32, IntProblem.SYNTAX),
    ("exponent", "1e4", 32, IntProblem.SYNTAX),
    ("hexadecimal", "0x10", 32, IntProblem.SYNTAX),
    ("underscore separators", "10_000", 32, IntProblem.SYNTAX),
    ("sign alone", "-", 32, IntProblem.SYNTAX),
    ("two signs", "+-1", 32, IntProblem.SYNTAX),
    ("non-ASCII digits", "１２", 32, IntProblem.SYNTAX),
    ("superscript digits (str.isdigit says yes)", "²", 32, IntProblem.SYNTAX),
    ("Arabic-Indic digits", "١٢", 32, IntProblem.SYNTAX),
    ("above int32", "2147483648", 32, IntProblem.RANGE),
    ("above int32 within the fast path", "99999999999", 32, IntProblem.RANGE),
    ("below int32", "-2147483649", 32, IntProblem.RANGE),
    ("above int64", "9223372036854775808", 64, IntProblem.RANGE),
    ("below int64", "-9223372036854775809", 64, IntProblem.RANGE),
    ("thousands of digits", "9" * 5000, 64, IntProblem.RANGE),
]


@pytest.mark.parametrize(("rule", "text", "bits", "value"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_accepted(rule: str, text: str, bits: int, value: int) -> None:
    assert parse_go_int(text, bits) == value


@pytest.mark.parametrize(("rule", "text", "bits", "problem"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused(rule: str, text: str, bits: int, problem: IntProblem) -> None:
    with pytest.raises(IntParseError) as raised:
        parse_go_int(text, bits)
    assert raised.value.problem is problem


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("10000", True),
        ("-1", True),
        ("0", True),
        ("+200", False),
        ("007", False),
        ("-0", False),
        ("00", False),
        ("-007", False),
        ("²", False),
    ],
)
def test_canonical_spelling(text: str, canonical: bool) -> None:
    assert is_canonical(text) is canonical


def test_wrapping_matches_go_overflow() -> None:
    assert wrap_int32(2**31) == -(2**31)
    assert wrap_int32(1000) == 1000
    assert wrap_int64(9223372037 * 10**9) == 9223372037 * 10**9 - 2**64
