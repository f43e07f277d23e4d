"""Admission decisions (architecture §4), as pure functions of a request and a cache snapshot."""

import base64
import json
from typing import Any

import pytest

from preemption_toleration.admission import decisions
from preemption_toleration.admission.decisions import AdmissionConfig, snapshot_of
from preemption_toleration.api.admission import (
    MAX_WARNING_LENGTH,
    AdmissionRequest,
    AdmissionResponse,
    AdmissionReview,
    allowed,
    answer_of,
    denied,
    review_response,
    split_text,
)
from preemption_toleration.core.annotations import LEGACY_PREFIX, PREFIX
from preemption_toleration.governance.conflicts import between_documents, conflicts
from preemption_toleration.governance.planner import plan
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import class_view
from preemption_toleration.validation.documents import Document, ManifestCheck
from tests.builders import priority_class
from tests.unit.admission_payloads import PTP_KIND, PTP_RESOURCE, review

MIN, TOL = PREFIX + "minimum-preemptable-priority", PREFIX + "toleration-seconds"
OPERATOR = "system:serviceaccount:preemption-toleration:operator"
CONFIG = AdmissionConfig(operator_identities=(OPERATOR,))


def policy(name, spec, created="2026-11-01T00:00:00Z"):
    return {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": name, "creationTimestamp": created, "generation": 1},
        "spec": spec,
    }


GOVERNED = snapshot_of(
    {
        "forever": policy(
            "forever",
            {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1},
        )
    },
    {"low-non-preempted": priority_class("low-non-preempted", 8000, "10000", "-1")},
)
EMPTY = snapshot_of({}, {})


def request(payload):
    return AdmissionReview.model_validate(payload).request


# Each decision as the API server reads it: its verdict made the AdmissionResponse of the request.


def validate_priority_class(
    request: AdmissionRequest, snapshot: ClusterView, config: AdmissionConfig
) -> AdmissionResponse:
    return answer_of(request.uid, decisions.validate_priority_class(request, snapshot, config))


def mutate_priority_class(request: AdmissionRequest, snapshot: ClusterView) -> AdmissionResponse:
    return answer_of(request.uid, decisions.mutate_priority_class(request, snapshot))


def validate_policy(request: AdmissionRequest, snapshot: ClusterView) -> AdmissionResponse:
    return answer_of(request.uid, decisions.validate_policy(request, snapshot))


def test_invalid_value_is_denied_with_422_naming_class_key_value_and_fix() -> None:
    decision = validate_priority_class(request(review(priority_class("low", 8000, "10k"))), EMPTY, CONFIG)
    assert not decision.allowed and decision.status.code == 422
    message = decision.status.message
    assert 'PriorityClass "low"' in message and f'{MIN}="10k"' in message and "Fix:" in message
    assert decision.uid == "705ab4f5-6393-11e8-b7cc-42010a800002"


def test_legacy_prefix_is_allowed_with_a_warning() -> None:
    obj = priority_class("low", 8000, **{LEGACY_PREFIX + "toleration-seconds": "600"})
    decision = validate_priority_class(request(review(obj)), EMPTY, CONFIG)
    assert decision.allowed and len(decision.warnings) == 1 and "legacy prefix" in decision.warnings[0]


def test_misspelt_key_is_denied_with_the_nearest_key() -> None:
    obj = priority_class("low", 8000, **{PREFIX + "toleration-second": "600"})
    decision = validate_priority_class(request(review(obj)), EMPTY, CONFIG)
    assert not decision.allowed and f"did you mean {TOL}?" in decision.status.message


def test_update_does_not_block_on_an_error_the_class_already_had() -> None:
    old = priority_class("low", 8000, "10k")
    new = {**old, "metadata": {**old["metadata"], "labels": {"team": "a"}}}
    decision = validate_priority_class(request(review(new, old=old, operation="UPDATE")), EMPTY, CONFIG)
    assert decision.allowed and "not a base-10 integer" in decision.warnings[0]


