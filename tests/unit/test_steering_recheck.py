"""Each victim of an action is judged again right before its DELETE, against the caches of that moment: one
row per rule."""

from datetime import UTC, datetime

import pytest

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.recheck import victim_now
from tests.unit.test_extender import CLASS_RECORDS, node, pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SHARED = Shared()
PREEMPTOR = slim_pod(pod("high", "high", node=None), SHARED)


def cluster(*pods, classes=CLASS_RECORDS):
    return ClusterView(PodIndex.of(list(pods)), {"node-a": node("node-a")}, classes)


NOW_PROTECTED = {**CLASS_RECORDS, "low": CLASS_RECORDS["low-non-preempted"]}
NO_LOW = {name: record for name, record in CLASS_RECORDS.items() if name != "low"}
ROWS = [
    ("a plain victim, as planned: deleted", ("plain", "uid-plain"), cluster(pod("plain", "low")), "plain"),
    ("gone since: nothing to delete", ("plain", "uid-plain"), cluster(), None),
    (
        "terminating already (an eviction meanwhile): nothing to mark or delete",
        ("plain", "uid-plain"),
        cluster(pod("plain", "low", metadata__deletionTimestamp="2026-11-22T11:59:00Z")),
        None,
    ),
    ("another pod of that name now: nothing to delete", ("plain", "uid-older"), cluster(pod("plain", "low")), None),
    (
        "its class protects it now (a policy applied while the action ran): the action stops",
        ("plain", "uid-plain"),
        cluster(pod("plain", "low"), classes=NOW_PROTECTED),
        "victim team/plain tolerates the preemptor now",
    ),
    (
        "its class is gone from the cache: the action stops",
        ("plain", "uid-plain"),
        cluster(pod("plain", "low"), classes=NO_LOW),
        "PriorityClass is not in the cache",
    ),
    (
        "a pod group's member: the action stops",
        ("member", "uid-member"),
        cluster(pod("member", "low", spec__schedulingGroup={"podGroupName": "job"})),
        "is a member of PodGroup team/job",
    ),
    (
        "not below the preemptor: the action stops",
        ("peer", "uid-peer"),
        cluster(pod("peer", "high")),
        "not below the preemptor's 9000",
    ),
    (
        "on another node than the plan's: the action stops",
        ("elsewhere", "uid-elsewhere"),
        cluster(pod("elsewhere", "low", node="node-b")),
        "is on node-b, not on node-a",
    ),
]


@pytest.mark.parametrize(("rule", "victim", "view", "expected"), ROWS, ids=[row[0] for row in ROWS])
def test_a_victim_is_judged_again_right_before_its_delete(rule, victim, view, expected) -> None:
    name, uid = victim
    planned = slim_pod(pod(name, "low", metadata__uid=uid), SHARED)
    found = victim_now(planned, "node-a", PREEMPTOR, view, NOW)
    if expected is None:
        assert found is None, (rule, found)
    elif expected == name:
        assert not isinstance(found, str) and found is not None and found.uid == uid, (rule, found)
    else:
        assert isinstance(found, str) and expected in found, (rule, found)
