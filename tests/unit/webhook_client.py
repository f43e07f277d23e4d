"""aiohttp's test client around a `WebhookApp`, served as `ptol webhook` serves it (its low-level server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import BaseTestServer, TestClient

from preemption_toleration.admission.decisions import AdmissionConfig, Needs
from preemption_toleration.extender.adapter.extender_endpoint import ExtenderEndpoint, ExtenderHooks
from preemption_toleration.guard.adapter.guard_endpoint import GuardEndpoint, GuardHooks
from preemption_toleration.inventory.view import ClusterView
from preemption_toleration.serving.handling import DEFAULT_MAX_BODY_BYTES, Endpoint
from preemption_toleration.serving.webhook_metrics import WebhookMetrics
from preemption_toleration.webhooks.server import WebhookApp, admission_endpoints


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


def webhook_app(
    snapshot: Callable[[], ClusterView],
    problems: Callable[[Needs], list[str]],
    *,
    metrics: WebhookMetrics | None = None,
    guard: GuardHooks | None = None,
    extender: ExtenderHooks | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    metrics_apart: bool = False,
) -> WebhookApp:
    """The server `ptol webhook` wires (webhooks/runner.py): the admission endpoints, and the guard's and the
    extender's of these hooks. The guard's endpoint is the app's `guard` attribute here, for a test to reach."""
    metrics = metrics or WebhookMetrics()
    routes: list[Endpoint[Any]] = [*admission_endpoints(AdmissionConfig(), snapshot, problems)]
    guard_endpoint = GuardEndpoint(guard, metrics, problems) if guard is not None else None
    if guard_endpoint is not None:
        routes.append(guard_endpoint.endpoint())
    if extender is not None:
        routes.append(ExtenderEndpoint(extender, metrics, problems).endpoint())
    app = WebhookApp(routes, problems, metrics, max_body_bytes, metrics_apart)
    app.guard = guard_endpoint  # type: ignore[attr-defined]
    return app
