"""exempted_from_preemption follows upstream's eight checks, in order (architecture §2)."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration import PriorityClassNotFound, exempted_from_preemption
from preemption_toleration.core.annotations import (
    LEGACY_PREFIX,
    PolicyParseError,
    TolerationPolicy,
    class_toleration,
    parse_toleration_policy,
)
from preemption_toleration.core.exemption import class_exemption
from preemption_toleration.core.pods import PodJson
from tests.builders import pod, priority_class

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


# ---------------------------------------------------------------- parsing of the class's policy

PARSE_CASES = [
    # (rule, class value, minimum annotation, toleration annotation, expected policy)
    ("both absent: defaults value+1 and 0", 1000, None, None, TolerationPolicy(1001, 0)),
    ("minimum set, toleration defaults to 0", 1000, "1010", None, TolerationPolicy(1010, 0)),
    ("toleration set, minimum defaults to value+1", 1000, None, "30", TolerationPolicy(1001, 30)),
    ("both set", 8000, "10000", "-1", TolerationPolicy(10000, -1)),
    ("signs and leading zeros are accepted", 8000, "+010000", "-01", TolerationPolicy(10000, -1)),
    ("value+1 wraps in int32 like Go", 2**31 - 1, None, None, TolerationPolicy(-(2**31), 0)),
    ("toleration is int64", 0, "1", "9223372036854775807", TolerationPolicy(1, 2**63 - 1)),
]


@pytest.mark.parametrize(
    ("rule", "value", "minimum", "toleration", "expected"), PARSE_CASES, ids=[c[0] for c in PARSE_CASES]
)
def test_parse_policy(rule, value, minimum, toleration, expected) -> None:
    assert parse_toleration_policy(priority_class("pc", value, minimum, toleration)) == expected


PARSE_ERRORS = [
    # (rule, minimum, toleration)
    ("empty minimum is an error, not absent", "", None),
    ("empty toleration is an error, not absent", "1010", ""),
    ("minimum out of int32", "2147483648", None),
    ("toleration out of int64", "1010", "9223372036854775808"),
    ("minimum with a unit", "10k", "30"),
    ("toleration with a unit", "1010", "30s"),
]


@pytest.mark.parametrize(("rule", "minimum", "toleration"), PARSE_ERRORS, ids=[c[0] for c in PARSE_ERRORS])
def test_parse_errors(rule, minimum, toleration) -> None:
    with pytest.raises(PolicyParseError):
        parse_toleration_policy(priority_class("pc", 1000, minimum, toleration))


def test_a_parsed_policy_is_reused_and_a_bad_one_raises_every_time_with_its_own_class() -> None:
    """Parsed once per distinct class content (the guard reads one per decision): the same values give
    the same object; a value that does not parse raises again, naming each class that carries it."""
    first = parse_toleration_policy(priority_class("pc", 8000, "10000", "600"))
    assert parse_toleration_policy(priority_class("pc", 8000, "10000", "600")) is first
    assert parse_toleration_policy(priority_class("pc", 9000, None, "600")) == TolerationPolicy(9001, 600)
    assert parse_toleration_policy(priority_class("pc", 7000, None, "600")) == TolerationPolicy(7001, 600)
    for name in ("a", "b", "a"):
        with pytest.raises(PolicyParseError, match=f'PriorityClass "{name}"'):
            parse_toleration_policy(priority_class(name, 8000, "10k", None))


def test_legacy_prefix_is_not_read() -> None:
    legacy = {LEGACY_PREFIX + "minimum-preemptable-priority": "10000", LEGACY_PREFIX + "toleration-seconds": "-1"}
    policy = parse_toleration_policy(priority_class("pc", 8000, **legacy))
    assert policy == TolerationPolicy(8001, 0)


# ---------------------------------------------------------------- the eight checks

CLASSES = {
    "tolerant": priority_class("tolerant", 1000, "1010", "-1"),
    "ten-seconds": priority_class("ten-seconds", 1000, "1010", "10"),
    "broken": priority_class("broken", 1000, "a", "-1"),
    "plain": priority_class("plain", 1000),
}

CHECKS = [
    # (check, victim, preemptor, exempt)
    ("1 no priorityClassName: not exempt", pod("v", 1000), pod("p", 1001), False),
    (
        "3 preemptor preemptionPolicy Never: exempt, before parsing",
        pod("v", 1000, "broken", NOW),
        pod("p", 5000, preemption_policy="Never"),
        True,
    ),
    (
        "3 preemptor Never: exempt even from a class without toleration",
        pod("v", 1000, "plain", NOW),
        pod("p", 5000, preemption_policy="Never"),
        True,
    ),
    (
        "4 unparsable annotation: not exempt",
        pod("v", 1000, "broken", NOW),
        pod("p", 1001, preemption_policy="PreemptLowerPriority"),
        False,
    ),
    ("5 preemptor priority equal to the minimum: not exempt", pod("v", 1000, "tolerant", NOW), pod("p", 1010), False),
    ("5 preemptor priority above the minimum: not exempt", pod("v", 1000, "tolerant", NOW), pod("p", 2000), False),
    ("5 preemptor without priority counts as 0", pod("v", -5, "tolerant", NOW), pod("p"), True),
    ("5 default minimum value+1 admits value+1", pod("v", 1000, "plain", NOW), pod("p", 1001), False),
    (
        "6 negative toleration: exempt forever",
        pod("v", 1000, "tolerant", NOW - timedelta(days=3650)),
        pod("p", 1009),
        True,
    ),
    ("7 not scheduled yet: exempt", pod("v", 1000, "ten-seconds"), pod("p", 1009), True),
    (
        "8 inside the toleration window: exempt",
        pod("v", 1000, "ten-seconds", NOW - timedelta(seconds=9)),
        pod("p", 1009),
        True,
    ),
    (
        "8 window ending exactly now: not exempt (strictly after)",
        pod("v", 1000, "ten-seconds", NOW - timedelta(seconds=10)),
        pod("p", 1009),
        False,
    ),
    ("8 window over: not exempt", pod("v", 1000, "ten-seconds", NOW - timedelta(seconds=11)), pod("p", 1009), False),
]


@pytest.mark.parametrize(("check", "victim", "preemptor", "exempt"), CHECKS, ids=[c[0] for c in CHECKS])
def test_checks(check, victim, preemptor, exempt) -> None:
    assert exempted_from_preemption(victim, preemptor, CLASSES, NOW) is exempt


def test_check_2_missing_class_raises_lookup_error() -> None:
    with pytest.raises(PriorityClassNotFound) as raised:
        exempted_from_preemption(pod("v", 1000, "gone", NOW), pod("p", 1001), CLASSES, NOW)
    assert isinstance(raised.value, LookupError)
    assert raised.value.class_name == "gone"


def test_check_2_comes_before_preemption_policy() -> None:
    with pytest.raises(PriorityClassNotFound):
        exempted_from_preemption(pod("v", 1000, "gone"), pod("p", 1001, preemption_policy="Never"), CLASSES, NOW)


@pytest.mark.parametrize(
    ("condition", "exempted"),
    [
        pytest.param(
            {"type": "PodScheduled", "status": "False", "lastTransitionTime": "2020-01-01T00:00:00Z"},
            True,
            id="PodScheduled False counts as not scheduled",
        ),
        pytest.param(
            {"type": "PodScheduled", "status": "True"},
            False,
            id="scheduled without a transition time is Go's zero time",
        ),
        pytest.param(
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-22T13:59:51.5+02:00"},
            True,
            id="fractional and offset times are read",
        ),
    ],
)
def test_when_the_victim_was_scheduled_is_read_from_its_pod_scheduled_condition(
    condition: dict[str, str], exempted: bool
) -> None:
    """The victim's class tolerates 10 s; the preemptor is below its minimum."""
    victim = pod("v", 1000, "ten-seconds")
    victim["status"]["conditions"] = [condition]
    assert exempted_from_preemption(victim, pod("p", 1009), CLASSES, NOW) is exempted


