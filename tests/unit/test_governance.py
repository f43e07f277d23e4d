"""The operator's planner: who governs which class, what is written, and each policy's status."""

from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.governance.planner import ClassWrite, Reason, apply_body, plan, plan_kinds
from preemption_toleration.governance.status import build_status, status_differs
from preemption_toleration.inventory.ownership import claimants
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import FIELD_MANAGER, ClassView, class_view, owned_annotation_keys
from tests import builders
from tests.builders import rfc3339

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def policy(name, spec, age_rank=0, deleting=False):
    times = {"creationTimestamp": rfc3339(T0 + timedelta(minutes=age_rank))}
    if deleting:
        times["deletionTimestamp"] = "2026-11-02T00:00:00Z"
    return policy_view(builders.policy(name, spec, generation=1, **times))


def klass(name, annotations=None, owned=(), labels=None, value=8000):
    return ClassView(name, value, labels or {}, annotations or {}, frozenset(owned))


FOREVER = {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
WANTED = {MIN: "10000", TOL: "-1"}


def test_policy_applies_its_annotations_to_its_class() -> None:
    result = plan([policy("p", FOREVER)], [klass("low-non-preempted"), klass("low")])
    assert result.writes == (ClassWrite("low-non-preempted", WANTED, "p"),)
    outcome = result.outcomes["p"]
    assert outcome.reason is Reason.APPLIED and outcome.ready
    assert outcome.target == "low-non-preempted"
    assert (
        outcome.message == "Applied to PriorityClass low-non-preempted: minimum-preemptable-priority=10000, "
        "toleration-seconds=-1."
    )


def test_nothing_is_written_when_the_class_already_matches_and_is_ours() -> None:
    result = plan([policy("p", FOREVER)], [klass("low-non-preempted", WANTED, owned=WANTED)])
    assert result.writes == ()
    assert result.outcomes["p"].ready


CASES = [
    # (rule, class annotations, owned keys, spec changes, expected write or None)
    ("a hand-changed value is put back", {MIN: "9000", TOL: "-1"}, {TOL}, {}, WANTED),
    ("a hand-removed key is put back", {MIN: "10000"}, {MIN}, {}, WANTED),
    ("equal values written by someone else are taken over", WANTED, set(), {}, WANTED),
    (
        "removing tolerationSeconds from the policy drops that key",
        WANTED,
        {MIN, TOL},
        {"tolerationSeconds": None},
        {MIN: "10000"},
    ),
    (
        "changing the policy changes the value",
        WANTED,
        {MIN, TOL},
        {"tolerationSeconds": 600},
        {MIN: "10000", TOL: "600"},
    ),
]


@pytest.mark.parametrize(("rule", "annotations", "owned", "changes", "expected"), CASES, ids=[c[0] for c in CASES])
def test_writes(rule, annotations, owned, changes, expected) -> None:
    spec = {**FOREVER, **changes}
    spec = {key: value for key, value in spec.items() if value is not None}
    result = plan([policy("p", spec)], [klass("low-non-preempted", annotations, owned)])
    assert result.writes == (ClassWrite("low-non-preempted", expected, "p"),)


def test_deleting_policy_releases_its_keys() -> None:
    result = plan([policy("p", FOREVER, deleting=True)], [klass("low-non-preempted", WANTED, owned=WANTED)])
    assert result.writes == (ClassWrite("low-non-preempted", {}, None),)
    assert "p" not in result.outcomes


def test_ungoverned_class_with_hand_written_annotations_is_left_alone() -> None:
    assert plan([], [klass("low", WANTED)]).writes == ()


def test_missing_class_is_not_found_and_nothing_is_written() -> None:
    result = plan([policy("p", FOREVER)], [klass("low")])
    assert result.writes == ()
    assert result.outcomes["p"].reason is Reason.NOT_FOUND
    assert "PriorityClass low-non-preempted does not exist" in result.outcomes["p"].message


def test_older_policy_keeps_the_class_newer_gets_conflict() -> None:
    older = policy("older", FOREVER, age_rank=0)
    newer = policy("newer", {**FOREVER, "tolerationSeconds": 600}, age_rank=5)
    result = plan([newer, older], [klass("low-non-preempted")])
    assert result.writes == (ClassWrite("low-non-preempted", WANTED, "older"),)
    assert result.outcomes["older"].ready
    conflict = result.outcomes["newer"]
    assert conflict.reason is Reason.CONFLICT
    assert 'already governed by PreemptionTolerationPolicy "older"' in conflict.message


def test_conflict_is_stable_when_the_class_is_missing() -> None:
    older, newer = policy("older", FOREVER, 0), policy("newer", FOREVER, 5)
    result = plan([newer, older], [])
    assert result.outcomes["older"].reason is Reason.NOT_FOUND
    assert result.outcomes["newer"].reason is Reason.CONFLICT


def test_selector_governs_matching_classes_and_releases_the_others() -> None:
    spec = {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 10000}
    classes = [
        klass("a", labels={"tier": "batch"}),
        klass("b", labels={"tier": "batch"}),
        klass("c", {MIN: "10000"}, owned={MIN}, labels={"tier": "web"}),
    ]
    result = plan([policy("p", spec)], classes)
    assert result.writes == (
        ClassWrite("a", {MIN: "10000"}, "p"),
        ClassWrite("b", {MIN: "10000"}, "p"),
        ClassWrite("c", {}, None),
    )
    assert result.outcomes["p"].target == "selector tier=batch (2)"
    assert [c.name for c in result.outcomes["p"].classes] == ["a", "b"]


def test_selector_conflict_leaves_the_contested_class_and_keeps_the_others() -> None:
    named = policy("named", {"priorityClassName": "b", "minimumPreemptablePriority": 1}, 0)
    selector = policy(
        "selector", {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 2}, 1
    )
    classes = [klass("a", labels={"tier": "batch"}), klass("b", labels={"tier": "batch"})]
    result = plan([named, selector], classes)
    assert result.writes == (ClassWrite("a", {MIN: "2"}, "selector"), ClassWrite("b", {MIN: "1"}, "named"))
    conflict = result.outcomes["selector"]
    assert conflict.reason is Reason.CONFLICT and [c.name for c in conflict.classes] == ["a"]
    assert 'PriorityClass b is already governed by PreemptionTolerationPolicy "named"' in conflict.message
    assert "It still governs 1 other PriorityClass(es)." in conflict.message


def test_a_label_change_does_not_strip_the_selector_policys_other_classes() -> None:
    """A class governed by name gains the selector's label: only that class is contested."""
    named = policy("pn", {"priorityClassName": "named", "minimumPreemptablePriority": 1}, 0)
    selector = policy(
        "ps",
        {
            "priorityClassSelector": {"matchLabels": {"tier": "silver"}},
            "minimumPreemptablePriority": 10000,
            "tolerationSeconds": -1,
        },
        1,
    )
    s1 = klass("s1", {MIN: "10000", TOL: "-1"}, owned={MIN, TOL}, labels={"tier": "silver"})
    relabelled = klass("named", {MIN: "1"}, owned={MIN}, labels={"tier": "silver"})
    assert plan([named, selector], [s1, relabelled]).writes == ()


def test_selector_without_matches_is_not_found() -> None:
    spec = {
        "priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        "minimumPreemptablePriority": 1,
    }
    outcome = plan([policy("p", spec)], [klass("a")]).outcomes["p"]
    assert outcome.reason is Reason.NOT_FOUND and "No PriorityClass matches selector tier" in outcome.message


def test_invalid_policy_is_reported_and_claims_nothing() -> None:
    bad = policy("bad", {"priorityClassName": "low", "priorityClassSelector": {"matchLabels": {"a": "b"}}})
    result = plan([bad], [klass("low", WANTED, owned=WANTED)])
    assert result.outcomes["bad"].reason is Reason.INVALID
    assert "sets both" in result.outcomes["bad"].message
    assert result.writes == (ClassWrite("low", {}, None),)


def test_views_read_kubernetes_json() -> None:
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "value": 8000,
        "metadata": {
            "name": "low",
            "labels": {"tier": "batch"},
            "annotations": {MIN: "10000", "other": "x"},
            "managedFields": [
                {
                    "manager": FIELD_MANAGER,
                    "operation": "Apply",
                    "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{MIN}": {}, "f:other": {}}}},
                },
                {
                    "manager": "kubectl",
                    "operation": "Update",
                    "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{TOL}": {}}}},
                },
            ],
        },
    }
    view = class_view(body)
    assert view == ClassView("low", 8000, {"tier": "batch"}, {MIN: "10000"}, frozenset({MIN}))
    assert owned_annotation_keys(body["metadata"]["managedFields"], "kubectl") == frozenset()


