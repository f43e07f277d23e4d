"""A list-then-watch cache of one resource, kept in memory, that resumes after every kind of break.

It lists in pages (`limit`/`continue`) and reads watch events as raw JSON lines, handing each object to
its store as soon as it is decoded: no full listing and no client model is ever built, so memory follows
what the store keeps (a slim record per object), not the size of the objects or of the cluster.

The watch opens as soon as the first page names the listing's resourceVersion, not after the last page:
a listing of 150,000 pods takes minutes, longer than the API server keeps the history a watch resumes
from, and a watch opened after it would expire at once, again at every listing (measured: the cache
never saw a pod created after its first page). Its events are applied while the pages come; a page's
object the watch has already brought, newer, is not put back.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

import aiohttp
from kubernetes_asyncio.client.exceptions import ApiException

from preemption_toleration.kube.client import api_problem, raise_for_status

V = TypeVar("V")
ListFunction = Callable[..., Awaitable[Any]]

WATCH_TIMEOUT_SECONDS = 300
LIST_TIMEOUT_SECONDS = 60
MAX_BACKOFF_SECONDS = 30.0
# A cache whose watch is down, and that has had no successful list or watch for this long, is too stale to
# decide from (the webhook's --cache-staleness-seconds).
DEFAULT_STALE_AFTER_SECONDS = 60.0
DEFAULT_PAGE_SIZE = 100  # small pages: each page's body is held while its items are decoded (measured)
MAX_EVENT_BYTES = 64 * 1024 * 1024  # far above the API server's object size limit (1.5 MiB in etcd)
# The server ends a watch after WATCH_TIMEOUT_SECONDS (bookmarks keep it talking before that); a read that
# stays silent much longer is a dead connection, which would otherwise leave the cache stale for ever.
WATCH_READ_TIMEOUT = aiohttp.ClientTimeout(total=None, sock_read=WATCH_TIMEOUT_SECONDS + 30)


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        trim: Callable[[int], int] = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
        return trim
    except (OSError, AttributeError):  # not glibc: nothing to give back this way
        return None


_MALLOC_TRIM = _malloc_trim()


def return_free_memory() -> None:
    """Hands the heap's free pages back to the system (glibc). The decoded pages of a listing leave holes
    between the slim records that outlive them; without this, RSS stays near the listing's peak
    (measured: 1.24 KB per cached pod of 12 KB of JSON instead of 0.79 KB)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class Store(Protocol):
    """Where an informer keeps what it saw: one slim record per object, under the object's key."""

    def key(self, raw: Mapping[str, Any]) -> Hashable: ...

    def put(self, raw: Mapping[str, Any]) -> Hashable: ...

    def remove(self, raw: Mapping[str, Any]) -> None: ...

    def prune(self, keep: Collection[Hashable]) -> None: ...

    def __len__(self) -> int: ...


