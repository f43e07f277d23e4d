"""The one-pass screen in front of the PriorityClass rules (architecture §4): when it says a class is plainly
valid, no rule would have found anything; the classes people write most are plainly valid."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preemption_toleration.core.annotations import LEGACY_PREFIX, PREFIX
from preemption_toleration.validation.priority_class import check_priority_class, every_rule, plainly_valid
from tests.builders import priority_class
from tests.unit.test_priority_class_rules import CLEAN, RULES

MIN = PREFIX + "minimum-preemptable-priority"
TOL = PREFIX + "toleration-seconds"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

PLAIN = [
    ("no annotations", priority_class("low", 8000)),
    ("forever", priority_class("low-non-preempted", 8000, "10000", "-1")),
    ("ten minutes", priority_class("low-10min", 8000, "10000", "600")),
    ("a minimum only", priority_class("low", 8000, "10000")),
    ("the lowest minimum that refuses a preemptor", priority_class("low", 8000, "8002", "-1")),
    ("a toleration of 0", priority_class("low", 8000, "10000", "0")),
    ("a negative class value", priority_class("low", -5, "0", "600")),
    ("the highest user value", priority_class("top", 1_000_000_000)),
    ("the largest minimum of nine digits", priority_class("low", 8000, "999999999", "-1")),
    ("other annotations", priority_class("low", 8000, "10000", "600", **{LAST_APPLIED: '{"kind": "x"}'})),
    (
        "labels and an empty annotation map",
        {"metadata": {"name": "low", "labels": {"tier": "batch"}, "annotations": {}}, "value": 8000},
    ),
]


@pytest.mark.parametrize(("case", "klass"), PLAIN, ids=[c[0] for c in PLAIN])
def test_the_classes_people_write_most_are_plainly_valid(case: str, klass: dict[str, Any]) -> None:
    assert plainly_valid(klass)
    assert every_rule(klass) == []


NOT_PLAIN = [
    # (the rule, or the spelling the screen leaves to the rules, and a class)
    ("minimum-without-effect", priority_class("low", 8000, "8000", "-1")),
    ("minimum-without-effect at value + 1", priority_class("low", 8000, "8001", "-1")),
    ("toleration-without-minimum", priority_class("low", 8000, None, "600")),
    ("negative-toleration", priority_class("low", 8000, "10000", "-2")),
    ("non-canonical-integer", priority_class("low", 8000, "010000", "-1")),
    ("invalid-integer", priority_class("low", 8000, "10000", "")),
    ("unknown-key", priority_class("low", 8000, **{PREFIX + "toleration-second": "600"})),
    ("legacy-prefix", priority_class("low", 8000, **{LEGACY_PREFIX + "toleration-seconds": "600"})),
    ("reserved-name", priority_class("system-low", 8000)),
    ("value-out-of-range", priority_class("low", 1_000_000_001)),
    ("invalid-value", {"metadata": {"name": "low"}, "value": True}),
    ("invalid-metadata", {"metadata": {"name": "low", "labels": {"tier": 1}}, "value": 8000}),
    ("annotation-not-string", {"metadata": {"name": "low", "annotations": {MIN: 10000}}, "value": 8000}),
    ("ten digits, left to the rules", priority_class("low", 8000, "10000", "9223372036")),
    ("a system class, left to the rules", priority_class("system-node-critical", 2_000_001_000)),
]


@pytest.mark.parametrize(("case", "klass"), NOT_PLAIN, ids=[c[0] for c in NOT_PLAIN])
def test_what_the_screen_leaves_to_the_rules(case: str, klass: dict[str, Any]) -> None:
    assert not plainly_valid(klass)
    assert check_priority_class(klass) == every_rule(klass)


@pytest.mark.parametrize("klass", [c[1] for c in RULES] + [c[1] for c in CLEAN])
def test_the_rule_tables_get_what_every_rule_finds(klass: dict[str, Any]) -> None:
    assert check_priority_class(klass) == every_rule(klass)


# Values near each boundary a rule draws, in the spellings people and tools produce.
numbers = st.integers(-(2**64), 2**64) | st.sampled_from(
    [0, -1, 8000, 10**9 - 1, 10**9, 10**9 + 1, 2**31 - 1, 2**31, 2_000_001_000, 9223372036, 9223372037]
)
number_texts = (
    numbers.map(str)
    | st.from_regex(r"[+-]?0*[0-9]{1,20}", fullmatch=True)
    | st.sampled_from(["", "-0", "+5", " 5", "5 ", "1e3", "0x10", "٣", "１", "10_000", "-1", "0", "007"])
)
annotation_values = number_texts | numbers | st.none() | st.booleans() | st.text(max_size=6)
annotation_keys = st.sampled_from(
    [MIN, TOL, PREFIX + "toleration-second", PREFIX, LEGACY_PREFIX + "toleration-seconds", LAST_APPLIED, "team"]
) | st.text(max_size=6)
maps_or_not = st.none() | st.just([]) | st.just("tier") | st.just(5)
annotations = maps_or_not | st.dictionaries(annotation_keys | st.integers(0, 3), annotation_values, max_size=4)
labels = maps_or_not | st.dictionaries(
    st.text(max_size=4) | st.integers(0, 3), st.text(max_size=4) | numbers, max_size=3
)
names = st.sampled_from(["low", "", "system-node-critical", "system-cluster-critical", "system-x", "x"]) | st.none()


@st.composite
def classes(draw: st.DrawFn) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    for key, values in (("name", names | st.integers(0, 3)), ("labels", labels), ("annotations", annotations)):
        if draw(st.booleans()):
            metadata[key] = draw(values)
    klass: dict[str, Any] = {"kind": "PriorityClass"}
    if draw(st.integers(0, 9)):  # mostly a map
        klass["metadata"] = metadata
    elif draw(st.booleans()):
        klass["metadata"] = draw(maps_or_not)
    if draw(st.integers(0, 9)):  # mostly an integer
        klass["value"] = draw(numbers)
    elif draw(st.booleans()):
        klass["value"] = draw(st.none() | st.booleans() | st.just("8000") | st.just(8000.0))
    return klass


def mostly(good: st.SearchStrategy[Any], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A good value three times in four: a class then differs from a plain one in one or two places."""
    return st.integers(0, 3).flatmap(lambda pick: good if pick else other)


