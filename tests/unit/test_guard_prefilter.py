"""The guard's fast path: the rule (`is_preemption`, on the record the guard's endpoint reads) and the
matchConditions' CEL give the table's answer on every recorded request, a request the guard cannot read is
a 400, and what the rule lets skip judgement, `judge` allows even when the victim is protected."""

from __future__ import annotations

from itertools import product
from typing import Any

import cel
import pytest

from preemption_toleration.api.bodies import BadRequest
from preemption_toleration.core.annotations import PREEMPTOR, PREEMPTOR_PRIORITY
from preemption_toleration.core.pods import has_mark
from preemption_toleration.guard.decisions import judge
from preemption_toleration.guard.prefilter import is_preemption
from preemption_toleration.guard.verdicts import DEFAULT_PREEMPTOR_IDENTITIES, GuardConfig
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.manifests.webhook_configurations import _cel_marked, guard_match_conditions
from preemption_toleration.records.pod import Shared, slim_pod
from tests.unit.guard_requests import ROWS, SCHEDULER, USER, Row, answered, delete, evict, read_row
from tests.unit.test_guard import NOW, bound, pending, snapshot

WELL_FORMED = [row for row in ROWS if row.well_formed]
SKIPPED = [row for row in ROWS if row.preemption is False]  # what the fast path allows without judgement


def ids(rows: list[Row]) -> list[str]:
    return [row.rule for row in rows]


def cel_says(
    request: dict[str, Any], identities: tuple[str, ...] = DEFAULT_PREEMPTOR_IDENTITIES, every_eviction: bool = False
) -> bool:
    """Whether the API server would call the guard: every matchCondition true. A CEL error raises."""
    variables = {"request": request, "object": request.get("object"), "oldObject": request.get("oldObject")}
    conditions = guard_match_conditions(identities, every_eviction)
    results = [cel.compile(c["expression"]).execute(variables) for c in conditions]
    assert all(isinstance(result, bool) for result in results)
    return all(results)


def test_the_table_has_both_answers_and_unique_rules() -> None:
    assert len(set(ids(ROWS))) == len(ROWS)
    assert {row.preemption for row in WELL_FORMED} == {True, False}
    assert {row.preemption for row in ROWS if not row.well_formed} == {True, False, None}
    assert all(row.preemption for row in ROWS if row.refused)


def may_be_preemption(
    request: Any, identities: tuple[str, ...] = DEFAULT_PREEMPTOR_IDENTITIES, every_eviction: bool = False
) -> bool | None:
    """The rule's answer on the record the guard's endpoint reads of `request`; None when it reads none."""
    try:
        record = read_row(request)
    except BadRequest:
        return None
    return is_preemption(record, identities, every_eviction)


@pytest.mark.parametrize("row", ROWS, ids=ids(ROWS))
def test_the_rule_on_what_the_guard_reads(row: Row) -> None:
    assert may_be_preemption(row.request) is row.preemption, row.rule


@pytest.mark.parametrize("row", WELL_FORMED, ids=ids(WELL_FORMED))
def test_match_conditions(row: Row) -> None:
    assert cel_says(row.request) is row.preemption, row.rule


def test_match_conditions_read_only_the_variables_kubernetes_gives() -> None:
    for condition in guard_match_conditions(DEFAULT_PREEMPTOR_IDENTITIES):
        used = set(cel.compile(condition["expression"]).variables()) - {"c"}  # c: exists()'s own variable
        assert used == {"request", "object", "oldObject"}


ODD_IDENTITIES = ("system:serviceaccount:kube-system:my-scheduler", 'o\'brien \\ "quoted"', "tab\there", "ünï")


@pytest.mark.parametrize("identity", ODD_IDENTITIES)
def test_identities_are_quoted_exactly(identity: str) -> None:
    assert cel_says(delete(identity), ODD_IDENTITIES) and may_be_preemption(delete(identity), ODD_IDENTITIES)
    for near in (identity + " ", identity[:-1], SCHEDULER):
        assert not cel_says(delete(near), ODD_IDENTITIES), near
        assert may_be_preemption(delete(near), ODD_IDENTITIES) is False, near


