"""The guard's decisions on members of pod groups (docs/contract.md, "Pod groups"): a member judged by its
group's class and priority, with `disruptionMode: all` from when the last member was scheduled and with one
decision for all the members of one preemption; a preemptor group by its PodGroup."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from preemption_toleration.guard.adapter.group_leases import MemoryStore
from preemption_toleration.guard.decisions import judge
from preemption_toleration.guard.verdicts import GuardConfig
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.inventory.view import ClusterView, GroupsNotCurrent
from preemption_toleration.records.pod_group import pod_group_record
from preemption_toleration.records.priority_class import class_view
from tests.unit.guard_replicas import Replica
from tests.unit.guard_requests import answered
from tests.unit.test_guard import CLASSES, NOW, POLICIES, bound, node, pending, pod_request

TEN_MINUTES = "low-non-preempted-10min"  # 8000, not below 10000 for 600 s


def group(name: str, class_name: str, priority: int = 8000, mode: str = "all") -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "disruptionMode": {mode: {}},
            "priorityClassName": class_name,
            "priority": priority,
        },
    }


def member(name: str, of: str, minutes_ago: float, class_name: str = "low", priority: int = 8000) -> dict[str, Any]:
    pod = bound(name, priority, class_name, ago=timedelta(minutes=minutes_ago))
    pod["spec"]["schedulingGroup"] = {"podGroupName": of}
    return pod


def view(*pods: dict[str, Any], groups: tuple[dict[str, Any], ...] = ()) -> ClusterView:
    records = [pod_group_record(body) for body in groups]
    return ClusterView(
        pods=PodIndex.of(pods),
        nodes={"node-1": node()},
        classes={name: class_view(body) for name, body in CLASSES.items()},
        policies=POLICIES,
        groups={record.ref: record for record in records},
    )


def refused(victim: dict[str, Any], state: ClusterView, now=NOW) -> str | None:
    """The refusal's message of the scheduler's DELETE of `victim`, or None when allowed, decided afresh."""
    verdict = judge(pod_request(None, old=victim, name=victim["metadata"]["name"]), state, GuardConfig(), now)
    return None if verdict.allowed else answered(verdict).status.message


PREEMPTOR = pending("high-1", 9000)

PROTECTED_ALL = group("g", TEN_MINUTES)
PROTECTED_SINGLE = group("g", TEN_MINUTES, mode="single")
PLAIN_ALL = group("g", "low")

DECISIONS = [
    # (rule, victim, the other members, groups, refused)
    ("a member of a protected group, of a plain class", member("m-0", "g", 5), [], [PROTECTED_ALL], True),
    ("a member of a plain group, of a protected class", member("m-0", "g", 5, TEN_MINUTES), [], [PLAIN_ALL], False),
    ("naming a group that does not exist: a pod", member("m-0", "gone", 5, TEN_MINUTES), [], [], True),
    ("all: from the last member scheduled", member("m-0", "g", 15), [member("m-1", "g", 5)], [PROTECTED_ALL], True),
    ("all: every member scheduled long ago", member("m-0", "g", 15), [member("m-1", "g", 12)], [PROTECTED_ALL], False),
    ("single: the member's own time", member("m-0", "g", 15), [member("m-1", "g", 5)], [PROTECTED_SINGLE], False),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "victim", "others", "groups", "expected"), DECISIONS, ids=[d[0] for d in DECISIONS])
def test_a_member_is_judged_as_its_group(
    rule: str, victim: dict[str, Any], others: list[dict[str, Any]], groups: list[dict[str, Any]], expected: bool
) -> None:
    state = view(victim, *others, PREEMPTOR, groups=tuple(groups))
    assert (refused(victim, state) is not None) is expected


def test_the_refusal_names_the_group_and_its_class() -> None:
    victim = member("m-0", "g", 5, priority=100)
    message = refused(victim, view(victim, PREEMPTOR, groups=(group("g", TEN_MINUTES),)))
    assert message is not None
    assert message.startswith(
        f"pod team/m-0 of PodGroup team/g (PriorityClass {TEN_MINUTES}, priority 8000) tolerates preemption by "
        f"priorities below 10000 (the annotations of PriorityClass {TEN_MINUTES}); the preemptor (team/high-1, "
        "priority 9000) is below it until"
    )


async def test_all_the_members_of_one_preemption_get_the_first_ones_answer() -> None:
    """The group's toleration ends between two members' DELETEs: the second gets the first one's refusal,
    and the scheduler's next attempt, after a pause, gets a fresh decision."""
    members = [member(f"m-{index}", "g", 10 - 1 / 60) for index in range(3)]  # 1 s of the 600 left
    replica = Replica(view(*members, PREEMPTOR, groups=(group("g", TEN_MINUTES),)), MemoryStore())
    assert await replica.refused(members[0], NOW) is not None
    assert await replica.refused(members[1], NOW + timedelta(seconds=1.2)) is not None  # past the end: kept
    assert await replica.refused(members[2], NOW + timedelta(seconds=12)) is None


async def test_a_group_deleted_over_more_than_one_window_is_deleted_whole() -> None:
    """An unprotected group of some thousand members is deleted over more than LONGEST_SECONDS, its members'
    DELETEs following each other 0.4 s apart. A member scheduled again 20 s in (its group's toleration starting
    over) does not stop the deletion when the window ends: the group is not left in part."""
    members = [member(f"m-{index}", "g", 15) for index in range(3)]
    state = view(*members, PREEMPTOR, groups=(PROTECTED_ALL,))
    replica = Replica(state, MemoryStore())
    assert await replica.refused(members[0], NOW) is None
    for step in range(1, 90):  # 36 s of requests
        if step == 50:
            state.pods.put(member("m-2", "g", 0))  # judged afresh, the group would be protected from here on
        at = NOW + timedelta(seconds=step * 0.4)
        assert await replica.refused(members[step % 2], at) is None, step


