"""The PriorityClass webhook's matchConditions: the API server sends it only writes of classes with our
annotations or labels (before or after), so a cluster whose webhook is down still takes unrelated classes;
and every write they leave out is one the webhook would have allowed without a word."""

from __future__ import annotations

import itertools
from typing import Any

import cel
import pytest

from preemption_toleration.admission.decisions import AdmissionConfig, snapshot_of, validate_priority_class
from preemption_toleration.api.admission import AdmissionReview
from preemption_toleration.core.annotations import LEGACY_PREFIX, PREFIX
from preemption_toleration.manifests.webhook_configurations import priority_class_match_conditions
from tests.unit.admission_payloads import review
from tests.unit.test_admission_decisions import policy

MIN, TOL = PREFIX + "minimum-preemptable-priority", PREFIX + "toleration-seconds"


def pc(name: str = "batch", annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Any:
    metadata: dict[str, Any] = {"name": name}
    if annotations is not None:
        metadata["annotations"] = annotations
    if labels is not None:
        metadata["labels"] = labels
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": metadata, "value": 8000}


def sent(obj: Any, old: Any = None) -> bool:
    """Whether the API server calls the webhook: every matchCondition true (a CEL error raises)."""
    variables = {"object": obj, "oldObject": old, "request": {}}
    results = [cel.compile(c["expression"]).execute(variables) for c in priority_class_match_conditions()]
    assert all(isinstance(result, bool) for result in results)
    return all(results)


CASES = [
    ("a plain class is left out", pc(), None, False),
    ("a plain class with other annotations is left out", pc(annotations={"team": "ml"}), None, False),
    ("empty annotations and labels are left out", pc(annotations={}, labels={}), None, False),
    ("our annotation is sent", pc(annotations={TOL: "600"}), None, True),
    (
        "an unknown key under our prefix is sent (a typo to refuse)",
        pc(annotations={PREFIX + "tolerations": "1"}),
        None,
        True,
    ),
    ("the legacy prefix is sent (a warning)", pc(annotations={LEGACY_PREFIX + "toleration-seconds": "1"}), None, True),
    ("our annotation removed is sent (a managed value)", pc(), pc(annotations={MIN: "10000"}), True),
    ("labels on create are sent (a selector may take the class)", pc(labels={"tier": "batch"}), None, True),
    ("labels unchanged on update are left out", pc(labels={"a": "b"}), pc(labels={"a": "b"}), False),
    ("labels changed are sent", pc(labels={"tier": "batch"}), pc(labels={"tier": "web"}), True),
    ("labels added are sent", pc(labels={"tier": "batch"}), pc(), True),
    ("labels removed are sent", pc(), pc(labels={"tier": "batch"}), True),
    ("a description change of a plain class is left out", pc(), pc(), False),
]


@pytest.mark.parametrize(("rule", "obj", "old", "expected"), CASES, ids=[case[0] for case in CASES])
def test_match_conditions(rule: str, obj: Any, old: Any, expected: bool) -> None:
    assert sent(obj, old) is expected, rule


def test_they_read_only_the_variables_kubernetes_gives() -> None:
    for condition in priority_class_match_conditions():
        assert set(cel.compile(condition["expression"]).variables()) - {"k"} == {"object", "oldObject"}


# Policies that take classes by name and by labels, two of them contesting `tier: batch`.
SNAPSHOT = snapshot_of(
    {
        "by-name": policy("by-name", {"priorityClassName": "batch", "minimumPreemptablePriority": 10000}),
        "by-label": policy(
            "by-label",
            {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 10000},
        ),
        "by-label-too": policy(
            "by-label-too",
            {"priorityClassSelector": {"matchLabels": {"tier": "batch"}}, "minimumPreemptablePriority": 20000},
            created="2026-11-02T00:00:00Z",
        ),
    },
    {},
)
ANNOTATIONS = [None, {}, {"team": "ml"}, {MIN: "10000"}, {MIN: "10k"}, {LEGACY_PREFIX + "toleration-seconds": "1"}]
LABELS = [None, {"tier": "batch"}, {"tier": "web"}]
NAMES = ["batch", "other"]


def every_write() -> list[tuple[Any, Any]]:
    classes = [pc(n, a, lab) for n, a, lab in itertools.product(NAMES, ANNOTATIONS, LABELS)]
    creates = [(obj, None) for obj in classes]
    updates = [
        (new, old)
        for new, old in itertools.product(classes, classes)
        if new["metadata"]["name"] == old["metadata"]["name"]
    ]
    return creates + updates


# Selectors that take classes without labels: a write they leave out may lose a "claimed by two policies"
# warning (documented), never a refusal.
LABEL_LESS = snapshot_of(
    {
        "by-name": policy("by-name", {"priorityClassName": "batch", "minimumPreemptablePriority": 10000}),
        "no-tier": policy(
            "no-tier",
            {
                "priorityClassSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]},
                "minimumPreemptablePriority": 20000,
            },
            created="2026-11-02T00:00:00Z",
        ),
        "not-web": policy(
            "not-web",
            {
                "priorityClassSelector": {
                    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]
                },
                "minimumPreemptablePriority": 30000,
            },
            created="2026-11-03T00:00:00Z",
        ),
    },
    {},
)


def answers_to_left_out_writes(snapshot: Any) -> list[Any]:
    config = AdmissionConfig(operator_identities=("operator",))
    answers = []
    for obj, old in every_write():
        if not sent(obj, old):
            payload = review(obj, old=old, operation="UPDATE" if old else "CREATE")
            answers.append(validate_priority_class(AdmissionReview.model_validate(payload).request, snapshot, config))
    assert len(answers) > 20  # the table does hold writes they leave out
    return answers


def test_what_they_leave_out_the_webhook_would_allow_without_a_word() -> None:
    for answer in answers_to_left_out_writes(SNAPSHOT):
        assert answer.allowed and not answer.warnings, answer


def test_with_selectors_that_take_classes_without_labels_they_leave_out_no_refusal() -> None:
    answers = answers_to_left_out_writes(LABEL_LESS)
    assert all(answer.allowed for answer in answers)
    assert any(answer.warnings for answer in answers)  # the warning the docs say is not given
