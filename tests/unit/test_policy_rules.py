"""Rules for PreemptionTolerationPolicy objects: each rule and its message."""

from typing import Any

import pytest

from preemption_toleration.validation import Severity, check_policy
from preemption_toleration.validation.policy import parse_policy, read_policy

E, W = Severity.ERROR, Severity.WARNING


def policy(spec: Any, name: str = "batch", api_version: str = "preemption-toleration.dev/v1alpha1") -> dict:
    return {"apiVersion": api_version, "kind": "PreemptionTolerationPolicy", "metadata": {"name": name}, "spec": spec}


RULES = [
    # (rule id, spec, severity, words)
    (
        "target",
        {
            "priorityClassName": "low",
            "priorityClassSelector": {"matchLabels": {"a": "b"}},
            "minimumPreemptablePriority": 10000,
        },
        E,
        ['PreemptionTolerationPolicy "batch"', "sets both", "exactly one"],
    ),
    ("target", {"minimumPreemptablePriority": 10000}, E, ["sets neither", "exactly one"]),
    (
        "toleration-overflow",
        {"priorityClassName": "low", "minimumPreemptablePriority": 10000, "tolerationSeconds": 9223372037},
        E,
        ["spec.tolerationSeconds is 9223372037", "above 9223372036", "wraps"],
    ),
    (
        "invalid-field",
        {"priorityClassName": "low", "minimumPreemptablePriority": 3000000000},
        E,
        ["spec.minimumPreemptablePriority is 3000000000", "2147483647"],
    ),
    (
        "invalid-field",
        {"priorityClassName": "low", "minimumPreemptablePriority": "10000"},
        E,
        ['spec.minimumPreemptablePriority is "10000", not an integer', "without quotes"],
    ),
    ("invalid-field", {"priorityClassName": "low", "minimumPreemptablePriority": 1.5}, E, ["not an integer"]),
    ("invalid-field", {"priorityClassName": "low", "minimumPreemptablePriority": True}, E, ["not an integer"]),
    (
        "invalid-field",
        {"priorityClassName": "Low_Class", "minimumPreemptablePriority": 1},
        E,
        ['spec.priorityClassName is "Low_Class"', "lowercase"],
    ),
    (
        "unknown-field",
        {"priorityClassName": "low", "minimumPreemptablePriority": 1, "tolerationSecond": 5},
        E,
        ["unknown field spec.tolerationSecond", "did you mean spec.tolerationSeconds?"],
    ),
    (
        "unknown-field",
        {"priorityClassSelector": {"matchLabel": {"a": "b"}}, "minimumPreemptablePriority": 1},
        E,
        ["spec.priorityClassSelector.matchLabel", "did you mean spec.priorityClassSelector.matchLabels?"],
    ),
    (
        "empty-selector",
        {"priorityClassSelector": {}, "minimumPreemptablePriority": 1},
        E,
        ["empty", "every PriorityClass, system classes included"],
    ),
    (
        "invalid-selector",
        {
            "priorityClassSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "minimumPreemptablePriority": 1,
        },
        E,
        ["matchExpressions[0] uses In without values"],
    ),
    (
        "invalid-selector",
        {
            "priorityClassSelector": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
            "minimumPreemptablePriority": 1,
        },
        E,
        ["uses Exists with values"],
    ),
    (
        "invalid-field",
        {
            "priorityClassSelector": {"matchExpressions": [{"key": "a", "operator": "in"}]},
            "minimumPreemptablePriority": 1,
        },
        E,
        ['operator is "in"', "one of In, NotIn"],
    ),
    ("no-effect", {"priorityClassName": "low"}, W, ["neither minimumPreemptablePriority nor tolerationSeconds"]),
    (
        "toleration-without-minimum",
        {"priorityClassName": "low", "tolerationSeconds": 600},
        W,
        ["spec.tolerationSeconds 600 has no effect"],
    ),
    (
        "negative-toleration",
        {"priorityClassName": "low", "minimumPreemptablePriority": 1, "tolerationSeconds": -7},
        W,
        ["-7 means forever", "write -1"],
    ),
    (
        "minimum-above-system-classes",
        {"priorityClassName": "low", "minimumPreemptablePriority": 2100000000},
        W,
        ["above every system class"],
    ),
    ("spec", "nonsense", E, ['spec is "nonsense", not a map']),
]


@pytest.mark.parametrize(("rule", "spec", "severity", "words"), RULES, ids=[f"{c[0]}-{i}" for i, c in enumerate(RULES)])
def test_rule(rule, spec, severity, words) -> None:
    findings = [f for f in check_policy(policy(spec)) if f.rule == rule]
    assert len(findings) == 1, check_policy(policy(spec))
    assert findings[0].severity is severity
    for word in words:
        assert word in findings[0].message


@pytest.mark.parametrize(("rule", "spec", "severity", "words"), RULES, ids=[f"{c[0]}-{i}" for i, c in enumerate(RULES)])
def test_a_served_policy_is_judged_by_the_same_rules(rule, spec, severity, words) -> None:
    """The webhook reads a policy as served (its metadata decoded by the API server already) and finds what
    `ptol validate` finds, with the same spec model."""
    served, read = read_policy(policy(spec), served=True), read_policy(policy(spec))
    assert served.findings == read.findings
    assert served.spec == read.spec
    assert served.metadata is None


def test_a_served_policy_has_its_metadata_left_to_the_api_server() -> None:
    document = policy({"priorityClassName": "low", "minimumPreemptablePriority": 10000})
    document["metadata"]["labels"] = {"team": 7}  # the API server refuses this before any webhook sees it
    assert [f.rule for f in read_policy(document).findings] == ["invalid-field"]
    served = read_policy(document, served=True)
    assert served.findings == [] and served.spec is not None


def test_wrong_api_version_and_missing_name() -> None:
    document = policy({"priorityClassName": "low", "minimumPreemptablePriority": 1}, api_version="x/v1")
    del document["metadata"]
    rules = sorted(f.rule for f in check_policy(document))
    assert rules == ["api-version", "name"]


def test_the_two_use_cases_are_valid_and_parse_to_the_model() -> None:
    for name, seconds in (("low-non-preempted", -1), ("low-non-preempted-10min", 600)):
        model, findings = parse_policy(
            policy({"priorityClassName": name, "minimumPreemptablePriority": 10000, "tolerationSeconds": seconds})
        )
        assert findings == []
        assert model is not None
        assert model.spec.priority_class_name == name
        assert model.spec.toleration_seconds == seconds
        assert model.to_kube()["spec"] == {
            "priorityClassName": name,
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": seconds,
        }


def test_selector_policy_is_valid() -> None:
    spec = {
        "priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["batch"]}]},
        "minimumPreemptablePriority": 10000,
        "tolerationSeconds": 600,
    }
    assert check_policy(policy(spec)) == []


def test_invalid_policy_gives_no_model() -> None:
    model, findings = parse_policy(policy({"minimumPreemptablePriority": 1}))
    assert model is None and findings
