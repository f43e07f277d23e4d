"""`ptol run --webhook-replicas 2`, live: the chart's two replicas on this machine, two webhook processes that
share nothing but the cluster, behind one address that spreads the API server's connections over them. Each
answers; and steering with two replicas preempts for two preemptors as one replica does, neither nomination
cleared."""

from __future__ import annotations

import asyncio
import base64
import ssl
import time
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.paths import VALIDATE_PRIORITY_CLASSES_PATH
from preemption_toleration.manifests.webhook_configurations import NAME
from tests.integration import steering as bed
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import START_SECONDS, unique_name
from tests.integration.objects import MIN, TOL
from tests.metrics import total
from tests.unit.admission_payloads import review

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

REPLICAS = 2
components = ptol_run_fixture("--extender", "off", "--steering", "on", "--webhook-replicas", str(REPLICAS))


async def replica_totals(process: RunProcess, metric: str, **labels: str) -> list[float]:
    """Each replica's `metric{labels}`: replica i serves /metrics on the given port plus i, once it has
    started (the first registers the configurations; the others may still be listing then)."""
    base, _, port = process.metrics_base.rpartition(":")
    found = []
    async with aiohttp.ClientSession() as session:
        for index in range(REPLICAS):
            found.append(total(await _metrics(session, f"{base}:{int(port) + index}/metrics"), metric, **labels))
    return found


async def _metrics(session: aiohttp.ClientSession, url: str) -> str:
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            async with session.get(url) as response:
                return await response.text()
        except aiohttp.ClientConnectorError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


async def test_both_replicas_refuse_a_bad_annotation_with_the_same_message(
    api: ApiClient, kubectl: Kubectl, components: RunProcess
) -> None:
    """Twenty PriorityClasses created at once are admitted through the one address the configurations call,
    and a bad annotation is refused by kubectl with the message a person can act on. Which replica the API
    server reaches is its connections' affair (it keeps one for many calls), so each replica is then asked
    itself: fresh connections to the address go to the replicas in turn, and each refuses the same review with
    the same message kubectl printed."""
    scheduling = client.SchedulingV1Api(api)
    prefix = unique_name("rep")
    before = await replica_totals(components, "ptol_webhook_requests_total")
    bodies = [
        {"metadata": {"name": f"{prefix}-{n}", "annotations": {MIN: "10000", TOL: "60"}}, "value": 1000 + n}
        for n in range(20)
    ]
    try:
        await asyncio.gather(*(scheduling.create_priority_class(body) for body in bodies))
        after = await replica_totals(components, "ptol_webhook_requests_total")
        assert sum(after) - sum(before) >= len(bodies), (before, after)
        annotated = kubectl("annotate", "priorityclass", f"{prefix}-0", f"{TOL}=soon", "--overwrite", check=False)
        assert annotated.returncode != 0, "refused"
        assert TOL in annotated.stderr and "soon" in annotated.stderr, annotated.stderr

        url, ca = await _address(api, VALIDATE_PRIORITY_CLASSES_PATH)
        old = {"metadata": {"name": f"{prefix}-0", "annotations": {MIN: "10000", TOL: "60"}}, "value": 1000}
        new = {"metadata": {"name": f"{prefix}-0", "annotations": {MIN: "10000", TOL: "soon"}}, "value": 1000}
        counted = await replica_totals(components, "ptol_webhook_requests_total")
        answered, messages = counted, set()
        # One connection each: the address hands each to the next replica, so REPLICAS asks reach them all
        # unless the API server opens a connection in between; a few more asks allow for that.
        for _ in range(3 * REPLICAS):
            verdict = await _ask_once(url, ca, review(new, old=old, operation="UPDATE"))
            assert verdict["allowed"] is False, verdict
            messages.add(verdict["status"]["message"])
            answered = await replica_totals(components, "ptol_webhook_requests_total")
            if all(later > earlier for earlier, later in zip(counted, answered, strict=True)):
                break
        assert all(later > earlier for earlier, later in zip(counted, answered, strict=True)), (counted, answered)
        [message] = messages
        assert message in annotated.stderr, (message, annotated.stderr)
    finally:
        for body in bodies:
            kubectl("delete", "priorityclass", body["metadata"]["name"], "--ignore-not-found", check=False)


async def _address(api: ApiClient, path: str) -> tuple[str, ssl.SSLContext]:
    """The URL the validating configuration calls for `path`, and a TLS context trusting its CA bundle."""
    configuration = await client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(NAME)
    for webhook in configuration.webhooks:
        url = webhook.client_config.url or ""
        if url.endswith(path):
            context = ssl.create_default_context(cadata=base64.b64decode(webhook.client_config.ca_bundle).decode())
            return url, context
    raise AssertionError(f"no webhook of {NAME} calls {path}")


async def _ask_once(url: str, context: ssl.SSLContext, body: dict[str, Any]) -> dict[str, Any]:
    """`body` posted on a connection of its own (closed after), and the review's response."""
    connector = aiohttp.TCPConnector(ssl=context, force_close=True)
    async with aiohttp.ClientSession(connector=connector) as session, session.post(url, json=body) as response:
        assert response.status == 200, await response.text()
        answer: dict[str, Any] = (await response.json())["response"]
        return answer


async def test_two_preemptors_are_steered_with_two_replicas_and_neither_nomination_is_cleared(
    api: ApiClient,
    namespace: str,
    make_node: MakeNode,
    components: RunProcess,
    steering_classes: dict[str, str],
) -> None:
    """`bed.second_of_two_preemptors` with two replicas: both preemptors bind, the protected pod stays, and no
    replica cleared a nomination (one replica's steered nomination is every replica's)."""
    holders = await bed.second_of_two_preemptors(api, namespace, make_node, steering_classes)
    print(f"acted for first, second: {holders}")
    assert all(holder.startswith(("run-0-", "run-1-")) for holder in holders.values()), holders
    assert sum(await replica_totals(components, "ptol_steering_total", outcome="unblocked")) == 0
    assert sum(await replica_totals(components, "ptol_steering_total", outcome="steered")) >= 2
