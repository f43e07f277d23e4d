"""PodDisruptionBudgets in the extender's victim choice: the scheduler's `filterPodsWithPDBViolation`, and
`NumPDBViolations` of recomputed victims."""

from __future__ import annotations

from typing import Any

import pytest

from preemption_toleration.extender.decisions import NodeChoice, decide_preemption
from preemption_toleration.inventory.budgets import BudgetIndex, split_by_budget_violation
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from tests.unit.test_extender import CLASS_RECORDS, NOW, args, node, pod


def labelled(name: str, klass: str = "low", labels: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    body = pod(name, klass, **extra)
    body["metadata"]["labels"] = {"app": "web"} if labels is None else labels
    return body


def budget(
    name: str, allowed: int, selector: Any = None, namespace: str = "team", disrupted: tuple[str, ...] = ()
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector},
        "status": {"disruptionsAllowed": allowed, "disruptedPods": {pod: "2026-11-22T11:59:00Z" for pod in disrupted}},
    }


# (rule, pods in importance order, budgets, expected violating names)
SPLITS = [
    (
        "a budget with no disruption left makes each pod it selects violating",
        [labelled("a"), labelled("b")],
        [budget("web", 0)],
        ["a", "b"],
    ),
    (
        "each selected pod uses one allowed disruption, in the order given",
        [labelled("a"), labelled("b"), labelled("c")],
        [budget("web", 2)],
        ["c"],
    ),
    (
        "a pod the API server already counts as disrupted uses none",
        [labelled("a"), labelled("b")],
        [budget("web", 1, disrupted=("a",))],
        [],
    ),
    ("a budget of another namespace selects nothing here", [labelled("a")], [budget("web", 0, namespace="other")], []),
    (
        "a pod without labels matches no budget",
        [labelled("a", labels={})],
        [budget("web", 0, selector={"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]})],
        [],
    ),
    (
        "an empty selector matches nothing (the scheduler's selector.Empty())",
        [labelled("a")],
        [budget("web", 0, selector={})],
        [],
    ),
    (
        "a selector the scheduler cannot build (NotIn without values) is skipped",
        [labelled("a")],
        [budget("web", 0, selector={"matchExpressions": [{"key": "app", "operator": "NotIn"}]})],
        [],
    ),
    (
        "a selector the scheduler cannot build (Exists with values) is skipped",
        [labelled("a")],
        [budget("web", 0, selector={"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["web"]}]})],
        [],
    ),
    (
        "matchExpressions select like matchLabels",
        [labelled("a"), labelled("b", labels={"app": "db"})],
        [budget("web", 0, selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})],
        ["a"],
    ),
    (
        "two budgets: the pod violates if either has none left",
        [labelled("a", labels={"app": "web", "tier": "x"})],
        [budget("web", 1), budget("tier", 0, selector={"matchLabels": {"tier": "x"}})],
        ["a"],
    ),
]


@pytest.mark.parametrize(("rule", "pods", "budgets", "violating"), SPLITS, ids=[case[0] for case in SPLITS])
def test_split_by_budget_violation(
    rule: str, pods: list[dict[str, Any]], budgets: list[dict[str, Any]], violating: list[str]
) -> None:
    index = PodIndex.of(pods)
    ordered = [index.get(("team", body["metadata"]["name"])) for body in pods]
    bad, good = split_by_budget_violation(ordered, BudgetIndex.of(budgets))
    assert [p.name for p in bad] == violating, rule
    names = [p.name for p in ordered]
    assert [p.name for p in good] == [name for name in names if name not in violating], "order kept"


# (rule, pods, budgets put in this order, budget names removed after, expected pods counted)
COUNTED = [
    ("a budget with disruptions left counts each pod it selects", [labelled("a")], [budget("web", 1)], [], ["a"]),
    ("a budget with none left counts none", [labelled("a")], [budget("web", 0)], [], []),
    (
        "a budget put again with none left counts none any more",
        [labelled("a")],
        [budget("web", 1), budget("web", 0)],
        [],
        [],
    ),
    (
        "a budget put again with disruptions left counts again",
        [labelled("a")],
        [budget("web", 0), budget("web", 2)],
        [],
        ["a"],
    ),
    ("a removed budget counts none", [labelled("a")], [budget("web", 1)], ["web"], []),
    (
        "the other budget of the namespace still counts after one is removed",
        [labelled("a")],
        [budget("web", 1), budget("web-too", 1)],
        ["web"],
        ["a"],
    ),
    ("a budget of another namespace counts none", [labelled("a")], [budget("web", 1, namespace="other")], [], []),
    (
        "a pod the API server already counts as disrupted is not",
        [labelled("a")],
        [budget("web", 1, disrupted=("a",))],
        [],
        [],
    ),
    (
        "a pod without labels is not",
        [labelled("a", labels={})],
        [budget("web", 1, selector={"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]})],
        [],
        [],
    ),
    (
        "only the pods a budget selects, in the order given",
        [labelled("b"), labelled("x", labels={"app": "db"}), labelled("a")],
        [budget("web", 1)],
        [],
        ["b", "a"],
    ),
]


@pytest.mark.parametrize(("rule", "pods", "budgets", "removed", "counted"), COUNTED, ids=[case[0] for case in COUNTED])
def test_the_pods_a_budget_would_spend_a_disruption_on(
    rule: str, pods: list[dict[str, Any]], budgets: list[dict[str, Any]], removed: list[str], counted: list[str]
) -> None:
    index = PodIndex.of(pods)
    budget_index = BudgetIndex.of(budgets)
    for name in removed:
        budget_index.remove(budget(name, 0))
    ordered = [index.get(("team", body["metadata"]["name"])) for body in pods]
    assert [p.name for p in budget_index.counted(ordered)] == counted, rule


def _decide(pods: list[dict[str, Any]], budgets: list[dict[str, Any]], cpu: str) -> tuple[Any, dict[str, Any]]:
    view = ClusterView(PodIndex.of(pods), {"node-a": node("node-a", cpu="4")}, CLASS_RECORDS, BudgetIndex.of(budgets))
    decision = decide_preemption(args(pod("high", "high", cpu=cpu, node=None), {"node-a": ["p"]}), view, NOW)
    return decision.outcomes[0], decision.result.to_wire()["NodeNameToMetaVictims"]["node-a"]


def test_violating_victims_are_reprieved_first() -> None:
    """Upstream reprieves PDB-violating pods before the others: with room for one victim's worth, the
    budgeted pod stays even though it is the less important one."""
    pods = [
        pod("p", "low-non-preempted"),
        labelled("guarded", scheduled="2026-11-22T11:30:00Z"),
        pod("plain", "low", scheduled="2026-11-22T08:00:00Z"),
        pod("x", "mid"),
    ]
    outcome, wire = _decide(pods, [budget("web", 0)], cpu="1")
    assert (outcome.choice, outcome.victims) == (NodeChoice.REPLACED, ("uid-plain",))
    assert wire["NumPDBViolations"] == 0


def test_num_pdb_violations_counts_violating_victims_that_stay_victims() -> None:
    pods = [pod("p", "low-non-preempted"), labelled("guarded"), pod("plain", "low"), pod("x", "mid")]
    outcome, wire = _decide(pods, [budget("web", 0)], cpu="3")
    assert sorted(outcome.victims) == ["uid-guarded", "uid-plain", "uid-x"]
    assert wire["NumPDBViolations"] == 1