def test_toleration_above_9223372036_wraps_into_no_toleration_like_upstream() -> None:
    classes = {
        "max": priority_class("max", 1000, "1010", "9223372036"),
        "over": priority_class("over", 1000, "1010", "9223372037"),
    }
    assert exempted_from_preemption(pod("v", 1000, "max", NOW), pod("p", 1005), classes, NOW) is True
    assert exempted_from_preemption(pod("v", 1000, "over", NOW), pod("p", 1005), classes, NOW) is False


def test_now_must_be_timezone_aware() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        exempted_from_preemption(pod("v", 1000, "plain"), pod("p", 1001), CLASSES, datetime(2026, 1, 1))


# ---------------------------------------------------------------- upstream's integration scenarios
# scheduler-plugins test/integration/preemption_toleration_test.go, expressed as unit cases:
# class value 1000, minimum 1010; the victim was scheduled `ago` before now.

FOREVER = timedelta(days=365 * 2000)
UPSTREAM = [
    # (scenario, toleration, preemptor priority, preemption policy, ago, can tolerate)
    ("preemptor >= minimum cannot be tolerated", None, 1010, None, timedelta(0), False),
    ("preemptor >= minimum: tolerationSeconds has no effect", "30", 1010, None, timedelta(0), False),
    ("preemptor < minimum, no tolerationSeconds (default 0)", None, 1009, None, timedelta(0), False),
    ("preemptor < minimum, tolerationSeconds -1 tolerates forever", "-1", 1009, None, FOREVER, True),
    ("preemptor < minimum, scheduled within tolerationSeconds", "30", 1005, None, timedelta(0), True),
    ("preemptor < minimum, tolerationSeconds elapsed", "5", 1005, None, timedelta(seconds=10), False),
    (
        "unparsable policy, preemptor PreemptLowerPriority",
        "unparsable",
        1001,
        "PreemptLowerPriority",
        timedelta(0),
        False,
    ),
    ("unparsable policy, preemptor Never", "unparsable", 1001, "Never", FOREVER, True),
]


