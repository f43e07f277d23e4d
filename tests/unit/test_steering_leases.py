"""Steering's Lease protocol (`webhooks/steering_leases.py`), as built and read before anything is sent: the
Lease that claims a preemptor and records the plan, the plan read back from a Lease left acting, and when a
Lease is held, retaken or swept. The live claim race, sweep and resumption are tests/integration/test_steering.py's
and test_steering_resume.py's."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.steering.resumption import LeftPlan
from preemption_toleration.webhooks.steering_leases import (
    ACTING,
    DONE,
    LEASE_PREFIX,
    NODE,
    PREEMPTOR,
    REFUSED,
    STATE,
    VICTIMS,
    LeaseState,
    lease_body,
    left_plan,
    victims_of,
)
from tests.unit.test_extender import pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SHARED = Shared()


def test_the_lease_records_the_plan_and_gives_it_back() -> None:
    preemptor = slim_pod(pod("high", "high", node=None), SHARED)
    victims = (slim_pod(pod("a", "low"), SHARED), slim_pod(pod("b", "low"), SHARED))
    body = lease_body(SteeringPlan(preemptor, "node-b", victims, 0), "ptol", "replica-1", 60, NOW)
    assert body["metadata"]["name"] == LEASE_PREFIX + "uid-high"
    annotations = body["metadata"]["annotations"]
    assert (annotations[STATE], annotations[PREEMPTOR], annotations[NODE]) == (ACTING, "team/high", "node-b")
    assert annotations[VICTIMS] == "team/a=uid-a,team/b=uid-b"
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
    assert victims_of({VICTIMS: "team/a=uid-a,broken,/x=y,team/=z,team/c="}) == [("team", "a", "uid-a")]


def lease(state: str | None, renewed_ago: float | None, duration: int = 60, holder: str = "r1") -> LeaseState:
    annotations = {PREEMPTOR: "team/high", NODE: "node-a", VICTIMS: "team/a=uid-a"}
    if state is not None:
        annotations[STATE] = state
    renewed = NOW - timedelta(seconds=renewed_ago) if renewed_ago is not None else None
    return LeaseState(LEASE_PREFIX + "uid-high", annotations, holder, renewed, duration)


LEFT = [
    ("acting, renewed 20 s ago: left by a replica that stopped", lease(ACTING, 20), True),
    ("acting, renewed 5 s ago: maybe a live replica in the middle of it", lease(ACTING, 5), False),
    ("done: nothing left", lease(DONE, 20), False),
    ("refused: nothing left", lease(REFUSED, 20), False),
    ("no state: not ours to finish", lease(None, 20), False),
    ("never renewed: no claim", lease(ACTING, None), False),
]


@pytest.mark.parametrize(("rule", "state", "left"), LEFT, ids=[case[0] for case in LEFT])
def test_which_leases_are_left_to_finish(rule: str, state: LeaseState, left: bool) -> None:
    assert (left_plan(state, 60, NOW) is not None) is left, rule


def test_a_left_leases_window_is_never_longer_than_the_servers() -> None:
    found = left_plan(lease(ACTING, 20, duration=86_400), 60, NOW)
    assert found is not None and found.window_seconds == 60


CLAIMS = [
    ("renewed within its duration: held", lease(ACTING, 30), True),
    ("past its duration: free to take", lease(ACTING, 61), False),
    ("never renewed: free to take", lease(ACTING, None), False),
]


@pytest.mark.parametrize(("rule", "state", "held"), CLAIMS, ids=[case[0] for case in CLAIMS])
def test_when_a_lease_is_held(rule: str, state: LeaseState, held: bool) -> None:
    assert state.held(NOW) is held, rule


def test_only_the_holder_that_finished_a_lease_may_retake_it() -> None:
    assert lease(DONE, 1).done_by("r1") and not lease(DONE, 1, holder="r2").done_by("r1")
    assert not lease(ACTING, 1).done_by("r1")


SWEEPS = [
    ("renewed 11 minutes ago: swept, whatever its state", lease(ACTING, 660), True),
    ("done 9 minutes ago: kept for kubectl get lease", lease(DONE, 540), False),
    ("never renewed: swept", lease(DONE, None), True),
]


@pytest.mark.parametrize(("rule", "state", "swept"), SWEEPS, ids=[case[0] for case in SWEEPS])
def test_which_leases_are_swept(rule: str, state: LeaseState, swept: bool) -> None:
    assert state.swept(NOW) is swept, rule