NOW = datetime(2026, 11, 22, tzinfo=UTC)


def test_status_reports_ready_and_what_was_applied() -> None:
    outcome = plan([policy("p", FOREVER)], [klass("low-non-preempted")]).outcomes["p"]
    status = build_status(outcome, 3, None, NOW)
    assert status == {
        "observedGeneration": 3,
        "target": "low-non-preempted",
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Applied",
                "message": outcome.message,
                "observedGeneration": 3,
                "lastTransitionTime": "2026-11-22T00:00:00Z",
            }
        ],
        "priorityClasses": [
            {"name": "low-non-preempted", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
        ],
    }
    # unchanged on the next loop: nothing to write, transition time kept
    again = build_status(outcome, 3, status, NOW + timedelta(hours=1))
    assert again == status and not status_differs(again, status)


def test_status_transition_time_moves_when_ready_flips() -> None:
    applied = plan([policy("p", FOREVER)], [klass("low-non-preempted")]).outcomes["p"]
    missing = plan([policy("p", FOREVER)], []).outcomes["p"]
    before = build_status(applied, 1, None, NOW)
    after = build_status(missing, 1, before, NOW + timedelta(minutes=1))
    assert after["conditions"][0]["status"] == "False"
    assert after["conditions"][0]["reason"] == "PriorityClassNotFound"
    assert after["conditions"][0]["lastTransitionTime"] == "2026-11-22T00:01:00Z"
    assert after["priorityClasses"] == [] and status_differs(after, before)


