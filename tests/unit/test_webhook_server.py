"""The webhook HTTP server: AdmissionReview in and out, bad input, health, readiness, metrics."""

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from preemption_toleration.admission.decisions import snapshot_of
from preemption_toleration.core.annotations import MINIMUM_PREEMPTABLE_PRIORITY as MIN
from preemption_toleration.core.annotations import TOLERATION_SECONDS as TOL
from preemption_toleration.core.times import rfc3339
from preemption_toleration.guard.memory import GuardMemory
from preemption_toleration.kube.informer import CacheStats
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.webhooks.draining import drain
from preemption_toleration.webhooks.server import WebhookApp
from tests.builders import priority_class
from tests.unit.admission_payloads import review
from tests.unit.webhook_client import webhook_app, webhook_client

READY = {"value": True}


def not_ready(needs: str) -> list[str]:
    """The caches' problems, as AdmissionCaches.problems reports them."""
    return [] if READY["value"] else ["pods: not listed yet (last problem: 403 Forbidden)"]


@pytest.fixture
async def http() -> AsyncIterator[TestClient]:
    READY["value"] = True
    metrics = WebhookMetrics()
    metrics.track_caches(lambda: [CacheStats("priorityclasses", 3, 1, 0), CacheStats("pods", 120, 2, 1)])
    app = webhook_app(lambda: snapshot_of({}, {}), not_ready, metrics=metrics, max_body_bytes=64 * 1024)
    async with webhook_client(app) as test_client:
        yield test_client


@pytest.mark.parametrize("version", ["admission.k8s.io/v1", "admission.k8s.io/v1beta1"])
async def test_review_round_trip_echoes_uid_and_version(http: TestClient, version: str) -> None:
    payload = review(priority_class("low", 8000, "10k"), api_version=version, uid="abc-123")
    response = await http.post("/validate/priorityclasses", json=payload)
    assert response.status == 200
    body = await response.json()
    assert body["apiVersion"] == version and body["kind"] == "AdmissionReview"
    assert body["response"]["uid"] == "abc-123" and body["response"]["allowed"] is False
    assert body["response"]["status"]["code"] == 422


BAD = [
    # (rule, body, words in the error)
    ("not JSON", b"{not json", "not JSON"),
    ("a JSON list", b"[]", "JSON list, not an AdmissionReview"),
    ("a JSON string", b'"review"', "JSON str, not an AdmissionReview"),
    ("not an AdmissionReview", json.dumps({"kind": "Pod"}).encode(), "not an AdmissionReview"),
    (
        "no uid",
        json.dumps({**review(priority_class("a", 1)), "request": {"kind": {}}}).encode(),
        "not an AdmissionReview",
    ),
    (
        "wrong resource for the endpoint",
        json.dumps(
            review({"metadata": {"name": "p"}}, resource={"group": "", "version": "v1", "resource": "pods"})
        ).encode(),
        "judges scheduling.k8s.io/priorityclasses, not core/pods",
    ),
    ("create without object", json.dumps(review(None)).encode(), "needs request.object"),
    (
        "object of the wrong type",
        json.dumps({**review(None), "request": {**review(None)["request"], "object": "text"}}).encode(),
        "not an AdmissionReview: request.object: should be an object",
    ),
    (
        "user info of the wrong type, in the API's terms",
        json.dumps({**review(None), "request": {**review(None)["request"], "userInfo": []}}).encode(),
        "not an AdmissionReview: request.userInfo: should be an object",
    ),
]


@pytest.mark.parametrize(("rule", "body", "words"), BAD, ids=[c[0] for c in BAD])
async def test_bad_input_is_a_400_with_a_clear_message(http: TestClient, rule: str, body: bytes, words: str) -> None:
    response = await http.post("/validate/priorityclasses", data=body, headers={"Content-Type": "application/json"})
    assert response.status == 400
    assert words in (await response.json())["error"]