def object_name(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""


def resource_version(raw: Mapping[str, Any]) -> object:
    """The object's metadata.resourceVersion as sent (None when absent or the metadata is not an object)."""
    metadata = raw.get("metadata")
    return metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None


class DictStore(Generic[V]):
    """`items`: key -> slim value, for resources of modest count (classes, policies, nodes)."""

    def __init__(
        self, slim: Callable[[Mapping[str, Any]], V], key: Callable[[Mapping[str, Any]], str] = object_name
    ) -> None:
        self.slim = slim
        self._key = key
        self.items: dict[str, V] = {}

    def key(self, raw: Mapping[str, Any]) -> str:
        return self._key(raw)

    def put(self, raw: Mapping[str, Any]) -> str:
        key = self.key(raw)
        self.items[key] = self.slim(raw)
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        self.items.pop(self.key(raw), None)

    def prune(self, keep: Collection[Hashable]) -> None:
        for key in [key for key in self.items if key not in keep]:
            del self.items[key]

    def __len__(self) -> int:
        return len(self.items)


class Listing:
    """A listing under way, as the watch opened beside it sees it: the keys of the objects the watch changed
    (newer than the pages); None once the listing is in."""

    def __init__(self, touched: set[Hashable]) -> None:
        self.touched: set[Hashable] | None = touched


@dataclass(frozen=True)
class CacheStats:
    """What one cache holds and how its watch has fared, for metrics."""

    resource: str
    objects: int
    lists: int  # the first listing, then one per expired or failed watch
    failures: int  # watches or listings that failed (not counting the server ending a watch normally)
    pages: int = 0  # pages of all listings (`limit` objects each)


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone): only a fresh listing can resume."""


async def json_lines(response: aiohttp.ClientResponse, limit: int = MAX_EVENT_BYTES) -> AsyncIterator[Any]:
    """The JSON documents of a newline-delimited stream, each decoded as soon as its line is complete."""
    buffer = bytearray()
    async for chunk in response.content.iter_any():
        start = len(buffer)
        buffer.extend(chunk)
        while (end := buffer.find(b"\n", start)) >= 0:
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            start = 0
            if line.strip():
                yield json.loads(line)
        if len(buffer) > limit:
            raise ValueError(f"a watch event of more than {limit} bytes")
    if buffer.strip():
        yield json.loads(bytes(buffer))


_DECODE = json.JSONDecoder().raw_decode
_SPACE = re.compile(r"[ \t\n\r]*")


def decode_list(body: bytes, on_item: Callable[[Any], object]) -> dict[str, Any]:
    """Decodes a Kubernetes list (`{"metadata": ..., "items": [...]}`) one item at a time, handing each to
    `on_item` as soon as it is decoded, so that only one item's objects exist at once (decoding the page
    whole kept a page of objects alive at a time, and the heap they left behind: measured, 1.5 KB per
    cached pod at 10,000 pods instead of 0.8 KB). Returns the list's other fields. ValueError if the body
    is not such a JSON object."""
    text = body.decode("utf-8")

    def skip(index: int) -> int:
        found = _SPACE.match(text, index)
        return found.end() if found else index

    def expect(index: int, characters: str) -> str:
        if index >= len(text) or text[index] not in characters:
            raise ValueError(f"a JSON list object expected one of {characters!r} at character {index}")
        return text[index]

    rest: dict[str, Any] = {}
    index = skip(0)
    expect(index, "{")
    index = skip(index + 1)
    if text.startswith("}", index):
        return rest
    while True:
        key, index = _DECODE(text, index)
        index = skip(index)
        expect(index, ":")
        index = skip(index + 1)
        if key == "items" and text.startswith("[", index):
            index = skip(index + 1)
            if text.startswith("]", index):
                index += 1
            else:
                while True:
                    item, index = _DECODE(text, index)
                    on_item(item)
                    index = skip(index)
                    if expect(index, ",]") == "]":
                        index += 1
                        break
                    index = skip(index + 1)
        else:
            rest[key], index = _DECODE(text, index)
        index = skip(index)
        if expect(index, ",}") == "}":
            return rest
        index = skip(index + 1)


class Informer:
    """Keeps its store equal to the server's objects.

    `synced` is set once the first listing is in; a watch that ends is resumed from its last
    resourceVersion, one that expired (410 Gone) or failed is replaced by a fresh listing, with backoff.
    A fresh listing updates the store in place and then drops what it did not return, so decisions keep
    reading a full store meanwhile.
    """

    def __init__(
        self,
        kind: str,
        list_function: ListFunction,
        store: Store,
        logger: logging.Logger,
        on_change: Callable[[], None] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kind = kind
        self.list_function = list_function
        self.store = store
        self.logger = logger
        self.on_change = on_change
        self.page_size = page_size
        self.synced = asyncio.Event()
        self.changes = 0  # listings and watch events applied: a generation of the store
        self.relists = 0
        self.pages = 0
        self.failures = 0
        # Told after each page of a listing is in the store (the webhook freezes its heap there).
        self.page_listed: Callable[[], None] | None = None
        # Freshness: whether a watch is open now, when the server last answered, and the failure since.
        self.clock = clock
        self.watching = False
        self.last_contact: float | None = None
        self.problem: str | None = None

    def _changed(self) -> None:
        self.changes += 1
        if self.on_change:
            self.on_change()

    def _contact(self) -> None:
        self.last_contact = self.clock()

    def _failed(self, problem: str) -> None:
        """A failed list or watch: logged once until the problem changes or the cache recovers (a missing
        CRD or permission would otherwise log the same line at every retry)."""
        self.failures += 1
        self.watching = False
        if problem != self.problem:
            self.logger.warning(
                "watch failed",
                extra={
                    "kind": self.kind,
                    "problem": problem,
                    "note": "retried with backoff; logged again only if it changes",
                },
            )
        self.problem = problem

    def _recovered(self) -> None:
        if self.problem is not None:
            self.logger.info("watch recovered", extra={"kind": self.kind, "after": self.problem})
            self.problem = None

    def health(self, stale_after: float) -> str | None:
        """None while the cache may be decided from: listed, and its watch open or the server heard from
        within `stale_after` seconds. Otherwise why not, for /readyz and the logs."""
        # asked for every admission request: the healthy path formats nothing
        if not self.synced.is_set():
            return f"{self.kind}: not listed yet{self._because()}"
        if self.watching or self.last_contact is None:
            return None
        silent = self.clock() - self.last_contact
        if silent > stale_after:
            return f"{self.kind}: no successful list or watch for {silent:.0f} s{self._because()}"
        return None

    def _because(self) -> str:
        return f" (last problem: {self.problem})" if self.problem else ""

    async def _list(self) -> asyncio.Task[str] | str:
        """Lists every page; returns the watch opened after the first page (a task that ends when the server
        ends the watch, with the resourceVersion to resume from), or, for a listing of one page, the
        listing's resourceVersion to watch from."""
        seen: set[Hashable] = set()
        touched: set[Hashable] = set()
        listing = Listing(touched)
        watch: asyncio.Task[str] | None = None

        def listed(raw: Any) -> None:
            if not isinstance(raw, Mapping):
                return
            if touched:
                key = self.store.key(raw)
                if key in touched:  # the watch brought a newer copy
                    seen.add(key)
                    return
            # The key the store keeps, not one built from the page: a key of its own per object, held in
            # `seen` until the listing ends, would leave that much freed memory scattered between the records.
            seen.add(self.store.put(raw))

        token: str | None = None
        try:
            while True:
                paging: dict[str, Any] = {"limit": self.page_size}
                if token:
                    paging["_continue"] = token
                response = await self.list_function(
                    _preload_content=False, _request_timeout=LIST_TIMEOUT_SECONDS, **paging
                )
                async with response:
                    await raise_for_status(response)
                    body = await response.read()
                self._contact()
                # Each item is slimmed as soon as it is decoded: no page of decoded objects is ever held.
                rest = decode_list(body, listed)
                del body
                self.pages += 1
                if self.page_listed is not None:
                    self.page_listed()
                found = rest.get("metadata")
                metadata: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
                token = metadata.get("continue") or None
                listed_version = str(metadata.get("resourceVersion") or "")
                if token is None:
                    break
                if watch is not None and watch.done():
                    if watch.cancelled() or watch.exception() is not None:
                        return watch  # it failed (an expired resourceVersion, say): the caller relists
                    listed_version = watch.result()  # the server ended it: resumed where it stopped
                    watch = None
                if watch is None:
                    watch = asyncio.create_task(self._watch(listed_version, listing), name=f"watch-{self.kind}")
        except BaseException:
            if watch is not None:
                watch.cancel()
            raise
        self.store.prune(seen | touched)
        listing.touched = None  # the watch is live from here: every event applies, none is recorded
        seen.clear()  # before giving the heap back
        touched.clear()
        return_free_memory()
        self.relists += 1
        self._recovered()
        self.synced.set()
        self._changed()
        return watch if watch is not None else listed_version

    def _apply(self, event: Mapping[str, Any], listing: Listing | None = None) -> str | None:
        """Applies one watch event; returns the resourceVersion it brings, if any. While `listing` is under
        way, the keys of the objects it changes are recorded there."""
        kind = event.get("type")
        raw = event.get("object")
        if not isinstance(raw, Mapping):
            return None
        if kind == "ERROR":
            if raw.get("code") == 410:
                raise WatchExpired(str(raw.get("message") or "expired"))
            raise ApiException(status=raw.get("code") or 500, reason=str(raw.get("message") or "watch error"))
        version = resource_version(raw)
        if listing is not None and listing.touched is not None and kind in ("ADDED", "MODIFIED", "DELETED"):
            listing.touched.add(self.store.key(raw))
        if kind == "DELETED":
            self.store.remove(raw)
        elif kind in ("ADDED", "MODIFIED"):
            self.store.put(raw)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._changed()
        return str(version) if version else None

    async def _watch(self, resource_version: str, listing: Listing | None = None) -> str:
        """Applies events until the server ends the watch; returns the resourceVersion to resume from.
        `listing`: the listing under way beside it (see `_apply`)."""
        response = await self.list_function(
            watch=True,
            resource_version=resource_version,
            timeout_seconds=WATCH_TIMEOUT_SECONDS,
            allow_watch_bookmarks=True,
            _preload_content=False,
            _request_timeout=WATCH_READ_TIMEOUT,
        )
        async with response:
            await raise_for_status(response)
            self._contact()
            self._recovered()
            self.watching = True
            try:
                async for event in json_lines(response):
                    self._contact()
                    if isinstance(event, Mapping):
                        resource_version = self._apply(event, listing) or resource_version
            finally:
                self.watching = False
        self._contact()  # the server ended the watch: it was heard from until now
        return resource_version

    def stats(self) -> CacheStats:
        return CacheStats(self.kind, len(self.store), self.relists, self.failures, self.pages)

    async def run(self) -> None:
        backoff = 1.0
        while True:
            try:
                listed = await self._list()
                backoff = 1.0
                resource_version = await listed if isinstance(listed, asyncio.Task) else listed
                while True:  # watch until it expires, resuming where it stopped
                    resource_version = await self._watch(resource_version)
            except asyncio.CancelledError:
                raise
            except WatchExpired:
                self.logger.info("watch expired; listing again", extra={"kind": self.kind})
                continue
            except ApiException as error:
                if error.status == 410:  # an expired continue token
                    self.logger.info("listing expired; listing again", extra={"kind": self.kind})
                    continue
                problem = api_problem(error)
                if error.status == 404:
                    problem += " (the resource is not served: is its CRD installed?)"
                elif error.status in (401, 403):
                    problem += " (check the service account's RBAC: config/rbac)"
                self._failed(problem)
            except Exception as error:  # noqa: BLE001 - network errors of every kind: relist after a pause
                self._failed(f"{type(error).__name__}: {error}".rstrip(": "))
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