def test_status_keeps_the_conditions_of_other_writers_as_it_finds_them() -> None:
    """The operator owns Ready; the webhook server's PriorityBoost condition is written again as read, so the
    operator's status patch (which writes the list whole) does not erase it."""
    outcome = plan([policy("p", FOREVER)], [klass("low-non-preempted")]).outcomes["p"]
    boost = {"type": "PriorityBoost", "status": "False", "reason": "PriorityBoostGateOff", "message": "m"}
    current = build_status(outcome, 1, None, NOW)
    current["conditions"].append(boost)
    missing = plan([policy("p", FOREVER)], []).outcomes["p"]
    after = build_status(missing, 1, current, NOW + timedelta(minutes=1))
    assert [c["type"] for c in after["conditions"]] == ["Ready", "PriorityBoost"]
    assert after["conditions"][1] == boost
    assert not status_differs(build_status(outcome, 1, current, NOW), current)


def test_status_drops_the_conditions_of_a_writer_that_is_not_running() -> None:
    """Kueue support turned off: the PriorityBoost condition, which nothing writes any more, is not kept."""
    outcome = plan([policy("p", FOREVER)], [klass("low-non-preempted")]).outcomes["p"]
    current = build_status(outcome, 1, None, NOW)
    current["conditions"].append({"type": "PriorityBoost", "status": "False", "reason": "r", "message": "m"})
    after = build_status(outcome, 1, current, NOW, dropped=("PriorityBoost",))
    assert [c["type"] for c in after["conditions"]] == ["Ready"] and status_differs(after, current)


TIER = {"matchLabels": {"tier": "gold"}}
OWNER_CASES = [
    # rule, policies, class labels, expected owner
    ("a name claims its class", [("p", {"priorityClassName": "c"}, 0, False)], {}, "p"),
    ("a selector claims a matching class", [("s", {"priorityClassSelector": TIER}, 0, False)], {"tier": "gold"}, "s"),
    ("a selector does not claim other labels", [("s", {"priorityClassSelector": TIER}, 0, False)], {"tier": "x"}, None),
    (
        "the oldest claimant wins",
        [("new", {"priorityClassName": "c"}, 5, False), ("old", {"priorityClassSelector": TIER}, 1, False)],
        {"tier": "gold"},
        "old",
    ),
    (
        "equal ages: the first name wins",
        [("b", {"priorityClassName": "c"}, 0, False), ("a", {"priorityClassName": "c"}, 0, False)],
        {},
        "a",
    ),
    (
        "a deleting policy gives the class up",
        [("old", {"priorityClassName": "c"}, 0, True), ("new", {"priorityClassName": "c"}, 1, False)],
        {},
        "new",
    ),
    (
        "an invalid policy claims nothing",
        [
            ("bad", {"priorityClassName": "c", "tolerationSecond": 1}, 0, False),
            ("good", {"priorityClassName": "c"}, 1, False),
        ],
        {},
        "good",
    ),
    ("nobody claims it", [("p", {"priorityClassName": "other"}, 0, False)], {}, None),
]


