"""A Kueue Workload read once into its record: one row per rule, on Workloads shaped as Kueue v0.19 writes
them (kueue.x-k8s.io/v1beta2)."""

import pytest

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.records.workload import ClassRef, workload_record


def workload(**changes) -> dict:
    body = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-3f2a1",
            "namespace": "team",
            "uid": "w-1",
            "labels": {"kueue.x-k8s.io/job-uid": "j-1"},
            "annotations": {},
        },
        "spec": {
            "priority": 8000,
            "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "batch"},
            "queueName": "lq",
        },
        "status": {"conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}]},
    }
    for path, value in changes.items():
        *parents, leaf = path.split("__")
        target = body
        for key in parents:
            target = target.setdefault(key, {})
        if value is None:
            target.pop(leaf, None)
        else:
            target[leaf] = value
    return body


@pytest.mark.parametrize(
    ("rule", "changes", "expected"),
    [
        ("an admitted Workload of a PriorityClass", {}, ("team/job-train-3f2a1", 8000, "batch", True, True, False)),
        (
            "a WorkloadPriorityClass is told apart from a PriorityClass",
            {
                "spec__priorityClassRef": {
                    "group": "kueue.x-k8s.io",
                    "kind": "WorkloadPriorityClass",
                    "name": "batch",
                }
            },
            ("team/job-train-3f2a1", 8000, "batch", False, True, False),
        ),
        (
            "no class: no reference, priority as Kueue reads it (0)",
            {"spec__priorityClassRef": None, "spec__priority": None},
            ("team/job-train-3f2a1", 0, None, None, True, False),
        ),
        (
            "evicted: Evicted=True",
            {
                "status__conditions": [
                    {"type": "Evicted", "status": "True", "reason": "Preempted"},
                    {"type": "Admitted", "status": "False"},
                ]
            },
            ("team/job-train-3f2a1", 8000, "batch", True, False, True),
        ),
        (
            "fields of the wrong shape read as absent",
            {"spec__priority": "8000", "spec__priorityClassRef": "batch", "status__conditions": "Admitted"},
            ("team/job-train-3f2a1", 0, None, None, False, False),
        ),
    ],
)
def test_record(rule: str, changes: dict, expected: tuple) -> None:
    record = workload_record(workload(**changes))
    ref, priority, class_name, of_pods, admitted, evicted = expected
    assert record.ref == ref, rule
    assert record.priority == priority, rule
    assert (record.class_ref.name if record.class_ref else None) == class_name, rule
    kind = record.class_ref.class_kind if record.class_ref else None
    assert (kind is ClassKind.PRIORITY_CLASS if kind else None) == of_pods, rule
    assert (record.admitted, record.evicted) == (admitted, evicted), rule
    assert record.job_uid == "j-1", rule


@pytest.mark.parametrize(
    ("rule", "boost", "effective"),
    [
        ("no boost: the base", None, 8000),
        ("a boost adds", "1999", 9999),
        ("a negative boost subtracts", "-100", 7900),
        ("a sign is Go's", "+5", 8005),
        ("empty counts as none, as Kueue counts it", "", 8000),
        ("a value Kueue cannot parse counts as none", "ten", 8000),
        ("beyond int32 counts as none", "2147483648", 8000),
    ],
)
def test_effective_priority_is_kueues(rule: str, boost: str | None, effective: int) -> None:
    changes = {"metadata__annotations": {"kueue.x-k8s.io/priority-boost": boost} if boost is not None else {}}
    record = workload_record(workload(**changes))
    assert record.boost == boost, rule
    assert record.effective_priority() == effective, rule


@pytest.mark.parametrize(
    ("rule", "group", "kind", "expected"),
    [
        ("a pod's PriorityClass", "scheduling.k8s.io", "PriorityClass", ClassKind.PRIORITY_CLASS),
        ("Kueue's WorkloadPriorityClass", "kueue.x-k8s.io", "WorkloadPriorityClass", ClassKind.WORKLOAD_PRIORITY_CLASS),
        ("a kind of another group is neither", "example.com", "PriorityClass", None),
        ("an unknown kind is neither", "kueue.x-k8s.io", "ClusterQueue", None),
    ],
)
def test_class_ref_names_its_kind(rule: str, group: str, kind: str, expected: ClassKind | None) -> None:
    assert ClassRef(group, kind, "x").class_kind is expected, rule


def managed(manager: str, operation: str, *annotations: str) -> dict:
    return {
        "manager": manager,
        "operation": operation,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{key}": {} for key in annotations}}},
    }


@pytest.mark.parametrize(
    ("rule", "entries", "owners"),
    [
        ("no managedFields: no owner known", None, ()),
        (
            "an applier of the annotation owns it",
            [managed("preemption-toleration-kueue", "Apply", "kueue.x-k8s.io/priority-boost")],
            ("preemption-toleration-kueue",),
        ),
        (
            "whoever updated it last owns it too",
            [
                managed("preemption-toleration-kueue", "Apply", "kueue.x-k8s.io/priority-boost"),
                managed("kubectl-annotate", "Update", "kueue.x-k8s.io/priority-boost"),
            ],
            ("preemption-toleration-kueue", "kubectl-annotate"),
        ),
        ("a manager of other annotations owns none of it", [managed("kueue", "Update", "other/key")], ()),
        ("entries of the wrong shape are skipped", ["x", {"manager": 3, "fieldsV1": []}], ()),
    ],
)
def test_boost_owners_are_read_from_managed_fields(rule: str, entries: list | None, owners: tuple) -> None:
    record = workload_record(workload(metadata__managedFields=entries))
    assert record.boost_owners == owners, rule


def test_quota_reserved_finished_and_creation_are_read() -> None:
    record = workload_record(
        workload(
            metadata__creationTimestamp="2026-11-29T10:00:00Z",
            status__conditions=[{"type": "QuotaReserved", "status": "True"}, {"type": "Finished", "status": "True"}],
        )
    )
    assert (record.reserved, record.finished, record.admitted, record.created) == (
        True,
        True,
        False,
        "2026-11-29T10:00:00Z",
    )


@pytest.mark.parametrize(
    ("rule", "owners", "of_batch_job"),
    [
        ("a Job's controller reference", [{"apiVersion": "batch/v1", "kind": "Job", "controller": True}], True),
        (
            "a JobSet's: not a Job's",
            [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "controller": True}],
            False,
        ),
        ("a Job that is no controller", [{"apiVersion": "batch/v1", "kind": "Job"}], False),
        ("none", None, False),
    ],
)
def test_a_workload_of_a_batch_job_is_told(rule: str, owners: list | None, of_batch_job: bool) -> None:
    assert workload_record(workload(metadata__ownerReferences=owners)).of_batch_job is of_batch_job, rule
