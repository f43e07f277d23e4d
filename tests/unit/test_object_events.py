"""The operator's Events are written where `kubectl describe` looks for them (kube/events.py).

For a cluster-scoped object kubectl lists Events of every namespace whose involvedObject has its name,
kind and uid and an empty namespace; the API server stores such an Event only in "default". The live
check is tests/integration/test_operator.py (`kubectl describe ptp` and `kubectl describe priorityclass`).
"""

import asyncio
import logging
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube import events as events_module
from preemption_toleration.kube.events import ObjectEvents, event_body
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import ClassView

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
POLICY = policy_view(
    {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": "p", "uid": "u-p"},
        "spec": {"priorityClassName": "low", "minimumPreemptablePriority": 10000},
    }
)
POD = {"apiVersion": "v1", "kind": "Pod", "name": "web", "namespace": "team", "uid": "u-w"}

PLACES = [
    (
        "a policy (cluster-scoped): stored in default, no namespace in involvedObject",
        POLICY.ref,
        "default",
        {
            "apiVersion": "preemption-toleration.dev/v1alpha1",
            "kind": "PreemptionTolerationPolicy",
            "name": "p",
            "uid": "u-p",
        },
    ),
    (
        "a PriorityClass (cluster-scoped): stored in default, no namespace in involvedObject",
        ClassView("low", 8000, uid="u-c").ref,
        "default",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "name": "low", "uid": "u-c"},
    ),
    ("a namespaced object: stored in its own namespace, which involvedObject names", POD, "team", POD),
]


@pytest.mark.parametrize(("case", "ref", "namespace", "involved"), PLACES, ids=[c[0] for c in PLACES])
def test_where_the_event_is_stored_and_what_it_names(case, ref, namespace, involved) -> None:
    body = event_body(ref, "Normal", "Applied", "Applied to PriorityClass low.", "ptol-operator", NOW)
    assert body["metadata"] == {"generateName": f"{involved['name']}.", "namespace": namespace}
    assert body["involvedObject"] == involved
    assert (body["type"], body["reason"], body["message"]) == ("Normal", "Applied", "Applied to PriorityClass low.")
    assert body["source"] == {"component": "ptol-operator"} and body["reportingComponent"] == "ptol-operator"
    assert (body["firstTimestamp"], body["lastTimestamp"], body["count"]) == ("2026-11-22T12:00:00Z",) * 2 + (1,)
    assert "eventTime" not in body  # an Event with eventTime must name a reportingInstance and an action


def test_a_message_above_the_api_servers_limit_is_cut_to_it() -> None:
    body = event_body(POLICY.ref, "Warning", "Conflict", "x" * 2000, "c", NOW)
    assert len(body["message"]) == 1024 and body["message"].endswith("…")


class FakeCore:
    def __init__(self, failures: list[BaseException]) -> None:
        self.failures = failures
        self.created: list[tuple[str, dict]] = []

    async def create_namespaced_event(self, namespace, body, _request_timeout=None):
        if self.failures:
            raise self.failures.pop(0)
        self.created.append((namespace, body))


async def test_a_failed_post_is_logged_and_the_next_one_is_posted(caplog) -> None:
    core = FakeCore([ApiException(status=403, reason="Forbidden"), RuntimeError("bug")])
    events = ObjectEvents(core, "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    for reason in ("Refused", "Broken", "Applied"):
        events.post(POLICY.ref, "Normal", reason, "m")
    task = asyncio.create_task(events.run())
    try:
        for _ in range(100):
            if core.created:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert [(namespace, body["reason"]) for namespace, body in core.created] == [("default", "Applied")]
    assert [record.getMessage() for record in caplog.records] == ["could not post an Event"] * 2


def test_a_full_queue_drops_the_event_with_a_log_line(monkeypatch, caplog) -> None:
    monkeypatch.setattr(events_module, "QUEUE_LIMIT", 1)
    events = ObjectEvents(FakeCore([]), "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    events.post(POLICY.ref, "Normal", "Applied", "first")
    events.post(POLICY.ref, "Normal", "Applied", "second")
    assert events.queue.qsize() == 1
    assert [record.getMessage() for record in caplog.records] == ["event queue full; Event not posted"]
