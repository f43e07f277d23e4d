"""The locally built kube-scheduler calls an extender's `preemptVerb` (the PR #103030 fix is in)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.devcluster import LocalCluster
from tests.builders import pod
from tests.integration.conftest import MakeNode
from tests.integration.helpers import eventually
from tests.integration.objects import low_and_high, low_pods_running, pods_in

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]


class RecordingExtender:
    """Answers preempt calls with the scheduler's own victims and records each request."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def preempt(self, request: web.Request) -> web.Response:
        args = await request.json()
        self.calls.append(args)
        victims = args.get("NodeNameToMetaVictims") or {
            node: {
                "Pods": [{"UID": pod["metadata"]["uid"]} for pod in entry["Pods"]],
                "NumPDBViolations": entry.get("NumPDBViolations", 0),
            }
            for node, entry in (args.get("NodeNameToVictims") or {}).items()
        }
        return web.json_response({"NodeNameToMetaVictims": victims})


@pytest.fixture
async def extender(cluster: LocalCluster) -> AsyncIterator[RecordingExtender]:
    recorder = RecordingExtender()
    app = web.Application()
    app.router.add_post("/preempt", recorder.preempt)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    # Called from the event loop's (main) thread on purpose: the scheduler is tied to that thread.
    cluster.restart_scheduler([{"urlPrefix": f"http://127.0.0.1:{port}", "preemptVerb": "preempt", "weight": 1}])
    try:
        yield recorder
    finally:
        cluster.restart_scheduler()
        await runner.cleanup()


async def test_scheduler_calls_extender_during_preemption(
    api: ApiClient, namespace: str, make_node: MakeNode, extender: RecordingExtender
) -> None:
    core = client.CoreV1Api(api)
    async with low_and_high(api) as (low, high):
        node = await make_node(cpu="2")
        await low_pods_running(api, namespace, low, 2)
        await core.create_namespaced_pod(namespace, pod("high", class_name=high, namespace=None, cpu="2"))
        await eventually(
            lambda: pods_in(api, namespace),
            lambda items: [p.metadata.name for p in items if p.spec.node_name] == ["high"],
            what="high bound after preempting both low pods",
        )
        assert extender.calls, "the scheduler never called the extender's preemptVerb"
        call = extender.calls[0]
        assert call["Pod"]["metadata"]["name"] == "high"
        victims = call["NodeNameToVictims"][node.metadata.name]["Pods"]
        assert sorted(p["metadata"]["name"] for p in victims) == ["low-0", "low-1"]
