"""Pod groups the scheduler's preemption left in part: the members it began to delete, seen in the pod cache's
watch, and the group told on its PodGroup when others still run (guard/adapter/partial_groups.py). One row or test
per rule."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from typing import Any

import pytest

from preemption_toleration.api.resources import ObjectRef
from preemption_toleration.guard.adapter import partial_groups
from preemption_toleration.guard.adapter.partial_groups import PartialGroups, event_name, in_part_message
from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.records.pod import SlimPod
from tests.unit.test_guard_groups import PREEMPTOR, PROTECTED_ALL, PROTECTED_SINGLE, member, view
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

MARK = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
EVICTED = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}


def changed(pod: dict[str, Any], *, conditions: tuple[dict[str, str], ...] = (), deleting: bool = False) -> dict:
    """`pod` with these conditions added, and deleting (a deletionTimestamp) or not."""
    changed = copy.deepcopy(pod)
    changed["status"]["conditions"] = [*changed["status"]["conditions"], *conditions]
    if deleting:
        changed["metadata"]["deletionTimestamp"] = "2026-11-22T12:00:00Z"
    return changed


LONE = member("lone", "g", 5)
del LONE["spec"]["schedulingGroup"]
M = member("m-0", "g", 5)
MARKED, GOING = changed(M, conditions=(MARK,)), changed(M, conditions=(MARK,), deleting=True)
TRANSITIONS = [
    # (rule, the watch's states of the pod in order, the last one DELETED or not, told)
    ("a member marked, then terminating: told", [M, MARKED, GOING], False, True),
    ("a member marked and deleted at once: told from the DELETED object", [M, GOING], True, True),
    ("a member listed already marked and terminating: told (a listing at start shows it)", [GOING], False, True),
    ("a member deleted by a user (no mark): not told", [M, changed(M, deleting=True)], False, False),
    (
        "a member evicted (another reason): not told",
        [M, changed(M, conditions=(EVICTED,), deleting=True)],
        False,
        False,
    ),
    ("a member marked, not deleted (the guard refused the DELETE): not told", [M, MARKED], False, False),
    (
        "a lone pod marked and terminating: not told",
        [LONE, changed(LONE, conditions=(MARK,), deleting=True)],
        False,
        False,
    ),
    ("a member told once, not at each later change", [M, GOING, GOING], False, True),
]


@pytest.mark.parametrize(("rule", "states", "deleted", "told"), TRANSITIONS, ids=[t[0] for t in TRANSITIONS])
def test_the_pod_index_tells_of_a_member_the_schedulers_preemption_began_to_delete(
    rule: str, states: list[dict[str, Any]], deleted: bool, told: bool
) -> None:
    index = PodIndex()
    seen: list[str] = []
    index.member_preempted = lambda pod: seen.append(pod.name)
    for state in states:
        index.put(state)
    if deleted:
        index.remove(states[-1])
    assert seen == (["m-0"] if told else []), rule


class Posted:
    """EventRecorder' `post`, kept."""

    def __init__(self) -> None:
        self.events: list[tuple[ObjectRef, str, str, str]] = []
        self.names: list[str | None] = []

    def post(self, ref: ObjectRef, event_type: str, reason: str, message: str, name: str | None = None) -> None:
        self.events.append((ref, event_type, reason, message))
        self.names.append(name)


def deleting(index: PodIndex, name: str) -> SlimPod:
    """The member `name` of the index, as the watch shows it once the scheduler's preemption deletes it."""
    index.put(changed(member(name, "g", 5), conditions=(MARK,), deleting=True))
    found = index.get(("team", name))
    assert found is not None
    return found


async def told(
    groups: tuple[dict[str, Any], ...],
    preempted: int,
    skipped: tuple[str, ...] = (),
    finished: tuple[str, ...] = (),
    groups_problem: str | None = None,
) -> tuple[list[tuple[ObjectRef, str, str, str]], int]:
    """Four members of group `g`, the first `preempted` of them then deleted by the scheduler's preemption (and
    those named in `finished` Succeeded): the Events posted on the group, and the groups counted."""
    state = view(*(member(f"m-{index}", "g", 5) for index in range(4)), PREEMPTOR, groups=groups)
    state.groups_problem = groups_problem
    for name in finished:
        body = member(name, "g", 5)
        body["status"]["phase"] = "Succeeded"
        state.pods.put(body)
    posted, counted = Posted(), [0]
    partial = PartialGroups(lambda: state, posted, lambda: counted.__setitem__(0, counted[0] + 1), skipped)  # type: ignore[arg-type]
    for index in range(preempted):
        partial.member_preempted(deleting(state.pods, f"m-{index}"))
    await asyncio.sleep(0.01)
    return posted.events, counted[0]


@pytest.fixture(autouse=True)
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(partial_groups, "BATCH_SECONDS", 0.0)


async def test_a_group_left_in_part_is_told_by_one_event_on_it() -> None:
    events, count = await told((PROTECTED_ALL,), 2)
    assert count == 1
    [(ref, event_type, reason, message)] = events
    assert (ref.kind, ref.api_version, ref.namespace, ref.name, ref.uid) == (
        "PodGroup",
        "scheduling.k8s.io/v1beta1",
        "team",
        "g",
        "uid-g",
    )
    assert (event_type, reason) == ("Warning", "PreemptedInPart")
    assert message == (
        "the scheduler's preemption left this group in part: 2 members (team/m-0, team/m-1) preempted, 2 members "
        "(team/m-2, team/m-3) still running; the guard decides about a disruptionMode all group as one, so some of "
        "its members' deletions were not judged by it (it was not called for them, or did not answer in time) or "
        "were refused by another check"
    )


