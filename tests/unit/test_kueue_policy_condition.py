"""The `PriorityBoost` condition of a policy, from the Workloads whose wanted boost is not written: table-driven
cases named by the rule they check."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.kueue.policy_condition import CONDITION, Cause, Unwritten, conditions_to_write, governing
from preemption_toleration.records.policy import PolicyView, policy_view
from tests import builders

NOW = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)
BEFORE = "2026-11-30T07:00:00Z"
PC, WPC = ClassKind.PRIORITY_CLASS, ClassKind.WORKLOAD_PRIORITY_CLASS
READY = {"type": "Ready", "status": "True", "reason": "Applied", "message": "applied", "lastTransitionTime": BEFORE}


def policy(name: str, classes: list[str], kind: ClassKind = PC, conditions: list[dict[str, Any]] | None = None):
    spec = {"priorityClassSelector": {"matchLabels": {"tier": name}}, "minimumPreemptablePriority": 10000}
    if kind is WPC:
        spec["priorityClassKind"] = kind.value
    raw = builders.policy(name, spec, generation=2, resourceVersion="7")
    raw["status"] = {
        "conditions": [READY, *(conditions or [])],
        "priorityClasses": [{"name": one} for one in classes],
    }
    return policy_view(raw)


def gate_off(workload: str, klass: str = "low", kind: ClassKind = PC) -> Unwritten:
    return Unwritten(workload, kind, klass, Cause.GATE_OFF)


def held(workload: str, klass: str = "low", kind: ClassKind = PC) -> Unwritten:
    return Unwritten(workload, kind, klass, Cause.HELD_BY_ANOTHER_WRITER)


def false(reason: str) -> dict[str, Any]:
    return {"type": CONDITION, "status": "False", "reason": reason, "message": "m", "lastTransitionTime": BEFORE}


def ours(policies: dict[str, list[dict[str, Any]]], name: str) -> dict[str, Any]:
    [condition] = [c for c in policies[name] if c["type"] == CONDITION]
    return condition


def test_nothing_is_written_on_a_policy_whose_boosts_all_stand_and_which_never_had_one_not_written() -> None:
    assert conditions_to_write([], [policy("p", ["low"])], NOW) == {}
    assert conditions_to_write([gate_off("ns/a", "other")], [policy("p", ["low"])], NOW) == {}


CASES = [
    # rule, unwritten, expected status, reason, words of the message
    (
        "the gate off: False, with how many and one to explain",
        [gate_off("ns/b"), gate_off("ns/a")],
        "False",
        "PriorityBoostGateOff",
        ["2 Workloads", "feature gate is off", "ptol explain workload ns/a"],
    ),
    (
        "an annotation another writer holds: False, saying so",
        [held("ns/a")],
        "False",
        "AnnotationHeldByAnotherWriter",
        ["1 Workload of", "another writer holds"],
    ),
    (
        "both: the gate is named, the cause of them all",
        [held("ns/a"), gate_off("ns/z")],
        "False",
        "PriorityBoostGateOff",
        ["2 Workloads", "Workload ns/z"],
    ),
]


@pytest.mark.parametrize(("rule", "unwritten", "status", "reason", "words"), CASES, ids=[c[0] for c in CASES])
def test_the_condition_says_why_kueue_may_preempt_below_the_minimum(
    rule: str, unwritten: list[Unwritten], status: str, reason: str, words: list[str]
) -> None:
    written = conditions_to_write(unwritten, [policy("p", ["low"])], NOW)
    condition = ours(written, "p")
    assert (condition["status"], condition["reason"]) == (status, reason)
    assert all(word in condition["message"] for word in words), condition["message"]
    assert condition["lastTransitionTime"] == "2026-11-30T08:00:00Z" and condition["observedGeneration"] == 2
    assert written["p"][0] == READY, "the operator's Ready is written back as it is"


def test_once_every_boost_is_written_again_the_condition_turns_true() -> None:
    written = conditions_to_write([], [policy("p", ["low"], conditions=[false("PriorityBoostGateOff")])], NOW)
    condition = ours(written, "p")
    assert (condition["status"], condition["reason"]) == ("True", "BoostsWritten")
    assert condition["lastTransitionTime"] == "2026-11-30T08:00:00Z"


def test_an_unchanged_condition_is_not_written_again_and_its_transition_time_stays() -> None:
    first = ours(conditions_to_write([gate_off("ns/a")], [policy("p", ["low"])], NOW), "p")
    later = NOW + timedelta(minutes=5)
    assert conditions_to_write([gate_off("ns/a")], [policy("p", ["low"], conditions=[first])], later) == {}
    more = conditions_to_write([gate_off("ns/a"), gate_off("ns/b")], [policy("p", ["low"], conditions=[first])], later)
    assert ours(more, "p")["lastTransitionTime"] == first["lastTransitionTime"]
    assert "2 Workloads" in ours(more, "p")["message"]


def test_each_kind_is_governed_apart() -> None:
    """A WorkloadPriorityClass named like a PriorityClass belongs to the policy of its own kind."""
    policies = [policy("pc", ["low"]), policy("wpc", ["low"], WPC)]
    written = conditions_to_write([gate_off("ns/a", "low", WPC)], policies, NOW)
    assert list(written) == ["wpc"]


def test_governing_reads_the_classes_the_operator_applied_each_policy_to() -> None:
    invalid: PolicyView = policy_view({"metadata": {"name": "bad"}, "spec": {"minimumPreemptablePriority": "x"}})
    found = governing([policy("a", ["low", "mid"]), policy("w", ["low"], WPC), invalid])
    assert found == {(PC, "low"): "a", (PC, "mid"): "a", (WPC, "low"): "w"}
