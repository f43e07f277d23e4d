"""The steerer's writes, as built before they are sent: the victim's mark as kube-scheduler's executor writes
it; and its rate limiter. Its Lease protocol is tests/unit/test_steering_leases.py's."""

from datetime import UTC, datetime

from preemption_toleration.core.pods import PodJson
from preemption_toleration.records.pod import Shared, slim_pod
from preemption_toleration.steering.adapter.pod_writes import disruption_target, scheduler_of
from preemption_toleration.steering.adapter.steerer import refused_victim
from preemption_toleration.steering.pacing import TokenBucket
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


def test_a_refused_victim_needs_a_node() -> None:
    assert refused_victim(PodJson(pod("a", "low", node=None))) is None
    found = refused_victim(PodJson(pod("a", "low")))
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
