"""Before kopf starts again after a stop: wait until the API server serves the custom resources it watches.

kopf learns which resources exist once, when it starts (API discovery), and afterwards only from changes
of CustomResourceDefinition objects. The stop this follows is usually a watch answered 404 right after an
API server restart, while the restarted server does not serve our CRD yet; a kopf started again in that
window finds the resource missing, and then watches no policy until the CRD object next changes, which may
be never. So a new run first waits, polling, until discovery lists every resource it needs whose CRD
exists, for at most `WAIT_SECONDS` (then it starts anyway, as before).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube.client import API_ERRORS, make_api_client

logger = logging.getLogger("preemption_toleration.operator")

POLL_SECONDS = 0.5
WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class CustomResource:
    group: str
    version: str
    plural: str

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"


async def wait_until(
    condition: Callable[[], Awaitable[bool]],
    stop: asyncio.Event,
    *,
    timeout: float = WAIT_SECONDS,
    poll: float = POLL_SECONDS,
) -> bool:
    """True once `condition()` holds; False when `stop` is set or `timeout` seconds have passed first.
    An error of `condition()` counts as not holding yet."""
    clock = asyncio.get_running_loop().time
    deadline = clock() + timeout
    while not stop.is_set():
        try:
            if await condition():
                return True
        except API_ERRORS:
            pass
        if clock() >= deadline:
            return False
        try:
            await asyncio.wait_for(stop.wait(), timeout=poll)
        except TimeoutError:
            pass
    return False


async def wait_until_served(kubeconfig: str | None, resources: Sequence[CustomResource], stop: asyncio.Event) -> None:
    """Waits (see the module's docstring) and logs once when it has to, and once when it gives up."""
    async with await make_api_client(kubeconfig) as api:

        async def all_served() -> bool:
            return all([await _served_or_absent(api, resource) for resource in resources])

        if await wait_until(all_served, stop, timeout=0):
            return
        names = ", ".join(r.crd_name for r in resources)
        logger.info("waiting for the API server to serve the watched resources", extra={"resources": names})
        started = time.monotonic()
        if await wait_until(all_served, stop):
            logger.info(
                "the watched resources are served",
                extra={"resources": names, "seconds": round(time.monotonic() - started, 1)},
            )
        elif not stop.is_set():
            logger.warning(
                "the watched resources are still not served; starting the operator anyway",
                extra={"resources": names, "seconds": WAIT_SECONDS},
            )


async def _served_or_absent(api: Any, resource: CustomResource) -> bool:
    """False only for a resource whose CRD exists and that discovery does not list yet."""
    try:
        await client.ApiextensionsV1Api(api).read_custom_resource_definition(resource.crd_name)
    except ApiException as error:
        if error.status == 404:
            return True  # no CRD: kopf notices its creation by itself
        raise
    try:
        found = await client.CustomObjectsApi(api).get_api_resources(resource.group, resource.version)
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return any(r.name == resource.plural for r in found.resources or [])