MANAGED = [
    # (rule, user, new annotations, allowed)
    ("a hand change of a managed value is forbidden", "alice", {MIN: "9000", TOL: "-1"}, False),
    ("removing a managed key is forbidden", "alice", {MIN: "10000"}, False),
    ("the operator may change it", OPERATOR, {MIN: "9000", TOL: "-1"}, True),
    ("an unrelated change is allowed", "alice", {MIN: "10000", TOL: "-1", "team": "a"}, True),
]


@pytest.mark.parametrize(("rule", "user", "annotations", "allowed"), MANAGED, ids=[c[0] for c in MANAGED])
def test_managed_annotations(rule, user, annotations, allowed) -> None:
    old = priority_class("low-non-preempted", 8000, "10000", "-1")
    new = {**old, "metadata": {"name": "low-non-preempted", "annotations": annotations}}
    decision = validate_priority_class(request(review(new, old=old, operation="UPDATE", user=user)), GOVERNED, CONFIG)
    assert decision.allowed is allowed
    if not allowed:
        assert decision.status.code == 403
        assert 'PreemptionTolerationPolicy "forever"' in decision.status.message
        assert "kubectl edit ptp forever" in decision.status.message


def test_a_label_change_that_makes_a_class_contested_is_allowed_with_a_warning() -> None:
    snapshot = snapshot_of(
        {
            "by-name": policy("by-name", {"priorityClassName": "low", "minimumPreemptablePriority": 10000}),
            "gold": policy(
                "gold",
                {"priorityClassSelector": {"matchLabels": {"tier": "gold"}}, "minimumPreemptablePriority": 9500},
                created="2026-11-02T00:00:00Z",
            ),
        },
        {},
    )
    old = priority_class("low", 8000, "10000")
    new = {**old, "metadata": {**old["metadata"], "labels": {"tier": "gold"}}}
    decision = validate_priority_class(
        request(review(new, old=old, operation="UPDATE", user="alice")), snapshot, CONFIG
    )
    assert decision.allowed
    assert decision.warnings == [
        'PriorityClass "low" is claimed by 2 policies: "by-name" (the oldest) governs it, "gold" leaves it alone '
        "(Conflict). Fix: make one policy claim it."
    ]
    unlabelled = validate_priority_class(
        request(review(old, old=old, operation="UPDATE", user="alice")), snapshot, CONFIG
    )
    assert unlabelled.allowed and unlabelled.warnings in (None, [])
    # a later write of the class that was already contested is not told again (e.g. each GitOps apply)
    described = {**new, "description": "edited"}
    again = validate_priority_class(
        request(review(described, old=new, operation="UPDATE", user="alice")), snapshot, CONFIG
    )
    assert again.allowed and again.warnings in (None, [])


@pytest.mark.parametrize(
    ("rule", "broken"),
    [
        (
            "metadata not an object",
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": "zz", "value": 8000},
        ),
        (
            "labels a list",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "low", "labels": ["a"]},
                "value": 8000,
            },
        ),
        (
            "value a string",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "low"},
                "value": "10k",
            },
        ),
        (
            "managedFields of strings",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "low", "managedFields": ["x"]},
                "value": 8000,
            },
        ),
    ],
)
def test_a_malformed_class_gets_an_answer_not_a_crash(rule: str, broken: dict) -> None:
    """Broken before and after, its errors are only warnings, and the governance checks still run."""
    for decide in (
        lambda r: validate_priority_class(r, GOVERNED, CONFIG),
        lambda r: mutate_priority_class(r, GOVERNED),
    ):
        created = decide(request(review(broken)))
        updated = decide(request(review(broken, old=broken, operation="UPDATE", user="alice")))
        assert created.uid and updated.uid, rule


def decoded_patch(decision):
    return json.loads(base64.b64decode(decision.patch))


