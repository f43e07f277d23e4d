"""Steering's Lease protocol (`steering/adapter/steering_leases.py`), as built and read before anything is sent: the
Lease that claims a preemptor and records the plan, the plan read back from a Lease left acting, and when a
Lease is held, retaken or swept. The live claim race, sweep and resumption are tests/integration/test_steering.py's
and test_steering_resume.py's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.adapter import steering_leases as leases
from preemption_toleration.steering.adapter.steering_leases import LeaseState, lease_body, left_plan, victims_of
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan
from tests.unit.test_extender import pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_the_lease_records_the_plan_and_gives_it_back() -> None:
    shared = Shared()
    preemptor = slim_pod(pod("high", "high", node=None), shared)
    victims = (slim_pod(pod("a", "low"), shared), slim_pod(pod("b", "low"), shared))
    body = lease_body(SteeringPlan(preemptor, "node-b", victims, 0), "ptol", "replica-1", 60, NOW)
    assert body["metadata"]["name"] == leases.LEASE_PREFIX + "uid-high"
    annotations = body["metadata"]["annotations"]
    assert (annotations[leases.STATE], annotations[leases.PREEMPTOR], annotations[leases.NODE]) == (
        leases.ACTING,
        "team/high",
        "node-b",
    )
    assert annotations[leases.VICTIMS] == "team/a=uid-a,team/b=uid-b"
    assert victims_of(annotations) == [("team", "a", "uid-a"), ("team", "b", "uid-b")]
    assert body["spec"]["renewTime"] == "2026-11-22T12:00:00.000000Z"
    state = LeaseState(body["metadata"]["name"], annotations, "replica-1", NOW - timedelta(seconds=20), 60)
    assert left_plan(state, 60, NOW) == LeftPlan(
        ("team", "high", "uid-high"),
        "node-b",
        (("team", "a", "uid-a"), ("team", "b", "uid-b")),
        NOW - timedelta(seconds=20),
        60,
    )


def test_a_lease_with_a_damaged_victim_list_yields_only_whole_entries() -> None:
    assert victims_of({leases.VICTIMS: "team/a=uid-a,broken,/x=y,team/=z,team/c="}) == [("team", "a", "uid-a")]


def lease(state: str | None, renewed_ago: float | None, duration: int = 60, holder: str = "r1") -> LeaseState:
    annotations = {leases.PREEMPTOR: "team/high", leases.NODE: "node-a", leases.VICTIMS: "team/a=uid-a"}
    if state is not None:
        annotations[leases.STATE] = state
    renewed = NOW - timedelta(seconds=renewed_ago) if renewed_ago is not None else None
    return LeaseState(leases.LEASE_PREFIX + "uid-high", annotations, holder, renewed, duration)


def is_left(state: LeaseState) -> bool:
    return left_plan(state, 60, NOW) is not None


def is_held(state: LeaseState) -> bool:
    return state.held(NOW)


def is_swept(state: LeaseState) -> bool:
    return state.swept(NOW)


JUDGED = [
    ("left: acting, renewed 20 s ago, by a replica that stopped", is_left, lease(leases.ACTING, 20), True),
    (
        "left: acting, renewed 5 s ago: maybe a live replica in the middle of it",
        is_left,
        lease(leases.ACTING, 5),
        False,
    ),
    ("left: done, nothing left", is_left, lease(leases.DONE, 20), False),
    ("left: refused, nothing left", is_left, lease(leases.REFUSED, 20), False),
    ("left: no state, not ours to finish", is_left, lease(None, 20), False),
    ("left: never renewed, no claim", is_left, lease(leases.ACTING, None), False),
    ("held: renewed within its duration", is_held, lease(leases.ACTING, 30), True),
    ("held: past its duration, free to take", is_held, lease(leases.ACTING, 61), False),
    ("held: never renewed, free to take", is_held, lease(leases.ACTING, None), False),
    ("swept: renewed 11 minutes ago, whatever its state", is_swept, lease(leases.ACTING, 660), True),
    ("swept: done 9 minutes ago, kept for kubectl get lease", is_swept, lease(leases.DONE, 540), False),
    ("swept: released 11 minutes ago", is_swept, lease(leases.RELEASED, 660), True),
    ("swept: never renewed", is_swept, lease(leases.DONE, None), True),
]


@pytest.mark.parametrize(("rule", "asked", "state", "expected"), JUDGED, ids=[case[0] for case in JUDGED])
def test_what_a_lease_says(rule: str, asked: Callable[[LeaseState], bool], state: LeaseState, expected: bool) -> None:
    assert asked(state) is expected, rule


def test_a_left_leases_window_is_never_longer_than_the_servers() -> None:
    found = left_plan(lease(leases.ACTING, 20, duration=86_400), 60, NOW)
    assert found is not None and found.window_seconds == 60


BLOCKS = [
    # (rule, the Lease, asked by, retake, blocks)
    ("held and acting: another replica is in the middle of it", lease(leases.ACTING, 5), "r2", False, True),
    ("held and done: one action per preemptor per window", lease(leases.DONE, 5), "r2", False, True),
    ("released (an action given up): any replica may claim it at once", lease(leases.RELEASED, 5), "r2", False, False),
    ("released, and asked by the replica that gave it up", lease(leases.RELEASED, 5), "r1", False, False),
    ("done by the asker, retaken (its room was taken)", lease(leases.DONE, 5), "r1", True, False),
    ("done by another, retake asked: still held", lease(leases.DONE, 5, holder="r2"), "r1", True, True),
    ("past its window: free", lease(leases.ACTING, 61), "r2", False, False),
]


@pytest.mark.parametrize(("rule", "state", "asker", "retake", "blocks"), BLOCKS, ids=[case[0] for case in BLOCKS])
def test_whom_a_lease_keeps_from_acting(rule: str, state: LeaseState, asker: str, retake: bool, blocks: bool) -> None:
    assert state.blocks(asker, NOW, retake) is blocks, rule


def test_only_the_holder_that_finished_a_lease_may_retake_it() -> None:
    assert lease(leases.DONE, 1).done_by("r1") and not lease(leases.DONE, 1, holder="r2").done_by("r1")
    assert not lease(leases.ACTING, 1).done_by("r1")


def raw_lease(uid: str, state: str | None, renewed_ago: float | None, node: str | None = "node-a") -> dict:
    annotations = {key: value for key, value in ((leases.STATE, state), (leases.NODE, node)) if value is not None}
    spec: dict = {"holderIdentity": "r1", "leaseDurationSeconds": 60}
    if renewed_ago is not None:
        spec["renewTime"] = (NOW - timedelta(seconds=renewed_ago)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"metadata": {"name": leases.LEASE_PREFIX + uid, "annotations": annotations}, "spec": spec}


NOMINATIONS = [
    ("acting and held: another replica's action in progress", raw_lease("a", leases.ACTING, 5), {"a": "node-a"}),
    ("done within the window: its nomination stands", raw_lease("a", leases.DONE, 30), {"a": "node-a"}),
    ("released: the action was given up", raw_lease("a", leases.RELEASED, 5), {}),
    ("refused: nothing was done", raw_lease("a", leases.REFUSED, 5), {}),
    ("done past its window: its victims may still terminate", raw_lease("a", leases.DONE, 61), {"a": "node-a"}),
    ("swept (renewed 11 minutes ago)", raw_lease("a", leases.DONE, 660), {}),
    ("never renewed", raw_lease("a", leases.ACTING, None), {}),
    ("no node", raw_lease("a", leases.ACTING, 5, node=None), {}),
    ("a damaged Lease reads as nothing", {"metadata": "x", "spec": ["y"]}, {}),
]


@pytest.mark.parametrize(("rule", "raw", "expected"), NOMINATIONS, ids=[case[0] for case in NOMINATIONS])
def test_the_nominations_every_replicas_steering_made_are_read_from_the_leases(rule, raw, expected) -> None:
    assert leases.steered_nominations([LeaseState.from_json(raw)], NOW) == expected, rule


def test_a_watched_lease_reads_as_a_listed_one() -> None:
    raw = raw_lease("a", leases.ACTING, 20)
    raw["metadata"]["resourceVersion"] = "42"
    raw["metadata"]["annotations"] |= {leases.PREEMPTOR: "team/high", leases.VICTIMS: "team/a=uid-a"}
    found = left_plan(LeaseState.from_json(raw), 60, NOW)
    assert found == LeftPlan(
        ("team", "high", "a"), "node-a", (("team", "a", "uid-a"),), NOW - timedelta(seconds=20), 60, "42"
    )


ACTED_LATELY = [
    # (rule, Lease, this server's window, acted lately)
    ("acting, renewed 5 s ago", raw_lease("a", leases.ACTING, 5), 60, True),
    ("done within the window", raw_lease("a", leases.DONE, 30), 60, True),
    ("done past the window", raw_lease("a", leases.DONE, 61), 60, False),
    ("this server's window is the longest a Lease may claim", raw_lease("a", leases.DONE, 30), 20, False),
    ("released: the action was given up", raw_lease("a", leases.RELEASED, 5), 60, False),
    ("refused: nothing was done", raw_lease("a", leases.REFUSED, 5), 60, False),
    ("never renewed", raw_lease("a", leases.ACTING, None), 60, False),
    ("renewed in the future: forged", raw_lease("a", leases.ACTING, -5), 60, False),
    ("a clock a little ahead", raw_lease("a", leases.ACTING, -0.5), 60, True),
    ("a damaged Lease reads as nothing", {"metadata": "x", "spec": ["y"]}, 60, False),
]


@pytest.mark.parametrize(("rule", "raw", "window", "expected"), ACTED_LATELY, ids=[case[0] for case in ACTED_LATELY])
def test_another_replicas_lease_says_whether_it_acted_for_the_preemptor_lately(rule, raw, window, expected) -> None:
    """The scheduler then preempts for the next pod nominated there, and steering passes the preemptor over."""
    assert leases.acted_lately(LeaseState.from_json(raw), window, NOW) is expected, rule
    assert leases.acted_lately(None, window, NOW) is False


def test_victims_preempted_for_other_preemptors_are_read_from_every_replicas_leases() -> None:
    def with_victims(uid: str, state: str, renewed_ago: float, victims: str) -> LeaseState:
        raw = raw_lease(uid, state, renewed_ago)
        raw["metadata"]["annotations"][leases.VICTIMS] = victims
        return LeaseState.from_json(raw)

    found = leases.victims_elsewhere(
        [
            with_victims("first", leases.DONE, 30, "team/p2=uid-p2,team/p3=uid-p3"),
            with_victims("mine", leases.ACTING, 5, "team/p1=uid-p1"),  # the preemptor's own: it waits for them
            with_victims("given-up", leases.RELEASED, 5, "team/p4=uid-p4"),
            with_victims("swept", leases.DONE, 660, "team/p5=uid-p5"),
            with_victims("acting", leases.ACTING, 1, "team/p6=uid-p6,not-a-victim"),
        ],
        "mine",
        NOW,
    )
    assert found == {"uid-p2", "uid-p3", "uid-p6"}
