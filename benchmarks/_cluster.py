"""Helpers for the benchmarks that run a local control plane (`preemption_toleration.devcluster`).

A cluster in a temporary directory, our CRD, an API client with many connections, many requests in flight with
retries, and reading a Prometheus /metrics page.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TypeVar

import aiohttp
from kubernetes_asyncio import config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.api.policy import GROUP, PLURAL
from preemption_toleration.devcluster import LocalCluster, find_toolchain

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
R = TypeVar("R")
RETRIED_STATUSES = (429, 500, 502, 503, 504)


@contextmanager
def local_cluster(directory: str | None = None, features: tuple[str, ...] = ()) -> Iterator[LocalCluster]:
    """A started LocalCluster (KWOK for its Nodes) in `directory` (kept) or in a temporary directory (removed),
    stopped after; of the release `PTOL_KUBERNETES_VERSION` names, 1.37.2 by default; with its `features`
    (`ptol dev cluster up --feature`)."""
    toolchain = find_toolchain()
    if toolchain is None:
        raise SystemExit("the control-plane binaries are missing: run `ptol dev cluster install` first")
    with ExitStack() as stack:
        path = (
            Path(directory)
            if directory
            else Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ptol-bench-")))
        )
        cluster = LocalCluster(path, toolchain)
        cluster.start(die_with_parent=True, features=features)  # nothing outlives a killed benchmark
        stack.callback(cluster.stop)
        yield cluster


def install_crd(cluster: LocalCluster) -> None:
    """Our CRD (crds/), established: the operator and the webhook's policy cache need it."""
    for args in (
        ("apply", "-f", str(ROOT / "crds" / f"{PLURAL}.yaml")),
        ("wait", "--for=condition=Established", "--timeout=60s", f"crd/{PLURAL}.{GROUP}"),
    ):
        subprocess.run(cluster.kubectl_argv(*args), check=True, capture_output=True)


async def api_client(cluster: LocalCluster, connections: int = 64) -> ApiClient:
    """An admin ApiClient that keeps up to `connections` requests in flight; close it after."""
    configuration = Configuration()
    await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=configuration)
    configuration.connection_pool_maxsize = connections
    return ApiClient(configuration=configuration)


async def bounded(items: Iterable[T], action: Callable[[T], Awaitable[object]], limit: int) -> None:
    """Run `action` on every item with at most `limit` running at once."""
    iterator = iter(items)

    async def worker() -> None:
        for item in iterator:  # shared: each item is taken by exactly one worker
            await action(item)

    await asyncio.gather(*(worker() for _ in range(limit)))


async def with_retries(call: Callable[[], Awaitable[R]], attempts: int = 6) -> R:
    """`call()`, retried with backoff on throttling, server errors, broken connections and timeouts."""
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except ApiException as error:
            if error.status not in RETRIED_STATUSES or attempt == attempts:
                raise
        except (TimeoutError, aiohttp.ClientError):
            if attempt == attempts:
                raise
        await asyncio.sleep(min(0.2 * 2**attempt, 5.0))
    raise AssertionError("unreachable")


async def raw(call: Awaitable[aiohttp.ClientResponse]) -> bytes:
    """The body of a request made with `_preload_content=False` (no model objects built); ApiException
    on an error status, as with the client's usual calls."""
    response = await call
    body = await response.read()
    if response.status >= 400:
        raise ApiException(status=response.status, reason=body.decode(errors="replace")[:300])
    return body
