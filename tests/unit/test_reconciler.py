"""The reconciler's handling of API failures and events, with the two send functions replaced by fakes.

The Kubernetes API itself is exercised in tests/integration/test_operator.py.
"""

import logging
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.operator.reconciler import Reconciler
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import ClassView

NOW = datetime(2026, 11, 22, tzinfo=UTC)


def make_policy(status=None, kind=None):
    body = {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {
            "name": "p",
            "uid": "u1",
            "generation": 2,
            "creationTimestamp": "2026-11-01T00:00:00Z",
            "resourceVersion": "41",
        },
        "spec": {"priorityClassName": "low", "minimumPreemptablePriority": 10000},
    }
    if status is not None:
        body["status"] = status
    if kind is not None:
        body["spec"]["priorityClassKind"] = kind
    return policy_view(body)


class Recorder:
    def __init__(self, fail_apply: ApiException | None = None) -> None:
        self.fail_apply = fail_apply
        self.applied: list[dict] = []
        self.statuses: list[dict] = []
        self.versions: list[str] = []  # the resourceVersion each status write was made on
        self.events: list[tuple[str, str, str]] = []

    async def apply(self, api, body, manager):
        if self.fail_apply is not None:
            raise self.fail_apply
        self.applied.append(body)

    async def patch(self, api, name, wanted, current, resource_version):
        self.statuses.append(wanted)
        self.versions.append(resource_version)

    def event(self, ref, kind, reason, message):
        self.events.append((ref.kind, reason, message))

    def reconciler(self, kinds: tuple[ClassKind, ...] = (ClassKind.PRIORITY_CLASS,)) -> Reconciler:
        return Reconciler(None, "mgr", self.event, logging.getLogger("test"), self.apply, self.patch, kinds=kinds)


async def test_apply_failure_is_reported_in_status_and_as_a_failure_to_retry() -> None:
    recorder = Recorder(fail_apply=ApiException(status=403, reason="Forbidden"))
    result = await recorder.reconciler().reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
    assert result.failures == ["PriorityClass low: 403 Forbidden"]
    [status] = recorder.statuses
    condition = status["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "ApplyFailed")
    assert "Could not write PriorityClass low: 403 Forbidden" in condition["message"]
    assert recorder.events == [("PreemptionTolerationPolicy", "ApplyFailed", condition["message"])]


async def test_success_writes_once_and_reports_applied() -> None:
    recorder = Recorder()
    result = await recorder.reconciler().reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
    assert result.failures == [] and result.writes == 1 and result.status_patches == 1
    assert recorder.applied == [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "low", "uid": "c1", "annotations": {MIN: "10000"}},
        }
    ]
    assert [reason for _, reason, _ in recorder.events] == ["Applied"]
    assert recorder.versions == ["41"], "written on the version read: another writer's condition is not erased"

    # the same state seen again (class written, status stored): nothing is sent
    converged = Recorder()
    policy = make_policy(status=recorder.statuses[0])
    done = ClassView("low", 8000, annotations={MIN: "10000"}, owned_keys=frozenset({MIN}), uid="c1")
    result = await converged.reconciler().reconcile([policy], [done], NOW)
    assert (result.writes, result.status_patches, converged.events) == (0, 0, [])


class ChangedMeanwhile(Recorder):
    """The policy changed since it was read (the webhook server wrote its PriorityBoost condition): 409."""

    async def patch(self, api, name, wanted, current, resource_version):
        raise ApiException(status=409, reason="Conflict")


async def test_a_status_write_on_a_policy_changed_since_read_is_superseded_not_a_failure() -> None:
    recorder = ChangedMeanwhile()
    reconciler = recorder.reconciler()
    result = await reconciler.reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
    assert (result.failures, result.superseded, result.status_patches) == ([], ["p"], 0)
    assert reconciler.metrics.registry.get_sample_value("ptol_operator_reconciles_total", {"result": "ok"}) == 1


async def test_metrics_count_reconciles_writes_and_failures() -> None:
    failing = Recorder(fail_apply=ApiException(status=500, reason="Boom"))
    reconciler = failing.reconciler()
    await reconciler.reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
    ok = Recorder()
    fine = ok.reconciler()
    await fine.reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)

    def value(reconciler, name, **labels):
        return reconciler.metrics.registry.get_sample_value(name, labels)

    assert value(reconciler, "ptol_operator_reconciles_total", result="failed") == 1
    assert value(reconciler, "ptol_operator_writes_total", action="applied", result="failed") == 1
    assert value(reconciler, "ptol_operator_policies", reason="ApplyFailed") == 1
    assert value(fine, "ptol_operator_reconciles_total", result="ok") == 1
    assert value(fine, "ptol_operator_writes_total", action="applied", result="ok") == 1
    assert value(fine, "ptol_operator_cache_objects", kind="priorityclasses") == 1


