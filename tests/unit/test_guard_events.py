"""Refusal Events are aggregated per victim: one Event whose count grows, written at most every interval, by
the server's one recorder (`kube.events.EventRecorder`).

The Events API is replaced by a fake here; tests/integration/test_guard.py reads the real Event.
"""

import asyncio
import logging
from datetime import UTC, datetime

from preemption_toleration.core.pods import PodJson
from preemption_toleration.core.protection import Protection, ProtectionKind
from preemption_toleration.guard.adapter.refusal_events import COMPONENT, RefusalEvents
from preemption_toleration.guard.verdicts import Refusal
from preemption_toleration.kube.events import POSTERS, EventRecorder
from preemption_toleration.records.pod_group import MemberRecord, pod_group_record
from tests.unit.gate import Gate
from tests.unit.virtual_clock import VIRTUAL_CLOCK, running_loop_is_current  # noqa: F401 - an autouse fixture

pytestmark = VIRTUAL_CLOCK

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


class Answer:
    """The API server's answer as the client hands it over when asked not to build its model."""

    def __init__(self, status: int = 201) -> None:
        self.status, self.reason = status, "Created" if status < 400 else "Not Found"

    async def read(self) -> bytes:
        return b"{}"


class FakeCore:
    def __init__(self) -> None:
        self.created: list[dict] = []
        self.patched: list[tuple[str, dict]] = []

    async def create_namespaced_event(self, namespace, body, _preload_content=True, _request_timeout=None):
        assert _preload_content is False, "the answer's model is not built"
        assert _request_timeout is not None, "a hung call does not hold its poster"
        self.created.append(body)
        return Answer(201)

    async def patch_namespaced_event(self, name, namespace, body, _preload_content=True, _request_timeout=None):
        assert _preload_content is False, "the answer's model is not built"
        assert _request_timeout is not None, "a hung call does not hold its poster"
        self.patched.append((name, body))
        return Answer(200)


def refusal(dry_run=False, audit=False) -> Refusal:
    victim = PodJson({"metadata": {"name": "victim", "namespace": "team", "uid": "u1"}})
    protection = Protection(ProtectionKind.FOREVER, "forever", 8000, refuse_below=10000, toleration_seconds=-1)
    return Refusal("delete", victim, 9000, "team/high", protection, 403, "pod team/victim ...", audit, dry_run)


async def test_aggregation_and_rate_limit() -> None:
    clock = {"now": 1000.0}
    core = FakeCore()
    recorder = Recorded(core, clock)
    for _ in range(5):  # a scheduler retrying every second
        await recorder.post(refusal())
        clock["now"] += 1
    assert len(core.created) == 1 and core.patched == []
    created = core.created[0]
    assert created["reason"] == "PreemptionRefused" and created["type"] == "Warning" and created["count"] == 1
    assert created["involvedObject"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "victim",
        "namespace": "team",
        "uid": "u1",
    }
    clock["now"] += 10
    await recorder.post(refusal())
    [(name, patch)] = core.patched
    assert name == created["metadata"]["name"] and patch["count"] == 6


async def test_dry_run_posts_nothing_and_audit_has_its_own_reason() -> None:
    core = FakeCore()
    recorder = Recorded(core)
    await recorder.post(refusal(dry_run=True))
    assert core.created == []
    await recorder.post(refusal(audit=True))
    assert [body["reason"] for body in core.created] == ["PreemptionWouldBeRefused"]


class ExpiringCore(FakeCore):
    """Events expire (the API server's --event-ttl): a patch of an expired one is a 404."""

    def __init__(self) -> None:
        super().__init__()
        self.expired = False

    async def patch_namespaced_event(self, name, namespace, body, _preload_content=True, _request_timeout=None):
        if self.expired:
            return Answer(404)
        return await super().patch_namespaced_event(name, namespace, body, _preload_content, _request_timeout)


class Recorded:
    """The guard's RefusalEvents over the server's recorder, on a fake Events API (`core`) and `clock`."""

    def __init__(self, core, clock: dict | None = None) -> None:
        now = (lambda: clock["now"]) if clock is not None else (lambda: 1000.0)
        self.recorder = EventRecorder(core, COMPONENT, logging.getLogger("test.guard-events"), clock=now)
        self.events = RefusalEvents(self.recorder)

    async def post(self, refused: Refusal) -> None:
        """The refusal recorded, and what it queued posted at once."""
        self.events.record(refused)
        while not self.recorder.queue.empty():
            await self.recorder.posted(self.recorder.queue.get_nowait())


async def test_an_expired_event_is_written_again_with_the_count_so_far() -> None:
    clock = {"now": 1000.0}
    core = ExpiringCore()
    recorder = Recorded(core, clock)
    await recorder.post(refusal())
    core.expired = True
    clock["now"] += 3600
    await recorder.post(refusal())
    first, again = core.created
    assert again["metadata"]["name"] == first["metadata"]["name"] and again["count"] == 2
    assert again["firstTimestamp"] == first["firstTimestamp"] and again["message"] == first["message"]


