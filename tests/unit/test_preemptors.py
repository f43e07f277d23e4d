"""What the extender's calls tell the guard: the exact preemptor of each victim, and the expiry nudge's plan."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from preemption_toleration.core.pods import PodJson
from preemption_toleration.guard.decisions import judge
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.guard.nudges import MARGIN, NudgePlan
from preemption_toleration.guard.verdicts import GuardConfig, PreemptorSource
from preemption_toleration.inventory.preemptors import PreemptorRecord
from tests.unit.test_guard import NOW, bound, pending, pod_request, snapshot


def with_uid(body: dict[str, Any], uid: str) -> dict[str, Any]:
    body["metadata"]["uid"] = uid
    return body


VICTIM = with_uid(bound("victim", 8000, "low-non-preempted"), "uid-victim")
HIGH = with_uid(pending("high", 9000), "uid-high")
CRITICAL = with_uid(pending("critical", 10000), "uid-critical")


# ------------------------------------------------------------------------- the record


def test_a_record_lasts_its_lifetime_and_a_newer_call_replaces_it() -> None:
    record = PreemptorRecord(seconds=30)
    record.remember(PodJson(HIGH), ["uid-victim"], NOW)
    assert record.lookup("uid-victim", NOW + timedelta(seconds=29)).key == ("team", "high")
    assert record.lookup("uid-victim", NOW + timedelta(seconds=30)) is None
    record.remember(PodJson(CRITICAL), ["uid-victim"], NOW + timedelta(seconds=1))
    assert record.lookup("uid-victim", NOW + timedelta(seconds=2)).key == ("team", "critical")


def test_the_record_keeps_only_what_decisions_read_and_stays_within_its_capacity() -> None:
    record = PreemptorRecord(capacity=2)
    record.remember(PodJson({**HIGH, "spec": {**HIGH["spec"], "containers": [{"name": "big"}]}}), ["a", "b", "c"], NOW)
    assert len(record) == 2 and record.lookup("a", NOW) is None
    kept = record.lookup("c", NOW)
    assert (kept.key, kept.uid) == (("team", "high"), "uid-high")  # which pod: the guard reads the cache's


# ------------------------------------------------------------------------- the guard reads it


def _judge(*pods: dict[str, Any], recorded: dict[str, Any] | None):
    state = snapshot(VICTIM, *pods)
    record = PreemptorRecord()
    if recorded is not None:
        record.remember(PodJson(recorded), ["uid-victim"], NOW)
    return judge(pod_request(None, old=VICTIM), state, GuardConfig(), NOW, GuardMemory(preemptors=record))


def _nominated_high(node: str) -> dict[str, Any]:
    body = with_uid(pending("high", 9000), "uid-high")
    body["status"] = {"nominatedNodeName": node}
    return body


def _bound_high() -> dict[str, Any]:
    body = with_uid(pending("high", 9000), "uid-high")
    body["spec"]["nodeName"] = "node-2"
    return body


# (rule, pods in the cache besides the victim, the recorded preemptor, allowed, source)
SOURCES = [
    (
        "no record: the highest pending pod is inferred, and the victim does not tolerate it",
        [HIGH, CRITICAL],
        None,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a record names the preemptor the scheduler works on, whatever else pends",
        [HIGH, CRITICAL],
        HIGH,
        False,
        PreemptorSource.RECORDED,
    ),
    (
        "a recorded preemptor the cache does not know decides nothing: inference",
        [CRITICAL],
        HIGH,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a recorded preemptor nominated to another node is no longer this victim's: inference",
        [_nominated_high("node-2"), CRITICAL],
        HIGH,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a recorded preemptor nominated to the victim's node stands",
        [_nominated_high("node-1"), CRITICAL],
        HIGH,
        False,
        PreemptorSource.RECORDED,
    ),
    (
        "a recorded preemptor of no higher priority than the victim is no preemptor: inference",
        [with_uid(pending("high", 8000), "uid-high"), CRITICAL],
        HIGH,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a recorded preemptor since bound is stale: inference again",
        [_bound_high(), CRITICAL],
        HIGH,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a pod of the same name but another uid is stale: inference again",
        [with_uid(pending("high", 9000), "uid-other"), CRITICAL],
        HIGH,
        True,
        PreemptorSource.INFERRED,
    ),
    (
        "a record of a preemptor the victim does not tolerate allows",
        [HIGH, CRITICAL],
        CRITICAL,
        True,
        PreemptorSource.RECORDED,
    ),
]


@pytest.mark.parametrize(("rule", "pods", "recorded", "allowed", "source"), SOURCES, ids=[c[0] for c in SOURCES])
def test_the_preemptor_the_guard_judges_against(rule, pods, recorded, allowed, source) -> None:
    verdict = _judge(*pods, recorded=recorded)
    assert (verdict.allowed, verdict.source) == (allowed, source), rule


# ------------------------------------------------------------------------- the nudge plan

END = NOW + timedelta(seconds=20)


def test_a_nudge_is_due_only_once_the_toleration_has_ended() -> None:
    plan = NudgePlan()
    assert plan.hold(PodJson(HIGH), "node-1", END, NOW)
    assert plan.next_at() == END + MARGIN
    assert plan.due(END) == []
    [nudge] = plan.due(END + MARGIN)
    assert (nudge.namespace, nudge.name, nudge.uid, nudge.until, nudge.node) == (
        "team",
        "high",
        "uid-high",
        END,
        "node-1",
    )
    assert plan.due(END + timedelta(seconds=5)) == [] and plan.next_at() is None


def test_one_nudge_per_preemptor_per_expiry() -> None:
    plan = NudgePlan()
    assert plan.hold(PodJson(HIGH), "node-1", END, NOW)
    assert not plan.hold(PodJson(HIGH), "node-1", END, NOW + timedelta(seconds=1)), "the same end again"
    assert not plan.hold(PodJson(HIGH), "node-1", END + timedelta(seconds=10), NOW), "a later end waits for the retry"
    assert len(plan.due(END + MARGIN)) == 1
    assert not plan.hold(PodJson(HIGH), "node-1", END, END), "an end already nudged for, or passed"


def test_an_earlier_end_replaces_the_planned_one() -> None:
    plan = NudgePlan()
    plan.hold(PodJson(HIGH), "node-1", END, NOW)
    assert plan.hold(PodJson(HIGH), "node-1", END - timedelta(seconds=10), NOW)
    assert [n.until for n in plan.due(END + MARGIN)] == [END - timedelta(seconds=10)]
    assert plan.next_at() is None, "the replaced plan is not handed out as well"


def test_an_unnamed_preemptor_no_node_or_a_full_plan_plans_nothing() -> None:
    assert not NudgePlan().hold(PodJson({"spec": {"priority": 9000}}), "node-1", END, NOW)
    assert not NudgePlan().hold(PodJson(HIGH), "", END, NOW)
    full = NudgePlan(capacity=1)
    assert full.hold(PodJson(HIGH), "node-1", END, NOW) and not full.hold(PodJson(CRITICAL), "node-1", END, NOW)


def test_a_failed_nudge_is_tried_again_a_few_times() -> None:
    from preemption_toleration.guard.nudges import MAX_ATTEMPTS, RETRY_AFTER

    plan = NudgePlan()
    plan.hold(PodJson(HIGH), "node-1", END, NOW)
    [nudge] = plan.due(END + MARGIN)
    for attempt in range(2, MAX_ATTEMPTS + 1):
        assert plan.retry(nudge, END + MARGIN)
        assert plan.next_at() == END + MARGIN + RETRY_AFTER
        [nudge] = plan.due(END + MARGIN + RETRY_AFTER)
        assert nudge.attempt == attempt
    assert not plan.retry(nudge, END + MARGIN), "no more attempts"


def test_a_retry_gives_way_to_a_newer_plan() -> None:
    plan = NudgePlan()
    plan.hold(PodJson(HIGH), "node-1", END, NOW)
    [nudge] = plan.due(END + MARGIN)
    assert plan.hold(PodJson(HIGH), "node-1", END + timedelta(seconds=30), END + MARGIN)
    assert not plan.retry(nudge, END + MARGIN)


def test_the_nudge_nominates_the_preemptor_to_the_node_then_withdraws_only_its_own_nomination() -> None:
    from preemption_toleration.guard.adapter.nudger import nomination, withdrawal

    plan = NudgePlan()
    plan.hold(PodJson(HIGH), "node-7", END, NOW)
    [nudge] = plan.due(END + MARGIN)
    assert nomination(nudge) == {"status": {"nominatedNodeName": "node-7"}}
    assert withdrawal(nudge) == [
        {"op": "test", "path": "/status/nominatedNodeName", "value": "node-7"},
        {"op": "remove", "path": "/status/nominatedNodeName"},
    ]
