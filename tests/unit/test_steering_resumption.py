"""A Lease left "acting" is finished only as far as the cache bears it out: one row per rule."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.inventory.pods import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.steering.resumption import LeftPlan, Resumable, check_left_plan
from tests.unit.test_extender import CLASS_RECORDS, node, pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
PREEMPTOR = ("team", "high", "uid-high")


def cluster(*extra):
    pods = [
        pod("high", "high", node=None),
        pod("plain", "low", node="node-a"),
        pod("protected", "low-non-preempted", node="node-a"),
        pod("elsewhere", "low", node="node-b"),
        pod("peer", "high", node="node-a"),
        pod("leaving", "low", node="node-a", metadata__deletionTimestamp="2026-11-22T11:59:00Z"),
        *extra,
    ]
    return ClusterView(PodIndex.of(pods), {"node-a": node("node-a"), "node-b": node("node-b")}, CLASS_RECORDS)


def left(victims, preemptor=PREEMPTOR, node_name="node-a", age=20, window=60):
    refs = tuple(("team", name, uid or f"uid-{name}") for name, uid in victims)
    return LeftPlan(preemptor, node_name, refs, NOW - timedelta(seconds=age), window)


ROWS = [
    ("a plain victim on the Lease's node is deleted", left([("plain", None)]), ["plain"]),
    ("a victim already gone is passed over", left([("plain", None), ("gone", None)]), ["plain"]),
    ("a victim terminating already needs no DELETE", left([("plain", None), ("leaving", None)]), ["plain"]),
    ("a pod of that name with another UID is left alone", left([("plain", "uid-older")]), []),
    ("older than its window: nothing", left([("plain", None)], age=61), "longer ago than its window of 60 s"),
    (
        "a forged plan naming a protected pod: nothing",
        left([("plain", None), ("protected", None)]),
        "victim team/protected tolerates the preemptor",
    ),
    ("a victim on another node: nothing", left([("elsewhere", None)]), "victim team/elsewhere is on node-b"),
    ("a victim not below the preemptor: nothing", left([("peer", None)]), "not below the preemptor's 9000"),
    (
        "a preemptor no longer pending: nothing",
        left([("plain", None)], preemptor=("team", "plain", "uid-plain")),
        "is not a pending pod of the cache",
    ),
    (
        "a preemptor of another UID: nothing",
        left([("plain", None)], preemptor=("team", "high", "uid-another")),
        "is not a pending pod of the cache",
    ),
    ("a node the cache does not know: nothing", left([("plain", None)], node_name="node-x"), "'node-x' is not a node"),
]


@pytest.mark.parametrize(("rule", "plan", "expected"), ROWS, ids=[row[0] for row in ROWS])
def test_a_left_plan_is_checked_against_the_cache(rule, plan, expected) -> None:
    found = check_left_plan(plan, cluster(), NOW)
    if isinstance(expected, str):
        assert isinstance(found, str) and expected in found, (rule, found)
    else:
        assert isinstance(found, Resumable), (rule, found)
        assert [name for _, name, _ in found.victims] == expected, rule
