"""aiohttp's test client around a `WebhookApp`, served as `ptol webhook` serves it (its low-level server)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from aiohttp.test_utils import BaseTestServer, TestClient

from preemption_toleration.webhooks.server import WebhookApp


class WebhookTestServer(BaseTestServer):
    def __init__(self, webhook: WebhookApp) -> None:
        super().__init__()
        self.webhook = webhook

    async def _make_runner(self, **kwargs: Any) -> web.ServerRunner:
        return web.ServerRunner(self.webhook.build())


def webhook_client(webhook: WebhookApp) -> TestClient[web.BaseRequest, None]:
    return TestClient(WebhookTestServer(webhook))