async def test_a_policy_without_effect_is_applied_and_warned_about_in_an_event_and_counted() -> None:
    recorder = Recorder()
    policy = policy_view(
        {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": {"name": "p", "uid": "u1", "generation": 1, "creationTimestamp": "2026-11-01T00:00:00Z"},
            "spec": {"priorityClassName": "low", "minimumPreemptablePriority": 100},
        }
    )
    reconciler = recorder.reconciler()
    await reconciler.reconcile([policy], [ClassView("low", 8000, uid="c1")], NOW)
    [status] = recorder.statuses
    condition = status["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("True", "AppliedNoEffect")
    assert [reason for _, reason, _ in recorder.events] == ["Applied", "AppliedNoEffect"]
    assert recorder.events[1][2] == condition["message"]
    counted = reconciler.metrics.registry.get_sample_value("ptol_operator_policies", {"reason": "AppliedNoEffect"})
    assert counted == 1


class Server(Recorder):
    """Answers writes as the API server does: with the stored object, at a new resourceVersion."""

    def __init__(self) -> None:
        super().__init__()
        self.version = 10

    async def apply(self, api, body, manager):
        await super().apply(api, body, manager)
        self.version += 1
        keys = [{"f:" + key: {}} for key in body["metadata"]["annotations"]]
        fields = {"f:metadata": {"f:annotations": {k: v for entry in keys for k, v in entry.items()}}}
        return {
            "metadata": {
                **body["metadata"],
                "resourceVersion": str(self.version),
                "managedFields": [{"manager": manager, "operation": "Apply", "fieldsV1": fields}],
            },
            "value": 8000,
        }

    async def patch(self, api, name, wanted, current, resource_version):
        await super().patch(api, name, wanted, current, resource_version)
        self.version += 1
        return {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": {
                "name": name,
                "uid": "u1",
                "generation": 2,
                "resourceVersion": str(self.version),
                "creationTimestamp": "2026-11-01T00:00:00Z",
            },
            "spec": {"priorityClassName": "low", "minimumPreemptablePriority": 10000},
            "status": dict(wanted),
        }


async def test_a_run_before_the_caches_see_our_writes_writes_nothing_again() -> None:
    """Write-through: the caches still show the class and the policy as they were before our writes."""
    server = Server()
    reconciler = Reconciler(None, "mgr", server.event, logging.getLogger("test"), server.apply, server.patch)
    stale_class = ClassView("low", 8000, uid="c1", resource_version="5")
    stale_policy = make_policy()
    first = await reconciler.reconcile([stale_policy], [stale_class], NOW)
    again = await reconciler.reconcile([stale_policy], [stale_class], NOW)
    assert (first.writes, first.status_patches) == (1, 1)
    assert (again.writes, again.status_patches) == (0, 0)
    assert len(server.applied) == 1 and len(server.events) == 1
    assert reconciler.is_known(ClassView("low", 8000, annotations={MIN: "10000"}, owned_keys=frozenset({MIN})))


async def test_a_change_after_our_write_is_planned_on_not_hidden_by_it() -> None:
    server = Server()
    reconciler = Reconciler(None, "mgr", server.event, logging.getLogger("test"), server.apply, server.patch)
    await reconciler.reconcile([make_policy()], [ClassView("low", 8000, uid="c1", resource_version="5")], NOW)
    # someone removed our annotation after our write: the cache has moved past the version we wrote over
    changed = ClassView("low", 8000, uid="c1", resource_version="12")
    result = await reconciler.reconcile([make_policy()], [changed], NOW)
    assert result.writes == 1 and len(server.applied) == 2


async def test_a_failed_write_fails_only_the_policy_it_concerns() -> None:
    refuser = ClassRefuser("a")
    classes = [ClassView(name, 8000, uid=f"c-{name}") for name in ("a", "b")]
    result = await refuser.reconciler().reconcile([named_policy("pa", "a"), named_policy("pb", "b")], classes, NOW)
    assert result.failures == ["PriorityClass a: 403 Forbidden"]
    assert [status["conditions"][0]["reason"] for status in refuser.statuses] == ["ApplyFailed", "Applied"]
    assert [body["metadata"]["name"] for body in refuser.applied] == ["b"]


async def test_network_errors_that_are_not_oserrors_are_failures_of_their_policy_not_crashes() -> None:
    """aiohttp's ServerDisconnectedError and ClientPayloadError are no OSErrors: a broken connection to the
    API server is one class's failed write, reported in status and retried, like any API error."""
    import aiohttp

    for error, shown in (
        (aiohttp.ServerDisconnectedError(), "ServerDisconnectedError: Server disconnected"),
        (aiohttp.ClientPayloadError("truncated"), "ClientPayloadError: truncated"),
    ):
        recorder = Recorder(fail_apply=error)
        result = await recorder.reconciler().reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
        assert result.failures == [f"PriorityClass low: {shown}"]
        assert recorder.statuses[0]["conditions"][0]["reason"] == "ApplyFailed"


