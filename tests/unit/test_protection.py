"""protection_of says which preemptor priorities a pod refuses and until when."""

from datetime import UTC, datetime, timedelta
from itertools import product

import pytest

from preemption_toleration import PriorityClassNotFound, ProtectionKind, exempted_from_preemption, protection_of
from preemption_toleration.core.protection import holds_back_no_preemptor
from tests.builders import pod, priority_class

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)

CASES = [
    # (rule, class annotations (minimum, toleration), scheduled ago, kind, refuse_below, until)
    ("forever: toleration -1", ("10000", "-1"), timedelta(hours=5), ProtectionKind.FOREVER, 10000, None),
    (
        "time-limited: until scheduled + toleration",
        ("10000", "600"),
        timedelta(seconds=100),
        ProtectionKind.UNTIL,
        10000,
        NOW + timedelta(seconds=500),
    ),
    ("time-limited, over", ("10000", "600"), timedelta(seconds=600), ProtectionKind.NONE, None, None),
    ("not scheduled: the clock has not started", ("10000", "600"), None, ProtectionKind.NOT_SCHEDULED, 10000, None),
    ("no toleration seconds: none", ("10000", None), timedelta(seconds=1), ProtectionKind.NONE, None, None),
    ("minimum value+1 refuses nothing", ("8001", "-1"), timedelta(0), ProtectionKind.NONE, None, None),
    ("minimum below the value refuses nothing", ("100", "-1"), timedelta(0), ProtectionKind.NONE, None, None),
    ("invalid annotation: none", ("10k", "-1"), timedelta(0), ProtectionKind.NONE, None, None),
]


@pytest.mark.parametrize(
    ("rule", "annotations", "ago", "kind", "refuse_below", "until"), CASES, ids=[c[0] for c in CASES]
)
def test_protection(rule, annotations, ago, kind, refuse_below, until) -> None:
    victim_class = priority_class("c", 8000, *annotations)
    scheduled = None if ago is None else NOW - ago
    protection = protection_of(pod("v", 8000, "c", scheduled), victim_class, NOW)
    assert protection.kind is kind
    assert protection.refuse_below == refuse_below
    assert protection.until == until


def test_no_class_name_means_no_protection() -> None:
    assert protection_of(pod("v", 8000), None, NOW).kind is ProtectionKind.NONE


def test_missing_class_raises() -> None:
    with pytest.raises(PriorityClassNotFound):
        protection_of(pod("v", 8000, "gone"), None, NOW)


def test_refused_range_and_seconds_left() -> None:
    victim_class = priority_class("c", 8000, "10000", "600")
    protection = protection_of(pod("v", 8000, "c", NOW - timedelta(seconds=99, milliseconds=500)), victim_class, NOW)
    assert [protection.refuses(p) for p in (8000, 8001, 9999, 10000)] == [False, True, True, False]
    assert protection.seconds_left(NOW) == 501  # rounded up: 500.5 s left
    assert protection.protected


def test_agrees_with_exempted_from_preemption() -> None:
    """For every candidate preemptor (higher priority, not Never), refuses() equals the exemption check."""
    annotations = [
        ("10000", "-1"),
        ("10000", "600"),
        ("10000", "0"),
        ("10000", None),
        (None, "600"),
        ("8000", "-1"),
        ("x", "-1"),
        ("10000", "9223372037"),
    ]
    ages = [None, timedelta(0), timedelta(seconds=599), timedelta(seconds=600), timedelta(days=1)]
    priorities = [8001, 9000, 9999, 10000, 20000]
    for (minimum, toleration), ago, priority in product(annotations, ages, priorities):
        victim_class = priority_class("c", 8000, minimum, toleration)
        victim = pod("v", 8000, "c", None if ago is None else NOW - ago)
        preemptor = pod("p", priority)
        expected = exempted_from_preemption(victim, preemptor, {"c": victim_class}, NOW)
        protection = protection_of(victim, victim_class, NOW)
        assert protection.refuses(priority) is expected, (minimum, toleration, ago, priority)


def test_the_records_give_what_the_json_gives() -> None:
    """`protection_under` and `exemption` on records (a pod's, and its class's ClassToleration as the class
    record parsed it) answer as `protection_of` and `exempted_from_preemption` do on the JSON, parse errors
    included."""
    from dataclasses import FrozenInstanceError

    from preemption_toleration.core.annotations import ClassToleration, class_toleration
    from preemption_toleration.core.exemption import exemption
    from preemption_toleration.core.protection import protection_under
    from preemption_toleration.records.pod import Shared, slim_pod
    from preemption_toleration.records.priority_class import class_view

    annotations = [("10000", "-1"), ("10000", "600"), ("10000", None), (None, "600"), ("x", "-1"), ("10000", "1e3")]
    ages = [None, timedelta(seconds=599), timedelta(seconds=600)]
    for (minimum, toleration), ago, priority in product(annotations, ages, [9000, 10000]):
        victim_class = priority_class("c", 8000, minimum, toleration)
        parsed = class_toleration(victim_class)
        assert class_view(victim_class).toleration == parsed
        victim = pod("v", 8000, "c", None if ago is None else NOW - ago)
        preemptor = pod("p", priority)
        victim_record, preemptor_record = slim_pod(victim, Shared()), slim_pod(preemptor, Shared())
        assert protection_under(victim_record, parsed, NOW) == protection_of(victim, victim_class, NOW)
        exempt, protection = exemption(victim_record, preemptor_record, parsed, NOW)
        assert exempt is exempted_from_preemption(victim, preemptor, {"c": victim_class}, NOW)
        assert protection in (None, protection_of(victim, victim_class, NOW))
    invalid = class_toleration(priority_class("c", 8000, "10k", "-1"))
    assert invalid == ClassToleration(
        "c", None, "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority", "10k"
    )
    assert not hasattr(invalid, "__dict__")  # slotted
    with pytest.raises(FrozenInstanceError):
        invalid.class_name = "d"  # type: ignore[misc]
    with pytest.raises(PriorityClassNotFound):
        protection_under(slim_pod(pod("v", 8000, "gone"), Shared()), None, NOW)


# (rule, the class's value, minimum-preemptable-priority, no preemptor held back): only a priority above the
# value preempts the class's pods, and only those below the minimum are held back.
NO_PREEMPTOR_HELD_BACK = [
    ("a minimum far below the value", 8000, 100, True),
    ("a minimum equal to the value", 8000, 8000, True),
    ("value + 1, the lowest priority that preempts: nothing below it preempts", 8000, 8001, True),
    ("value + 2 holds back priority value + 1", 8000, 8002, False),
    ("unset: the default, value + 1", 8000, None, True),
    ("a negative value", -5, -4, True),
    ("a negative value, value + 2", -5, -3, False),
]


@pytest.mark.parametrize(
    ("rule", "value", "minimum", "none"), NO_PREEMPTOR_HELD_BACK, ids=[c[0] for c in NO_PREEMPTOR_HELD_BACK]
)
def test_holds_back_no_preemptor(rule, value, minimum, none) -> None:
    assert holds_back_no_preemptor(value, minimum) is none
    # what the protection of a pod of that class says, with a toleration that holds forever
    klass = priority_class("c", value, None if minimum is None else str(minimum), "-1")
    protection = protection_of(pod("v", value, "c"), klass, NOW)
    assert protection.protected is not none