def test_without_identities_only_annotated_evictions_reach_the_guard() -> None:
    for request, expected in ((delete(SCHEDULER), False), (evict({PREEMPTOR_PRIORITY: "9000"}), True)):
        assert cel_says(request, ()) is expected
        assert may_be_preemption(request, ()) is expected


# ------------------------------------------------------------------------- the fast path never skips a refusal


def protected_state() -> ClusterView:
    """The victim, protected forever, and a pending preemptor of priority 9000 that could run on its node."""
    return snapshot(bound("victim", 8000, "low-non-preempted"), pending("high-1", 9000))


@pytest.mark.parametrize("row", SKIPPED, ids=ids(SKIPPED))
def test_what_the_fast_path_skips_judge_allows(row: Row) -> None:
    verdict = judge(read_row(row.request), protected_state(), GuardConfig(), NOW)
    assert verdict.allowed and verdict.refusal is None, row.rule


REFUSED = [row for row in ROWS if row.refused]


@pytest.mark.parametrize("row", REFUSED, ids=ids(REFUSED))
def test_the_same_state_refuses_the_preemptions(row: Row) -> None:
    """So that the test above would fail if the fast path skipped a preemption."""
    verdict = judge(read_row(row.request), protected_state(), GuardConfig(), NOW)
    assert not verdict.allowed and verdict.refusal is not None, row.rule


def test_the_answer_follows_the_identities() -> None:
    """The table's answers are for the default identities: a user's delete is a preemption when the user is one."""
    assert may_be_preemption(delete(USER), (USER,)) and cel_says(delete(USER), (USER,))


# ------------------------------------------------------------------------- --eviction-preemptor-priority


def is_eviction(row: Row) -> bool:
    request = row.request
    return (
        isinstance(request, dict) and request.get("operation") == "CREATE" and request.get("subResource") == "eviction"
    )


@pytest.mark.parametrize("row", WELL_FORMED, ids=ids(WELL_FORMED))
def test_with_the_option_every_eviction_reaches_the_guard_and_nothing_else_changes(row: Row) -> None:
    """The guard judges every Eviction when --eviction-preemptor-priority is set: the prefilter and the
    matchConditions (`ptol webhook-config --eviction-preemptor-priority`, `ptol run`) let each one through."""
    expected = True if is_eviction(row) else row.preemption
    assert may_be_preemption(row.request, DEFAULT_PREEMPTOR_IDENTITIES, every_eviction=True) is expected, row.rule
    assert cel_says(row.request, every_eviction=True) is expected, row.rule


def test_with_the_option_an_unannotated_eviction_of_the_protected_victim_is_refused() -> None:
    """So that an Eviction the option makes the guard receive is one it may refuse."""
    [row] = [row for row in WELL_FORMED if row.rule == "eviction without annotations is a drain"]
    config = GuardConfig(eviction_preemptor_priority=9000)
    verdict = judge(read_row(row.request), protected_state(), config, NOW)
    assert config.judges_every_eviction and not verdict.allowed and answered(verdict).status.code == 403


POD = {"group": "", "version": "v1", "kind": "Pod"}
PODS = {"group": "", "version": "v1", "resource": "pods"}