def test_mutation_adds_the_policy_annotations_on_create() -> None:
    snapshot = snapshot_of(
        {
            "forever": policy(
                "forever",
                {
                    "priorityClassName": "low-non-preempted",
                    "minimumPreemptablePriority": 10000,
                    "tolerationSeconds": -1,
                },
            )
        },
        {},
    )
    decision = mutate_priority_class(request(review(priority_class("low-non-preempted", 8000))), snapshot)
    assert decision.allowed and decision.patch_type == "JSONPatch"
    assert decoded_patch(decision) == [  # the class has no annotations: one operation adds the policy's
        {
            "op": "add",
            "path": "/metadata/annotations",
            "value": {
                "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority": "10000",
                "preemption-toleration.scheduling.x-k8s.io/toleration-seconds": "-1",
            },
        }
    ]


def test_mutation_replaces_differing_values_and_says_so() -> None:
    obj = priority_class("low-non-preempted", 8000, "9000")
    decision = mutate_priority_class(request(review(obj)), GOVERNED)
    ops = decoded_patch(decision)
    assert [op["value"] for op in ops] == ["10000", "-1"]
    assert 'by PreemptionTolerationPolicy "forever" (was "9000")' in decision.warnings[0]


def test_no_mutation_for_ungoverned_class_or_update() -> None:
    assert mutate_priority_class(request(review(priority_class("other", 1))), GOVERNED).patch is None
    obj = priority_class("low-non-preempted", 8000)
    update = review(obj, old=obj, operation="UPDATE")
    assert mutate_priority_class(request(update), GOVERNED).patch is None


def policy_review(obj, operation="CREATE"):
    return request(review(obj, resource=PTP_RESOURCE, kind=PTP_KIND, operation=operation))


POLICY_CASES = [
    (
        "both name and selector",
        {
            "priorityClassName": "a",
            "priorityClassSelector": {"matchLabels": {"x": "y"}},
            "minimumPreemptablePriority": 1,
        },
        422,
        "sets both",
    ),
    (
        "toleration out of range",
        {"priorityClassName": "a", "minimumPreemptablePriority": 1, "tolerationSeconds": 9223372037},
        422,
        "above 9223372036",
    ),
    (
        "unknown field",
        {"priorityClassName": "a", "minimumPreemptablePriority": 1, "tolerationSecond": 1},
        422,
        "did you mean spec.tolerationSeconds?",
    ),
    (
        "class governed by another policy",
        {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 1},
        409,
        'PriorityClass "low-non-preempted" is already governed by PreemptionTolerationPolicy "forever"',
    ),
]


@pytest.mark.parametrize(("rule", "spec", "code", "words"), POLICY_CASES, ids=[c[0] for c in POLICY_CASES])
def test_policy_denials(rule, spec, code, words) -> None:
    decision = validate_policy(policy_review(policy("new", spec)), GOVERNED)
    assert not decision.allowed and decision.status.code == code and words in decision.status.message


@pytest.mark.parametrize(
    ("rule", "kind", "allowed"),
    [
        ("a second policy of one PriorityClass is refused", None, False),
        (
            "a policy of the WorkloadPriorityClass of that name claims no PriorityClass: allowed",
            "WorkloadPriorityClass",
            True,
        ),
    ],
)
def test_a_policy_is_judged_against_the_classes_of_its_kind(rule, kind, allowed) -> None:
    spec = {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 1}
    if kind is not None:
        spec["priorityClassKind"] = kind
    assert validate_policy(policy_review(policy("new", spec)), GOVERNED).allowed is allowed, rule


def test_a_policy_of_an_unknown_kind_of_class_is_refused_with_the_kinds_it_may_name() -> None:
    spec = {"priorityClassName": "a", "minimumPreemptablePriority": 1, "priorityClassKind": "ResourceFlavor"}
    decision = validate_policy(policy_review(policy("new", spec)), GOVERNED)
    assert not decision.allowed and decision.status.code == 422
    assert "PriorityClass" in decision.status.message and "WorkloadPriorityClass" in decision.status.message


