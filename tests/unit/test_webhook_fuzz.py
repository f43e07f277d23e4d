"""Property: no request body, however malformed, makes the webhook server fail. Each mutated request is
answered 200 (a decision), 400 (with the reason) or 503 (not ready), and none reaches the last-resort net
for errors no rule foresaw. A bounded budget here; `python -m tests.unit.fuzz_webhooks` runs longer."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from preemption_toleration.api.bodies import BadRequest
from preemption_toleration.api.paths import GUARD_PATH
from preemption_toleration.guard.request import GuardRequest, read_guard_request
from tests.unit.guard_requests import fields, read_whole
from tests.unit.webhook_fuzzing import DELETE, INTERESTING, answer, encode, mutate, seeds, server, unexpected_errors

SEEDS = seeds()
APP = server()
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(
    scalars | st.sampled_from(INTERESTING),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
edit = st.tuples(
    st.floats(0, 1, exclude_max=True), json_values | st.just(DELETE) | st.tuples(st.text(max_size=12), json_values)
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(seed=st.sampled_from(range(len(SEEDS))), edits=st.lists(edit, min_size=1, max_size=3))
def test_a_mutated_request_is_answered_with_a_decision_or_a_reason(seed: int, edits: list[Any]) -> None:
    path, payload = SEEDS[seed]
    status = answer(APP, path, encode(mutate(payload, edits)))
    assert status in (200, 400, 503)
    assert unexpected_errors(APP) == 0


GUARD_SEEDS = [index for index, (path, _) in enumerate(SEEDS) if path == GUARD_PATH]


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(seed=st.sampled_from(GUARD_SEEDS), edits=st.lists(edit, min_size=0, max_size=3))
def test_the_guard_reads_what_the_review_read_whole_says(seed: int, edits: list[Any]) -> None:
    """The guard's one-pass reader leaves out the fields it does not read: it reads the record the whole
    AdmissionReview model and the check of the pods' fields give, and refuses what they refuse, in their
    words."""
    body = encode(mutate(SEEDS[seed][1], edits))
    assert reading(read_guard_request, body) == reading(read_whole, body)


def reading(read: Callable[[bytes], GuardRequest], body: bytes) -> dict[str, Any] | str:
    """The record's fields, or the refusal's words."""
    try:
        return fields(read(body))
    except BadRequest as refused:
        return str(refused)


@pytest.mark.parametrize("path", sorted({path for path, _ in SEEDS}))
@pytest.mark.parametrize(
    ("rule", "body"),
    [
        ("an integer of 5,000 digits", b'{"apiVersion": ' + b"9" * 5000 + b"}"),
        ("lists nested 1,000 deep", b'{"request": ' + b"[" * 1000 + b"]" * 1000 + b"}"),
        ("objects nested 1,000 deep", b'{"a":' * 1000 + b"1" + b"}" * 1000),
        ("not UTF-8", b'{"request": "\xff\xfe"}'),
        ("empty", b""),
    ],
)
def test_bodies_no_parser_reads_are_a_400(path: str, rule: str, body: bytes) -> None:
    assert answer(APP, path, body) == 400, rule
    assert unexpected_errors(APP) == 0


SCHEDULER_DELETE = next(
    payload
    for path, payload in SEEDS
    if path == GUARD_PATH
    and payload["request"]["userInfo"]["username"] == "system:kube-scheduler"
    and payload["request"]["operation"] == "DELETE"
    and payload["request"].get("oldObject")
)


@pytest.mark.parametrize(
    ("rule", "edit", "message"),
    [
        (
            "a priority that is text",
            (("oldObject", "spec", "priority"), "10k"),
            "request.oldObject.spec.priority: should be an integer",
        ),
        (
            "status conditions that are a map",
            (("oldObject", "status", "conditions"), {"type": "PodScheduled"}),
            "request.oldObject.status.conditions: should be a list",
        ),
        (
            "a scheduled time that is no time",
            (
                ("oldObject", "status", "conditions"),
                [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "yesterday"}],
            ),
            "request.oldObject.status.conditions.0.lastTransitionTime: "
            "Value error, Invalid isoformat string: 'yesterday'",
        ),
        (
            "metadata that is text",
            (("oldObject", "metadata"), "victim"),
            "request.oldObject.metadata: should be an object",
        ),
    ],
)
def test_a_victim_the_guard_cannot_read_is_a_400_naming_the_field(
    rule: str, edit: tuple[tuple[str, ...], Any], message: str
) -> None:
    payload = copy.deepcopy(SCHEDULER_DELETE)
    place, value = edit
    parent = payload["request"]
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = value
    [endpoint] = [e for e in APP.routes if e.path == GUARD_PATH]
    status, body = APP.answer(endpoint, encode(payload))
    assert (status, body) == (400, {"error": message}), rule


@pytest.mark.parametrize(
    ("rule", "edit"),
    [
        ("containers that are text", (("oldObject", "spec", "containers"), "trainer")),
        ("tolerations that are a map", (("oldObject", "spec", "tolerations"), {"key": "gpu"})),
        ("an affinity that is a list", (("oldObject", "spec", "affinity"), [])),
        ("a node selector with a number", (("oldObject", "spec", "nodeSelector"), {"pool": 7})),
    ],
)
def test_the_victims_fields_the_guard_does_not_read_do_not_stop_its_judgement(
    rule: str, edit: tuple[tuple[str, ...], Any]
) -> None:
    """A victim's scheduling constraints are the preemptor's business, not the victim's: the guard judges it
    as it would with them well-formed (the same answer). A preemptor's are checked where they are read."""
    [endpoint] = [e for e in APP.routes if e.path == GUARD_PATH]
    payload = copy.deepcopy(SCHEDULER_DELETE)
    expected = APP.answer(endpoint, encode(payload))
    place, value = edit
    parent = payload["request"]
    for step in place[:-1]:
        parent = parent[step]
    parent[place[-1]] = value
    status, body = APP.answer(endpoint, encode(payload))
    assert status == 200, (rule, body)
    assert body["response"] == expected[1]["response"], rule
