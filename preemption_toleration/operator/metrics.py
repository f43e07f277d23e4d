"""Prometheus metrics of the operator, served on /metrics by `ptol operator --metrics HOST:PORT`."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from preemption_toleration.telemetry import declared
from preemption_toleration.telemetry.collectors import counter, gauge
from preemption_toleration.telemetry.declared import Result, ResyncOutcome, WriteAction


class OperatorMetrics:
    """The operator's metrics, each built from its row in `telemetry.declared`."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = counter(declared.OPERATOR_RECONCILES, self.registry)
        self.writes = counter(declared.OPERATOR_WRITES, self.registry)
        self.status_patches = counter(declared.OPERATOR_STATUS_PATCHES, self.registry)
        self.objects = gauge(declared.OPERATOR_CACHE_OBJECTS, self.registry)
        self.resyncs = counter(declared.OPERATOR_RESYNCS, self.registry)
        self.restarts = counter(declared.OPERATOR_RESTARTS, self.registry)
        self.policies = gauge(declared.OPERATOR_POLICIES, self.registry)

    def reconciled(self, result: Result) -> None:
        self.reconciles.labels(result.value).inc()

    def wrote(self, action: WriteAction, result: Result) -> None:
        self.writes.labels(action.value, result.value).inc()

    def resynced(self, outcome: ResyncOutcome) -> None:
        self.resyncs.labels(outcome.value).inc()


async def serve_metrics(metrics: OperatorMetrics, host: str, port: int) -> web.AppRunner:
    async def handle(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