def test_policy_update_of_the_governing_policy_itself_is_allowed() -> None:
    spec = {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000, "tolerationSeconds": 600}
    assert validate_policy(policy_review(policy("forever", spec), "UPDATE"), GOVERNED).allowed


def test_selector_conflict_is_found_through_existing_classes() -> None:
    snapshot = snapshot_of(
        {"forever": policy("forever", {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 1})},
        {
            "low-non-preempted": {
                **priority_class("low-non-preempted", 8000),
                "metadata": {"name": "low-non-preempted", "labels": {"tier": "batch"}},
            }
        },
    )
    spec = {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 2}
    decision = validate_policy(policy_review(policy("by-label", spec)), snapshot)
    assert decision.status.code == 409


def test_policy_warnings_are_returned() -> None:
    decision = validate_policy(policy_review(policy("p", {"priorityClassName": "x", "tolerationSeconds": 5})), EMPTY)
    assert decision.allowed and "no effect" in decision.warnings[0]


def test_policy_updates_that_leave_the_spec_alone_pass_even_in_conflict() -> None:
    """kopf's finalizer removal and annotation patches must never be refused (or a policy is stuck)."""
    spec = {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 1}
    old = policy("late", spec)
    new = {**old, "metadata": {**old["metadata"], "annotations": {"x": "y"}}}
    assert validate_policy(
        request(review(new, old=old, operation="UPDATE", resource=PTP_RESOURCE, kind=PTP_KIND)), GOVERNED
    ).allowed
    deleting = {
        **old,
        "metadata": {**old["metadata"], "deletionTimestamp": "2026-11-22T00:00:00Z"},
        "spec": {**spec, "minimumPreemptablePriority": 2},
    }
    assert validate_policy(
        request(review(deleting, old=old, operation="UPDATE", resource=PTP_RESOURCE, kind=PTP_KIND)), GOVERNED
    ).allowed


def test_policy_update_that_keeps_an_existing_conflict_is_warned_not_refused() -> None:
    old = policy("late", {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 1})
    new = policy("late", {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 2})
    decision = validate_policy(
        request(review(new, old=old, operation="UPDATE", resource=PTP_RESOURCE, kind=PTP_KIND)), GOVERNED
    )
    assert decision.allowed and "already governed" in decision.warnings[-1]


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        ("short text stays whole", 'PriorityClass "low": fine.'),
        ("a long warning is split between words", " ".join(f"word{i}" for i in range(150))),
        ("one very long word is cut inside it", "x" * 700),
        ("exactly the limit stays whole", "y" * 256),
        ("spaces around the text are dropped first", "   " + "z " * 200 + "   "),
        ("a word ends exactly at the cut", "a" * 253 + " " + "b" * 100),
        ("characters beyond ASCII count as one", "é" * 300),
    ],
)
def test_long_warnings_are_split_not_cut(rule: str, text: str) -> None:
    text = text.strip()
    warnings = answer_of("uid", allowed([text])).warnings
    assert all(len(w) <= MAX_WARNING_LENGTH for w in warnings), rule
    if len(text) <= MAX_WARNING_LENGTH:
        assert warnings == [text], rule
        return
    assert warnings[0].endswith(" …") and all(w.startswith("… ") for w in warnings[1:]), rule
    parts = [w.removeprefix("… ").removesuffix(" …") for w in warnings]
    if " " in text:  # nothing lost or reordered, the fix at the end included
        assert " ".join(parts).split() == text.split(), rule
    else:
        assert "".join(parts) == text, rule
    assert warnings[-1].endswith(text[-10:]), rule


def test_a_limit_without_room_for_text_is_refused() -> None:
    with pytest.raises(ValueError):
        split_text("some words here", 5)


