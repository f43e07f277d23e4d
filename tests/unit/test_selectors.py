"""One rule for label requirements: the same table through a policy's priorityClassSelector
(`selector_matches`) and a pod's required node affinity (`guard.matching.node_selector_matches`), which
must agree on every operator they share; Gt and Lt hold only for nodes."""

from __future__ import annotations

from typing import Any

import pytest

from preemption_toleration.core.selectors import selector_matches
from preemption_toleration.guard.matching import node_selector_matches
from preemption_toleration.records.node import NodeRecord

LABELS = {"tier": "gold", "zone": "a", "gpus": "8"}
CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (rule, requirement, holds for LABELS)
    ("In with the label's value", {"key": "tier", "operator": "In", "values": ["gold", "silver"]}, True),
    ("In without it", {"key": "tier", "operator": "In", "values": ["silver"]}, False),
    ("In of an absent key", {"key": "rack", "operator": "In", "values": ["1"]}, False),
    ("NotIn without the value", {"key": "zone", "operator": "NotIn", "values": ["b"]}, True),
    ("NotIn with it", {"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
    ("NotIn of an absent key", {"key": "rack", "operator": "NotIn", "values": ["1"]}, True),
    ("Exists", {"key": "zone", "operator": "Exists"}, True),
    ("Exists of an absent key", {"key": "rack", "operator": "Exists"}, False),
    ("DoesNotExist", {"key": "rack", "operator": "DoesNotExist"}, True),
    ("DoesNotExist of a present key", {"key": "zone", "operator": "DoesNotExist"}, False),
    ("an unknown operator", {"key": "zone", "operator": "Matches", "values": ["a"]}, False),
    ("no key", {"operator": "Exists"}, False),
]
NUMERIC: list[tuple[str, dict[str, Any], bool]] = [
    ("Gt below the label", {"key": "gpus", "operator": "Gt", "values": ["4"]}, True),
    ("Gt above it", {"key": "gpus", "operator": "Gt", "values": ["8"]}, False),
    ("Lt above the label", {"key": "gpus", "operator": "Lt", "values": ["16"]}, True),
    ("Gt of a label that is no integer", {"key": "tier", "operator": "Gt", "values": ["1"]}, False),
    ("Lt without a value", {"key": "gpus", "operator": "Lt"}, False),
]


def node_holds(requirement: dict[str, Any]) -> bool:
    pod = {
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [requirement]}]
                    }
                }
            }
        }
    }
    return node_selector_matches(pod, NodeRecord("node-1", labels=LABELS))


@pytest.mark.parametrize(("rule", "requirement", "holds"), CASES, ids=[case[0] for case in CASES])
def test_policies_and_nodes_read_a_label_requirement_alike(rule: str, requirement: dict[str, Any], holds: bool) -> None:
    assert selector_matches({"matchExpressions": [requirement]}, LABELS) is holds, rule
    assert node_holds(requirement) is holds, rule


@pytest.mark.parametrize(("rule", "requirement", "holds"), NUMERIC, ids=[case[0] for case in NUMERIC])
def test_gt_and_lt_hold_for_nodes_only(rule: str, requirement: dict[str, Any], holds: bool) -> None:
    assert node_holds(requirement) is holds, rule
    assert selector_matches({"matchExpressions": [requirement]}, LABELS) is False, rule  # not a label operator
