"""PodGroups as the guard caches them (`records.pod_group`), and their members in the pod index: a field of
the wrong shape reads as absent, and the time the last member was scheduled follows the members."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from preemption_toleration.core.groups import DisruptionMode
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.records.pod_group import pod_group_record
from tests.builders import pod

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)


def group(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "g", "namespace": "team", "uid": "u"}, "spec": spec}


RECORDS = [
    # (rule, spec, (priority, class, disruption, never, minCount))
    ("as the API server returns it", {"priority": 9000, "priorityClassName": "high", "disruptionMode": {"all": {}},
     "schedulingPolicy": {"gang": {"minCount": 4}}}, (9000, "high", DisruptionMode.ALL, False, 4)),
    ("nothing set: single, priority 0, no gang", {}, (0, None, DisruptionMode.SINGLE, False, None)),
    ("single", {"disruptionMode": {"single": {}}}, (0, None, DisruptionMode.SINGLE, False, None)),
    ("preemptionPolicy Never", {"preemptionPolicy": "Never"}, (0, None, DisruptionMode.SINGLE, True, None)),
    ("wrong shapes read as absent", {"priority": "9000", "priorityClassName": 7, "disruptionMode": "all",
     "schedulingPolicy": {"gang": {"minCount": True}}}, (0, None, DisruptionMode.SINGLE, False, None)),
    ("an all that is no object", {"disruptionMode": {"all": None}}, (0, None, DisruptionMode.SINGLE, False, None)),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "spec", "expected"), RECORDS, ids=[r[0] for r in RECORDS])
def test_a_pod_group_record(rule: str, spec: dict[str, Any], expected: tuple[Any, ...]) -> None:
    record = pod_group_record(group(**spec))
    assert (record.key, record.ref, record.uid) == (("team", "g"), "team/g", "u")
    assert (record.priority, record.priority_class, record.disruption, record.preempts_never, record.min_count) == (
        expected
    )


def member(name: str, minutes_ago: float | None, of: str = "g") -> dict[str, Any]:
    body = pod(name, 8000, scheduled_at=NOW - timedelta(minutes=minutes_ago) if minutes_ago is not None else None)
    body["metadata"]["namespace"] = "team"
    body["spec"]["schedulingGroup"] = {"podGroupName": of}
    return body


def test_the_index_keeps_each_groups_members_and_their_last_scheduled_time() -> None:
    index = PodIndex.of([member("a", 15), member("b", 5), member("c", None), member("x", 1, of="other")])
    members = index.members_of(("team", "g"))
    assert sorted(members.pods) == [("team", "a"), ("team", "b"), ("team", "c")]
    assert members.scheduled_since() == NOW - timedelta(minutes=5)
    index.remove(member("b", 5))
    assert members.scheduled_since() == NOW - timedelta(minutes=15)
    index.put(member("c", 2))
    assert members.scheduled_since() == NOW - timedelta(minutes=2)
    for name in ("a", "c"):
        index.remove(member(name, None))
    assert index.members_of(("team", "g")).pods == {}
    assert index.members_of(("elsewhere", "g")).scheduled_since() is None