async def test_oversized_body_is_a_400(http: TestClient) -> None:
    response = await http.post("/validate/priorityclasses", data=b" " * (65 * 1024))
    assert response.status == 400
    assert "exceeds the limit of 65536 bytes" in (await response.json())["error"]


async def test_an_oversized_body_in_pieces_is_a_400(http: TestClient) -> None:
    """Chunked, with no Content-Length to refuse early: the server's own size limit stops the read."""

    async def pieces():
        for _ in range(70):
            yield b" " * 1024

    response = await http.post("/validate/priorityclasses", data=pieces())
    assert response.status == 400
    assert "exceeds the limit of 65536 bytes" in (await response.json())["error"]


ROUTING = [
    # (rule, method, path, status, text)
    ("unknown path", "POST", "/validate/pods", 404, "404: Not Found"),
    ("a path with a trailing slash is another path", "GET", "/healthz/", 404, "404: Not Found"),
    ("GET of a review path", "GET", "/validate/priorityclasses", 405, "405: Method Not Allowed"),
    ("POST to a page", "POST", "/healthz", 405, "405: Method Not Allowed"),
    ("GET of a page", "GET", "/healthz", 200, "ok"),
    ("HEAD of a page: its headers, no body", "HEAD", "/healthz", 200, ""),
]


@pytest.mark.parametrize(("rule", "method", "path", "status", "text"), ROUTING, ids=[r[0] for r in ROUTING])
async def test_routing_answers_as_aiohttps_router_does(
    http: TestClient, rule: str, method: str, path: str, status: int, text: str
) -> None:
    response = await http.request(method, path)
    assert (response.status, await response.text()) == (status, text)
    if status == 405:
        assert response.headers["Allow"] == ("GET,HEAD" if method == "POST" else "POST")


async def test_expect_100_continue_gets_its_interim_answer_then_the_review_answer(http: TestClient) -> None:
    """curl sends `Expect: 100-continue` with a large body and waits for "100 Continue" before sending it."""
    body = json.dumps(review(priority_class("low", 8000, "10k"), uid="u-9")).encode()
    _, port = http.server.host, http.server.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(
            b"POST /validate/priorityclasses HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
            b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body)
        )
        interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        writer.write(body)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
        assert head.startswith(b"HTTP/1.1 200 OK\r\n"), head
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        answer = json.loads(await reader.readexactly(length))
        assert answer["response"]["uid"] == "u-9" and answer["response"]["status"]["code"] == 422
    finally:
        writer.close()


async def test_an_unknown_expectation_is_a_417(http: TestClient) -> None:
    response = await http.post("/validate/priorityclasses", data=b"{}", headers={"Expect": "something-else"})
    assert (response.status, await response.text()) == (417, "Unknown Expect: something-else")


async def test_not_ready_until_synced(http: TestClient) -> None:
    READY["value"] = False
    readyz = await http.get("/readyz")
    assert (readyz.status, await readyz.text()) == (
        503,
        "caches are not ready: pods: not listed yet (last problem: 403 Forbidden)",
    )
    assert (await http.get("/healthz")).status == 200
    response = await http.post("/validate/priorityclasses", json=review(priority_class("low", 8000)))
    assert response.status == 503
    assert (await response.json())[
        "error"
    ] == "caches are not ready: pods: not listed yet (last problem: 403 Forbidden)"
    READY["value"] = True
    assert (await http.get("/readyz")).status == 200


async def test_metrics_count_requests_and_decisions(http: TestClient) -> None:
    await http.post("/validate/priorityclasses", json=review(priority_class("low", 8000, "10k")))
    await http.post("/validate/priorityclasses", data=b"nope")
    text = await (await http.get("/metrics")).text()
    assert 'ptol_webhook_requests_total{code="200",endpoint="validate-priorityclasses"} 1.0' in text
    assert 'ptol_webhook_requests_total{code="400",endpoint="validate-priorityclasses"} 1.0' in text
    assert 'ptol_webhook_decisions_total{decision="denied",endpoint="validate-priorityclasses"} 1.0' in text
    assert "ptol_webhook_request_seconds_bucket" in text
    # the caches as they are at the scrape
    assert 'ptol_webhook_cache_objects{kind="priorityclasses"} 3.0' in text
    assert 'ptol_webhook_cache_objects{kind="pods"} 120.0' in text
    assert 'ptol_webhook_cache_lists_total{kind="pods"} 2.0' in text
    assert 'ptol_webhook_cache_watch_failures_total{kind="pods"} 1.0' in text


