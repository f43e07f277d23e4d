"""Admission rules for PriorityClass annotations (architecture §4): each rule and its message."""

import pytest

from preemption_toleration.core.annotations import LEGACY_PREFIX, PREFIX
from preemption_toleration.validation import (
    ManagedAnnotations,
    Severity,
    check_managed_annotation_change,
    check_priority_class,
)
from tests.builders import priority_class

MIN = PREFIX + "minimum-preemptable-priority"
TOL = PREFIX + "toleration-seconds"
E, W = Severity.ERROR, Severity.WARNING

RULES = [
    # (rule id, class, severity, words the message must contain)
    (
        "invalid-integer",
        priority_class("low", 8000, "10k", "-1"),
        E,
        ['PriorityClass "low"', f'{MIN}="10k"', "not a base-10 integer", 'e.g. "10000"'],
    ),
    (
        "invalid-integer",
        priority_class("low", 8000, "10000", ""),
        E,
        ['PriorityClass "low"', f'{TOL}=""', "empty", "remove the annotation"],
    ),
    ("invalid-integer", priority_class("low", 8000, " 10000", "-1"), E, [f'{MIN}=" 10000"', "base-10"]),
    ("invalid-integer", priority_class("low", 8000, "10000.0", "-1"), E, ["not a base-10 integer"]),
    ("invalid-integer", priority_class("low", 8000, "0x2710", "-1"), E, ["not a base-10 integer"]),
    (
        "invalid-integer",
        priority_class("low", 8000, "3000000000", "-1"),
        E,
        ["out of the int32 range", "between -2147483648 and 2147483647"],
    ),
    ("invalid-integer", priority_class("low", 8000, "10000", "99999999999999999999"), E, ["int64"]),
    (
        "unknown-key",
        priority_class("low", 8000, **{PREFIX + "toleration-second": "600"}),
        E,
        ['PriorityClass "low"', PREFIX + 'toleration-second="600"', f"did you mean {TOL}?"],
    ),
    ("unknown-key", priority_class("low", 8000, **{PREFIX + "minimum-priority": "1"}), E, [f"did you mean {MIN}?"]),
    (
        "toleration-overflow",
        priority_class("low", 8000, "10000", "9223372037"),
        E,
        ['"9223372037"', "above 9223372036", "wraps", '"-1" for forever'],
    ),
    (
        "legacy-prefix",
        priority_class("low", 8000, **{LEGACY_PREFIX + "toleration-seconds": "600"}),
        W,
        [LEGACY_PREFIX + "toleration-seconds", "ignored", f"rename it to {TOL}"],
    ),
    (
        "minimum-without-effect",
        priority_class("low", 8000, "8000", "-1"),
        W,
        [
            'PriorityClass "low": minimum-preemptable-priority "8000" has no effect on this class (value 8000): '
            "it holds back only priorities below 8000, none of which can preempt its pods. Fix: set it above 8001."
        ],
    ),
    (  # the lowest priority that may preempt the class's pods is value + 1: a minimum there refuses nothing
        "minimum-without-effect",
        priority_class("low", 8000, "8001", "-1"),
        W,
        ['minimum-preemptable-priority "8001" has no effect on this class (value 8000)', "above 8001"],
    ),
    ("minimum-without-effect", priority_class("low", 8000, "100", "-1"), W, ['"100" has no effect']),
    (
        "toleration-without-minimum",
        priority_class("low", 8000, None, "600"),
        W,
        ['toleration-seconds "600"', "no effect", MIN],
    ),
    ("negative-toleration", priority_class("low", 8000, "10000", "-5"), W, ['"-5"', 'write "-1"']),
    (
        "non-canonical-integer",
        priority_class("low", 8000, "+10000", "-1"),
        W,
        [f'{MIN}="+10000"', "read as 10000", 'write "10000"'],
    ),
    ("non-canonical-integer", priority_class("low", 8000, "10000", "0600"), W, ['write "600"']),
    (
        "minimum-above-system-classes",
        priority_class("low", 8000, "2000001001", "-1"),
        W,
        ['"2000001001"', "above every system class", "at most 2000001000"],
    ),
    ("reserved-name", priority_class("system-critical", 10000), E, ["'system-' are reserved", "rename"]),
    ("value-out-of-range", priority_class("huge", 1000000001), E, ["above 1000000000"]),
    (
        "invalid-value",
        {"kind": "PriorityClass", "metadata": {"name": "x"}, "value": "8000"},
        E,
        ['value is "8000"', "integer value"],
    ),
    ("annotation-not-string", priority_class("low", 8000, **{MIN: 10000}), E, ["not a string", "quote it"]),
    (
        "invalid-metadata",
        {"kind": "PriorityClass", "metadata": "zz", "value": 8000},
        E,
        ['metadata is "zz"', "needs metadata with a name"],
    ),
    (
        "invalid-metadata",
        {"kind": "PriorityClass", "metadata": {"name": "x", "annotations": [MIN]}, "value": 8000},
        E,
        ["metadata.annotations is", "not a map"],
    ),
    (
        "invalid-metadata",
        {"kind": "PriorityClass", "metadata": {"name": "x", "labels": "tier"}, "value": 8000},
        E,
        ['metadata.labels is "tier", not a map'],
    ),
]


