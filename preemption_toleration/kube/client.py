"""One way to get an API client: an explicit kubeconfig, $KUBECONFIG, ~/.kube/config, or in-cluster."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import aiohttp
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException

APPLY_PATCH = "application/apply-patch+yaml"  # the content type of a server-side apply

# What a call to the API server can raise besides its answer: an error status (ApiException), and network
# failures, which aiohttp does not always make OSErrors (ServerDisconnectedError, ClientPayloadError).
API_ERRORS: tuple[type[BaseException], ...] = (ApiException, aiohttp.ClientError, OSError, asyncio.TimeoutError)


def kubeconfig_path(explicit: str | None = None) -> str | None:
    """The kubeconfig to use, or None to use the in-cluster service account."""
    if explicit:
        return explicit
    from_env = os.environ.get("KUBECONFIG")
    if from_env:
        return from_env.split(os.pathsep)[0]
    default = Path.home() / ".kube" / "config"
    return str(default) if default.exists() else None


# (connect, read) seconds for a call that sets no timeout of its own. kubernetes_asyncio sets none, so a call
# on a half-open connection (a load balancer failing over, a node gone) would wait until TCP gives up,
# hours later, holding a reconcile or an Event loop with it. The read bound is past the API server's own
# limit for a request (--request-timeout, 60 s), so a slow answer is never given up before the server does.
# Watches and listings set longer or shorter bounds of their own.
DEFAULT_REQUEST_TIMEOUT: tuple[float, float] = (10.0, 70.0)


def with_default_timeout(api: ApiClient, default_timeout: tuple[float, float]) -> ApiClient:
    """`api`, whose calls without a `_request_timeout` get `default_timeout` (every generated method goes
    through its `request`)."""
    request = api.request

    def timed_request(*args: Any, _request_timeout: Any = None, **kwargs: Any) -> Any:
        timeout = default_timeout if _request_timeout is None else _request_timeout
        return request(*args, _request_timeout=timeout, **kwargs)

    api.request = timed_request
    return api


async def make_api_client(
    kubeconfig: str | None = None, default_timeout: tuple[float, float] = DEFAULT_REQUEST_TIMEOUT
) -> ApiClient:
    """An ApiClient; close it with `await client.close()` (or `async with`)."""
    configuration = Configuration()
    path = kubeconfig_path(kubeconfig)
    if path is not None:
        await config.load_kube_config(config_file=path, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    return with_default_timeout(ApiClient(configuration=configuration), default_timeout)