def test_a_conflict_names_the_policy_that_governs_the_class_the_oldest_not_the_first_by_name() -> None:
    spec = {"priorityClassName": "low-non-preempted", "minimumPreemptablePriority": 10000}
    contested = snapshot_of(
        {
            "a-newer": policy("a-newer", spec, created="2026-11-05T00:00:00Z"),
            "z-older": policy("z-older", spec, created="2026-11-01T00:00:00Z"),
        },
        {"low-non-preempted": priority_class("low-non-preempted", 8000)},
    )
    decision = validate_policy(policy_review(policy("third", spec, created="2026-11-09T00:00:00Z")), contested)
    assert decision.status is not None and decision.status.code == 409
    assert 'is already governed by PreemptionTolerationPolicy "z-older"' in decision.status.message


def test_ptol_validate_and_admission_give_one_conflict_message() -> None:
    """The same pair of policies, offline (`ptol validate`) and through the policy webhook: one rule, one
    message (inventory/ownership.py, `conflicts_of`)."""
    spec = {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 10000}
    older = policy("older", {"priorityClassName": "batch", "minimumPreemptablePriority": 1})
    newer = policy("newer", spec, created="2026-11-05T00:00:00Z")
    klass = {**priority_class("batch", 8000), "metadata": {"name": "batch", "labels": {"tier": "batch"}}}
    [offline] = conflicts([Document("policies.yaml", i, body) for i, body in enumerate([klass, older, newer], 1)])
    decision = validate_policy(policy_review(newer), snapshot_of({"older": older}, {"batch": klass}))
    assert offline.index == 3 and offline.finding.rule == "conflict"
    assert decision.status is not None and decision.status.code == 409
    expected = (
        'PreemptionTolerationPolicy "newer": PriorityClass "batch" is already governed by '
        'PreemptionTolerationPolicy "older" (the oldest that claims it). Fix: govern each class with one '
        'policy only: change "older" instead, or delete it first.'
    )
    assert decision.status.message == offline.finding.message == expected


CLASSES = {
    "batch": {**priority_class("batch", 8000), "metadata": {"name": "batch", "labels": {"tier": "batch"}}},
    "batch-high": {
        **priority_class("batch-high", 9000),
        "metadata": {"name": "batch-high", "labels": {"tier": "batch"}},
    },
}
NO_EFFECT = (
    'PreemptionTolerationPolicy "p": spec.minimumPreemptablePriority 100 has no effect on PriorityClass "batch" '
    "(value 8000): it holds back only priorities below 100, none of which can preempt its pods. Fix: set it "
    "above 8001."
)
# (rule, spec, the warnings the policy webhook gives)
NO_EFFECT_CASES = [
    (
        "a minimum below the class's value holds back nothing",
        {"priorityClassName": "batch", "minimumPreemptablePriority": 100},
        [NO_EFFECT],
    ),
    (
        "a minimum of the class's value + 1 holds back nothing: that is the lowest priority that preempts",
        {"priorityClassName": "batch", "minimumPreemptablePriority": 8001},
        ['spec.minimumPreemptablePriority 8001 has no effect on PriorityClass "batch" (value 8000)'],
    ),
    (
        "a minimum of value + 2 holds back priority value + 1",
        {"priorityClassName": "batch", "minimumPreemptablePriority": 8002},
        [],
    ),
    (
        "a selector's classes are each judged, and only those without effect named",
        {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 8500},
        ['8500 has no effect on PriorityClass "batch-high" (value 9000): it holds back only priorities below 8500'],
    ),
    (
        "several classes are named together, and the fix is above the highest",
        {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 8000},
        [
            'has no effect on PriorityClass "batch" (value 8000), "batch-high" (value 9000): it holds back only '
            "priorities below 8000, none of which can preempt their pods.",
            "Fix: set it above 9001.",
        ],
    ),
    ("a class not created yet is not judged", {"priorityClassName": "later", "minimumPreemptablePriority": 100}, []),
    (
        "no minimum: the policy's own rule warns, not this one",
        {"priorityClassName": "batch", "tolerationSeconds": 60},
        ["spec.tolerationSeconds 60 has no effect without spec.minimumPreemptablePriority"],
    ),
]


