"""The ownership index answers "who claims this class" as the rule itself does (`claims`, oldest first),
for every shape of selector, and `validate_policy`'s conflict check goes through it."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.api.policy import PreemptionTolerationPolicySpec
from preemption_toleration.core.selectors import selector_matches
from preemption_toleration.inventory.ownership import PolicyIndex, age_order, selector_of
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import ClassView
from tests import builders
from tests.builders import rfc3339


def claims(spec: PreemptionTolerationPolicySpec, view: ClassView) -> bool:
    """The rule itself, the reference the index must agree with: the policy claims this class by its name, or
    by a selector matching its labels."""
    selector = selector_of(spec)
    return spec.priority_class_name == view.name if selector is None else selector_matches(selector, view.labels)


T0 = datetime(2026, 11, 1, tzinfo=UTC)

# (rule, the policy's target)
TARGETS = [
    ("a named class", {"priorityClassName": "gold-a"}),
    ("a named class that does not exist", {"priorityClassName": "ghost"}),
    ("matchLabels, one pair", {"priorityClassSelector": {"matchLabels": {"tier": "gold"}}}),
    ("matchLabels, two pairs", {"priorityClassSelector": {"matchLabels": {"tier": "gold", "team": "ml"}}}),
    (
        "In, several values",
        {
            "priorityClassSelector": {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]
            }
        },
    ),
    (
        "In, a value twice",
        {
            "priorityClassSelector": {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "gold"]}]
            }
        },
    ),
    (
        "NotIn only: not indexable",
        {"priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}},
    ),
    ("Exists only", {"priorityClassSelector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}}),
    (
        "DoesNotExist only",
        {"priorityClassSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}},
    ),
    (
        "matchLabels and an expression",
        {
            "priorityClassSelector": {
                "matchLabels": {"team": "ml"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["bronze"]}],
            }
        },
    ),
    (
        "In and NotIn",
        {
            "priorityClassSelector": {
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["gold", "bronze"]},
                    {"key": "team", "operator": "NotIn", "values": ["ml"]},
                ]
            }
        },
    ),
]
CLASSES = [
    ClassView("gold-a", 8000, {"tier": "gold"}),
    ClassView("gold-ml", 8000, {"tier": "gold", "team": "ml"}),
    ClassView("silver-ml", 8000, {"tier": "silver", "team": "ml"}),
    ClassView("bronze", 8000, {"tier": "bronze"}),
    ClassView("bare", 8000, {}),
    ClassView("ghost", 8000, {"team": "infra"}),
]


def policy(name, target, minutes, deleting=False):
    times = {"creationTimestamp": rfc3339(T0 + timedelta(minutes=minutes))}
    if deleting:
        times["deletionTimestamp"] = "2026-11-02T00:00:00Z"
    return policy_view(builders.policy(name, {**target, "tolerationSeconds": 60}, **times))


POLICIES = [policy(f"p{i:02d}", target, minutes=(7 * i) % len(TARGETS)) for i, (_, target) in enumerate(TARGETS)]


@pytest.mark.parametrize("view", CLASSES, ids=[c.name for c in CLASSES])
def test_the_index_finds_exactly_the_policies_that_claim_a_class_oldest_first(view: ClassView) -> None:
    expected = sorted((p for p in POLICIES if claims(p.spec, view)), key=age_order)
    assert PolicyIndex(POLICIES).claimants(view) == expected


@pytest.mark.parametrize(("rule", "target"), TARGETS, ids=[t[0] for t in TARGETS])
def test_each_selector_shape_is_found_where_it_matches_and_nowhere_else(rule: str, target: dict) -> None:
    index = PolicyIndex([policy("only", target, 0)])
    for view in CLASSES:
        assert bool(index.claimants(view)) == claims(index_spec(target), view), (rule, view.name)


def index_spec(target: dict):
    return policy("only", target, 0).spec


def test_deleting_and_invalid_policies_claim_nothing() -> None:
    deleting = policy("leaving", {"priorityClassName": "gold-a"}, 0, deleting=True)
    invalid = policy_view(
        {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": {"name": "bad"},
            "spec": {"priorityClassName": "gold-a", "nope": 1},
        }
    )
    assert invalid.spec is None
    assert PolicyIndex([deleting, invalid]).claimants(CLASSES[0]) == []


def test_a_class_that_does_not_exist_is_claimed_by_name_only() -> None:
    index = PolicyIndex(POLICIES)
    ghost = ClassView("ghost", 0)
    assert [p.name for p in index.claimants(ghost, exists=False)] == ["p01"]
    assert len(index.claimants(ghost)) > 1  # as an existing class without labels, selectors match it too