async def test_a_body_that_arrives_in_pieces_is_read_whole(http: TestClient) -> None:
    body = json.dumps(review(priority_class("low", 8000, "10k"))).encode()

    async def pieces():
        for start in range(0, len(body), 100):
            yield body[start : start + 100]

    response = await http.post("/validate/priorityclasses", data=pieces(), headers={"Content-Type": "application/json"})
    assert response.status == 200
    assert (await response.json())["response"]["status"]["code"] == 422


@pytest.fixture
async def guard_http() -> AsyncIterator[TestClient]:
    from preemption_toleration.guard.adapter.guard_endpoint import GuardHooks
    from preemption_toleration.guard.verdicts import GuardConfig
    from preemption_toleration.inventory.view import ClusterView

    READY["value"] = False  # caches not synced: only the fast path can answer
    hooks = GuardHooks(ClusterView, GuardConfig(), lambda refusal, count: None)
    app = webhook_app(lambda: snapshot_of({}, {}), not_ready, guard=hooks)
    async with webhook_client(app) as test_client:
        yield test_client


POD = {"group": "", "version": "v1", "resource": "pods"}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
VICTIM = {"metadata": {"name": "v", "namespace": "team"}, "spec": {"nodeName": "node-1", "priority": 1}}


async def test_guard_allows_a_request_that_cannot_be_a_preemption_before_its_caches_are_ready(
    guard_http: TestClient,
) -> None:
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="alice", uid="u-7")
    response = await guard_http.post("/guard/pods", json=payload)
    assert response.status == 200
    assert await response.json() == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u-7", "allowed": True},
    }


async def test_a_guard_without_the_extender_endpoint_answers_it_404(guard_http: TestClient) -> None:
    """`--extender off`: the guard is served, the scheduler extender's path is not."""
    response = await guard_http.post("/extender/preempt", json={"pod": {}, "nodeNameToMetaVictims": {}})
    assert response.status == 404


async def test_guard_judges_a_possible_preemption_only_from_synced_caches(guard_http: TestClient) -> None:
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="system:kube-scheduler")
    response = await guard_http.post("/guard/pods", json=payload)
    assert response.status == 503  # not the fast path: the full judgement needs the caches


GUARD_400 = [
    # (rule, change of a user's DELETE, which cannot be a preemption, the 400's message)
    ("no uid", ("uid", None), "request body is not an AdmissionReview: request.uid: Field required"),
    (
        "a victim's priority that is text",
        ("oldObject", {**VICTIM, "spec": {"priority": "high"}}),
        "request.oldObject.spec.priority: should be an integer",
    ),
    (
        "another resource",
        ("resource", {"group": "scheduling.k8s.io", "version": "v1", "resource": "priorityclasses"}),
        "/guard/pods judges core/pods, not scheduling.k8s.io/priorityclasses",
    ),
]


@pytest.mark.parametrize(("rule", "change", "message"), GUARD_400, ids=[case[0] for case in GUARD_400])
async def test_guard_reads_every_review_whole_before_its_fast_path(
    guard_http: TestClient, rule: str, change: tuple[str, Any], message: str
) -> None:
    """A malformed review is a 400 that says what is wrong, even one the fast path would have allowed."""
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="alice")
    key, value = change
    if value is None:
        del payload["request"][key]
    else:
        payload["request"][key] = value
    response = await guard_http.post("/guard/pods", json=payload)
    assert (response.status, await response.json()) == (400, {"error": message}), rule


