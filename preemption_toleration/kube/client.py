"""One way to get an API client: an explicit kubeconfig, $KUBECONFIG, ~/.kube/config, or in-cluster."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config.config_exception import ConfigException
from yarl import URL

# The content types of the API server's patches
APPLY_PATCH = "application/apply-patch+yaml"  # a server-side apply
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
# The client's own read buffer: a watch event of a large object can exceed aiohttp's default (etcd takes
# requests of up to 1.5 MiB).
CLIENT_READ_BUFFER = 2**21
PROBLEM_TEXT = 1000  # characters of an error's message (a Status's, or a body that is no Status) in its problem

# What a call to the API server can raise besides its answer: an error status (ApiException), and network
# failures, which aiohttp does not always make OSErrors (ServerDisconnectedError, ClientPayloadError).
API_ERRORS: tuple[type[BaseException], ...] = (ApiException, aiohttp.ClientError, OSError, asyncio.TimeoutError)


async def raise_for_status(response: aiohttp.ClientResponse) -> None:
    """The ApiException the client raises for an error status (its reason phrase, and the answer's body), for an
    answer read without the client's model (`_preload_content=False`, which leaves every status to the caller)."""
    if response.status >= 400:
        error = ApiException(status=response.status, reason=getattr(response, "reason", None))
        error.body = (await response.read()).decode(errors="replace").strip()
        raise error


def api_problem(error: BaseException) -> str:
    """What failed, in one line for a status message or a log: for an error status, the status, its reason
    phrase and the message of the API server's Status (`403 Forbidden: priorityclasses "x" is forbidden: ...`,
    as kubectl prints it; a body that is no Status, itself), on one line and cut to `PROBLEM_TEXT` characters;
    else the error's type and text."""
    if not isinstance(error, ApiException):
        return f"{type(error).__name__}: {error}"
    said = f"{error.status} {error.reason or ''}".strip()
    body = error.body.decode(errors="replace") if isinstance(error.body, bytes) else str(error.body or "")
    try:
        answer = json.loads(body) if body else None
    except ValueError:
        answer = None
    message = str(answer.get("message") or "") if isinstance(answer, dict) else body
    message = " ".join(message.split())  # one line, in a status condition as in a log
    if len(message) > PROBLEM_TEXT:
        message = message[: PROBLEM_TEXT - 3] + "..."
    return f"{said}: {message}" if message else said


async def answer_of(request: Awaitable[aiohttp.ClientResponse]) -> bytes:
    """The body of a call made with `_preload_content=False`, read whole (so that its connection goes back to
    the pool): the client's model of the answer costs CPU that a caller reading JSON, or nothing, need not
    spend. An error status raises the client's ApiException, as a call with the model does."""
    response = await request
    await raise_for_status(response)
    return await response.read()


async def patch_pod_status(core: Any, namespace: str, name: str, body: Any, content_type: str, timeout: float) -> None:
    """A patch of a pod's status whose answer, the pod, is not read: bytes, no model built. `core`: a
    CoreV1Api."""
    await answer_of(
        core.patch_namespaced_pod_status(
            name, namespace, body, _content_type=content_type, _request_timeout=timeout, _preload_content=False
        )
    )


def kubeconfig_path(explicit: str | None = None) -> str | None:
    """The kubeconfig to use, or None to use the in-cluster service account."""
    from_env = os.environ.get("KUBECONFIG")
    if explicit:
        # --kubeconfig defaults to $KUBECONFIG, which may list several files: the first is used
        return explicit.split(os.pathsep)[0] if explicit == from_env else explicit
    if from_env:
        return from_env.split(os.pathsep)[0]
    default = Path.home() / ".kube" / "config"
    return str(default) if default.exists() else None


class ClusterConfigError(Exception):
    """No usable configuration for the API server; the message says which source failed and what to do."""


NO_CLUSTER_CONFIGURATION = (
    "no cluster configuration: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) and not in a cluster "
    "(no in-cluster service account: $KUBERNETES_SERVICE_HOST is not set); point --kubeconfig or KUBECONFIG "
    "at a kubeconfig file"
)


def _source(explicit: str | None) -> str:
    from_env = os.environ.get("KUBECONFIG")
    if explicit and explicit != from_env:
        return "--kubeconfig"
    return "$KUBECONFIG" if from_env else "~/.kube/config"


def _detail(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _unusable_because(error: Exception) -> str:
    if isinstance(error, ConfigException | OSError):
        return _detail(error)
    if isinstance(error, yaml.YAMLError):
        return f"not YAML ({_detail(error)})"
    detail = f": {_detail(error)}" if str(error).strip() else ""
    return f"not a kubeconfig ({type(error).__name__}{detail})"  # the loader's own failure on it


def _existing_kubeconfig(kubeconfig: str | None) -> str | None:
    """kubeconfig_path(kubeconfig), checked: ClusterConfigError for a file that is not there, and for no
    kubeconfig outside a cluster."""
    path = kubeconfig_path(kubeconfig)
    if path is None and not os.environ.get("KUBERNETES_SERVICE_HOST"):
        raise ClusterConfigError(NO_CLUSTER_CONFIGURATION)
    if path is not None and not Path(path).is_file():
        raise ClusterConfigError(
            f"kubeconfig {path} (from {_source(kubeconfig)}) does not exist: point --kubeconfig or KUBECONFIG "
            "at a kubeconfig file"
        )
    return path


def _is_blank(path: str) -> bool:
    """Whether the file holds nothing: no byte, or only blank lines, comments and empty YAML documents."""
    try:
        return all(document is None for document in yaml.safe_load_all(Path(path).read_text()))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # the loader says why


def _kubeconfig_document(path: str) -> Any:
    """The YAML of a kubeconfig file; None when it cannot be read as YAML (the loader then says why)."""
    try:
        return yaml.safe_load(Path(path).read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def _contexts(document: Any) -> dict[str, Any]:
    """A kubeconfig's contexts by name."""
    contexts = document.get("contexts") if isinstance(document, dict) else None
    return {str(c["name"]): c.get("context") for c in contexts or [] if isinstance(c, dict) and c.get("name")}


def context_namespace(kubeconfig: str | None = None, context: str | None = None) -> str | None:
    """The namespace of the kubeconfig's context (`context`, else its current-context), as kubectl reads it;
    None when it names none, or there is no kubeconfig."""
    path = kubeconfig_path(kubeconfig)
    document = _kubeconfig_document(path) if path else None
    if not isinstance(document, dict):
        return None
    chosen = _contexts(document).get(context or str(document.get("current-context") or ""))
    namespace = chosen.get("namespace") if isinstance(chosen, dict) else None
    return str(namespace) if namespace else None


async def load_configuration(kubeconfig: str | None = None, context: str | None = None) -> Configuration:
    """The client configuration from `kubeconfig_path(kubeconfig)` (its `context`, else its current-context),
    else the in-cluster service account; ClusterConfigError when there is none or it cannot be used. Reads
    files only: no request is made."""
    configuration = Configuration()
    path = _existing_kubeconfig(kubeconfig)
    if path is None:
        if context:
            raise ClusterConfigError(
                f"--context {context}: no kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config) to take it from"
            )
        try:
            config.load_incluster_config(client_configuration=configuration)
        except ConfigException as error:
            raise ClusterConfigError(f"the in-cluster service account cannot be used: {_detail(error)}") from error
        return configuration
    if _is_blank(path):  # the loader would fail on it with a TypeError of its own
        raise ClusterConfigError(
            f"kubeconfig {path} (from {_source(kubeconfig)}) is empty: point --kubeconfig or KUBECONFIG at a "
            "kubeconfig file (such as one that `kubectl config view --flatten` writes)"
        )
    if context and context not in (names := _contexts(_kubeconfig_document(path))):
        raise ClusterConfigError(
            f"kubeconfig {path} (from {_source(kubeconfig)}) has no context {context!r} (--context); "
            f"its contexts: {', '.join(names) or 'none'}"
        )
    try:
        await config.load_kube_config(config_file=path, context=context, client_configuration=configuration)
    except Exception as error:  # a malformed file fails in many ways (TypeError, YAMLError, ...)
        raise ClusterConfigError(
            f"kubeconfig {path} (from {_source(kubeconfig)}) cannot be used: {_unusable_because(error)}; check it with "
            f"`kubectl config view --kubeconfig {path}`"
        ) from error
    return configuration


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


def with_environment_read_once(api: ApiClient) -> ApiClient:
    """`api`, whose session reads the proxy environment ($HTTPS_PROXY, $NO_PROXY) once, here, not at every
    call. The client's session trusts the environment, so aiohttp looks up the proxy and reads ~/.netrc, each
    in a thread, for every request: a fifth of the operator's CPU in a burst of writes. The proxy the
    environment names for the API server is set on the client as a kubeconfig's `proxy-url` would be (one of
    those wins); ~/.netrc is not read (kubectl and client-go do not read it either)."""
    rest = api.rest_client
    if rest.proxy is None:
        with contextlib.suppress(LookupError):
            proxy, proxy_auth = get_env_proxy_for_url(URL(api.configuration.host))
            rest.proxy = str(proxy)
            if proxy_auth is not None:
                rest.proxy_headers = {**(rest.proxy_headers or {}), "Proxy-Authorization": proxy_auth.encode()}
    trusting = rest.pool_manager
    rest.pool_manager = aiohttp.ClientSession(
        connector=trusting.connector, trust_env=False, read_bufsize=CLIENT_READ_BUFFER
    )
    trusting.detach()  # its connector now serves the new session
    return api


async def make_api_client(
    kubeconfig: str | None = None,
    default_timeout: tuple[float, float] = DEFAULT_REQUEST_TIMEOUT,
    context: str | None = None,
) -> ApiClient:
    """An ApiClient (of the kubeconfig's `context`, else its current-context); close it with `await
    client.close()` (or `async with`). ClusterConfigError when there is no usable configuration
    (load_configuration)."""
    configuration = await load_configuration(kubeconfig, context)
    api = with_environment_read_once(ApiClient(configuration=configuration))
    return with_default_timeout(api, default_timeout)
