"""The backstop's judgement of Kueue's preemption of a Workload (`kueue.backstop`): one row per rule. A Workload is
judged as its last plan found it, against the preemptor's effective priority in Kueue's eyes."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kueue.backstop import Guarded, protected_eviction
from preemption_toleration.kueue.eviction import KueuePreemption
from preemption_toleration.records.workload import ClassRef, WorkloadRecord

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
VICTIM = WorkloadRecord(
    namespace="team",
    name="train",
    uid="w-victim",
    priority=8000,
    class_ref=ClassRef("scheduling.k8s.io", "PriorityClass", "batch"),
    boost="1999",
    job_uid="j-1",
    admitted=True,
    evicted=False,
    reserved=True,
)
PREEMPTOR = replace(VICTIM, name="high", uid="w-high", priority=9000, boost=None, admitted=False, reserved=False)
BY_HIGH = KueuePreemption("w-high", "j-high", "InCohortReclamation")
FOREVER = Guarded(10000, None)
WINDOW = Guarded(10000, NOW + timedelta(seconds=60), ProtectionKind.UNTIL)
UNSCHEDULED = Guarded(10000, None, ProtectionKind.NOT_SCHEDULED)


@pytest.mark.parametrize(
    ("rule", "guarded", "preemptor", "preemption", "at", "reported"),
    [
        ("protected for ever, a preemptor below the minimum: reported", FOREVER, PREEMPTOR, BY_HIGH, NOW, True),
        ("within the window: reported", WINDOW, PREEMPTOR, BY_HIGH, NOW, True),
        ("at the window's end: not protected any more", WINDOW, PREEMPTOR, BY_HIGH, WINDOW.until, False),
        ("a preemptor at the minimum may preempt", FOREVER, replace(PREEMPTOR, priority=10000), BY_HIGH, NOW, False),
        (
            "the preemptor's boost counts, as Kueue counts it",
            FOREVER,
            replace(PREEMPTOR, boost="1000"),
            BY_HIGH,
            NOW,
            False,
        ),
        ("not protected by its last plan: not reported", None, PREEMPTOR, BY_HIGH, NOW, False),
        ("a preemptor not known: its priority unknown, not reported", FOREVER, None, BY_HIGH, NOW, False),
        (
            "a preemptor Kueue did not name: not reported",
            FOREVER,
            PREEMPTOR,
            KueuePreemption(None, None, "InClusterQueue"),
            NOW,
            False,
        ),
    ],
)
def test_protected_eviction(rule, guarded, preemptor, preemption, at, reported) -> None:
    assert (protected_eviction(VICTIM, guarded, preemption, preemptor, at) is not None) is reported, rule


def test_what_a_protected_eviction_says() -> None:
    found = protected_eviction(VICTIM, WINDOW, BY_HIGH, PREEMPTOR, NOW)
    assert found is not None and found.protection is ProtectionKind.UNTIL
    assert found.message == (
        "Kueue preempted this Workload (InCohortReclamation) for Workload team/high of effective priority 9000, "
        "which its class's toleration refuses (below 10000, until 2026-11-30T12:01:00+00:00); Kueue's eviction is "
        "reported, not refused (docs/tasks/kueue.md)"
    )
    forever = protected_eviction(VICTIM, FOREVER, BY_HIGH, PREEMPTOR, NOW)
    assert forever is not None and forever.protection is ProtectionKind.FOREVER and "for ever" in forever.message
    waiting = protected_eviction(VICTIM, UNSCHEDULED, BY_HIGH, PREEMPTOR, NOW)
    assert waiting is not None and waiting.protection is ProtectionKind.NOT_SCHEDULED
    assert "(below 10000, until a pod of it is scheduled)" in waiting.message