@pytest.fixture
async def extender_http() -> AsyncIterator[TestClient]:
    """The extender and the guard in one server, on one pod index, as `ptol webhook` runs them."""
    from preemption_toleration.extender.adapter.extender_endpoint import ExtenderHooks
    from preemption_toleration.guard.adapter.guard_endpoint import GuardHooks
    from preemption_toleration.guard.verdicts import GuardConfig
    from preemption_toleration.inventory.pod_index import PodIndex
    from preemption_toleration.inventory.preemptors import PreemptorRecord
    from preemption_toleration.inventory.view import ClusterView
    from tests.unit.test_extender import CLASS_RECORDS, CLASSES, node, pod

    READY["value"] = True
    # scheduled a minute before this test runs (not at import: the suite may run long before it gets here)
    scheduled = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=60)
    pods = PodIndex.of(
        [
            pod("a", "low"),
            pod("p", "low-non-preempted"),
            pod("t", "low-10min", node="node-b", scheduled=rfc3339(scheduled)),
            pod("high", "high", cpu="3", node=None),  # the preemptor the scheduler works on
            # pending for an unrelated reason (no node has 64 CPUs), of a priority no class here tolerates
            {
                **pod("critical", "high", cpu="64", node=None),
                "spec": {**pod("critical", "high", cpu="64", node=None)["spec"], "priority": 20000},
            },
        ]
    )
    nodes = {"node-a": node("node-a"), "node-b": node("node-b", cpu="1")}
    record = PreemptorRecord()
    held: list[tuple[str, str, object]] = []
    reported: list[tuple[str, int]] = []

    def hold(preemptor, node, until) -> None:
        held.append((preemptor.name, node, until))

    guard = GuardHooks(
        lambda: ClusterView(pods=pods, nodes=nodes, classes=classes_of(CLASSES)),
        GuardConfig(),
        lambda refusal, count: reported.append((refusal.message, count)),
        hold,
        memory=GuardMemory(preemptors=record),
    )
    extender = ExtenderHooks(lambda: ClusterView(pods, nodes, CLASS_RECORDS), record, hold)
    metrics = WebhookMetrics()
    app = webhook_app(lambda: snapshot_of({}, {}), not_ready, metrics=metrics, guard=guard, extender=extender)
    async with webhook_client(app) as test_client:
        test_client.app_metrics = metrics  # type: ignore[attr-defined]
        test_client.held = held  # type: ignore[attr-defined]
        test_client.reported = reported  # type: ignore[attr-defined]
        test_client.pods = pods  # type: ignore[attr-defined]
        test_client.scheduled = scheduled  # type: ignore[attr-defined]
        yield test_client


def classes_of(bodies):
    from preemption_toleration.records.priority_class import class_view

    return {name: class_view(body) for name, body in bodies.items()}


async def test_extender_leaves_out_a_node_whose_preemptor_needs_a_protected_pod(extender_http: TestClient) -> None:
    from tests.unit.test_extender import pod

    body = {
        "Pod": pod("high", "high", cpu="3", node=None),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-a"}, {"UID": "uid-p"}], "NumPDBViolations": 0}},
    }
    response = await extender_http.post("/extender/preempt", json=body)
    assert response.status == 200
    assert await response.json() == {"NodeNameToMetaVictims": {}}
    dropped = extender_http.app_metrics.extender_nodes.labels("dropped")  # type: ignore[attr-defined]
    assert dropped._value.get() == 1


