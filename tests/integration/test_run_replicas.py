"""`ptol run --webhook-replicas 2`, live: the chart's two replicas on this machine, two webhook processes that
share nothing but the cluster, behind one address that spreads the API server's connections over them. Each
answers; and steering with two replicas preempts for two preemptors as one replica does, neither nomination
cleared."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from tests.integration import steering as bed
from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl, MakeNode
from tests.integration.helpers import START_SECONDS, unique_name
from tests.integration.objects import MIN, TOL
from tests.metrics import total

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


async def test_concurrent_calls_are_answered_by_both_replicas(
    api: ApiClient, kubectl: Kubectl, components: RunProcess
) -> None:
    """Twenty PriorityClasses created at once: the API server calls the validating webhook on several
    connections, which the address spreads over both replicas; a bad annotation is refused with the message
    a person can act on, whichever answers."""
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
        assert all(later > earlier for earlier, later in zip(before, after, strict=True)), (before, after)
        messages = set()
        for n in range(4):
            annotated = kubectl("annotate", "priorityclass", f"{prefix}-{n}", f"{TOL}=soon", "--overwrite", check=False)
            assert annotated.returncode != 0, "refused"
            messages.add(annotated.stderr.strip().replace(f"{prefix}-{n}", "NAME"))
        [message] = messages
        assert TOL in message and "soon" in message, message
    finally:
        for body in bodies:
            kubectl("delete", "priorityclass", body["metadata"]["name"], "--ignore-not-found", check=False)


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
