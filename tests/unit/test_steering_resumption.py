"""A Lease left "acting" asks, never orders: it names the preemptor a replica was acting for, and a fresh plan
from the cache chooses the victims; a left plan the fresh one does not bear out is refused. One row per rule."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan, borne_out, preemptor_of_left_plan
from tests.unit.test_extender import CLASS_RECORDS, node, pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
PREEMPTOR = ("team", "high", "uid-high")
SHARED = Shared()


def cluster(*extra):
    pods = [
        pod("high", "high", node=None, status__nominatedNodeName="node-a"),
        pod("waiting", "high", node=None),
        pod("plain", "low", node="node-a"),
        pod(
            "member",
            "high",
            node=None,
            status__nominatedNodeName="node-a",
            spec__schedulingGroup={"podGroupName": "job"},
        ),
        *extra,
    ]
    return ClusterView(PodIndex.of(pods), {"node-a": node("node-a"), "node-b": node("node-b")}, CLASS_RECORDS)


def left(victims=(("plain", None),), preemptor=PREEMPTOR, node_name="node-a", age=20, window=60):
    refs = tuple(("team", name, uid or f"uid-{name}") for name, uid in victims)
    return LeftPlan(preemptor, node_name, refs, NOW - timedelta(seconds=age), window)


ASKED = [
    ("a pending preemptor nominated to the Lease's node is asked for", left(), None),
    ("older than its window: nothing", left(age=61), "longer ago than its window of 60 s"),
    (
        "a preemptor no longer pending: nothing",
        left(preemptor=("team", "plain", "uid-plain")),
        "is not a pending pod of the cache",
    ),
    ("a preemptor of another UID: nothing", left(preemptor=("team", "high", "uid-another")), "is not a pending pod"),
    (
        "a preemptor nominated to another node: no action was begun on the Lease's",
        left(node_name="node-b"),
        "nominated to node-a, not to its node 'node-b'",
    ),
    (
        "a preemptor nominated nowhere (a forger cannot nominate): nothing",
        left(preemptor=("team", "waiting", "uid-waiting")),
        "nominated to no node",
    ),
    ("a Lease without a node: nothing", left(node_name=""), "not to its node ''"),
    (
        "a preemptor that is a pod group's member: nothing, as for a live action",
        left(preemptor=("team", "member", "uid-member")),
        "is a member of PodGroup team/job",
    ),
]


@pytest.mark.parametrize(("rule", "plan", "expected"), ASKED, ids=[row[0] for row in ASKED])
def test_a_left_lease_only_names_the_preemptor_to_plan_for(rule, plan, expected) -> None:
    found = preemptor_of_left_plan(plan, cluster(), NOW)
    if expected is None:
        assert not isinstance(found, str) and found.uid == plan.preemptor[2], (rule, found)
    else:
        assert isinstance(found, str) and expected in found, (rule, found)


def fresh(node_name, *victims):
    preemptor = slim_pod(pod("high", "high", node=None), SHARED)
    return SteeringPlan(preemptor, node_name, tuple(slim_pod(victim, SHARED) for victim in victims), 0)


LEAVING = pod("leaving", "low", metadata__deletionTimestamp="2026-11-22T11:59:00Z")
BORNE_OUT = [
    ("the fresh plan preempts what the Lease names: borne out", left(), fresh("node-a", pod("plain", "low")), None),
    (
        "the fresh plan needs fewer victims than the Lease names: borne out, and only those go",
        left((("plain", None), ("other", None), ("third", None))),
        fresh("node-a", pod("plain", "low")),
        None,
    ),
    (
        "a victim terminating already is not asked for",
        left(),
        fresh("node-a", pod("plain", "low"), LEAVING),
        None,
    ),
    (
        "the fresh plan preempts on another node: refused",
        left(),
        fresh("node-b", pod("plain", "low", node="node-b")),
        "a fresh plan preempts on node-b, not on its node node-a",
    ),
    (
        "the fresh plan preempts a pod the Lease does not name: refused",
        left(),
        fresh("node-a", pod("plain", "low"), pod("unnamed", "low")),
        "also preempts team/unnamed, which it does not name",
    ),
    (
        "a pod of a named name but another UID is not named: refused",
        left((("plain", "uid-older"),)),
        fresh("node-a", pod("plain", "low")),
        "also preempts team/plain",
    ),
]


@pytest.mark.parametrize(("rule", "plan", "planned", "expected"), BORNE_OUT, ids=[row[0] for row in BORNE_OUT])
def test_a_left_plan_is_carried_out_only_as_a_fresh_plan_bears_it_out(rule, plan, planned, expected) -> None:
    found = borne_out(plan, planned)
    if expected is None:
        assert found is None, (rule, found)
    else:
        assert found is not None and expected in found, (rule, found)
