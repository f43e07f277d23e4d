"""The boost that keeps Kueue's preemption off a protected Workload (docs/contract.md, "Kueue"): one row per
rule. Kueue's `LowerPriority` takes a victim for a preemptor of strictly higher effective priority, so a
Workload boosted to minimum − 1 is taken by exactly the preemptors the contract lets through."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.annotations import toleration_of
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kueue.boost import WorkloadFacts, boost_for

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MIN, TOL = (
    "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority",
    ("preemption-toleration.scheduling.x-k8s.io/toleration-seconds"),
)


def toleration(minimum: str | None, seconds: str | None, value: int = 8000):
    annotations = {key: text for key, text in ((MIN, minimum), (TOL, seconds)) if text is not None}
    return toleration_of("batch", value, annotations)


def workload(priority: int = 8000, scheduled_ago: float | None = 60.0, klass: str | None = "batch") -> WorkloadFacts:
    last = NOW - timedelta(seconds=scheduled_ago) if scheduled_ago is not None else None
    return WorkloadFacts(priority, klass, last)


@pytest.mark.parametrize(
    ("rule", "facts", "class_toleration", "value", "until", "kind"),
    [
        ("forever: effective priority minimum - 1", workload(), toleration("10000", "-1"), 1999, None, "Forever"),
        (
            "a window: boosted until its last pod ran toleration-seconds",
            workload(scheduled_ago=60),
            toleration("10000", "600"),
            1999,
            NOW + timedelta(seconds=540),
            "Until",
        ),
        ("the window over: no boost", workload(scheduled_ago=601), toleration("10000", "600"), None, None, "None"),
        (
            "no pod scheduled yet: protected, its window starts later",
            workload(scheduled_ago=None),
            toleration("10000", "600"),
            1999,
            None,
            "NotScheduled",
        ),
        ("no annotation: every higher priority may preempt", workload(), toleration(None, None), None, None, "None"),
        (
            "a minimum at most priority + 1 refuses nobody: no boost",
            workload(),
            toleration("8001", "-1"),
            None,
            None,
            "None",
        ),
        (
            "a minimum of priority + 2: a boost of 1 (only priority + 1 is refused)",
            workload(),
            toleration("8002", "-1"),
            1,
            None,
            "Forever",
        ),
        ("an annotation that does not parse: none", workload(), toleration("ten", "-1"), None, None, "None"),
        (
            "a negative base priority is boosted from it",
            workload(priority=-100),
            toleration("100", "-1", value=-100),
            199,
            None,
            "Forever",
        ),
    ],
)
def test_boost(rule, facts, class_toleration, value, until, kind) -> None:
    boost = boost_for(facts, class_toleration, NOW)
    assert boost.value == value, rule
    assert boost.until == until, rule
    assert boost.protection is not None and boost.protection.kind is ProtectionKind(kind), rule
    assert boost.problem is None, rule


@pytest.mark.parametrize("preemptor", [9999, 10000, 10001, 8001])
def test_kueues_lower_priority_filter_on_the_boosted_priority_is_the_contracts_check_5(preemptor: int) -> None:
    """Kueue's LowerPriority: preemptor > victim's effective priority. Boosted, exactly the priorities at or above
    the minimum pass, as the contract lets them."""
    boost = boost_for(workload(), toleration("10000", "-1"), NOW)
    assert boost.value is not None and boost.protection is not None
    effective = 8000 + boost.value
    assert (preemptor > effective) is (not boost.protection.refuses(preemptor))


def test_a_workload_without_a_class_is_never_boosted() -> None:
    boost = boost_for(workload(klass=None), None, NOW)
    assert boost.value is None and boost.problem is None


def test_a_class_not_known_is_said_and_not_boosted() -> None:
    boost = boost_for(workload(), None, NOW)
    assert boost.value is None and boost.problem is not None and 'PriorityClass "batch" not found' in boost.problem


def test_a_boost_beyond_int32_is_said_not_written() -> None:
    """Kueue reads the annotation as an int32: a boost it could not read is reported, never written."""
    boost = boost_for(workload(priority=-(2**31)), toleration("2147483647", "-1", value=-(2**31)), NOW)
    assert boost.value is None and boost.problem is not None and "exceeds the annotation's int32" in boost.problem
