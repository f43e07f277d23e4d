"""`ptol explain` in plain words and JSON (the pure part)."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.explain import explain_class, explain_pod, render
from tests.unit.kube_objects import pod, priority_class

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)

PODS = [
    (
        "forever",
        ("10000", "-1"),
        timedelta(minutes=5),
        "policy-a",
        'pod default/v (PriorityClass c, priority 8000) (PreemptionTolerationPolicy "policy-a"): refuses priorities '
        "8001 to 9999 forever; priorities >= 10000 may preempt it now.",
    ),
    (
        "time-limited",
        ("10000", "600"),
        timedelta(seconds=100),
        None,
        "pod default/v (PriorityClass c, priority 8000): refuses priorities 8001 to 9999 until 2026-11-22T12:08:20Z "
        "(500 s left), then every higher priority may; priorities >= 10000 may preempt it now.",
    ),
    (
        "over",
        ("10000", "600"),
        timedelta(seconds=700),
        None,
        "pod default/v (PriorityClass c, priority 8000): not protected (the guaranteed running time of 600s has "
        "passed); every priority > 8000 may preempt it now.",
    ),
    (
        "not scheduled",
        ("10000", "600"),
        None,
        None,
        "pod default/v (PriorityClass c, priority 8000): refuses priorities 8001 to 9999; not scheduled yet, its 600 s "
        "start when it is; priorities >= 10000 may preempt it now.",
    ),
]


@pytest.mark.parametrize(("case", "annotations", "ago", "policy", "text"), PODS, ids=[c[0] for c in PODS])
def test_pod(case, annotations, ago, policy, text) -> None:
    victim = pod("v", 8000, "c", None if ago is None else NOW - ago)
    assert render(explain_pod(victim, priority_class("c", 8000, *annotations), policy, NOW)) == text


def test_pod_json_facts() -> None:
    facts = explain_pod(
        pod("v", 8000, "c", NOW - timedelta(seconds=100)), priority_class("c", 8000, "10000", "600"), None, NOW
    )
    assert facts["refusedPriorities"] == {"from": 8001, "to": 9999}
    assert (facts["protection"], facts["until"], facts["secondsLeft"]) == ("Until", "2026-11-22T12:08:20Z", 500)


CLASSES = [
    (
        priority_class("c", 8000, "10000", "-1"),
        "PriorityClass c (value 8000): its pods refuse preemptors of priority "
        "8001 to 9999 forever; priority 10000 and above may preempt them at once.",
    ),
    (
        priority_class("c", 8000, "10000", "600"),
        "PriorityClass c (value 8000): its pods refuse preemptors of priority "
        "8001 to 9999 for 600 s after each pod is scheduled; priority 10000 and above may preempt them at once.",
    ),
    (
        priority_class("c", 8000),
        "PriorityClass c (value 8000): no toleration; every higher priority may preempt its pods.",
    ),
    (  # upstream's check 7: a pod not yet scheduled is exempt, whatever its toleration-seconds
        priority_class("c", 8000, "10000", "0"),
        "PriorityClass c (value 8000): toleration-seconds 0: its pods refuse preemptors of priority 8001 to 9999 "
        "only until they are scheduled; then every higher priority may preempt them.",
    ),
    (
        priority_class("c", 8000, "8001", "-1"),
        "PriorityClass c (value 8000): no toleration; every higher priority may preempt its pods.",
    ),
    (
        priority_class("c", 8000, "10k"),
        'PriorityClass c (value 8000): the toleration is ignored: PriorityClass "c": '
        'preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority="10k": '
        'strconv.ParseInt: parsing "10k": '
        "not a base-10 integer; every higher priority may preempt its pods.",
    ),
]


@pytest.mark.parametrize(("klass", "text"), CLASSES)
def test_class(klass, text) -> None:
    assert render(explain_class(klass, None)) == text


@pytest.mark.parametrize(
    ("minimum", "seconds"),
    [
        (None, None),
        ("10000", "-1"),
        ("10000", "600"),
        ("10000", "0"),
        ("10000", None),
        ("8001", "-1"),
        ("7000", "-1"),
        ("10000", "-5"),
        ("10k", "-1"),
    ],
)
def test_what_explain_says_of_a_class_agrees_with_the_exemption_check(minimum, seconds) -> None:
    """The class's explanation and upstream's check, for its pods scheduled now and not yet scheduled, and a
    preemptor just above the class (the lowest priority that could preempt them)."""
    from datetime import UTC, datetime

    from preemption_toleration.core.exemption import exempted_from_preemption

    klass = priority_class("c", 8000, minimum, seconds)
    facts = explain_class(klass, None)
    now = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    preemptor = {"spec": {"priority": 8001}}
    unscheduled = {"spec": {"priorityClassName": "c", "priority": 8000}}
    scheduled = {
        **unscheduled,
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-22T12:00:00Z"}]
        },
    }
    said_once_scheduled = facts.get("protection") not in (None, "None")
    said_before_scheduled = said_once_scheduled or bool(facts.get("protectedUntilScheduled"))
    assert said_once_scheduled is exempted_from_preemption(scheduled, preemptor, {"c": klass}, now)
    assert said_before_scheduled is exempted_from_preemption(unscheduled, preemptor, {"c": klass}, now)
