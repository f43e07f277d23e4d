"""Kueue's preemption of a Workload as its status write shows it: one row per rule, on conditions as Kueue v0.19
writes them (`workloadevict.Evict` with `SetPreemptedCondition`)."""

import pytest

from preemption_toleration.kueue.eviction import KueuePreemption, preemption_of

MESSAGE = (
    "Preempted to accommodate a workload (UID: 5f0c-aa, JobUID: 77b1-cc) due to prioritization in the "
    "ClusterQueue; preemptor path: /cq; preemptee path: /cq"
)
ADMITTED = {"type": "Admitted", "status": "True", "reason": "Admitted"}


def status(*conditions: dict) -> dict:
    return {"status": {"conditions": [ADMITTED, *conditions]}}


EVICTED = {"type": "Evicted", "status": "True", "reason": "Preempted", "message": MESSAGE}
PREEMPTED = {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": MESSAGE}


@pytest.mark.parametrize(
    ("rule", "old", "new", "expected"),
    [
        (
            "Evicted=True, reason Preempted, newly: a preemption, its preemptor named by UID",
            status(),
            status(EVICTED, PREEMPTED),
            KueuePreemption("5f0c-aa", "77b1-cc", "InClusterQueue"),
        ),
        ("evicted before: not preempted again", status(EVICTED, PREEMPTED), status(EVICTED, PREEMPTED), None),
        (
            "evicted for another reason (PodsReadyTimeout): no preemption",
            status(),
            status({**EVICTED, "reason": "PodsReadyTimeout"}),
            None,
        ),
        ("Evicted=False: no preemption", status(), status({**EVICTED, "status": "False"}), None),
        ("no status write of Evicted: none", status(), status(), None),
        (
            "a preemptor Kueue did not know: no UID",
            status(),
            status(
                EVICTED, {**PREEMPTED, "message": MESSAGE.replace("5f0c-aa", "UNKNOWN").replace("77b1-cc", "UNKNOWN")}
            ),
            KueuePreemption(None, None, "InClusterQueue"),
        ),
        (
            "a message of another form: a preemption whose preemptor is not named",
            status(),
            status(EVICTED, {**PREEMPTED, "message": "preempted", "reason": "InCohortReclamation"}),
            KueuePreemption(None, None, "InCohortReclamation"),
        ),
        (
            "a first write (no old object)",
            None,
            status(EVICTED, PREEMPTED),
            KueuePreemption("5f0c-aa", "77b1-cc", "InClusterQueue"),
        ),
        ("conditions of the wrong shape read as none", status(), {"status": {"conditions": "Evicted"}}, None),
    ],
)
def test_preemption_of(rule: str, old, new, expected) -> None:
    assert preemption_of(old, new) == expected, rule
