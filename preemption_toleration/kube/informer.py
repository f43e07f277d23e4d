"""A list-then-watch cache of one resource, kept in memory, that resumes after every kind of break."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import aiohttp
from kubernetes_asyncio import watch
from kubernetes_asyncio.client.exceptions import ApiException

V = TypeVar("V")
ListFunction = Callable[..., Awaitable[Any]]

WATCH_TIMEOUT_SECONDS = 300
LIST_TIMEOUT_SECONDS = 60
MAX_BACKOFF_SECONDS = 30.0
# The server ends a watch after WATCH_TIMEOUT_SECONDS (bookmarks keep it talking before that); a read that
# stays silent much longer is a dead connection, which would otherwise leave the cache stale for ever.
WATCH_READ_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_read=WATCH_TIMEOUT_SECONDS + 30)


@dataclass(frozen=True)
class CacheStats:
    """What one cache holds and how its watch has fared, for metrics."""

    resource: str
    objects: int
    lists: int  # the first listing, then one per expired or failed watch
    failures: int  # watches or listings that failed (not counting the server ending a watch normally)


class Informer(Generic[V]):
    """Keeps `items` (name -> slim value) equal to the server's objects.

    `synced` is set once the first listing is in; a watch that ends is resumed from its last
    resourceVersion, one that expired (410 Gone) or failed is replaced by a fresh listing, with backoff.
    """

    def __init__(
        self,
        kind: str,
        list_function: ListFunction,
        slim: Callable[[dict[str, Any]], V],
        logger: logging.Logger,
        on_change: Callable[[], None] | None = None,
        key: Callable[[dict[str, Any]], Hashable] | None = None,
    ) -> None:
        self.kind = kind
        self.key = key or self._name
        self.list_function = list_function
        self.slim = slim
        self.logger = logger
        self.on_change = on_change
        self.items: dict[Hashable, V] = {}
        self.synced = asyncio.Event()
        self.relists = 0
        self.failures = 0

    @staticmethod
    def _name(raw: dict[str, Any]) -> str:
        return str((raw.get("metadata") or {}).get("name") or "")

    async def _list(self) -> str:
        response = await self.list_function(_preload_content=False, _request_timeout=LIST_TIMEOUT_SECONDS)
        if response.status >= 400:
            text = await response.text()
            raise ApiException(status=response.status, reason=text.strip()[:200] or response.reason)
        body = await response.json()
        self.items = {self.key(raw): self.slim(raw) for raw in body.get("items") or []}
        self.relists += 1
        self.synced.set()
        if self.on_change:
            self.on_change()
        return str((body.get("metadata") or {}).get("resourceVersion") or "")

    def _apply(self, event: dict[str, Any]) -> None:
        raw = event.get("raw_object") or {}
        key = self.key(raw)
        if event.get("type") == "DELETED":
            self.items.pop(key, None)
        elif event.get("type") in ("ADDED", "MODIFIED"):
            self.items[key] = self.slim(raw)
        else:
            return
        if self.on_change:
            self.on_change()

    def stats(self) -> CacheStats:
        return CacheStats(self.kind, len(self.items), self.relists, self.failures)

    async def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                resource_version = await self._list()
                backoff = 1.0
                while True:  # watch until it expires, resuming where it stopped
                    watcher = watch.Watch()
                    async with watcher.stream(
                        self.list_function,
                        resource_version=resource_version,
                        timeout_seconds=WATCH_TIMEOUT_SECONDS,
                        allow_watch_bookmarks=True,
                        _request_timeout=WATCH_READ_TIMEOUT,
                    ) as stream:
                        async for event in stream:
                            self._apply(event)
                    resource_version = watcher.resource_version or resource_version
            except asyncio.CancelledError:
                raise
            except ApiException as error:
                if error.status == 410:
                    self.logger.info("watch expired; listing again", extra={"kind": self.kind})
                    continue
                self.failures += 1
                problem = f"{error.status} {error.reason}".strip()
                if error.status == 404:
                    problem += " (the resource is not served: is its CRD installed?)"
                self.logger.warning("watch failed", extra={"kind": self.kind, "problem": problem})
            except Exception as error:  # network errors of every kind: relist after a pause
                self.failures += 1
                self.logger.warning("watch failed", extra={"kind": self.kind, "problem": repr(error)})
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
