"""Members of pod groups the scheduler's preemption deleted without the guard's decision: seen in the pod
cache's watch, reported on their PodGroup when the guard did not allow them (webhooks/unjudged.py). One row
or test per rule."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from preemption_toleration.api.resources import ObjectRef
from preemption_toleration.guard.decisions import GuardConfig
from preemption_toleration.inventory.pods import PodIndex
from preemption_toleration.records.pod import SlimPod
from preemption_toleration.webhooks import unjudged as unjudged_module
from preemption_toleration.webhooks.guard_endpoint import GuardEndpoint, GuardHooks
from preemption_toleration.webhooks.metrics import WebhookMetrics
from preemption_toleration.webhooks.unjudged import UnjudgedMembers, unjudged_message
from tests.unit.test_guard import pod_request
from tests.unit.test_guard_groups import PREEMPTOR, PROTECTED_ALL, PROTECTED_SINGLE, member, view
from tests.unit.test_guard_groups import group as pod_group

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
    ("a member listed already marked and terminating: not told (no change seen)", [GOING], False, False),
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
    """ObjectEvents' `post`, kept."""

    def __init__(self) -> None:
        self.events: list[tuple[ObjectRef, str, str, str]] = []

    def post(self, ref: ObjectRef, event_type: str, reason: str, message: str) -> None:
        self.events.append((ref, event_type, reason, message))


def preempted(index: PodIndex, name: str) -> SlimPod:
    """The member `name` of the index, as the watch shows it once the scheduler's preemption deletes it."""
    body = member(name, "g", 5)
    index.put(changed(body, conditions=(MARK,), deleting=True))
    found = index.get(("team", name))
    assert found is not None
    return found


async def reported(
    groups: tuple[dict[str, Any], ...], allowed: tuple[str, ...], preempted_members: int, skipped: tuple[str, ...] = ()
) -> tuple[list[tuple[ObjectRef, str, str, str]], int]:
    """Four members of group `g`; the guard allowed the preemption of `allowed`; the watch then shows the
    first `preempted_members` preempted. The Events posted and the count."""
    state = view(*(member(f"m-{index}", "g", 5) for index in range(4)), PREEMPTOR, groups=groups)
    posted, counted = Posted(), [0]
    unjudged = UnjudgedMembers(lambda: state, posted, lambda: counted.__setitem__(0, counted[0] + 1), skipped)  # type: ignore[arg-type]
    for name in allowed:
        unjudged.allowed(("team", name))
    for index in range(preempted_members):
        unjudged.member_preempted(preempted(state.pods, f"m-{index}"))
    await asyncio.sleep(0.01)
    return posted.events, counted[0]


@pytest.fixture(autouse=True)
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(unjudged_module, "BATCH_SECONDS", 0.0)


async def test_members_preempted_unjudged_are_told_by_one_event_on_their_group() -> None:
    events, count = await reported((PROTECTED_ALL,), (), 2)
    assert count == 2
    [(ref, event_type, reason, message)] = events
    assert (ref.kind, ref.api_version, ref.namespace, ref.name, ref.uid) == (
        "PodGroup",
        "scheduling.k8s.io/v1beta1",
        "team",
        "g",
        "uid-g",
    )
    assert (event_type, reason) == ("Warning", "MembersPreemptedUnjudged")
    assert message == (
        "2 members preempted by the scheduler without the guard's decision (team/m-0, team/m-1): the API server "
        "did not call the guard for them, or applied its failurePolicy (the guard down or too slow); the group "
        "is left in part: 2 members left, which the guard decides about as one"
    )


REPORTS = [
    # (rule, groups, allowed by the guard, members preempted, skipped namespaces, Events, count)
    ("members whose preemption the guard allowed: nothing", (PROTECTED_ALL,), ("m-0", "m-1"), 2, (), 0, 0),
    ("one allowed, one not: the one", (PROTECTED_ALL,), ("m-0",), 2, (), 1, 1),
    ("a single group's members are preempted one by one: nothing", (PROTECTED_SINGLE,), (), 2, (), 0, 0),
    ("a group not in the cache: told (its mode unknown)", (), (), 1, (), 1, 1),
    ("a namespace the guard is never sent: nothing", (PROTECTED_ALL,), (), 2, ("team",), 0, 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "groups", "allowed", "members", "skipped", "events", "count"), REPORTS, ids=[r[0] for r in REPORTS]
)
async def test_which_preempted_members_are_reported(
    rule: str,
    groups: tuple[dict[str, Any], ...],
    allowed: tuple[str, ...],
    members: int,
    skipped: tuple[str, ...],
    events: int,
    count: int,
) -> None:
    posted, counted = await reported(groups, allowed, members, skipped)
    assert (len(posted), counted) == (events, count), rule


MESSAGES = [
    ("every member gone", ["team/m-0"], 0, "(team/m-0): ", "; no member is left"),
    ("one left", ["team/m-0", "team/m-1"], 1, "2 members preempted", "left in part: 1 member left, which"),
    ("more than ten named: the others counted", [f"team/m-{i}" for i in range(12)], 0, "team/m-9 and 2 more)", "left"),
]


@pytest.mark.parametrize(("rule", "members", "remaining", "begins", "ends"), MESSAGES, ids=[m[0] for m in MESSAGES])
def test_the_events_words(rule: str, members: list[str], remaining: int, begins: str, ends: str) -> None:
    message = unjudged_message(members, remaining)
    assert begins in message and ends in message, (rule, message)


async def test_the_guard_tells_which_preemptions_it_allowed() -> None:
    """An allowed preemption's request about a member is told to `allowed`; a refused one, a dry run and one
    about a lone pod are not."""
    told: list[tuple[str, str]] = []
    victim = member("m-0", "g", 5)
    protected = view(victim, PREEMPTOR, groups=(pod_group("g", "low-non-preempted"),))  # forever
    plain = view(victim, PREEMPTOR, groups=(pod_group("g", "low"),))
    for state, dry_run in ((protected, False), (plain, True), (plain, False)):
        hooks = GuardHooks(lambda state=state: state, GuardConfig(), lambda refusal, count: None, allowed=told.append)
        endpoint = GuardEndpoint(hooks, WebhookMetrics(), lambda needs: [])
        endpoint.handle(pod_request(None, old=victim, name="m-0", dry_run=dry_run))
    lone = view(LONE, PREEMPTOR)
    hooks = GuardHooks(lambda: lone, GuardConfig(), lambda refusal, count: None, allowed=told.append)
    reply = GuardEndpoint(hooks, WebhookMetrics(), lambda needs: []).handle(pod_request(None, old=LONE, name="lone"))
    assert reply.response.allowed
    assert told == [("team", "m-0")]
