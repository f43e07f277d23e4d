"""`ptol explain` in plain words and JSON (the pure part)."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.explain import LISTED_IN_TEXT, explain_class, explain_pod, explain_preemptor, render
from tests.builders import pod, priority_class

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


def test_a_pod_of_a_class_nobody_annotated_is_told_it_has_no_toleration_and_no_invented_minimum() -> None:
    facts = explain_pod(pod("v", 9000, "high", NOW - timedelta(seconds=5)), priority_class("high", 9000), None, NOW)
    assert render(facts) == (
        "pod default/v (PriorityClass high, priority 9000): not protected: PriorityClass high has no preemption "
        "toleration; any higher priority with preemptionPolicy PreemptLowerPriority may preempt it now."
    )
    assert "9001" not in render(facts) and "9001" not in json.dumps(facts)
    assert (facts["toleration"], facts["protection"], "tolerationSeconds" in facts) == (False, "None", False)


def test_a_class_nobody_annotated_has_no_invented_minimum_in_its_facts() -> None:
    facts = explain_class(priority_class("high", 9000), None)
    assert facts == {
        "kind": "PriorityClass",
        "name": "high",
        "value": 9000,
        "policy": None,
        "toleration": False,
        "valid": True,
        "protection": "None",
    }


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
    (  # upstream reads minimum 8001 and 0 s for it, but nobody set a toleration: none is shown
        priority_class("c", 8000),
        "PriorityClass c (value 8000): no preemption toleration (neither of its annotations); any higher priority "
        "with preemptionPolicy PreemptLowerPriority may preempt its pods.",
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


def on_node(victim: dict, **status: str) -> dict:
    victim["spec"]["nodeName"] = "node-1"
    victim["status"].update({"phase": "Running", **status})
    return victim


CLASSES_BY_NAME = {
    klass["metadata"]["name"]: klass
    for klass in [
        priority_class("keep", 8000, "10000", "-1"),
        priority_class("guaranteed", 8000, "10000", "600"),
        priority_class("low", 8000),
        priority_class("top", 9500, "10000", "-1"),
        priority_class("high", 9000),
        priority_class("critical", 10000),
    ]
}


def cluster_pods() -> list[dict]:
    deleting = on_node(pod("deleting", 8000, "keep", NOW - timedelta(hours=1)))
    deleting["metadata"]["deletionTimestamp"] = "2026-11-22T11:59:00Z"
    return [
        on_node(pod("kept", 8000, "keep", NOW - timedelta(hours=1))),
        on_node(pod("guaranteed", 8000, "guaranteed", NOW - timedelta(seconds=100))),
        on_node(pod("expired", 8000, "guaranteed", NOW - timedelta(seconds=700))),
        on_node(pod("plain", 8000, "low", NOW - timedelta(hours=1))),
        on_node(pod("above-it", 9500, "top", NOW - timedelta(hours=1))),
        pod("not-on-a-node", 8000, "keep"),
        on_node(pod("finished", 8000, "keep", NOW - timedelta(hours=1)), phase="Succeeded"),
        deleting,
        on_node(pod("class-gone", 8000, "gone", NOW - timedelta(hours=1))),
    ]


def test_a_pending_preemptor_is_told_which_pods_tolerate_it_and_until_when() -> None:
    preemptor = pod("high-1", 9000, "high")
    facts = {
        **explain_pod(preemptor, CLASSES_BY_NAME["high"], None, NOW),
        **explain_preemptor(preemptor, cluster_pods(), CLASSES_BY_NAME, NOW),
    }
    assert facts["toleratedBy"] == [
        {
            "name": "default/guaranteed",
            "priorityClassName": "guaranteed",
            "priority": 8000,
            "protection": "Until",
            "until": "2026-11-22T12:08:20Z",
            "secondsLeft": 500,
        },
        {"name": "default/kept", "priorityClassName": "keep", "priority": 8000, "protection": "Forever"},
    ]
    assert render(facts).splitlines()[1:] == [
        "It is pending; 2 pods of lower priority tolerate preemption by it, so the scheduler may not preempt them "
        "for it:",
        "  default/guaranteed (PriorityClass guaranteed, priority 8000): until 2026-11-22T12:08:20Z (500 s left)",
        "  default/kept (PriorityClass keep, priority 8000): forever",
    ]


@pytest.mark.parametrize(
    ("preemptor", "said"),
    [
        pytest.param(
            pod("critical-1", 10000, "critical"),
            "It is pending; no pod of lower priority tolerates preemption by it.",
            id="a preemptor at the minimum: nobody tolerates it",
        ),
        pytest.param(
            pod("high-2", 9000, "high", preemption_policy="Never"),
            "It is pending, with preemptionPolicy Never: it preempts no pod.",
            id="a preemptor that never preempts",
        ),
    ],
)
def test_a_pending_preemptor_nobody_tolerates(preemptor: dict, said: str) -> None:
    facts = {
        **explain_pod(preemptor, CLASSES_BY_NAME[preemptor["spec"]["priorityClassName"]], None, NOW),
        **explain_preemptor(preemptor, cluster_pods(), CLASSES_BY_NAME, NOW),
    }
    assert render(facts).splitlines()[1:] == [said]


def test_a_long_list_is_cut_in_text_and_whole_in_json() -> None:
    victims = [on_node(pod(f"v{index:02}", 8000, "keep", NOW)) for index in range(LISTED_IN_TEXT + 3)]
    preemptor = pod("high-1", 9000, "high")
    facts = {
        **explain_pod(preemptor, CLASSES_BY_NAME["high"], None, NOW),
        **explain_preemptor(preemptor, victims, CLASSES_BY_NAME, NOW),
    }
    assert len(facts["toleratedBy"]) == LISTED_IN_TEXT + 3
    lines = render(facts).splitlines()
    assert len(lines) == 2 + LISTED_IN_TEXT + 1
    assert lines[-1] == "  ... and 3 more (-o json lists them all)"


def test_a_member_of_a_pod_group_is_explained_as_its_group() -> None:
    """A pod of a plain class (priority 100), scheduled long ago, in an `all` group of a 10-minute class whose
    last member was scheduled 100 s ago: the group's class, priority and time."""
    from preemption_toleration.core.explain import Member
    from preemption_toleration.core.pods import PodJson
    from preemption_toleration.records.pod_group import MemberRecord, pod_group_record

    group = pod_group_record(
        {
            "metadata": {"name": "g", "namespace": "default", "uid": "u"},
            "spec": {"priority": 8000, "priorityClassName": "c", "disruptionMode": {"all": {}}},
        }
    )
    member_pod = pod("v", 100, "plain", NOW - timedelta(hours=1))
    judged = MemberRecord(PodJson(member_pod), group, NOW - timedelta(seconds=100))
    facts = explain_pod(
        member_pod, priority_class("c", 8000, "10000", "600"), None, NOW, Member("default/g", "all", judged)
    )
    assert (facts["podGroup"], facts["disruptionMode"], facts["priorityClassName"]) == ("default/g", "all", "c")
    assert render(facts) == (
        "pod default/v of PodGroup default/g (PriorityClass c, priority 8000): refuses priorities 8001 to 9999 until "
        "2026-11-22T12:08:20Z (500 s left), then every higher priority may; priorities >= 10000 may preempt it now."
    )