def _grid() -> list[dict[str, Any]]:
    """Requests over every value each fact of the rule reads, in the shapes API servers send (an empty
    subResource absent): operation, subresource, user, the object's annotations, and the marks of object
    and oldObject."""
    marked = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    other = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
    annotations = [None, {PREEMPTOR: "team/high"}, {PREEMPTOR_PRIORITY: "9000"}, {"unrelated": "x"}]
    conditions = [None, [marked], [{"type": "Ready", "status": "True"}, other]]
    requests = []
    for operation, sub_resource, user in product(
        ("CREATE", "DELETE", "UPDATE", "CONNECT"), (None, "eviction", "status", "binding"), (SCHEDULER, USER)
    ):
        for notes, new, old in product(annotations, conditions, conditions):
            obj: dict[str, Any] = {"metadata": {"name": "victim", "namespace": "team"}}
            if notes is not None:
                obj["metadata"]["annotations"] = notes
            if new is not None:
                obj["status"] = {"conditions": new}
            old_object = {"metadata": {"name": "victim"}, "status": {"conditions": old}} if old else None
            request: dict[str, Any] = {
                "uid": "u",
                "kind": POD,
                "resource": PODS,
                "name": "victim",
                "namespace": "team",
                "operation": operation,
                "userInfo": {"username": user},
                "object": obj,
                "oldObject": old_object,
            }
            if sub_resource is not None:
                request["subResource"] = sub_resource
            requests.append(request)
    return requests


@pytest.mark.parametrize("every_eviction", [False, True])
@pytest.mark.parametrize(
    "identities", [DEFAULT_PREEMPTOR_IDENTITIES, ODD_IDENTITIES, ()], ids=["default", "odd", "none"]
)
def test_the_match_conditions_are_the_rule_row_by_row(identities: tuple[str, ...], every_eviction: bool) -> None:
    """The CEL of the matchConditions and `is_preemption` (which the prefilter and `judge` both ask) give
    the same answer on every combination of the facts the rule reads."""
    conditions = [cel.compile(c["expression"]) for c in guard_match_conditions(identities, every_eviction)]
    answers = set()
    for request in _grid():
        variables = {"request": request, "object": request["object"], "oldObject": request["oldObject"]}
        said = all(condition.execute(variables) for condition in conditions)
        assert said is may_be_preemption(request, identities, every_eviction), request
        answers.add(said)
    assert answers == {True, False}


def test_judge_asks_the_rule() -> None:
    """What the rule says is no preemption, `judge` allows unjudged, whatever the victim tolerates."""
    victim = bound("victim", 8000, "low-non-preempted")
    state = snapshot(victim, pending("high-1", 9000))
    for request in _grid():
        if may_be_preemption(request):
            continue
        verdict = judge(read_row(request), state, GuardConfig(), NOW)
        assert verdict.allowed and verdict.source is None and not answered(verdict).warnings, request


MARK = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
MALFORMED = {"conditions not a list", "a condition not an object"}  # the API server sends no such pod
MARK_CASES = [
    ("no status", {}, False),
    ("no conditions", {"status": {}}, False),
    ("conditions not a list", {"status": {"conditions": {"type": "DisruptionTarget"}}}, False),
    ("a condition not an object", {"status": {"conditions": ["DisruptionTarget"]}}, False),
    ("the mark", {"status": {"conditions": [MARK]}}, True),
    ("the mark after other conditions", {"status": {"conditions": [{"type": "Ready"}, MARK]}}, True),
    ("DisruptionTarget by another reason", {"status": {"conditions": [{**MARK, "reason": "EvictionByX"}]}}, False),
    ("DisruptionTarget not True", {"status": {"conditions": [{**MARK, "status": "False"}]}}, False),
    ("a second DisruptionTarget is the mark", {"status": {"conditions": [{**MARK, "status": "False"}, MARK]}}, True),
]


@pytest.mark.parametrize(("rule", "pod", "marked"), MARK_CASES, ids=[case[0] for case in MARK_CASES])
def test_the_preemption_mark_is_read_as_the_match_conditions_read_it(
    rule: str, pod: dict[str, Any], marked: bool
) -> None:
    """One scan for the scheduler's mark (`core.pods.has_mark`) serves the guard's rule and the cached pod's
    `preempted`: it says what the matchConditions' CEL says of the same pod."""
    if rule not in MALFORMED:
        assert cel.compile(_cel_marked("object")).execute({"object": pod}) is marked
    assert has_mark(pod) is marked
    assert (
        slim_pod({"metadata": {"name": "v", "deletionTimestamp": "2026-01-01T00:00:00Z"}, **pod}, Shared()).preempted
        is marked
    )
