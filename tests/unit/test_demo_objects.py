"""The demo's pure parts: its objects and its tables."""

import pytest

from preemption_toleration.demo.objects import mistake, pod, policies, policy_row, render_table, sample_objects
from preemption_toleration.validation.priority_class import check_priority_class


def test_demo_table_is_aligned() -> None:
    assert render_table(["A", "LONGER"], [["xyz", "1"], ["q", "22"]]).splitlines() == [
        "A    LONGER",
        "xyz  1",
        "q    22",
    ]


def test_demo_policies_are_the_two_use_cases() -> None:
    specs = {p["metadata"]["name"]: p["spec"] for p in policies(guarantee_seconds=20)}
    assert specs == {
        "low-non-preempted": {
            "priorityClassName": "low-non-preempted",
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": -1,
        },
        "low-guaranteed": {
            "priorityClassName": "low-guaranteed",
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": 20,
        },
    }
    assert pod("p", "high")["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "2"}}


def test_samples_give_their_classes_and_policies_and_nothing_else() -> None:
    documents = [
        {"kind": "PriorityClass", "metadata": {"name": "c"}},
        {"kind": "Kustomization"},
        "text",
        None,
        {"kind": "PreemptionTolerationPolicy", "metadata": {"name": "p"}},
    ]
    classes, policies = sample_objects(documents)
    assert [c["metadata"]["name"] for c in classes] == ["c"]
    assert [p["metadata"]["name"] for p in policies] == ["p"]


@pytest.mark.parametrize(
    ("rule", "policy", "row"),
    [
        (
            "a policy the operator has not seen yet",
            {"metadata": {"name": "p"}, "spec": {"priorityClassName": "c"}},
            ["p", "-", "-", "-", "-", "-"],
        ),
        (
            "an applied policy",
            {
                "metadata": {"name": "p"},
                "spec": {"priorityClassName": "c", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1},
                "status": {"target": "c", "conditions": [{"type": "Ready", "status": "True", "reason": "Applied"}]},
            },
            ["p", "c", "10000", "-1", "True", "Applied"],
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_policy_rows_read_like_kubectl_get_ptp(rule: str, policy: dict, row: list[str]) -> None:
    assert policy_row(policy) == row, rule


def test_the_demo_mistake_is_one_the_rules_refuse() -> None:
    assert [f.rule for f in check_priority_class(mistake()) if f.is_error] == ["invalid-integer"]
