"""Prometheus metrics of the operator, served on /metrics by `ptol operator --metrics HOST:PORT`."""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, generate_latest


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconciles = Counter(
            "ptol_operator_reconciles_total", "Reconciles, by result (ok, failed).", ["result"], registry=self.registry
        )
        self.writes = Counter(
            "ptol_operator_writes_total",
            "PriorityClass writes, by action (applied, released) and result (ok, failed).",
            ["action", "result"],
            registry=self.registry,
        )
        self.status_patches = Counter(
            "ptol_operator_status_patches_total", "Policy status updates.", registry=self.registry
        )
        self.objects = Gauge(
            "ptol_operator_cache_objects", "Objects the operator watches, by kind.", ["kind"], registry=self.registry
        )
        self.resyncs = Counter(
            "ptol_operator_resyncs_total",
            "Resyncs, by outcome: ran (a reconcile), standby (another replica is active, or this one lists the "
            "policies again; a standby looks again every 10 s), failed.",
            ["outcome"],
            registry=self.registry,
        )
        self.restarts = Counter(
            "ptol_operator_restarts_total",
            "Times kopf stopped by an error and was started again (after 1, 2, 5, 10, 30 s in a row).",
            registry=self.registry,
        )
        self.policies = Gauge("ptol_operator_policies", "Policies by Ready reason.", ["reason"], registry=self.registry)


async def serve_metrics(metrics: OperatorMetrics, host: str, port: int) -> web.AppRunner:
    async def handle(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(metrics.registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    app = web.Application()
    app.router.add_get("/metrics", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
