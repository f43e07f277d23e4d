"""/metrics on an address of its own (--metrics-address), apart from the HTTPS port."""

from __future__ import annotations

import logging

from aiohttp import web

from preemption_toleration.webhooks.server import WebhookApp

logger = logging.getLogger("preemption_toleration.webhooks")


async def serve_metrics(app: WebhookApp, address: str) -> web.ServerRunner:
    """/metrics alone on `address` ("host:port", plain HTTP); the runner to clean up."""
    runner = web.ServerRunner(app.metrics_server())
    await runner.setup()
    host, _, port = address.rpartition(":")
    try:
        await web.TCPSite(runner, host, int(port)).start()
    except BaseException:  # e.g. the port is taken: nothing of it left behind
        await runner.cleanup()
        raise
    bound = runner.addresses[0][1] if runner.addresses else port  # the port given for port 0
    logger.info("metrics served apart", extra={"address": f"{host}:{bound}", "url": f"http://{host}:{bound}/metrics"})
    return runner
