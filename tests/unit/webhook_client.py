"""aiohttp's test client around a `WebhookApp`, served as `ptol webhook` serves it (its low-level server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import BaseTestServer, TestClient

from preemption_toleration.webhooks.server import WebhookApp


class WebhookTestServer(BaseTestServer):
    def __init__(self, webhook: WebhookApp, server: Callable[[WebhookApp], web.Server]) -> None:
        super().__init__()
        self.webhook = webhook
        self.server = server

    async def _make_runner(self, **kwargs: Any) -> web.ServerRunner:
        return web.ServerRunner(self.server(self.webhook))


def webhook_client(
    webhook: WebhookApp, server: Callable[[WebhookApp], web.Server] = WebhookApp.build
) -> TestClient[web.BaseRequest, None]:
    """A client of the webhooks' server, or (`server=WebhookApp.metrics_server`) of `--metrics-address`'s."""
    return TestClient(WebhookTestServer(webhook, server))
