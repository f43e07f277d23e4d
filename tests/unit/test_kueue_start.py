"""A server with Kueue's boost on starts ready only once Kueue's caches are listed and its booster has planned
every Workload from them, where Kueue is installed: a replica that took a Workload's creation before would hold
nothing (it would know no protected Workload to boost), and Kueue tries the Workload at once."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube.events import EventRecorder
from preemption_toleration.kueue.adapter.worker import NOT_PLANNED, KueueWorker
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.webhooks import runner
from tests.unit.test_heap_freeze import Caches

KUEUE_CACHES = ["workloads: not listed yet", "workloadpriorityclasses: not listed yet", "clusterqueues: not listed yet"]


@pytest.fixture
async def api() -> AsyncIterator[ApiClient]:
    async with ApiClient() as api:  # never called: no informer is started
        yield api


def worker(api: ApiClient, served: bool) -> KueueWorker:
    return KueueWorker(
        api,
        logging.getLogger("test"),
        pods=PodIndex(),
        classes=dict,
        policies=dict,
        class_generation=lambda: 0,
        server_problems=list,
        metrics=WebhookMetrics(),
        events=EventRecorder(client.CoreV1Api(api), "test", logging.getLogger("test")),
        page_size=500,
        stale_after=60.0,
        served=served,
    )


async def start(caches: Caches, kueue: KueueWorker) -> bool:
    try:
        return await asyncio.wait_for(runner._synced_or_stopped(caches, kueue, asyncio.Event()), timeout=5)  # type: ignore[arg-type]
    finally:
        gc.unfreeze()


async def test_readiness_names_kueues_caches_while_the_server_starts(api: ApiClient) -> None:
    """Kueue installed, its caches not listed: /readyz says so beside the server's own caches."""
    caches = Caches(groups=None)
    readiness = runner._readiness(caches, worker(api, served=True))  # type: ignore[arg-type]
    assert readiness("all") == KUEUE_CACHES


async def test_the_start_waits_for_kueues_caches_and_the_first_plan_then_goes_on(api: ApiClient, caplog) -> None:
    """Listed while the start waits, it waits on for the booster's first plan of every Workload (the hold reads
    what it found), then goes on at once, says nothing, and /readyz is clear."""
    kueue = worker(api, served=True)
    caches = Caches(groups=None)
    readiness = runner._readiness(caches, kueue)  # type: ignore[arg-type]
    started = asyncio.create_task(start(caches, kueue))
    await asyncio.sleep(0.05)
    assert not started.done(), "the start waits for Kueue's caches"
    with caplog.at_level(logging.WARNING, "preemption_toleration.webhooks"):
        for informer in kueue.informers():
            informer.synced.set()
        await asyncio.sleep(0.05)
        assert not started.done(), "the start waits for the booster's first plan"
        assert readiness("all") == [NOT_PLANNED]
        assert await kueue.booster.step(), "the booster plans every Workload once the caches are listed"
        assert await started
    assert caplog.records == []
    assert readiness("all") == []


async def test_the_start_waits_for_kueues_caches_a_while_then_is_ready_without_them(
    api: ApiClient, monkeypatch, caplog
) -> None:
    """Never listed (say, a role that misses ClusterQueues after an upgrade of the image alone): ready after
    `KUEUE_START_WAIT_SECONDS`, saying why; /readyz no longer names them (a Kueue watch that fails must not take
    the guard out of service), while the booster still waits for them."""
    monkeypatch.setattr(runner, "KUEUE_START_WAIT_SECONDS", 0.05)
    kueue = worker(api, served=True)
    caches = Caches(groups=None)
    with caplog.at_level(logging.WARNING, "preemption_toleration.webhooks"):
        assert await start(caches, kueue)
    assert [(record.getMessage(), record.problems) for record in caplog.records] == [
        (
            "kueue's boost not started yet: ready without it; no boost is written and no Workload's creation is"
            " held until it is",
            KUEUE_CACHES,
        )
    ]
    assert runner._readiness(caches, kueue)("all") == []  # type: ignore[arg-type]
    assert kueue.problems() == KUEUE_CACHES, "the booster and the hold wait for them"


async def test_without_kueue_installed_the_start_does_not_wait_for_its_caches(api: ApiClient) -> None:
    """Kueue not served (`--kueue on` where it is not installed): ready as without it."""
    kueue = worker(api, served=False)
    caches = Caches(groups=None)
    assert runner._readiness(caches, kueue)("all") == []  # type: ignore[arg-type]
    assert await start(caches, kueue)