@pytest.mark.parametrize(
    ("rule", "klass", "severity", "words"), RULES, ids=[f"{c[0]}-{i}" for i, c in enumerate(RULES)]
)
def test_rule(rule, klass, severity, words) -> None:
    findings = [f for f in check_priority_class(klass) if f.rule == rule]
    assert len(findings) == 1, check_priority_class(klass)
    assert findings[0].severity is severity
    for word in words:
        assert word in findings[0].message


CLEAN = [
    ("the two example classes: forever", priority_class("low-non-preempted", 8000, "10000", "-1")),
    ("the two example classes: 10 minutes", priority_class("low-non-preempted-10min", 8000, "10000", "600")),
    ("a class without annotations", priority_class("low", 8000)),
    ("the system classes", priority_class("system-node-critical", 2000001000)),
    ("other annotations are not ours", priority_class("low", 8000, **{"example.com/owner": "team-a"})),
    ("the largest toleration that does not wrap", priority_class("low", 8000, "10000", "9223372036")),
    ("the lowest minimum that refuses a preemptor: value + 2", priority_class("low", 8000, "8002", "-1")),
]


@pytest.mark.parametrize(("case", "klass"), CLEAN, ids=[c[0] for c in CLEAN])
def test_clean(case, klass) -> None:
    assert check_priority_class(klass) == []


def test_unparsable_value_does_not_also_warn_about_missing_minimum() -> None:
    rules = [f.rule for f in check_priority_class(priority_class("low", 8000, "10k", "600"))]
    assert rules == ["invalid-integer"]


MANAGED = ManagedAnnotations("batch-policy", {MIN: "10000", TOL: "-1"})
MANAGED_CASES = [
    # (rule, old annotations, new annotations, refused)
    ("unchanged values are kept", {MIN: "10000", TOL: "-1"}, {MIN: "10000", TOL: "-1"}, False),
    ("writing what the policy wants is allowed", {}, {MIN: "10000", TOL: "-1"}, False),
    ("other annotations may change", {MIN: "10000"}, {MIN: "10000", "team": "a"}, False),
    ("changing a managed value is refused", {MIN: "10000", TOL: "-1"}, {MIN: "9000", TOL: "-1"}, True),
    ("removing a managed key is refused", {MIN: "10000", TOL: "-1"}, {MIN: "10000"}, True),
]


@pytest.mark.parametrize(("rule", "old", "new", "refused"), MANAGED_CASES, ids=[c[0] for c in MANAGED_CASES])
def test_managed_annotation_change(rule, old, new, refused) -> None:
    findings = check_managed_annotation_change("low", old, new, MANAGED)
    assert bool(findings) is refused
    for finding in findings:
        assert 'PreemptionTolerationPolicy "batch-policy"' in finding.message
        assert "edit the policy instead" in finding.message


def test_adding_a_key_the_policy_leaves_unset_is_refused() -> None:
    managed = ManagedAnnotations("p", {MIN: "10000"})
    [finding] = check_managed_annotation_change("low", {MIN: "10000"}, {MIN: "10000", TOL: "60"}, managed)
    assert f'sets {TOL}="60"' in finding.message


def test_ungoverned_class_may_change_freely() -> None:
    assert check_managed_annotation_change("low", {}, {MIN: "1"}, None) == []