async def test_a_group_told_again_names_every_member_preempted_so_far() -> None:
    """The scheduler deleted a group's victims over two attempts (a refused DELETE cancels the attempt's
    others): the second Event names both members, under another name; the same group made anew starts anew."""
    state = view(*(member(f"m-{index}", "g", 5) for index in range(4)), PREEMPTOR, groups=(PROTECTED_ALL,))
    posted, counted = Posted(), [0]
    partial = PartialGroups(lambda: state, posted, lambda: counted.__setitem__(0, counted[0] + 1))  # type: ignore[arg-type]
    for name in ("m-1", "m-0"):
        partial.member_preempted(deleting(state.pods, name))
        await asyncio.sleep(0.01)
    state.groups["team/g"] = dataclasses.replace(state.groups["team/g"], uid="uid-g-again")
    partial.member_preempted(deleting(state.pods, "m-2"))
    await asyncio.sleep(0.01)
    said = [message.split(" preempted,")[0].split(": ")[1] for *_, message in posted.events]
    assert said == ["1 member (team/m-1)", "2 members (team/m-0, team/m-1)", "1 member (team/m-2)"]
    assert counted[0] == 3 and len(set(posted.names)) == 3


REPORTS = [
    # (rule, groups, members preempted, skipped namespaces, finished members, the cache's problem, told)
    ("preempted whole: nothing to tell", (PROTECTED_ALL,), 4, (), (), None, False),
    ("the others finished (Succeeded): none left", (PROTECTED_ALL,), 2, (), ("m-2", "m-3"), None, False),
    ("one preempted, three left: told", (PROTECTED_ALL,), 1, (), (), None, True),
    ("a single group's members go one by one: nothing to tell", (PROTECTED_SINGLE,), 2, (), (), None, False),
    ("a group not in the cache (its members judged as pods): nothing to tell", (), 2, (), (), None, False),
    ("the PodGroups not listed: nothing told from them", (PROTECTED_ALL,), 2, (), (), "podgroups: not listed", False),
    ("a namespace the guard is never sent: nothing to tell", (PROTECTED_ALL,), 2, ("team",), (), None, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "groups", "preempted", "skipped", "finished", "problem", "expected"), REPORTS, ids=[r[0] for r in REPORTS]
)
async def test_which_groups_are_told(
    rule: str,
    groups: tuple[dict[str, Any], ...],
    preempted: int,
    skipped: tuple[str, ...],
    finished: tuple[str, ...],
    problem: str | None,
    expected: bool,
) -> None:
    events, count = await told(groups, preempted, skipped, finished, problem)
    assert (len(events), count) == ((1, 1) if expected else (0, 0)), rule


MESSAGES = [
    ("one and one", ["team/m-0"], ["team/m-1"], "1 member (team/m-0) preempted, 1 member (team/m-1) still running"),
    ("more than ten: counted", [f"team/m-{i:02d}" for i in range(12)], ["team/x"], "team/m-09 and 2 more)"),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "preempted", "left", "said"), MESSAGES, ids=[m[0] for m in MESSAGES])
def test_the_events_words(rule: str, preempted: list[str], left: list[str], said: str) -> None:
    assert said in in_part_message(preempted, left), rule


def test_every_replica_names_the_event_alike_so_one_stands() -> None:
    """The Event's name comes from what the cluster shows (the group's UID and the members preempted): two
    replicas that saw the same post one Event; another preemption of the group is another Event."""
    first = event_name(("team", "g"), "uid-g", ["team/m-0", "team/m-1"])
    assert first == event_name(("team", "g"), "uid-g", ["team/m-0", "team/m-1"])
    assert first.startswith("g.ptol-in-part-")
    assert first != event_name(("team", "g"), "uid-g", ["team/m-2"])


async def test_what_was_told_counts_for_a_while_and_not_for_a_member_running_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Members told preempted count in a later telling for TOLD_SECONDS, not after; and a member made again
    under its name that runs is among those left, not those preempted."""
    state = view(*(member(f"m-{index}", "g", 5) for index in range(4)), PREEMPTOR, groups=(PROTECTED_ALL,))
    posted = Posted()
    partial = PartialGroups(lambda: state, posted, lambda: None)  # type: ignore[arg-type]
    partial.member_preempted(deleting(state.pods, "m-0"))
    partial.member_preempted(deleting(state.pods, "m-1"))
    await asyncio.sleep(0.01)
    state.pods.put(member("m-0", "g", 5))  # m-0 made again, running
    partial.member_preempted(deleting(state.pods, "m-2"))
    await asyncio.sleep(0.01)
    monkeypatch.setattr(partial_groups, "TOLD_SECONDS", 0.0)  # what was told is forgotten by the next telling
    partial.member_preempted(deleting(state.pods, "m-3"))
    await asyncio.sleep(0.01)
    said = [message.split(" still running")[0].split(": ")[1] for *_, message in posted.events]
    assert said == [
        "2 members (team/m-0, team/m-1) preempted, 2 members (team/m-2, team/m-3)",
        "2 members (team/m-1, team/m-2) preempted, 2 members (team/m-0, team/m-3)",
        "1 member (team/m-3) preempted, 1 member (team/m-0)",
    ]