def group_members(mode: str, ages: list[float]) -> tuple[object, list]:
    """PodGroup default/g of class c (8000, 10 minutes), `mode`; members scheduled `ages` seconds ago, judged."""
    from preemption_toleration.core.explain import Member
    from preemption_toleration.core.groups import group_scheduled_since
    from preemption_toleration.core.pods import PodJson
    from preemption_toleration.records.pod_group import MemberRecord, pod_group_record

    group = pod_group_record(
        {
            "metadata": {"name": "g", "namespace": "default", "uid": "u"},
            "spec": {"priority": 8000, "priorityClassName": "c", "disruptionMode": {mode: {}}},
        }
    )
    pods = [pod(f"m-{index}", 100, "plain", NOW - timedelta(seconds=age)) for index, age in enumerate(ages)]
    since = group_scheduled_since(PodJson(body) for body in pods)

    def judged(body: dict) -> Member:
        return Member("default/g", mode, MemberRecord(PodJson(body), group, since))

    return judged({"metadata": {"namespace": "default"}}), [(body, judged(body)) for body in pods]


GROUPS = [
    (
        "all: one protection, from when its last member was scheduled",
        "all",
        [3600, 100],
        "PodGroup default/g (PriorityClass c, priority 8000, disruptionMode all, 2 members): refuses priorities "
        "8001 to 9999 until 2026-11-22T12:08:20Z (500 s left, from when its last member was scheduled), then every "
        "higher priority may; priorities >= 10000 may preempt it now. The group is preempted whole or not at all.",
    ),
    (
        "all, every member scheduled long ago: not protected",
        "all",
        [3600, 700],
        "PodGroup default/g (PriorityClass c, priority 8000, disruptionMode all, 2 members): not protected (the "
        "guaranteed running time of 600s has passed); every priority > 8000 may preempt it now. The group is "
        "preempted whole or not at all.",
    ),
    (
        "single: each member on its own, at the group's priority",
        "single",
        [3600, 100],
        "PodGroup default/g (PriorityClass c, priority 8000, disruptionMode single, 2 members): each member is judged "
        "on its own, at the group's priority:\n"
        "  pod default/m-0: not protected (the guaranteed running time of 600s has passed); every priority > 8000 "
        "may preempt it now.\n"
        "  pod default/m-1: refuses priorities 8001 to 9999 until 2026-11-22T12:08:20Z (500 s left), then every "
        "higher priority may; priorities >= 10000 may preempt it now.",
    ),
]


@pytest.mark.parametrize(("rule", "mode", "ages", "text"), GROUPS, ids=[g[0] for g in GROUPS])
def test_a_pod_group_is_explained_as_the_contract_judges_its_members(rule, mode, ages, text) -> None:
    from preemption_toleration.core.explain import explain_group

    judged, members = group_members(mode, ages)
    facts = explain_group("default/g", mode, members, priority_class("c", 8000, "10000", "600"), None, NOW, judged)
    assert render(facts) == text, rule
    assert facts["kind"] == "PodGroup" and facts["members"] == len(ages)
