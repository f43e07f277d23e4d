"""One way to get an API client: an explicit kubeconfig, $KUBECONFIG, ~/.kube/config, or in-cluster."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

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


async def make_api_client(kubeconfig: str | None = None) -> ApiClient:
    """An ApiClient; close it with `await client.close()` (or `async with`)."""
    configuration = Configuration()
    path = kubeconfig_path(kubeconfig)
    if path is not None:
        await config.load_kube_config(config_file=path, client_configuration=configuration)
    else:
        config.load_incluster_config(client_configuration=configuration)
    return ApiClient(configuration=configuration)