EXTENDER_BAD_BODIES = [
    ("not JSON", b"{", "not JSON"),
    ("a JSON list", b"[]", "JSON list, not an ExtenderPreemptionArgs"),
    ("no Pod", json.dumps({"NodeNameToMetaVictims": {}}).encode(), "Pod"),
    (
        "a UID of the wrong type",
        json.dumps({"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 3}]}}}).encode(),
        "UID",
    ),
    (
        "victims that are not a list",
        json.dumps({"Pod": {}, "NodeNameToVictims": {"n": {"Pods": "all"}}}).encode(),
        "Pods",
    ),
]


@pytest.mark.parametrize(("rule", "body", "message"), EXTENDER_BAD_BODIES, ids=[c[0] for c in EXTENDER_BAD_BODIES])
async def test_extender_refuses_a_malformed_request_with_400_and_a_reason(
    extender_http: TestClient, rule: str, body: bytes, message: str
) -> None:
    response = await extender_http.post("/extender/preempt", data=body, headers={"Content-Type": "application/json"})
    assert response.status == 400, rule
    assert message in (await response.json())["error"], rule


async def test_extender_answers_503_until_the_caches_are_synced(extender_http: TestClient) -> None:
    READY["value"] = False
    response = await extender_http.post("/extender/preempt", json={"Pod": {}, "NodeNameToMetaVictims": {}})
    assert response.status == 503


def _scheduler_deletes(victim: dict) -> dict:
    payload = review(None, old=victim, operation="DELETE", resource=POD, kind=POD_KIND, user="system:kube-scheduler")
    payload["request"]["name"], payload["request"]["namespace"] = victim["metadata"]["name"], "team"
    return payload


async def test_the_guard_judges_a_victim_against_the_preemptor_the_extender_was_called_for(
    extender_http: TestClient,
) -> None:
    """Exact preemptor: `critical` pends for an unrelated reason; the scheduler works on `high`, which the
    victim tolerates. Inference alone names `critical` and allows; the extender call's record refuses."""
    from tests.unit.test_extender import pod

    victim = pod("p", "low-non-preempted")
    inferred = await (await extender_http.post("/guard/pods", json=_scheduler_deletes(victim))).json()
    assert inferred["response"]["allowed"] is True, "inference takes the pending critical pod"

    call = {
        "Pod": pod("high", "high", cpu="3", node=None),
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-p"}, {"UID": "uid-a"}]}},
    }
    assert (await extender_http.post("/extender/preempt", json=call)).status == 200
    recorded = await (await extender_http.post("/guard/pods", json=_scheduler_deletes(victim))).json()
    assert recorded["response"]["allowed"] is False
    assert "team/high, priority 9000" in recorded["response"]["status"]["message"]
    sources = extender_http.app_metrics.preemptor_sources  # type: ignore[attr-defined]
    assert (sources.value("inferred"), sources.value("recorded")) == (1, 1)
    assert extender_http.app_metrics.refusals_of("team/high") == 1  # type: ignore[attr-defined]


def _scheduler_marks(victim: dict) -> dict:
    """The scheduler's `DisruptionTarget` status update of `victim`, which precedes its DELETE."""
    marked = json.loads(json.dumps(victim))
    marked["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "preempting"}
    )
    payload = review(marked, old=victim, operation="UPDATE", resource=POD, kind=POD_KIND, user="system:kube-scheduler")
    payload["request"].update(name=victim["metadata"]["name"], namespace="team", subResource="status")
    return payload


async def test_the_delete_after_an_allowed_mark_is_judged_against_the_marks_preemptor(
    extender_http: TestClient,
) -> None:
    """The mark is judged against `critical` (pending, unrelated, inferred) and allowed. Then `high` is
    nominated to the node, so a new guess would name it, and refuse. The DELETE that follows the mark is
    judged against the mark's preemptor, so the pod is not left marked but running."""
    from tests.unit.test_extender import pod

    victim = pod("p", "low-non-preempted")
    mark = await (await extender_http.post("/guard/pods", json=_scheduler_marks(victim))).json()
    assert mark["response"]["allowed"] is True
    pods = extender_http.pods  # type: ignore[attr-defined]
    pods.put(pod("high", "high", cpu="3", node=None, status__nominatedNodeName="node-a"))
    pods.put(pod("q", "low-non-preempted"))  # not marked: judged by a new guess

    deleted = await (await extender_http.post("/guard/pods", json=_scheduler_deletes(victim))).json()
    assert deleted["response"]["allowed"] is True, deleted["response"]
    guessed = await (
        await extender_http.post("/guard/pods", json=_scheduler_deletes(pod("q", "low-non-preempted")))
    ).json()
    assert (
        guessed["response"]["allowed"] is False
        and "team/high, priority 9000" in guessed["response"]["status"]["message"]
    )
    sources = extender_http.app_metrics.preemptor_sources  # type: ignore[attr-defined]
    assert (sources.value("inferred"), sources.value("recorded")) == (2, 1)


async def test_a_scheduler_retrying_a_refused_victim_is_counted_each_time_and_reported_once(
    extender_http: TestClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Asynchronous preemption retries a refused victim at once: every refusal is answered and counted,
    but the log line and the Event are written once per interval, standing for the repeats."""
    from tests.unit.test_extender import pod

    call = {
        "Pod": pod("high", "high", cpu="3", node=None),
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-p"}, {"UID": "uid-a"}]}},
    }
    assert (await extender_http.post("/extender/preempt", json=call)).status == 200
    with caplog.at_level("INFO", logger="preemption_toleration"):
        for _ in range(5):
            answer = await (
                await extender_http.post("/guard/pods", json=_scheduler_deletes(pod("p", "low-non-preempted")))
            ).json()
            assert answer["response"]["allowed"] is False and answer["response"]["status"]["code"] == 403
    refusals = extender_http.app_metrics.guard_refusals  # type: ignore[attr-defined]
    assert refusals.value("delete", "Forever", "enforce", "pod") == 5
    assert extender_http.app_metrics.refusals_of("team/high") == 5  # type: ignore[attr-defined]
    [(message, count)] = extender_http.reported  # type: ignore[attr-defined]
    assert count == 1 and "team/high, priority 9000" in message
    logged = [r for r in caplog.records if r.getMessage() in ("preemption refused", "admission decision")]
    assert [r.getMessage() for r in logged] == ["preemption refused"]


async def test_the_refusal_of_an_immediate_retry_is_held(extender_http: TestClient) -> None:
    """Asynchronous preemption retries at once; the guard holds the repeat's refusal (`--retry-hold-seconds`),
    which paces the retries. A hold only delays: the answer is the same refusal."""
    from preemption_toleration.guard.repeats import RetryPacer
    from tests.unit.test_extender import pod

    extender_http.server.webhook.guard.retry_pacer = RetryPacer(0.5)  # type: ignore[attr-defined]
    call = {
        "Pod": pod("high", "high", cpu="3", node=None),
        "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-p"}, {"UID": "uid-a"}]}},
    }
    assert (await extender_http.post("/extender/preempt", json=call)).status == 200
    answers, took = [], []
    for _ in range(2):
        started = time.monotonic()
        response = await extender_http.post("/guard/pods", json=_scheduler_deletes(pod("p", "low-non-preempted")))
        answers.append((await response.json())["response"])
        took.append(time.monotonic() - started)
    assert [(a["allowed"], a["status"]["code"]) for a in answers] == [(False, 403), (False, 403)]
    assert took[1] >= 0.5, "the immediate retry was answered without its hold"
    assert took[0] < took[1], "the first refusal was held"
    guard_latency = extender_http.app_metrics.latency.series("guard")  # type: ignore[attr-defined]
    assert sum(guard_latency.counts) == 2 and guard_latency.total < 0.5, "the hold counted as latency"


async def test_a_time_limited_toleration_that_drops_a_node_plans_a_nudge_at_its_end(extender_http: TestClient) -> None:
    from tests.unit.test_extender import pod

    call = {
        "Pod": pod("high", "high", cpu="1", node=None),
        "NodeNameToMetaVictims": {"node-b": {"Pods": [{"UID": "uid-t"}]}},
    }
    response = await extender_http.post("/extender/preempt", json=call)
    assert await response.json() == {"NodeNameToMetaVictims": {}}
    assert extender_http.held == [  # type: ignore[attr-defined]
        ("high", "node-b", extender_http.scheduled + timedelta(seconds=600))
    ]  # type: ignore[attr-defined]


async def test_while_draining_the_server_is_not_ready_and_every_answer_closes_its_connection() -> None:
    READY["value"] = True
    webhook = webhook_app(lambda: snapshot_of({}, {}), not_ready)
    async with webhook_client(webhook) as http:
        answer = await http.post("/validate/priorityclasses", json=review(priority_class("low", 8000)))
        assert answer.status == 200 and answer.headers.get("Connection") != "close"
        webhook.draining = True
        answer = await http.post("/validate/priorityclasses", json=review(priority_class("low", 8000)))
        assert answer.status == 200 and answer.headers.get("Connection") == "close"
        readyz = await http.get("/readyz")
        assert (readyz.status, await readyz.text()) == (503, "shutting down")
        assert readyz.headers.get("Connection") == "close"
        for answer in (  # answers no handler gives close it too
            await http.get("/validate/pods"),
            await http.post("/validate/priorityclasses", data=b"{}", headers={"Expect": "something-else"}),
        ):
            assert (answer.status, answer.headers.get("Connection")) in ((404, "close"), (417, "close"))


async def test_a_connection_accepted_before_the_drain_ends_still_gets_its_answer() -> None:
    """The race a rolling update hits under load: a client connects just before the drain's end and sends
    its request just after. Closing that connection would fail the request; it is answered instead, with
    `Connection: close`, and only new connections are refused."""
    READY["value"] = True
    webhook = webhook_app(lambda: snapshot_of({}, {}), not_ready)
    runner = web.ServerRunner(webhook.build())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def stop() -> None:  # what run_webhook does on SIGTERM
        await drain(webhook, runner, delay=0.2, last_requests=5)
        await runner.cleanup()

    stopping = asyncio.create_task(stop())
    try:
        # the drain's delay passes (the connection is idle), then the site stops listening
        while runner.sites:
            await asyncio.sleep(0.01)
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), timeout=5)  # to the end: the server closes it
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        assert b"Connection: close" in answer, answer
        await asyncio.wait_for(stopping, timeout=5)  # no connection left: no need to wait 5 s
    finally:
        writer.close()
        await runner.cleanup()


async def test_a_mutation_answer_is_written_in_the_api_servers_field_names() -> None:
    """The AdmissionResponse is written with the rest of the review: camelCase names, the patch in
    base64, and no field for what is unset (the API server refuses a response with an unknown field)."""
    import base64

    governing = {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": "forever", "creationTimestamp": "2026-11-01T00:00:00Z", "generation": 1},
        "spec": {"priorityClassName": "low-np", "minimumPreemptablePriority": 10000, "tolerationSeconds": -1},
    }
    snapshot = snapshot_of({"forever": governing}, {})
    app = webhook_app(lambda: snapshot, not_ready)
    async with webhook_client(app) as client:
        created = priority_class("low-np", 8000, "9000")  # the policy says 10000: set, with a warning
        response = await client.post("/mutate/priorityclasses", json=review(created, uid="u-1"))
        body = await response.json()
    answer = body["response"]
    assert sorted(answer) == ["allowed", "patch", "patchType", "uid", "warnings"]
    assert (answer["uid"], answer["allowed"], answer["patchType"]) == ("u-1", True, "JSONPatch")
    minimum, seconds = (f"/metadata/annotations/{key.replace('/', '~1')}" for key in (MIN, TOL))
    assert json.loads(base64.b64decode(answer["patch"])) == [
        {"op": "add", "path": minimum, "value": "10000"},
        {"op": "add", "path": seconds, "value": "-1"},
    ]
    assert answer["warnings"] == [
        f'PriorityClass "low-np": {MIN} set to "10000" by PreemptionTolerationPolicy "forever" (was "9000").'
    ]


async def test_metrics_apart_are_served_on_their_own_server_only() -> None:
    """`--metrics-address`: /metrics moves to a port of its own, which a NetworkPolicy can close."""
    READY["value"] = True
    app = webhook_app(lambda: snapshot_of({}, {}), not_ready, metrics_apart=True)
    async with webhook_client(app) as webhooks, webhook_client(app, WebhookApp.metrics_server) as metrics:
        assert (await webhooks.get("/metrics")).status == 404
        assert (await webhooks.get("/healthz")).status == 200
        served = await metrics.get("/metrics")
        assert served.status == 200 and "ptol_webhook_requests_total" in await served.text()
        assert (await metrics.get("/healthz")).status == 404
        assert (await metrics.post("/metrics")).status == 405


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://127.0.0.1:0", "https://127.0.0.1:8443"),
        ("https://127.0.0.1:0/", "https://127.0.0.1:8443/"),
        ("https://[::1]:0", "https://[::1]:8443"),
        ("https://127.0.0.1:9443", "https://127.0.0.1:9443"),  # a port of its own: kept
        ("https://host:0/base:0", "https://host:8443/base:0"),  # only the port, not a `:0` in the path
    ],
)
def test_a_registered_url_gets_the_bound_port_only_in_place_of_port_0(url: str, expected: str) -> None:
    from preemption_toleration.webhooks.self_registration import with_bound_port

    assert with_bound_port(url, 8443) == expected


async def test_a_client_that_hangs_up_mid_body_gets_one_quiet_line(http: TestClient, caplog) -> None:
    """An API server that gives up in the middle of a body is the client's doing: one INFO line, no traceback,
    and the server answers the next client."""
    reader, writer = await asyncio.open_connection(http.server.host, http.server.port)
    writer.write(b'POST /validate/priorityclasses HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"apiVersion"')
    await writer.drain()
    with caplog.at_level(logging.DEBUG):
        writer.close()
        await writer.wait_closed()

        async def logged() -> list[logging.LogRecord]:
            while not any("hung up" in record.getMessage() for record in caplog.records):
                await asyncio.sleep(0.01)
            return caplog.records

        records = await asyncio.wait_for(logged(), timeout=10)
    assert [(r.levelname, r.getMessage()) for r in records if r.levelno >= logging.INFO] == [
        ("INFO", "client hung up in the middle of its request")
    ]
    assert not any(record.exc_info for record in records)
    assert (await http.get("/healthz")).status == 200


async def test_the_guard_answers_503_for_a_member_of_a_group_while_podgroups_are_not_listed() -> None:
    """PodGroups unlisted (say, the role misses them after an upgrade of the image alone): the server stays
    ready and decides about lone pods; about a member of a group it answers 503 with the reason, which
    the API server treats by the guard's failurePolicy, alike for every member."""
    from preemption_toleration.guard.adapter.guard_endpoint import GuardHooks
    from preemption_toleration.guard.verdicts import GuardConfig
    from preemption_toleration.inventory.pod_index import PodIndex
    from preemption_toleration.inventory.view import ClusterView
    from tests.unit.test_extender import CLASS_RECORDS, node, pod

    READY["value"] = True
    member = pod("member", "low-non-preempted", spec__schedulingGroup={"podGroupName": "job"})
    lone = pod("lone", "low-non-preempted")
    preemptor = pod("high", "high", node=None)
    problem = "podgroups: not listed yet (last problem: 403 Forbidden)"

    def state() -> ClusterView:
        pods = PodIndex.of([member, lone, preemptor])
        return ClusterView(pods, {"node-a": node("node-a")}, CLASS_RECORDS, groups_problem=problem)

    hooks = GuardHooks(state, GuardConfig(), lambda refusal, count: None)
    async with webhook_client(webhook_app(lambda: snapshot_of({}, {}), not_ready, guard=hooks)) as guard_http:
        assert (await guard_http.get("/readyz")).status == 200
        answered = await guard_http.post("/guard/pods", json=_scheduler_deletes(member))
        assert (answered.status, await answered.json()) == (503, {"error": f"caches are not ready: {problem}"})
        decided = await guard_http.post("/guard/pods", json=_scheduler_deletes(lone))
        assert decided.status == 200 and (await decided.json())["response"]["allowed"] is False