class ClassRefuser(Recorder):
    """Another admission controller refuses writes of one class."""

    def __init__(self, refused: str) -> None:
        super().__init__()
        self.refused = refused

    async def apply(self, api, body, manager):
        if body["metadata"]["name"] == self.refused:
            raise ApiException(status=403, reason="Forbidden")
        self.applied.append(body)


def named_policy(name, class_name, deleting=False):
    metadata = {"name": name, "uid": f"u-{name}", "generation": 1, "creationTimestamp": "2026-11-01T00:00:00Z"}
    if deleting:
        metadata.update(deletionTimestamp="2026-11-22T00:00:00Z", finalizers=["example.com/keep"])
    return policy_view(
        {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "metadata": metadata,
            "spec": {"priorityClassName": class_name, "minimumPreemptablePriority": 10000},
        }
    )


async def test_the_classes_of_a_policy_deleting_or_gone_are_released_and_a_refused_release_is_a_failure() -> None:
    """No finalizer holds a policy: its classes are released once the caches show it deleting (another
    finalizer holds it) or gone, and a release refused is retried like any failed write."""
    owned = frozenset({MIN})
    classes = [
        ClassView(name, 8000, annotations={MIN: "10000"}, owned_keys=owned, uid=f"c-{name}")
        for name in ("a", "b", "c", "d")
    ]
    policies = [named_policy("pa", "a", deleting=True), named_policy("pb", "b", deleting=True), named_policy("pc", "c")]
    refuser = ClassRefuser("a")
    result = await refuser.reconciler().reconcile(policies, classes, NOW)
    assert result.failures == ["PriorityClass a: 403 Forbidden"]
    # b released (its policy deleting), d released (its policy gone), c already as wanted
    assert [body["metadata"]["name"] for body in refuser.applied] == ["b", "d"]


async def test_with_kueue_a_workload_priority_class_is_written_and_its_policy_reported() -> None:
    recorder = Recorder()
    reconciler = recorder.reconciler(tuple(ClassKind))
    of_workloads = make_policy(kind="WorkloadPriorityClass")
    classes = [
        ClassView("low", 8000, uid="c1"),
        ClassView("low", 8000, uid="w1", kind=ClassKind.WORKLOAD_PRIORITY_CLASS),
    ]
    result = await reconciler.reconcile([of_workloads], classes, NOW)
    assert result.failures == [] and result.writes == 1
    assert [(body["kind"], body["metadata"]["uid"]) for body in recorder.applied] == [("WorkloadPriorityClass", "w1")]
    assert recorder.events == [
        (
            "PreemptionTolerationPolicy",
            "Applied",
            "Applied minimum-preemptable-priority=10000 to WorkloadPriorityClass low.",
        )
    ]
    assert recorder.statuses[-1]["conditions"][0]["reason"] == "Applied"


async def test_without_kueue_a_policy_of_workload_priority_classes_is_told_it_is_not_served() -> None:
    recorder = Recorder()
    result = await recorder.reconciler().reconcile([make_policy(kind="WorkloadPriorityClass")], [], NOW)
    assert result.writes == 0 and recorder.applied == []
    condition = recorder.statuses[-1]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "KindNotServed")
    assert recorder.events[-1][1] == "KindNotServed"


async def test_with_kueue_not_listed_yet_its_policies_wait_and_nothing_of_its_kind_is_written() -> None:
    recorder = Recorder()
    reconciler = recorder.reconciler(tuple(ClassKind))
    of_workloads = make_policy(kind="WorkloadPriorityClass")
    result = await reconciler.reconcile([of_workloads], [], NOW, kinds=(ClassKind.PRIORITY_CLASS,))
    assert result.writes == 0 and recorder.applied == []
    condition = recorder.statuses[-1]["conditions"][0]
    assert condition["reason"] == "KindNotServed" and "is Kueue installed?" in condition["message"]


@pytest.mark.parametrize(
    ("kinds", "kept"),
    [
        pytest.param(tuple(ClassKind), ["Ready", "PriorityBoost"], id="kueue on: the server's condition kept"),
        pytest.param((ClassKind.PRIORITY_CLASS,), ["Ready"], id="kueue off: a condition nothing writes dropped"),
    ],
)
async def test_a_priority_boost_condition_is_kept_only_while_kueue_support_runs(kinds, kept) -> None:
    recorder = Recorder()
    boost = {"type": "PriorityBoost", "status": "False", "reason": "PriorityBoostGateOff", "message": "m"}
    first = Recorder()
    await first.reconciler().reconcile([make_policy()], [ClassView("low", 8000, uid="c1")], NOW)
    status = {**first.statuses[0], "conditions": [*first.statuses[0]["conditions"], boost]}
    done = ClassView("low", 8000, annotations={MIN: "10000"}, owned_keys=frozenset({MIN}), uid="c1")
    await recorder.reconciler(kinds).reconcile([make_policy(status=status)], [done], NOW)
    written = recorder.statuses[-1]["conditions"] if recorder.statuses else status["conditions"]
    assert [c["type"] for c in written] == kept