@pytest.mark.parametrize(
    ("scenario", "toleration", "priority", "policy", "ago", "tolerates"), UPSTREAM, ids=[c[0] for c in UPSTREAM]
)
def test_upstream_integration_scenarios(scenario, toleration, priority, policy, ago, tolerates) -> None:
    if toleration == "unparsable":
        victim_class = priority_class("victims", 1000, "a")
    else:
        victim_class = priority_class("victims", 1000, "1010", toleration)
    victim = pod("victim-candidate", 1000, "victims", NOW - ago)
    preemptor = pod("p", priority, preemption_policy=policy)
    assert exempted_from_preemption(victim, preemptor, {"victims": victim_class}, NOW) is tolerates


# what a search over many pods reads once per class: the verdict of checks 3 to 6, whatever the pod
CLASS_WIDE = {  # check number -> the class-wide verdict (None: it depends on when the pod was scheduled)
    "3": True,
    "4": False,
    "5": None,  # the row's own verdict, below
    "6": True,
    "7": None,
    "8": None,
}


CLASSED = [c for c in CHECKS if not c[0].startswith("1 ")]  # a victim of no class is never a class's


@pytest.mark.parametrize(("check", "victim", "preemptor", "exempt"), CLASSED, ids=[c[0] for c in CLASSED])
def test_a_class_wide_verdict_is_the_check_of_every_pod_of_the_class(check, victim, preemptor, exempt) -> None:
    """`class_exemption` answers for the class only where the eight checks never read the pod, and then as
    they answer; else None, and each pod is judged."""
    toleration = class_toleration(CLASSES[victim["spec"]["priorityClassName"]])
    found = class_exemption(toleration, PodJson(preemptor))
    expected = CLASS_WIDE[check[0]]
    if check.startswith("5"):  # check 5 itself decides (not exempt), or a negative toleration does (exempt)
        expected = exempt
    assert found is expected
    if found is not None:
        for scheduled in (None, NOW - timedelta(days=3650), NOW - timedelta(seconds=1)):
            other = pod("v2", victim["spec"].get("priority"), victim["spec"]["priorityClassName"], scheduled)
            assert exempted_from_preemption(other, preemptor, CLASSES, NOW) is found


def test_no_class_wide_verdict_for_a_class_the_cache_does_not_have() -> None:
    assert class_exemption(None, PodJson(pod("p", 1001))) is None