@pytest.mark.parametrize(("rule", "spec", "words"), NO_EFFECT_CASES, ids=[c[0] for c in NO_EFFECT_CASES])
def test_a_policy_that_holds_back_no_preemptor_is_allowed_with_a_warning(rule, spec, words) -> None:
    decision = validate_policy(policy_review(policy("p", spec)), snapshot_of({}, CLASSES))
    warnings = decision.warnings or []
    assert decision.allowed
    assert len(warnings) == (1 if words else 0), warnings
    assert all(word in warnings[0] for word in words), warnings
    if words == [NO_EFFECT]:
        assert decision.warnings == [NO_EFFECT]


def offline(*bodies):
    """What `ptol validate` finds between these documents of one file, policies.yaml."""
    check = ManifestCheck()
    list(check.check_objects(Document("policies.yaml", line, body) for line, body in enumerate(bodies, 1)))
    return between_documents(check)


def test_ptol_validate_admission_and_the_status_give_one_no_effect_message() -> None:
    """One rule (core `holds_back_no_preemptor`), one message: offline, at admission, in the policy's status."""
    spec = {"priorityClassName": "batch", "minimumPreemptablePriority": 100}
    [found_offline] = [
        found
        for found in offline(CLASSES["batch"], policy("p", spec))
        if found.finding.rule == "minimum-without-effect"
    ]
    decision = validate_policy(policy_review(policy("p", spec)), snapshot_of({}, CLASSES))
    outcome = plan([policy_view(policy("p", spec))], [class_view(CLASSES["batch"])]).outcomes["p"]
    assert found_offline.finding.message == NO_EFFECT.replace("(value 8000)", "(value 8000, policies.yaml:1)")
    assert decision.warnings == [NO_EFFECT]
    assert outcome.reason.value == "AppliedNoEffect" and outcome.ready
    assert (
        outcome.message
        == "Applied to PriorityClass batch: minimum-preemptable-priority=100. " + NO_EFFECT.split('"p": ', 1)[1]
    )


PATCH = "W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6IjEifV0="  # [{"op":"add","path":"/a","value":"1"}]
WIRE = [
    # (rule, verdict, what the API server reads)
    ("allowed: uid and allowed alone", allowed(), {"uid": "u", "allowed": True}),
    ("warnings as given", allowed(["w"]), {"uid": "u", "allowed": True, "warnings": ["w"]}),
    (
        "a patch in base64, with its type",
        allowed(patch=[{"op": "add", "path": "/a", "value": "1"}]),
        {"uid": "u", "allowed": True, "patchType": "JSONPatch", "patch": PATCH},
    ),
    (
        "a refusal with its code, message and reason",
        denied(429, "wait", "TooManyRequests"),
        {"uid": "u", "allowed": False, "status": {"code": 429, "message": "wait", "reason": "TooManyRequests"}},
    ),
    (
        "a refusal without a reason has no reason field",
        denied(403, "no"),
        {"uid": "u", "allowed": False, "status": {"code": 403, "message": "no"}},
    ),
]


@pytest.mark.parametrize(("rule", "verdict", "wire"), WIRE, ids=[case[0] for case in WIRE])
def test_a_response_is_written_in_the_api_servers_field_names(rule: str, verdict: Any, wire: dict[str, Any]) -> None:
    """No field for what is unset: the API server refuses a response with an unknown field. The allowed answer's
    fast path writes what its AdmissionResponse would."""
    assert answer_of("u", verdict).to_wire() == wire, rule
    assert review_response("admission.k8s.io/v1", "u", verdict) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": wire,
    }, rule
