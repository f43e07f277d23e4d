"""The toleration contract for pod groups (docs/contract.md, "Pod groups"), through the one exemption check:
a member is judged at its group's priority and by its group's class; with `disruptionMode: all` from when
the group's last member was scheduled; a preemptor group by its PodGroup; a pod without a group as upstream."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.annotations import class_toleration
from preemption_toleration.core.exemption import exemption
from preemption_toleration.core.groups import (
    DisruptionMode,
    as_preemptor,
    as_victim,
    group_scheduled_since,
)
from preemption_toleration.core.pods import PodJson
from tests.builders import pod, priority_class

NOW = datetime(2026, 11, 28, 12, 0, 0, tzinfo=UTC)
TEN_MINUTES = 600

# "guarded": 8000, not below 10000 for 10 minutes; "plain": 8000, no annotations
CLASSES = {
    "guarded": class_toleration(priority_class("guarded", 8000, "10000", str(TEN_MINUTES))),
    "plain": class_toleration(priority_class("plain", 8000)),
}


@dataclass(frozen=True)
class Group:
    priority: int
    priority_class: str | None
    disruption: DisruptionMode
    preempts_never: bool = False


def member(minutes_ago: float | None, class_name: str = "plain", priority: int = 8000) -> PodJson:
    """A pod scheduled `minutes_ago` (None: not scheduled)."""
    scheduled = NOW - timedelta(minutes=minutes_ago) if minutes_ago is not None else None
    return PodJson(pod("m", priority, class_name, scheduled_at=scheduled))


def exempt(victim: PodJson, group: Group | None, members: list[PodJson], preemptor_priority: int = 9000) -> bool:
    facts = as_victim(victim, group, group_scheduled_since(members))
    return exemption(facts, PodJson(pod("p", preemptor_priority)), CLASSES.get(facts.priority_class or ""), NOW)[0]


ALL = DisruptionMode.ALL
SINGLE = DisruptionMode.SINGLE
GUARDED_ALL = Group(8000, "guarded", ALL)
GUARDED_SINGLE = Group(8000, "guarded", SINGLE)

CASES = [
    # (rule, victim, group, other members, exempt from a 9000 preemptor)
    ("no group: the pod's own class protects it", member(5, "guarded"), None, [], True),
    ("no group: the pod's own time, past its toleration", member(15, "guarded"), None, [], False),
    ("the group's class protects a member of a plain class", member(5, "plain"), GUARDED_ALL, [], True),
    ("a plain group's member: its own class is not read", member(5, "guarded"), Group(8000, "plain", ALL), [], False),
    ("a group without a class: not exempt (rule 1)", member(5, "guarded"), Group(8000, None, ALL), [], False),
    ("all: the clock runs from the last member scheduled", member(15), GUARDED_ALL, [member(15), member(5)], True),
    ("all: every member scheduled long ago", member(15), GUARDED_ALL, [member(15), member(12)], False),
    ("all: the same time for every member", member(12), GUARDED_ALL, [member(15), member(5)], True),
    ("all: unscheduled members do not count", member(15), GUARDED_ALL, [member(15), member(None)], False),
    ("single: the member's own time", member(15), GUARDED_SINGLE, [member(5)], False),
    ("single: the member's own time, within it", member(5), GUARDED_SINGLE, [member(15)], True),
]


@pytest.mark.parametrize(("rule", "victim", "group", "others", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_member_is_judged_as_its_group(
    rule: str, victim: PodJson, group: Group | None, others: list[PodJson], expected: bool
) -> None:
    assert exempt(victim, group, [victim, *others]) is expected


def test_a_member_is_judged_at_its_group_priority() -> None:
    """The minimum and the default minimum (value + 1) are the group class's; the victim's priority is the
    group's, which the refusal names."""
    victim = as_victim(member(5, "plain", priority=100), GUARDED_ALL)
    assert (victim.priority, victim.priority_class) == (8000, "guarded")


def test_no_member_scheduled_has_no_scheduled_time() -> None:
    assert group_scheduled_since([member(None), member(None)]) is None
    assert group_scheduled_since([]) is None


PREEMPTORS = [
    # (rule, preemptor pod's priority and policy, group, members' policies, (priority, never))
    ("no group: the pod's own", (9000, None), None, [], (9000, False)),
    ("a group: its PodGroup's priority", (1, None), Group(10000, "x", SINGLE), [], (10000, False)),
    ("the PodGroup says Never", (9000, None), Group(10000, "x", SINGLE, preempts_never=True), [], (10000, True)),
    ("a member says Never", (9000, None), Group(10000, "x", SINGLE), ["Never"], (10000, True)),
    ("the pod itself says Never", (9000, "Never"), Group(10000, "x", SINGLE), [], (10000, True)),
]


@pytest.mark.parametrize(
    ("rule", "preemptor", "group", "policies", "expected"), PREEMPTORS, ids=[c[0] for c in PREEMPTORS]
)
def test_a_preemptor_group_is_judged_by_its_pod_group(
    rule: str, preemptor: tuple[int, str | None], group: Group | None, policies: list[str], expected: tuple[int, bool]
) -> None:
    priority, policy = preemptor
    members = [PodJson(pod("m", 1, preemption_policy=each)) for each in policies]
    facts = as_preemptor(PodJson(pod("p", priority, preemption_policy=policy)), group, members)
    assert (facts.priority, facts.preempts_never) == expected


def test_a_group_preemptor_above_the_minimum_preempts_a_guarded_group() -> None:
    victim = member(5)
    facts = as_victim(victim, GUARDED_ALL, victim.scheduled_since())
    preemptor = as_preemptor(PodJson(pod("p", 9000)), Group(10000, "x", SINGLE))
    assert exemption(facts, preemptor, CLASSES["guarded"], NOW)[0] is False
