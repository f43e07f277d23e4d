"""The operator's Events are written where `kubectl describe` looks for them (kube/events.py).

For a cluster-scoped object kubectl lists Events of every namespace whose involvedObject has its name,
kind and uid and an empty namespace; the API server stores such an Event only in "default". The live
check is tests/integration/test_operator.py (`kubectl describe ptp` and `kubectl describe priorityclass`).
"""

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.resources import pod_ref
from preemption_toleration.kube import events as events_module
from preemption_toleration.kube.events import EventRecorder, event_body
from preemption_toleration.records.policy import policy_view
from preemption_toleration.records.priority_class import ClassView
from tests.unit.gate import Gate
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

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
POD_REF = pod_ref("team", "web", "u-w")

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
    ("a namespaced object: stored in its own namespace, which involvedObject names", POD_REF, "team", POD),
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


def test_an_event_names_a_related_object_the_reporting_replica_and_what_it_stands_for() -> None:
    """Steering's Event on a victim names its preemptor and the replica; the guard's aggregated refusal has
    a name of its own, a count, and the time of the first refusal it stands for."""
    preemptor = pod_ref("team", "high", "u-h")
    body = event_body(POD_REF, "Normal", "Preempted", "m", "steering", NOW, related=preemptor, instance="replica-1")
    assert body["related"] == {"apiVersion": "v1", "kind": "Pod", "name": "high", "namespace": "team", "uid": "u-h"}
    assert body["reportingInstance"] == "replica-1"
    earlier = datetime(2026, 11, 22, 11, 0, tzinfo=UTC)
    body = event_body(POD_REF, "Warning", "PreemptionRefused", "m", "guard", NOW, name="web.x", count=6, first=earlier)
    assert body["metadata"] == {"name": "web.x", "namespace": "team"}
    assert (body["firstTimestamp"], body["lastTimestamp"], body["count"]) == (
        "2026-11-22T11:00:00Z",
        "2026-11-22T12:00:00Z",
        6,
    )
    assert "related" not in body and "reportingInstance" not in body


class Answer:
    """What the client returns for a call with `_preload_content=False`: the status and the body's bytes."""

    def __init__(self, status: int, body: bytes = b"{}") -> None:
        self.status = status
        self.body = body

    async def read(self) -> bytes:
        return self.body


class FakeCore:
    """The API server's Events endpoint: answers, or raises, each post in turn; holds every post while
    `gate` is closed."""

    def __init__(self, failures: list[BaseException | Answer] | None = None) -> None:
        self.failures = failures or []
        self.created: list[tuple[str, dict]] = []
        self.gate = Gate()

    async def create_namespaced_event(self, namespace, body, _preload_content=True, _request_timeout=None):
        assert _preload_content is False  # the answer is read as bytes, never built into a model
        await self.gate.passing()
        failure = self.failures.pop(0) if self.failures else Answer(201)
        if isinstance(failure, BaseException):
            raise failure
        if failure.status < 400:
            self.created.append((namespace, body))
        return failure


@asynccontextmanager
async def posting(events: EventRecorder) -> AsyncIterator[None]:
    """The posters run inside the block, and are stopped after it."""
    task = asyncio.create_task(events.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(500):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not within 5 s")


async def test_a_failed_post_is_logged_and_the_next_one_is_posted(caplog) -> None:
    core = FakeCore(
        [ApiException(status=403, reason="Forbidden"), Answer(422, b"Event is invalid"), RuntimeError("bug")]
    )
    events = EventRecorder(core, "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    for reason in ("Refused", "Invalid", "Broken", "Applied"):
        events.post(POLICY.ref, "Normal", reason, "m")
    async with posting(events):
        await until(lambda: len(core.created) == 1 and len(caplog.records) == 3)
    assert [(namespace, body["reason"]) for namespace, body in core.created] == [("default", "Applied")]
    assert [record.getMessage() for record in caplog.records] == ["could not post an Event"] * 3
    assert "Event is invalid" in caplog.records[1].problem


async def test_a_burst_is_posted_whole_and_as_many_at_once_as_the_writes() -> None:
    """A 1,000 x 3,000 burst writes 3,000 classes, one Event each, 16 writes at a time: every Event is
    queued, and they are posted 16 at once."""
    core = FakeCore()
    core.gate.close()
    events = EventRecorder(core, "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    for i in range(3000):
        events.post(POLICY.ref, "Normal", "Applied", f"Applied to PriorityClass burst-{i:04d}.")
    assert events.queue.qsize() == 3000  # none dropped
    async with posting(events):
        await until(lambda: core.gate.in_flight == 16)
        await asyncio.sleep(0.05)
        assert core.gate.in_flight == events_module.POSTERS == 16  # no more
        core.gate.open()
        await until(lambda: len(core.created) == 3000)
    assert core.gate.most_in_flight == 16 and events.queue.empty()


def test_a_full_queue_drops_the_event_with_a_log_line(monkeypatch, caplog) -> None:
    monkeypatch.setattr(events_module, "QUEUE_LIMIT", 1)
    events = EventRecorder(FakeCore(), "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    events.post(POLICY.ref, "Normal", "Applied", "first")
    events.post(POLICY.ref, "Normal", "Applied", "second")
    assert events.queue.qsize() == 1
    assert [record.getMessage() for record in caplog.records] == ["event queue full; Event not posted"]


async def test_a_named_event_another_replica_posted_first_is_dropped_quietly(caplog) -> None:
    """Every replica tells a group left in part by one Event of the same name: the API server keeps the first
    (201) and answers the others 409, which is no failure; a 409 for an Event without a name of its own is."""
    core = FakeCore([Answer(201), Answer(409, b"already exists"), Answer(409, b"already exists")])
    events = EventRecorder(core, "c", logging.getLogger("test.events"))  # type: ignore[arg-type]
    for _ in range(2):
        events.post(POD_REF, "Warning", "PreemptedInPart", "m", name="g.ptol-in-part-1")
    events.post(POD_REF, "Warning", "Other", "m")
    async with posting(events):
        await until(lambda: len(caplog.records) == 1)
        await asyncio.sleep(0.05)
    assert [body["metadata"].get("name") for _, body in core.created] == ["g.ptol-in-part-1"]
    assert [(record.getMessage(), record.reason) for record in caplog.records] == [("could not post an Event", "Other")]