class BrokenCore(FakeCore):
    """The first post fails as aiohttp does when the API server drops the connection (not an OSError),
    the second with a bug of ours; the third works."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = [__import__("aiohttp").ServerDisconnectedError(), RuntimeError("a bug")]

    async def create_namespaced_event(self, namespace, body, _preload_content=True, _request_timeout=None):
        if self.failures:
            raise self.failures.pop(0)
        return await super().create_namespaced_event(namespace, body, _preload_content, _request_timeout)


async def test_no_failure_of_a_post_ends_the_event_loop() -> None:
    core = BrokenCore()
    recorder = Recorded(core)
    task = asyncio.create_task(recorder.recorder.run())
    for _ in range(3):
        recorder.events.record(refusal())
    for _ in range(100):
        if core.created:
            break
        await asyncio.sleep(0.01)
    assert not task.done() and len(core.created) == 1
    task.cancel()


def member_refusal(name: str, mode: str = "all") -> Refusal:
    """The refusal of a member of PodGroup team/trainers."""
    group = pod_group_record(
        {"metadata": {"name": "trainers", "namespace": "team", "uid": "g1"}, "spec": {"disruptionMode": {mode: {}}}}
    )
    pod = PodJson({"metadata": {"name": name, "namespace": "team", "uid": f"u-{name}"}})
    protection = Protection(ProtectionKind.FOREVER, "forever", 8000, refuse_below=10000, toleration_seconds=-1)
    message = f"pod team/{name} of PodGroup team/trainers ..."
    return Refusal("delete", MemberRecord(pod, group, None), 9000, "team/high", protection, 403, message, False, False)


async def test_a_members_refusal_is_an_event_on_its_pod_and_one_on_its_group_for_every_member() -> None:
    clock = {"now": 1000.0}
    core = FakeCore()
    recorder = Recorded(core, clock)
    for name in ("trainer-0", "trainer-1", "trainer-2"):
        await recorder.post(member_refusal(name))
    pods = [e for e in core.created if e["involvedObject"]["kind"] == "Pod"]
    [group] = [e for e in core.created if e["involvedObject"]["kind"] == "PodGroup"]
    assert [e["involvedObject"]["name"] for e in pods] == ["trainer-0", "trainer-1", "trainer-2"]
    assert group["involvedObject"] == {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "name": "trainers",
        "namespace": "team",
        "uid": "g1",
    }
    assert group["message"] == (
        "preemption refused for every member (disruptionMode all): pod team/trainer-0 of PodGroup team/trainers ..."
    )
    clock["now"] += 10
    await recorder.post(member_refusal("trainer-3"))
    assert [(patch["count"]) for name, patch in core.patched if name == group["metadata"]["name"]] == [4]


async def test_a_preemptor_groups_refusal_is_an_event_on_that_group_too() -> None:
    core = FakeCore()
    recorder = Recorded(core)
    refused = refusal()
    refused.preemptor_group = pod_group_record({"metadata": {"name": "high", "namespace": "team", "uid": "g2"}})
    await recorder.post(refused)
    assert [(e["involvedObject"]["kind"], e["message"]) for e in core.created] == [
        ("Pod", "pod team/victim ..."),
        ("PodGroup", "a member's preemption refused: pod team/victim ..."),
    ]


async def test_a_failed_post_on_the_victim_does_not_keep_its_groups_event_from_being_posted() -> None:
    core = BrokenCore()
    core.failures = core.failures[:1]  # the victim's Event: the connection dropped
    recorder = Recorded(core)
    await recorder.post(member_refusal("trainer-0"))
    assert [e["involvedObject"]["kind"] for e in core.created] == ["PodGroup"]


class GatedCore(FakeCore):
    """Holds every create while `gate` is closed, counting those in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = Gate(closed=True)

    async def create_namespaced_event(self, namespace, body, _preload_content=True, _request_timeout=None):
        await self.gate.passing()
        return await super().create_namespaced_event(namespace, body, _preload_content, _request_timeout)


def refusal_of(name: str) -> Refusal:
    victim = PodJson({"metadata": {"name": name, "namespace": "team", "uid": f"u-{name}"}})
    protection = Protection(ProtectionKind.FOREVER, "forever", 8000, refuse_below=10000, toleration_seconds=-1)
    return Refusal("delete", victim, 9000, "team/high", protection, 403, f"pod team/{name} ...", False, False)


async def test_refusals_are_posted_many_at_once_and_each_event_is_created_once() -> None:
    """Refusals of 20 victims are posted as many at once as the operator's Events (`POSTERS`); three of one
    more victim, queued together, make one Event created once and then counted up, never three."""
    core = GatedCore()
    recorder = Recorded(core)
    recorder.recorder.min_interval = 0.0  # every repeat is written
    for index in range(20):
        recorder.events.record(refusal_of(f"v-{index:02d}"))
    for _ in range(3):
        recorder.events.record(refusal())
    task = asyncio.create_task(recorder.recorder.run())
    try:
        for _ in range(500):
            if core.gate.in_flight == POSTERS:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert core.gate.in_flight == POSTERS == 16  # no more
        core.gate.open()
        for _ in range(500):
            if len(core.created) == 21 and len(core.patched) == 2:
                break
            await asyncio.sleep(0.01)
    finally:
        task.cancel()
    assert len(core.created) == 21 and [e["involvedObject"]["name"] for e in core.created].count("victim") == 1
    assert [patch["count"] for _, patch in core.patched] == [2, 3] and recorder.recorder.posting == {}
