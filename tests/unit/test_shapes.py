"""Reading JSON whose shape is not guaranteed: what counts as a map, and the times we read."""

from collections import OrderedDict
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType

import pytest

from preemption_toleration.core.pods import parse_time
from preemption_toleration.core.shapes import is_mapping

MAPPINGS = [
    # (rule, value, is a map)
    ("a dict, what JSON decodes to", {"a": 1}, True),
    ("an empty dict", {}, True),
    ("a read-only view of a dict", MappingProxyType({"a": 1}), True),
    ("a dict subclass", OrderedDict(a=1), True),
    ("null", None, False),
    ("text", "metadata", False),
    ("a number", 3, False),
    ("a fraction", 1.5, False),
    ("a boolean", True, False),
    ("a list", [{"a": 1}], False),
    ("a list of pairs", [("a", 1)], False),
    ("bytes", b"{}", False),
]


@pytest.mark.parametrize(("rule", "value", "expected"), MAPPINGS, ids=[m[0] for m in MAPPINGS])
def test_is_mapping(rule: str, value: object, expected: bool) -> None:
    assert is_mapping(value) is expected, rule


TIMES = [
    # (rule, text, the time)
    ("the API server's form", "2026-11-23T10:00:00Z", datetime(2026, 11, 23, 10, tzinfo=UTC)),
    ("a lowercase z", "2026-11-23T10:00:00z", datetime(2026, 11, 23, 10, tzinfo=UTC)),
    ("a fraction", "2026-11-23T10:00:00.250Z", datetime(2026, 11, 23, 10, 0, 0, 250000, tzinfo=UTC)),
    ("an offset", "2026-11-23T11:00:00+01:00", datetime(2026, 11, 23, 11, tzinfo=timezone(timedelta(hours=1)))),
]


@pytest.mark.parametrize(("rule", "text", "expected"), TIMES, ids=[t[0] for t in TIMES])
def test_parse_time(rule: str, text: str, expected: datetime) -> None:
    assert parse_time(text) == expected, rule


BAD_TIMES = [
    # (rule, text, the error)
    ("not a time", "yesterday", "Invalid isoformat string: 'yesterday'"),
    ("no time zone", "2026-11-23T10:00:00", "has no time zone"),
    ("a day the month does not have", "2026-02-30T10:00:00Z", "day is out of range for month"),
    ("two zones", "2026-11-23T10:00:00ZZ", "Invalid isoformat string"),
]


@pytest.mark.parametrize(("rule", "text", "error"), BAD_TIMES, ids=[t[0] for t in BAD_TIMES])
def test_parse_time_refuses(rule: str, text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_time(text)
