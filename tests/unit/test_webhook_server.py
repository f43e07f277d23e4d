"""The webhook HTTP server: AdmissionReview in and out, bad input, health, readiness, metrics."""

import json
from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from preemption_toleration.kube.informer import CacheStats
from preemption_toleration.webhooks.decisions import snapshot_of
from preemption_toleration.webhooks.metrics import WebhookMetrics
from preemption_toleration.webhooks.server import WebhookApp
from tests.unit.admission_payloads import review
from tests.unit.kube_objects import priority_class

READY = {"value": True}


@pytest.fixture
async def http() -> AsyncIterator[TestClient]:
    READY["value"] = True
    metrics = WebhookMetrics()
    metrics.track_caches(lambda: [CacheStats("priorityclasses", 3, 1, 0), CacheStats("pods", 120, 2, 1)])
    app = WebhookApp(lambda: snapshot_of({}, {}), lambda: READY["value"], metrics=metrics,
                     max_body_bytes=64 * 1024).build()
    async with TestClient(TestServer(app)) as test_client:
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
    ("not an AdmissionReview", json.dumps({"kind": "Pod"}).encode(), "not an AdmissionReview"),
    ("no uid", json.dumps({**review(priority_class("a", 1)), "request": {"kind": {}}}).encode(),
     "not an AdmissionReview"),
    ("wrong resource for the endpoint",
     json.dumps(review({"metadata": {"name": "p"}}, resource={"group": "", "version": "v1", "resource": "pods"})).encode(),
     "judges scheduling.k8s.io/priorityclasses, not core/pods"),
    ("create without object", json.dumps(review(None)).encode(), "needs request.object"),
    ("object of the wrong type", json.dumps({**review(None), "request": {**review(None)["request"],
                                                                         "object": "text"}}).encode(),
     "not an AdmissionReview"),
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


async def test_not_ready_until_synced(http: TestClient) -> None:
    READY["value"] = False
    assert (await http.get("/readyz")).status == 503
    assert (await http.get("/healthz")).status == 200
    response = await http.post("/validate/priorityclasses", json=review(priority_class("low", 8000)))
    assert response.status == 503
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
            yield body[start:start + 100]

    response = await http.post("/validate/priorityclasses", data=pieces(),
                               headers={"Content-Type": "application/json"})
    assert response.status == 200
    assert (await response.json())["response"]["status"]["code"] == 422


@pytest.fixture
async def guard_http() -> AsyncIterator[TestClient]:
    from preemption_toleration.guard.decisions import GuardConfig, GuardSnapshot
    from preemption_toleration.webhooks.server import GuardHooks

    READY["value"] = False  # caches not synced: only the fast path can answer
    hooks = GuardHooks(GuardSnapshot, GuardConfig(), lambda refusal: None)
    app = WebhookApp(lambda: snapshot_of({}, {}), lambda: READY["value"], guard=hooks).build()
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


POD = {"group": "", "version": "v1", "resource": "pods"}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
VICTIM = {"metadata": {"name": "v", "namespace": "team"}, "spec": {"nodeName": "node-1", "priority": 1}}


async def test_guard_answers_a_request_that_cannot_be_a_preemption_from_the_raw_json(guard_http: TestClient) -> None:
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="alice", uid="u-7")
    response = await guard_http.post("/guard/pods", json=payload)
    assert response.status == 200
    assert await response.json() == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                     "response": {"uid": "u-7", "allowed": True}}


async def test_guard_judges_a_possible_preemption_only_from_synced_caches(guard_http: TestClient) -> None:
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="system:kube-scheduler")
    response = await guard_http.post("/guard/pods", json=payload)
    assert response.status == 503  # not the fast path: the full judgement needs the caches


async def test_guard_fast_path_still_refuses_a_malformed_review(guard_http: TestClient) -> None:
    payload = review(None, old=VICTIM, operation="DELETE", resource=POD, kind=POD_KIND, user="alice")
    del payload["request"]["uid"]
    response = await guard_http.post("/guard/pods", json=payload)
    assert response.status == 400 and "not an AdmissionReview" in (await response.json())["error"]


@pytest.fixture
async def extender_http() -> AsyncIterator[TestClient]:
    from tests.unit.test_extender import CLASSES, node, pod
    from preemption_toleration.extender.decisions import ExtenderView
    from preemption_toleration.inventory.pods import PodIndex

    READY["value"] = True
    pods = PodIndex.of([pod("a", "low"), pod("p", "low-non-preempted")])
    view = ExtenderView(pods, {"node-a": node("node-a")}, CLASSES.get)
    metrics = WebhookMetrics()
    app = WebhookApp(lambda: snapshot_of({}, {}), lambda: READY["value"], metrics=metrics, extender=lambda: view)
    async with TestClient(TestServer(app.build())) as test_client:
        test_client.app_metrics = metrics  # type: ignore[attr-defined]
        yield test_client


async def test_extender_leaves_out_a_node_whose_preemptor_needs_a_protected_pod(extender_http: TestClient) -> None:
    from tests.unit.test_extender import pod

    body = {"Pod": pod("high", "high", cpu="3", node=None), "NodeNameToVictims": None,
            "NodeNameToMetaVictims": {"node-a": {"Pods": [{"UID": "uid-a"}, {"UID": "uid-p"}], "NumPDBViolations": 0}}}
    response = await extender_http.post("/extender/preempt", json=body)
    assert response.status == 200
    assert await response.json() == {"NodeNameToMetaVictims": {}}
    dropped = extender_http.app_metrics.extender_nodes.labels("dropped")  # type: ignore[attr-defined]
    assert dropped._value.get() == 1


EXTENDER_BAD_BODIES = [
    ("not JSON", b"{", "not JSON"),
    ("a JSON list", b"[]", "JSON list, not an ExtenderPreemptionArgs"),
    ("no Pod", json.dumps({"NodeNameToMetaVictims": {}}).encode(), "Pod"),
    ("a UID of the wrong type", json.dumps({"Pod": {}, "NodeNameToMetaVictims": {"n": {"Pods": [{"UID": 3}]}}}).encode(),
     "UID"),
    ("victims that are not a list", json.dumps({"Pod": {}, "NodeNameToVictims": {"n": {"Pods": "all"}}}).encode(),
     "Pods"),
]


@pytest.mark.parametrize(("rule", "body", "message"), EXTENDER_BAD_BODIES, ids=[c[0] for c in EXTENDER_BAD_BODIES])
async def test_extender_refuses_a_malformed_request_with_400_and_a_reason(
        extender_http: TestClient, rule: str, body: bytes, message: str) -> None:
    response = await extender_http.post("/extender/preempt", data=body, headers={"Content-Type": "application/json"})
    assert response.status == 400, rule
    assert message in (await response.json())["error"], rule


async def test_extender_answers_503_until_the_caches_are_synced(extender_http: TestClient) -> None:
    READY["value"] = False
    response = await extender_http.post("/extender/preempt", json={"Pod": {}, "NodeNameToMetaVictims": {}})
    assert response.status == 503