@pytest.mark.parametrize(("rule", "policies", "labels", "expected"), OWNER_CASES, ids=[c[0] for c in OWNER_CASES])
def test_the_first_claimant_of_one_class_is_the_owner_the_whole_plan_gives(rule, policies, labels, expected) -> None:
    views = [
        policy(name, {**spec, "minimumPreemptablePriority": 10000}, rank, deleting)
        for name, spec, rank, deleting in policies
    ]
    candidate = klass("c", labels=labels)
    found = claimants(views, candidate)
    assert (found[0].name if found else None) == expected, rule
    assert plan(views, [candidate, klass("unrelated")]).owners.get("c") == expected, rule


# (rule, spec, classes, Ready reason, the status message): a minimum holds back preemptors of priority
# value < p < minimum, none when it is at most value + 1 or unset (core `holds_back_no_preemptor`).
EFFECT_CASES = [
    (
        "a minimum below the class's value: applied, without effect",
        {"priorityClassName": "low", "minimumPreemptablePriority": 100},
        [klass("low")],
        Reason.APPLIED_NO_EFFECT,
        "Applied to PriorityClass low: minimum-preemptable-priority=100. spec.minimumPreemptablePriority 100 has no "
        'effect on PriorityClass "low" (value 8000): it holds back only priorities below 100, none of which can '
        "preempt its pods. Fix: set it above 8001.",
    ),
    (
        "a minimum of value + 1, the lowest priority that preempts: without effect",
        {"priorityClassName": "low", "minimumPreemptablePriority": 8001, "tolerationSeconds": -1},
        [klass("low")],
        Reason.APPLIED_NO_EFFECT,
        "Applied to PriorityClass low: minimum-preemptable-priority=8001, toleration-seconds=-1. "
        'spec.minimumPreemptablePriority 8001 has no effect on PriorityClass "low" (value 8000): it holds back '
        "only priorities below 8001, none of which can preempt its pods. Fix: set it above 8001.",
    ),
    (
        "a minimum of value + 2 holds back priority value + 1: applied",
        {"priorityClassName": "low", "minimumPreemptablePriority": 8002},
        [klass("low")],
        Reason.APPLIED,
        "Applied to PriorityClass low: minimum-preemptable-priority=8002.",
    ),
    (
        "no minimum: its default, value + 1, holds back nothing",
        {"priorityClassName": "low", "tolerationSeconds": 600},
        [klass("low")],
        Reason.APPLIED_NO_EFFECT,
        "Applied to PriorityClass low: toleration-seconds=600. spec.minimumPreemptablePriority is unset, so every "
        'higher priority may preempt the pods of PriorityClass "low" (value 8000) at once, as without a '
        "toleration. Fix: set it above 8001.",
    ),
    (
        "a selector: the classes without effect are named, the others protected",
        {"priorityClassSelector": {"matchLabels": {"tier": "t"}}, "minimumPreemptablePriority": 8500},
        [klass("a", labels={"tier": "t"}), klass("b", labels={"tier": "t"}, value=9000)],
        Reason.APPLIED_NO_EFFECT,
        "Applied to 2 PriorityClasses (a, b): minimum-preemptable-priority=8500. spec.minimumPreemptablePriority "
        '8500 has no effect on PriorityClass "b" (value 9000): it holds back only priorities below 8500, none of '
        "which can preempt its pods. Fix: set it above 9001.",
    ),
]


@pytest.mark.parametrize(
    ("rule", "spec", "classes", "reason", "message"), EFFECT_CASES, ids=[c[0] for c in EFFECT_CASES]
)
def test_a_policy_without_effect_is_ready_and_says_so(rule, spec, classes, reason, message) -> None:
    outcome = plan([policy("p", spec)], classes).outcomes["p"]
    assert (outcome.reason, outcome.message) == (reason, message)
    condition = build_status(outcome, 1, None, NOW)["conditions"][0]
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", reason.value, message)


def workload_class(name, annotations=None, owned=(), labels=None, value=8000):
    return ClassView(
        name, value, labels or {}, annotations or {}, frozenset(owned), kind=ClassKind.WORKLOAD_PRIORITY_CLASS
    )


OF_WORKLOADS = {**FOREVER, "priorityClassKind": "WorkloadPriorityClass"}


