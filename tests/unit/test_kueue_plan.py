"""What the boost adapter does to one Workload (docs/contract.md, "Kueue"): one row per rule. The annotation
is written only where no other writer holds it, stands only while the Workload holds quota, and is removed only
where it is ours."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from preemption_toleration.core.annotations import toleration_of
from preemption_toleration.core.protection import ProtectionKind
from preemption_toleration.kueue.nudge import waiting_on
from preemption_toleration.kueue.plan import FIELD_MANAGER, Action, other_owners, plan_boost
from preemption_toleration.records.workload import ClassRef, WorkloadRecord

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
MIN, TOL = (
    "preemption-toleration.scheduling.x-k8s.io/minimum-preemptable-priority",
    "preemption-toleration.scheduling.x-k8s.io/toleration-seconds",
)
FOREVER = toleration_of("batch", 8000, {MIN: "10000", TOL: "-1"})
WINDOW = toleration_of("batch", 8000, {MIN: "10000", TOL: "600"})
PLAIN = toleration_of("batch", 8000, {})
ADMITTED = WorkloadRecord(
    namespace="team",
    name="job-train",
    uid="w-1",
    priority=8000,
    class_ref=ClassRef("scheduling.k8s.io", "PriorityClass", "batch"),
    boost=None,
    job_uid="j-1",
    admitted=True,
    evicted=False,
    reserved=True,
    of_batch_job=True,
)
OURS = (FIELD_MANAGER,)


def with_boost(record: WorkloadRecord, value: str | None, owners: tuple[str, ...] = OURS, **changes) -> WorkloadRecord:
    return replace(record, boost=value, boost_owners=owners if value is not None else (), **changes)


PENDING = replace(ADMITTED, admitted=False, reserved=False)
EVICTED = replace(ADMITTED, evicted=True)
FINISHED = replace(ADMITTED, finished=True)
AGO = NOW - timedelta(seconds=60)


@pytest.mark.parametrize(
    ("rule", "workload", "toleration", "action", "value"),
    [
        ("protected, no boost yet: ours applied at minimum - 1", ADMITTED, FOREVER, Action.APPLY, "1999"),
        ("protected and ours already right: nothing written", with_boost(ADMITTED, "1999"), FOREVER, Action.KEEP, None),
        (
            "protected, ours stale (a policy changed): applied again",
            with_boost(ADMITTED, "999"),
            FOREVER,
            Action.APPLY,
            "1999",
        ),
        (
            "protected, another writer holds it: not written",
            with_boost(ADMITTED, "5", ("booster",)),
            FOREVER,
            Action.KEEP,
            None,
        ),
        ("held by no manager known: another's", with_boost(ADMITTED, "5", ()), FOREVER, Action.KEEP, None),
        (
            "held by us and another alike: another's",
            with_boost(ADMITTED, "1999", (*OURS, "x")),
            FOREVER,
            Action.KEEP,
            None,
        ),
        ("no longer protected: ours removed", with_boost(ADMITTED, "1999"), PLAIN, Action.REMOVE, None),
        ("not protected, another's: left alone", with_boost(ADMITTED, "7", ("booster",)), PLAIN, Action.KEEP, None),
        ("pending: no boost (it would move the Workload up the queue)", PENDING, FOREVER, Action.KEEP, None),
        ("pending with ours: removed", with_boost(PENDING, "1999"), FOREVER, Action.REMOVE, None),
        ("pending with a nudge of ours left: removed", with_boost(PENDING, "-1"), FOREVER, Action.REMOVE, None),
        ("evicted with ours: removed", with_boost(EVICTED, "1999"), FOREVER, Action.REMOVE, None),
        ("evicted with our 0: removed (quota still held)", with_boost(EVICTED, "0"), FOREVER, Action.REMOVE, None),
        ("finished with ours: removed", with_boost(FINISHED, "1999"), FOREVER, Action.REMOVE, None),
        ("no class: nothing", replace(ADMITTED, class_ref=None), FOREVER, Action.KEEP, None),
        ("class not known: nothing written", ADMITTED, None, Action.KEEP, None),
        (
            "class gone: ours kept, as upstream protects a pod of no class",
            with_boost(ADMITTED, "1999"),
            None,
            Action.KEEP,
            None,
        ),
    ],
)
def test_plan(rule: str, workload: WorkloadRecord, toleration, action: Action, value: str | None) -> None:
    plan = plan_boost(workload, toleration, AGO, NOW)
    assert (plan.action, plan.value) == (action, value), rule


@pytest.mark.parametrize(
    ("rule", "toleration", "scheduled", "protection"),
    [
        ("for ever", FOREVER, AGO, ProtectionKind.FOREVER),
        ("within its window", WINDOW, AGO, ProtectionKind.UNTIL),
        ("no pod scheduled yet: until one is", WINDOW, None, ProtectionKind.NOT_SCHEDULED),
        ("no toleration: none", PLAIN, AGO, None),
    ],
)
def test_the_plan_says_which_protection_it_boosts(rule, toleration, scheduled, protection) -> None:
    found = plan_boost(ADMITTED, toleration, scheduled, NOW).protection
    assert (found.kind if found is not None else None) is protection, rule
    assert found is None or found.refuse_below == 10000, rule


def test_a_window_is_planned_again_at_its_end_and_then_removed() -> None:
    plan = plan_boost(ADMITTED, WINDOW, AGO, NOW)
    assert (plan.action, plan.value, plan.until) == (Action.APPLY, "1999", AGO + timedelta(seconds=600))
    later = plan_boost(with_boost(ADMITTED, "1999"), WINDOW, AGO, plan.until)
    assert later.action is Action.REMOVE


@pytest.mark.parametrize(
    ("rule", "workload", "toleration", "problem"),
    [
        ("another writer: said who", with_boost(ADMITTED, "5", ("booster",)), FOREVER, "held by booster"),
        ("class not known: said", ADMITTED, None, "cannot be read"),
        ("not a Job's: said", replace(ADMITTED, of_batch_job=False), FOREVER, "not a batch/v1 Job's"),
        (
            "a class of a kind no policy governs: said",
            replace(ADMITTED, class_ref=ClassRef("example.com", "Tier", "batch")),
            FOREVER,
            "Tier batch, of a kind no policy governs",
        ),
    ],
)
def test_a_boost_not_written_says_why(rule: str, workload: WorkloadRecord, toleration, problem: str) -> None:
    plan = plan_boost(workload, toleration, AGO, NOW)
    assert plan.action is Action.KEEP and plan.problem is not None and problem in plan.problem, rule


def test_other_owners_names_them() -> None:
    assert other_owners(with_boost(ADMITTED, "5", ("a", FIELD_MANAGER, "b"))) == ("a", "b")
    assert other_owners(with_boost(ADMITTED, "5")) == ()
    assert other_owners(ADMITTED) == ()


def pending(name: str, priority: int, created: str, **changes) -> WorkloadRecord:
    return replace(PENDING, name=name, uid=name, priority=priority, created=created, **changes)


def test_the_workloads_a_boost_kept_out_are_nudged_highest_then_oldest() -> None:
    candidates = [
        pending("below", 8000, "t1"),  # not above the base: never preempted the victim
        pending("younger", 9000, "t3"),
        pending("older", 9000, "t2"),
        pending("highest", 9999, "t4"),
        pending("above-the-boost", 10000, "t0"),  # above the boosted priority: the boost did not stop it
        pending("boosted", 9000, "t0", boost="5", boost_owners=("x",)),  # another's boost: not ours to touch
        replace(ADMITTED, name="admitted", priority=9000),
        pending("finished", 9000, "t0", finished=True),
    ]
    assert [w.name for w in waiting_on(candidates, 8000, 9999)] == ["highest", "older", "younger"]
    assert [w.name for w in waiting_on(candidates, 8000, 9999, most=2)] == ["highest", "older"]


def test_a_workload_priority_class_protects_as_a_priority_class_does() -> None:
    """Its toleration is read from the WorkloadPriorityClass's annotations, as a PriorityClass's."""
    of_workloads = replace(ADMITTED, class_ref=ClassRef("kueue.x-k8s.io", "WorkloadPriorityClass", "batch"))
    plan = plan_boost(of_workloads, FOREVER, AGO, NOW)
    assert (plan.action, plan.value, plan.problem) == (Action.APPLY, "1999", None)
