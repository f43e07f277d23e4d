"""Closing the server without dropping a request: not ready, connections closed after their answers, then
the last requests of connections already accepted."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from preemption_toleration.webhooks.server import WebhookApp

logger = logging.getLogger("preemption_toleration.webhooks")


# After the drain: how long connections accepted before the listener closed get to send their request.
LAST_REQUESTS_SECONDS = 1.0


async def drain(
    app: WebhookApp, runner: web.BaseRunner, delay: float, last_requests: float = LAST_REQUESTS_SECONDS
) -> None:
    """Before closing: not ready (a Service stops sending), and for up to `delay` seconds every answer
    closes its connection, until no client connection is left. Then the server stops listening and, for up
    to `last_requests` seconds more, answers the connections it had already accepted: one opened just before
    is about to send its request, which closing it then would fail. Then closing drops no request."""
    app.draining = True
    if delay <= 0:
        return
    logger.info("draining", extra={"seconds": delay})
    server = runner.server
    await _until_no_connection(server, delay)
    for site in runner.sites:
        await site.stop()
    # a connection accepted just now may still be in its TLS handshake, which aiohttp does not count yet
    await asyncio.sleep(0.05)
    await _until_no_connection(server, last_requests)


async def _until_no_connection(server: web.Server | None, seconds: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    # aiohttp signals no event when a connection ends: poll
    while loop.time() < deadline and server is not None and server.connections:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
