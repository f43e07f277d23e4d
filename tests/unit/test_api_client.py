"""The API client: calls that set no timeout of their own get the client's default, so a call to a server that
stops answering (a half-open connection) fails instead of waiting for hours; a call's own timeout wins. The
proxy environment is read once, with the meaning aiohttp gives it at every call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, Configuration

from preemption_toleration.kube.client import (
    API_ERRORS,
    DEFAULT_REQUEST_TIMEOUT,
    with_default_timeout,
    with_environment_read_once,
)

SLOW_ANSWER_SECONDS = 1.0


async def slow_namespace_list(_: web.Request) -> web.Response:
    await asyncio.sleep(SLOW_ANSWER_SECONDS)
    return web.json_response({"apiVersion": "v1", "kind": "NamespaceList", "metadata": {}, "items": []})


@pytest.fixture
async def slow_server() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/api/v1/namespaces", slow_namespace_list)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    await runner.cleanup()


def api_for(host: str, default_timeout: tuple[float, float]) -> ApiClient:
    configuration = Configuration()
    configuration.host = host
    return with_default_timeout(ApiClient(configuration=configuration), default_timeout)


async def test_a_call_without_a_timeout_gets_the_default_and_its_error_is_an_api_error(slow_server: str) -> None:
    async with api_for(slow_server, (1.0, SLOW_ANSWER_SECONDS / 4)) as api:
        with pytest.raises(API_ERRORS):
            await client.CoreV1Api(api).list_namespace()


async def test_a_calls_own_timeout_wins_over_the_default(slow_server: str) -> None:
    async with api_for(slow_server, (1.0, SLOW_ANSWER_SECONDS / 4)) as api:
        listed = await client.CoreV1Api(api).list_namespace(_request_timeout=(1.0, SLOW_ANSWER_SECONDS * 5))
    assert listed.items == []


def test_the_default_read_bound_outlasts_the_api_servers_own_request_limit() -> None:
    connect, read = DEFAULT_REQUEST_TIMEOUT
    assert read > 60 and connect <= 10


def proxied_client(monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], proxy: str | None = None) -> ApiClient:
    for name in ("HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    configuration = Configuration(host="https://10.0.0.1:6443")
    configuration.proxy = proxy
    return with_environment_read_once(ApiClient(configuration=configuration))


PROXIES = [
    # (rule, environment, the kubeconfig's proxy-url, the proxy used, its Proxy-Authorization)
    ("no proxy in the environment: none", {}, None, None, None),
    ("$HTTPS_PROXY: used for the API server", {"HTTPS_PROXY": "http://proxy:3128"}, None, "http://proxy:3128", None),
    ("$NO_PROXY naming the API server: no proxy", {"HTTPS_PROXY": "http://proxy:3128", "NO_PROXY": "10.0.0.1"},
     None, None, None),
    ("the proxy's credentials: sent as Proxy-Authorization", {"HTTPS_PROXY": "http://me:secret@proxy:3128"}, None,
     "http://proxy:3128", "Basic bWU6c2VjcmV0"),
    ("the kubeconfig's proxy-url wins", {"HTTPS_PROXY": "http://proxy:3128"}, "http://mine:8080",
     "http://mine:8080", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "environment", "configured", "used", "authorization"), PROXIES, ids=[p[0] for p in PROXIES]
)
async def test_the_proxy_environment_is_read_once_with_the_clients_meaning(
    monkeypatch: pytest.MonkeyPatch,
    rule: str,
    environment: dict[str, str],
    configured: str | None,
    used: str | None,
    authorization: str | None,
) -> None:
    """aiohttp would look the proxy up (and read ~/.netrc) in a thread at every call: read once instead, with
    the same outcome, and the session no longer trusts the environment."""
    api = proxied_client(monkeypatch, environment, configured)
    try:
        assert api.rest_client.proxy == used, rule
        assert (api.rest_client.proxy_headers or {}).get("Proxy-Authorization") == authorization, rule
        assert api.rest_client.pool_manager.trust_env is False and not api.rest_client.pool_manager.closed
    finally:
        await api.close()