@pytest.mark.parametrize(
    ("rule", "policies", "classes", "writes", "reasons"),
    [
        (
            "a policy of WorkloadPriorityClasses writes the WorkloadPriorityClass, not the PriorityClass of its name",
            [policy("p", OF_WORKLOADS)],
            {
                ClassKind.PRIORITY_CLASS: [klass("low-non-preempted")],
                ClassKind.WORKLOAD_PRIORITY_CLASS: [workload_class("low-non-preempted")],
            },
            [(ClassKind.WORKLOAD_PRIORITY_CLASS, "low-non-preempted", WANTED, "p")],
            {"p": Reason.APPLIED},
        ),
        (
            "policies of each kind govern a class of the same name apart, neither in conflict",
            [policy("pods", FOREVER), policy("workloads", OF_WORKLOADS, age_rank=1)],
            {
                ClassKind.PRIORITY_CLASS: [klass("low-non-preempted")],
                ClassKind.WORKLOAD_PRIORITY_CLASS: [workload_class("low-non-preempted")],
            },
            [
                (ClassKind.PRIORITY_CLASS, "low-non-preempted", WANTED, "pods"),
                (ClassKind.WORKLOAD_PRIORITY_CLASS, "low-non-preempted", WANTED, "workloads"),
            ],
            {"pods": Reason.APPLIED, "workloads": Reason.APPLIED},
        ),
        (
            "two policies of one WorkloadPriorityClass: the older governs, the newer is in conflict",
            [policy("old", OF_WORKLOADS), policy("new", OF_WORKLOADS, age_rank=1)],
            {ClassKind.WORKLOAD_PRIORITY_CLASS: [workload_class("low-non-preempted")]},
            [(ClassKind.WORKLOAD_PRIORITY_CLASS, "low-non-preempted", WANTED, "old")],
            {"old": Reason.APPLIED, "new": Reason.CONFLICT},
        ),
        (
            "a WorkloadPriorityClass not there: not found, nothing written",
            [policy("p", OF_WORKLOADS)],
            {ClassKind.PRIORITY_CLASS: [], ClassKind.WORKLOAD_PRIORITY_CLASS: []},
            [],
            {"p": Reason.NOT_FOUND},
        ),
        (
            "without Kueue's kind governed, a policy of it is told so and nothing is written",
            [policy("p", OF_WORKLOADS), policy("pods", FOREVER)],
            {ClassKind.PRIORITY_CLASS: [klass("low-non-preempted", WANTED, owned=WANTED)]},
            [],
            {"p": Reason.NOT_SERVED, "pods": Reason.APPLIED},
        ),
        (
            "a policy that stopped governing a WorkloadPriorityClass releases our keys",
            [],
            {ClassKind.WORKLOAD_PRIORITY_CLASS: [workload_class("low-non-preempted", WANTED, owned=WANTED)]},
            [(ClassKind.WORKLOAD_PRIORITY_CLASS, "low-non-preempted", {}, None)],
            {},
        ),
    ],
)
def test_each_kind_of_class_is_planned_apart(rule, policies, classes, writes, reasons) -> None:
    result = plan_kinds(policies, classes)
    assert [(w.kind, w.class_name, dict(w.annotations), w.policy_name) for w in result.writes] == writes, rule
    assert {name: outcome.reason for name, outcome in result.outcomes.items()} == reasons, rule


def test_messages_name_the_kind_of_class() -> None:
    result = plan_kinds(
        [policy("p", OF_WORKLOADS)], {ClassKind.WORKLOAD_PRIORITY_CLASS: [workload_class("low-non-preempted")]}
    )
    outcome = result.outcomes["p"]
    assert outcome.target == "WorkloadPriorityClass low-non-preempted"
    assert outcome.message.startswith("Applied to WorkloadPriorityClass low-non-preempted: ")
    missing = plan_kinds([policy("p", OF_WORKLOADS)], {ClassKind.WORKLOAD_PRIORITY_CLASS: []}).outcomes["p"]
    assert missing.message.startswith("WorkloadPriorityClass low-non-preempted does not exist")
    unserved = plan_kinds([policy("p", OF_WORKLOADS)], {ClassKind.PRIORITY_CLASS: []}).outcomes["p"]
    assert "only with --kueue on" in unserved.message


def test_a_policy_of_workload_priority_classes_claims_no_priority_class() -> None:
    assert claimants([policy("p", OF_WORKLOADS)], klass("low-non-preempted")) == []
    assert [p.name for p in claimants([policy("p", FOREVER)], klass("low-non-preempted"))] == ["p"]


def test_apply_body_names_the_kind() -> None:
    body = apply_body(workload_class("batch"), WANTED)
    assert (body["apiVersion"], body["kind"]) == ("kueue.x-k8s.io/v1beta2", "WorkloadPriorityClass")
    assert class_view({"metadata": {"name": "batch"}, "value": 5}, kind=ClassKind.WORKLOAD_PRIORITY_CLASS).ref.kind == (
        "WorkloadPriorityClass"
    )
