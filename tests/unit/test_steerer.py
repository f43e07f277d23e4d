"""The steerer's writes, as built before they are sent: the victim's mark as kube-scheduler's executor writes
it, the Lease that claims a preemptor and records the plan, and the plan read back from it after a restart."""

from datetime import UTC, datetime

from preemption_toleration.records.pod import PodBody, Shared, slim_pod
from preemption_toleration.steering.plan import SteeringPlan
from preemption_toleration.webhooks.steerer import (
    ACTING,
    LEASE_PREFIX,
    NODE,
    PREEMPTOR,
    STATE,
    VICTIMS,
    TokenBucket,
    _victims_of,
    disruption_target,
    lease_body,
    refused_victim,
    scheduler_of,
)
from tests.unit.test_extender import pod

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
SHARED = Shared()


def test_the_mark_is_the_schedulers() -> None:
    [condition] = disruption_target("default-scheduler", NOW)["status"]["conditions"]
    assert condition == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
        "lastTransitionTime": "2026-11-22T12:00:00Z",
    }


def test_the_lease_records_the_plan_and_gives_it_back() -> None:
    preemptor = slim_pod(pod("high", "high", node=None), SHARED)
    victims = (slim_pod(pod("a", "low"), SHARED), slim_pod(pod("b", "low"), SHARED))
    body = lease_body(SteeringPlan(preemptor, "node-b", victims, 0), "ptol", "replica-1", 60, NOW)
    assert body["metadata"]["name"] == LEASE_PREFIX + "uid-high"
    annotations = body["metadata"]["annotations"]
    assert (annotations[STATE], annotations[PREEMPTOR], annotations[NODE]) == (ACTING, "team/high", "node-b")
    assert annotations[VICTIMS] == "team/a=uid-a,team/b=uid-b"
    assert _victims_of(annotations) == [("team", "a", "uid-a"), ("team", "b", "uid-b")]
    assert body["spec"]["renewTime"] == "2026-11-22T12:00:00.000000Z"


def test_a_lease_with_a_damaged_victim_list_yields_only_whole_entries() -> None:
    assert _victims_of({VICTIMS: "team/a=uid-a,broken,/x=y,team/=z,team/c="}) == [("team", "a", "uid-a")]


def test_a_refused_victim_needs_a_node() -> None:
    assert refused_victim(PodBody(pod("a", "low", node=None))) is None
    found = refused_victim(PodBody(pod("a", "low")))
    assert found is not None and (found.namespace, found.name, found.uid, found.node) == (
        "team",
        "a",
        "uid-a",
        "node-a",
    )


def test_the_mark_names_the_preemptors_scheduler() -> None:
    assert scheduler_of(slim_pod(pod("p", "high", node=None), SHARED)) == "default-scheduler"
    custom = slim_pod(pod("p", "high", node=None, spec__schedulerName="batch"), SHARED)
    assert scheduler_of(custom) == "batch"


def test_the_token_bucket_spends_the_token_each_action_waited_for() -> None:
    """Rate 2 a second, bursts of 5: 24 actions asked at once run over (24 - 5) / 2 = 9.5 s, never 15 in 5 s."""
    now = [0.0]
    bucket = TokenBucket(2.0, 5, clock=lambda: now[0])
    starts = [bucket.wait_seconds() for _ in range(24)]
    assert starts[:5] == [0.0] * 5
    assert starts[5:8] == [0.5, 1.0, 1.5]
    assert starts[-1] == 9.5
    assert sum(1 for start in starts if start <= 5.0) == 15


def test_the_token_bucket_refills_up_to_its_burst() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 5, clock=lambda: now[0])
    for _ in range(5):
        bucket.wait_seconds()
    now[0] = 60.0
    assert [bucket.wait_seconds() for _ in range(6)] == [0.0] * 5 + [0.5]