@st.composite
def near_plain_classes(draw: st.DrawFn) -> dict[str, Any]:
    """Classes with the two annotations, their numbers drawn near the class value and the digit limits."""
    value = draw(mostly(st.integers(-10, 10**9 + 2), numbers))
    above = st.integers(1, 10**9).map(lambda step: str(max(value, -1) + step))
    notes: dict[Any, Any] = {}
    if draw(st.integers(0, 4)):
        notes[MIN] = draw(mostly(above, st.integers(-2, 2).map(lambda step: str(value + step)) | number_texts))
    if draw(st.integers(0, 3)):
        notes[TOL] = draw(mostly(st.integers(-1, 10**9 + 1).map(str), number_texts))
    if draw(st.booleans()):
        notes[draw(annotation_keys)] = draw(annotation_values)
    metadata: dict[str, Any] = {"name": draw(mostly(st.just("low"), names)), "annotations": notes}
    if draw(st.booleans()):
        metadata["labels"] = draw(mostly(st.just({"tier": "batch"}), labels))
    return {"kind": "PriorityClass", "metadata": metadata, "value": value}


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(klass=classes() | near_plain_classes())
def test_a_plainly_valid_class_is_one_no_rule_finds_anything_in(klass: dict[str, Any]) -> None:
    if plainly_valid(klass):
        assert every_rule(klass) == []
    assert check_priority_class(klass) == ([] if plainly_valid(klass) else every_rule(klass))
