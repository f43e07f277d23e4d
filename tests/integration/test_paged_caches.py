"""The guard decides the same when its caches list in pages of two objects as in one page.

Two `ptol webhook` processes watch the same cluster, one with `--list-page-size 2`, one with the default,
and are asked the same guard questions: a scheduler DELETE of protected and unprotected pods (whose
preemptor is inferred from the pending pods) and an eviction naming its preemptor.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.core.annotations import PREEMPTOR
from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import WebhookServer, install_crd
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import START_SECONDS, eventually, unique_name
from tests.integration.objects import MIN, TOL, apply, class_manifest
from tests.integration.pods import create_bound, read_pod

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

PAGE_SIZE = 2
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}


@pytest.fixture
def webhooks(cluster: LocalCluster) -> Iterator[tuple[WebhookServer, WebhookServer]]:
    install_crd(cluster)
    paged = WebhookServer(cluster, "webhook-paged", "--list-page-size", str(PAGE_SIZE))
    whole = WebhookServer(cluster, "webhook-whole")
    yield paged, whole
    for webhook in (paged, whole):
        webhook.process.stop()


def _review(
    namespace: str,
    name: str,
    user: str,
    operation: str,
    *,
    old: dict[str, Any] | None = None,
    eviction: dict[str, Any] | None = None,
) -> dict[str, Any]:
    kind = {"group": "", "version": "v1", "kind": "Pod"}
    request: dict[str, Any] = {
        "uid": unique_name("review"),
        "kind": kind,
        "resource": POD_RESOURCE,
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": {"username": user},
        "oldObject": old,
        "object": eviction,
    }
    if eviction is not None:
        request.update(subResource="eviction", kind={"group": "policy", "version": "v1beta1", "kind": "Eviction"})
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match is not None, f"{name} not in the metrics"
    return float(match.group(1))


async def test_guard_decides_the_same_from_caches_listed_in_pages(
    api: ApiClient,
    cluster: LocalCluster,
    kubectl: Kubectl,
    make_node: MakeNode,
    namespace: str,
    webhooks: tuple[WebhookServer, WebhookServer],
) -> None:
    protected, plain, high = unique_name("paged-protected"), unique_name("paged-low"), unique_name("paged-high")
    apply(kubectl, class_manifest(protected, annotations={MIN: "10000", TOL: "-1"}))
    apply(kubectl, class_manifest(plain))
    apply(kubectl, class_manifest(high, 9000))
    try:
        node = (await make_node(cpu="8")).metadata.name
        victims = {}
        for i in range(3):
            victims[f"protected-{i}"] = await create_bound(api, namespace, f"protected-{i}", protected, node, cpu="1")
            victims[f"plain-{i}"] = await create_bound(api, namespace, f"plain-{i}", plain, node, cpu="1")
        # Pending preemptor candidates that no scheduler picks up: the guard infers one of them.
        for i in range(3):
            await client.CoreV1Api(api).create_namespaced_pod(
                namespace,
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": f"high-{i}"},
                    "spec": {
                        "priorityClassName": high,
                        "schedulerName": "nobody",
                        "containers": [{"name": "c", "image": "pause"}],
                    },
                },
            )
        assert await read_pod(api, namespace, "high-0") is not None

        for webhook in webhooks:
            webhook.process.start()
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        async with aiohttp.ClientSession() as session:

            async def get(url: str) -> tuple[int, str]:
                try:
                    async with session.get(url, ssl=context) as response:
                        return response.status, await response.text()
                except aiohttp.ClientError as error:
                    return 0, repr(error)

            async def ask(webhook: WebhookServer, review: dict[str, Any]) -> dict[str, Any]:
                async with session.post(f"{webhook.base}/guard/pods", json=review, ssl=context) as response:
                    assert response.status == 200, await response.text()
                    answer = (await response.json())["response"]
                    answer.pop("uid")
                    return answer

            for webhook in webhooks:
                await eventually(
                    lambda webhook=webhook: get(f"{webhook.base}/readyz"),
                    lambda r: r[0] == 200,
                    timeout=START_SECONDS,
                    what=f"{webhook.process.log_path.name} ready",
                )
            questions = [
                _review(namespace, name, "system:kube-scheduler", "DELETE", old=pod) for name, pod in victims.items()
            ]
            questions.append(
                _review(
                    namespace,
                    "protected-0",
                    "alice",
                    "CREATE",
                    eviction={
                        "apiVersion": "policy/v1beta1",
                        "kind": "Eviction",
                        "metadata": {
                            "name": "protected-0",
                            "namespace": namespace,
                            "annotations": {PREEMPTOR: f"{namespace}/high-1"},
                        },
                    },
                )
            )
            paged, whole = webhooks
            answers = [await ask(paged, question) for question in questions]
            assert answers == [await ask(whole, question) for question in questions]
            _, metrics = await get(f"{paged.base}/metrics")

        refused = [answer for answer in answers if not answer["allowed"]]
        assert len(refused) == 4  # the three protected pods, and the eviction
        assert all(answer["status"]["code"] == 403 for answer in refused)
        assert f"the preemptor ({namespace}/high-0, priority 9000) is below it" in refused[0]["status"]["message"]
        assert f"the preemptor ({namespace}/high-1, priority 9000)" in refused[-1]["status"]["message"]
        pods = _metric(metrics, 'ptol_webhook_cache_objects{kind="pods"}')
        assert pods >= 9
        # the pods came in pages of two: at least ceil(pods / 2) pages for one listing
        assert _metric(metrics, 'ptol_webhook_cache_list_pages_total{kind="pods"}') >= pods // PAGE_SIZE
    finally:
        for name in (protected, plain, high):
            kubectl("delete", "priorityclass", name, "--ignore-not-found", check=False)
