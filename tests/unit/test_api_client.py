"""API calls that set no timeout of their own get the client's default, so a call to a server that stops
answering (a half-open connection) fails instead of waiting for hours; a call's own timeout wins."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client import ApiClient, Configuration

from preemption_toleration.kube.client import API_ERRORS, DEFAULT_REQUEST_TIMEOUT, with_default_timeout

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
