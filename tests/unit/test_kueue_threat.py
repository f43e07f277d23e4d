"""Which pending Workloads may take an admitted one in Kueue's preemption (`kueue.threat`), and the ClusterQueue
records it reads (`records.cluster_queue`)."""

from __future__ import annotations

import pytest

from preemption_toleration.kueue.threat import (
    LOWEST,
    Exposure,
    PendingPriorities,
    Unboosted,
    exposure_of,
    exposure_policy,
    lowest_taker,
    most_permissive_reclaim,
)
from preemption_toleration.records.cluster_queue import ClusterQueueRecord, PreemptionPolicy, cluster_queue_record

NEVER, LOWER, NEWER_EQUAL, ANY = (
    PreemptionPolicy.NEVER,
    PreemptionPolicy.LOWER_PRIORITY,
    PreemptionPolicy.LOWER_OR_NEWER_EQUAL_PRIORITY,
    PreemptionPolicy.ANY,
)


@pytest.mark.parametrize(
    ("rule", "policy", "lowest"),
    [
        ("Never: no preemptor", NEVER, None),
        ("LowerPriority: a higher effective priority", LOWER, 8001),
        ("LowerOrNewerEqualPriority: an equal one, queued first", NEWER_EQUAL, 8000),
        ("Any: every preemptor", ANY, LOWEST),
    ],
)
def test_the_lowest_preemptor_each_policy_lets_take_a_workload(
    rule: str, policy: PreemptionPolicy, lowest: int | None
) -> None:
    assert lowest_taker(8000, policy) == lowest, rule


def cq(within: PreemptionPolicy, cohort: str | None = None, reclaim: PreemptionPolicy = NEVER) -> ClusterQueueRecord:
    return ClusterQueueRecord("cq", cohort, within, reclaim)


@pytest.mark.parametrize(
    ("rule", "queue", "cohort_reclaim", "policy"),
    [
        ("a queue not known lets any preemptor in", None, NEVER, ANY),
        ("in no cohort: its own queue's policy", cq(LOWER), ANY, LOWER),
        ("in a cohort: the most permissive of its own and the cohort's reclaim", cq(LOWER, "co"), ANY, ANY),
        (
            "in a cohort that reclaims by lower priority: its own when that lets more in",
            cq(NEWER_EQUAL, "co"),
            LOWER,
            NEWER_EQUAL,
        ),
    ],
)
def test_the_policy_under_which_preemptors_may_take_a_workload_of_a_queue(
    rule: str, queue: ClusterQueueRecord | None, cohort_reclaim: PreemptionPolicy, policy: PreemptionPolicy
) -> None:
    assert exposure_policy(queue, cohort_reclaim) is policy, rule


def test_the_cohorts_reclaim_is_the_most_permissive_of_the_queues_in_a_cohort() -> None:
    queues = [cq(NEVER, None, ANY), cq(NEVER, "a", LOWER), cq(NEVER, "b", NEVER)]
    assert most_permissive_reclaim(queues) is LOWER, "a queue in no cohort reclaims from none"
    assert most_permissive_reclaim([]) is NEVER


@pytest.mark.parametrize(
    ("rule", "policy", "exposure"),
    [
        ("LowerPriority: from one above it to the minimum", LOWER, Exposure(8001, 10000)),
        ("Never: none", NEVER, None),
        ("a minimum at its own priority + 1 leaves no room under LowerPriority", LOWER, None),
    ],
)
def test_the_exposure_of_a_protected_workload(rule: str, policy: PreemptionPolicy, exposure: Exposure | None) -> None:
    minimum = 8001 if "leaves no room" in rule else 10000
    assert exposure_of(8000, minimum, policy) == exposure, rule


def test_pending_priorities_are_counted_and_found_by_range() -> None:
    pending = PendingPriorities()
    assert pending.add(9000) and not pending.add(9000), "True only for a priority new to it"
    assert pending.threaten(Exposure(8001, 10000))
    assert not pending.threaten(Exposure(9001, 10000)) and not pending.threaten(Exposure(8001, 9000))
    pending.discard(9000)
    assert pending.threaten(Exposure(8001, 10000)), "one of the two left"
    pending.discard(9000)
    pending.discard(9000)  # more than were counted: nothing to take
    assert not pending.threaten(Exposure(LOWEST, 2**40)) and len(pending) == 0


def test_unboosted_workloads_are_found_by_the_priority_that_threatens_them() -> None:
    unboosted = Unboosted()
    unboosted.put("ns/a", Exposure(8001, 10000))
    unboosted.put("ns/b", Exposure(8001, 10000))
    unboosted.put("ns/c", Exposure(LOWEST, 9000))
    assert unboosted.threatened_by(8500) == ["ns/a", "ns/b", "ns/c"]
    assert unboosted.threatened_by(9500) == ["ns/a", "ns/b"]
    assert unboosted.threatened_by(10000) == []
    unboosted.put("ns/a", Exposure(LOWEST, 9000))  # planned again under another exposure
    unboosted.discard("ns/b")
    assert unboosted.threatened_by(9500) == [] and len(unboosted) == 2


@pytest.mark.parametrize(
    ("rule", "raw", "record"),
    [
        (
            "absent policies are Kueue's default, Never",
            {"metadata": {"name": "q"}},
            ClusterQueueRecord("q", None, NEVER, NEVER),
        ),
        (
            "both policies and the cohort read",
            {
                "metadata": {"name": "q"},
                "spec": {
                    "cohortName": "co",
                    "preemption": {"withinClusterQueue": "LowerOrNewerEqualPriority", "reclaimWithinCohort": "Any"},
                },
            },
            ClusterQueueRecord("q", "co", NEWER_EQUAL, ANY),
        ),
        (
            "a policy Kueue does not know yet, or of the wrong type, lets the most preemptors in",
            {
                "metadata": {"name": "q"},
                "spec": {"preemption": {"withinClusterQueue": "Sometimes", "reclaimWithinCohort": 3}},
            },
            ClusterQueueRecord("q", None, ANY, ANY),
        ),
    ],
)
def test_a_cluster_queue_is_read_into_its_record(rule: str, raw: dict, record: ClusterQueueRecord) -> None:
    assert cluster_queue_record(raw) == record, rule