async def test_a_member_of_a_single_group_is_not_kept() -> None:
    members = [member(f"m-{index}", "g", 10 - 1 / 60) for index in range(2)]
    replica = Replica(view(*members, PREEMPTOR, groups=(group("g", TEN_MINUTES, mode="single"),)), MemoryStore())
    assert await replica.refused(members[0], NOW) is not None
    assert await replica.refused(members[1], NOW + timedelta(seconds=1.2)) is None


def preemptor_in(of: str, priority: int = 9000) -> dict[str, Any]:
    pod = pending("high-1", priority)
    pod["spec"]["schedulingGroup"] = {"podGroupName": of}
    return pod


PREEMPTOR_GROUPS = [
    # (rule, preemptor pod, groups, refused)
    ("a preemptor group at the minimum, of pods below it", preemptor_in("p", 9000), [group("p", "high", 10000)], False),
    ("a preemptor group below the minimum", preemptor_in("p", 9000), [group("p", "high", 9500)], True),
    ("a preemptor naming a group that does not exist: its own priority", preemptor_in("gone", 10000), [], False),
]


@pytest.mark.parametrize(
    ("rule", "preemptor", "groups", "expected"), PREEMPTOR_GROUPS, ids=[p[0] for p in PREEMPTOR_GROUPS]
)
def test_a_preemptor_group_is_judged_at_its_pod_group_priority(
    rule: str, preemptor: dict[str, Any], groups: list[dict[str, Any]], expected: bool
) -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    state = view(victim, preemptor, groups=tuple(groups))
    assert (refused(victim, state) is not None) is expected


def test_a_preemptor_of_an_all_group_may_fit_on_another_members_node() -> None:
    """The scheduler takes an `all` group whole, across nodes: a preemptor kept to the node of another member
    is the one; one that fits on no member's node is not, nor is it a lone victim's preemptor."""
    elsewhere = pending("high-1", 9000, nodeSelector={"pool": "elsewhere"})
    victim, other = member("m-0", "g", 5), member("m-1", "g", 5)
    other["spec"]["nodeName"] = "node-2"
    state = view(victim, other, elsewhere, groups=(PROTECTED_ALL,))
    state.nodes = {"node-1": node(), "node-2": node("node-2", labels={"pool": "elsewhere"})}
    assert refused(victim, state) is not None
    state = view(victim, other, elsewhere, groups=(PROTECTED_ALL,))  # node-2 has no such pool
    state.nodes = {"node-1": node(), "node-2": node("node-2")}
    assert refused(victim, state) is None
    lone = bound("lone", 8000, TEN_MINUTES, ago=timedelta(minutes=5))
    assert refused(lone, view(lone, elsewhere)) is None


async def test_a_member_found_without_a_preemptor_leaves_the_others_of_its_preemption_allowed() -> None:
    members = [member(f"m-{index}", "g", 5) for index in range(2)]
    state = view(*members, groups=(PROTECTED_ALL,))
    replica = Replica(state, MemoryStore())
    assert await replica.refused(members[0], NOW) is None  # no pending pod: not judged
    state.pods.put(PREEMPTOR)
    assert await replica.refused(members[1], NOW + timedelta(seconds=0.1)) is None  # the same preemption: alike
    assert await replica.refused(members[1], NOW + timedelta(seconds=10)) is not None  # the next one: judged


def test_a_refusal_names_the_preemptors_group() -> None:
    victim = bound("victim", 8000, "low-non-preempted")
    verdict = judge(
        pod_request(None, old=victim),
        view(victim, preemptor_in("p", 9000), groups=(group("p", "high", 9000),)),
        GuardConfig(),
        NOW,
    )
    assert verdict.refusal is not None and verdict.refusal.preemptor_group is not None
    assert verdict.refusal.preemptor_group.ref == "team/p"


UNKNOWN = "podgroups: not listed yet (last problem: 403 Forbidden)"
NOT_CURRENT = [
    # (rule, victim, preemptor, decided)
    ("a member victim: no decision", member("m-0", "g", 5), PREEMPTOR, False),
    ("a member preemptor: no decision", bound("victim", 8000, "low-non-preempted"), preemptor_in("p"), False),
    ("a lone victim and preemptor: decided as ever", bound("victim", 8000, "low-non-preempted"), PREEMPTOR, True),
]


@pytest.mark.parametrize(("rule", "victim", "preemptor", "decided"), NOT_CURRENT, ids=[n[0] for n in NOT_CURRENT])
def test_no_decision_about_a_group_is_made_from_a_podgroup_cache_that_is_not_current(
    rule: str, victim: dict[str, Any], preemptor: dict[str, Any], decided: bool
) -> None:
    """Judged as lone pods, a group's members would be decided one by one: the guard answers that it is not
    ready instead (a 503, which the API server treats by the guard's failurePolicy, alike for every member)."""
    state = view(victim, preemptor, groups=(PROTECTED_ALL, group("p", "high", 9000)))
    state.groups_problem = UNKNOWN
    if decided:
        assert refused(victim, state) is not None
    else:
        with pytest.raises(GroupsNotCurrent, match="podgroups: not listed yet"):
            refused(victim, state)
