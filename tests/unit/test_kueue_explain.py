"""`ptol explain workload`'s words (`kueue.explain`): one row per case a user asks about, from the boost's own plan."""

from dataclasses import replace
from datetime import timedelta

import pytest

from preemption_toleration.kueue.explain import GATE_NOTE, WAITS, explain_workload, render_workload
from preemption_toleration.kueue.plan import FIELD_MANAGER
from preemption_toleration.records.workload import ClassRef
from tests.unit.test_kueue_plan import ADMITTED, AGO, FOREVER, NOW, PLAIN, WINDOW

HOLDING = replace(ADMITTED, class_ref=ClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", "batch"))
BOOSTED = replace(HOLDING, boost="1999", boost_owners=(FIELD_MANAGER,))


@pytest.mark.parametrize(
    ("rule", "workload", "toleration", "lines"),
    [
        (
            "protected for ever and boosted: said, with the effective priority",
            BOOSTED,
            FOREVER,
            [
                "Workload team/job-train: priority 8000 (from WorkloadPriorityClass batch).",
                f"Its priority-boost annotation is '1999', written by {FIELD_MANAGER}: effective priority 9999 in "
                "Kueue.",
                "Protected from preemptors below 10000 for ever: the boost it needs is 1999 (effective priority 9999).",
            ],
        ),
        (
            "protected within its window, not boosted yet: when it will be",
            HOLDING,
            WINDOW,
            [
                "Workload team/job-train: priority 8000 (from WorkloadPriorityClass batch).",
                "Protected from preemptors below 10000 until 2026-11-29T12:09:00+00:00: the boost it needs is 1999 "
                "(effective priority 9999).",
                WAITS,
            ],
        ),
        (
            "another writer holds the annotation: said who, and that ours is not written",
            replace(HOLDING, boost="5", boost_owners=("kueue-priority-booster",)),
            FOREVER,
            [
                "Workload team/job-train: priority 8000 (from WorkloadPriorityClass batch).",
                "Its priority-boost annotation is '5', written by kueue-priority-booster: effective priority 8005 in "
                "Kueue.",
                "Protected from preemptors below 10000 for ever: the boost it needs is 1999 (effective priority 9999).",
                "Not written: the annotation '5' is held by kueue-priority-booster: a boost of 1999 is not written.",
            ],
        ),
        (
            "no toleration: not protected",
            HOLDING,
            PLAIN,
            [
                "Workload team/job-train: priority 8000 (from WorkloadPriorityClass batch).",
                "Not protected now: Kueue may preempt it for any higher effective priority.",
            ],
        ),
        (
            "pending: no boost stands",
            replace(HOLDING, admitted=False, reserved=False),
            FOREVER,
            [
                "Workload team/job-train: priority 8000 (from WorkloadPriorityClass batch).",
                "It holds no quota (pending, evicted or finished): Kueue does not preempt it; no boost stands.",
            ],
        ),
    ],
)
def test_render_workload(rule, workload, toleration, lines) -> None:
    assert render_workload(explain_workload(workload, toleration, AGO, NOW)) == "\n".join([*lines, GATE_NOTE]), rule


def test_the_facts_are_the_plans() -> None:
    facts = explain_workload(BOOSTED, WINDOW, AGO, NOW)
    assert facts["wantedBoost"] == 1999 and facts["refusedBelow"] == 10000
    assert facts["until"] == (AGO + timedelta(seconds=600)).isoformat()
    assert facts["class"] == {"kind": "WorkloadPriorityClass", "name": "batch"}


def test_what_the_server_said_on_the_workload_is_repeated() -> None:
    told = {"PriorityBoostNotWritten": "Kueue's PriorityBoost feature gate is off", "PreemptionWouldBeRefused": "x"}
    words = render_workload(explain_workload(HOLDING, FOREVER, AGO, NOW, told)).splitlines()
    assert WAITS not in words
    assert (
        "The server said it did not write the boost (PriorityBoostNotWritten): Kueue's PriorityBoost feature gate "
        "is off." in words
    )
    assert "The server reported (PreemptionWouldBeRefused): x." in words
