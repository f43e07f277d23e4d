"""The informer lists in pages and applies raw watch events to its store; a fresh listing prunes.

The list function stands in for a kubernetes_asyncio list method called with `_preload_content=False`
(it answers like aiohttp's response); the real API server is used by tests/integration.
"""

import asyncio
import json
import logging

import pytest

from preemption_toleration.inventory.pod_index import PodIndex
from preemption_toleration.kube.informer import DictStore, Informer, WatchExpired, json_lines


class Content:
    def __init__(self, chunks):
        self.chunks = chunks

    async def iter_any(self):
        for chunk in self.chunks:
            yield chunk


class Response:
    def __init__(self, body=b"", status=200, chunks=None):
        self.status, self.reason, self.body = status, "OK", body
        self.content = Content(chunks if chunks is not None else [body])

    async def __aenter__(self):
        return self

    async def __aexit__(self, *_):
        return None

    async def read(self):
        return self.body

    async def text(self):
        return self.body.decode()


def pod(name, node=None, version="1"):
    spec = {"priority": 9000, **({"nodeName": node} if node else {})}
    return {"metadata": {"name": name, "namespace": "team", "resourceVersion": version}, "spec": spec}


class FakeApi:
    """Pods in pages of `limit`, continue tokens being offsets; a watch replays `events` in `chunks`."""

    def __init__(self, pods, events=(), chunk_size=7, page_pause=0.0):
        self.pods, self.calls, self.page_pause = list(pods), [], page_pause
        stream = b"".join(json.dumps(event).encode() + b"\n" for event in events)
        self.chunks = [stream[i : i + chunk_size] for i in range(0, len(stream), chunk_size)]

    async def list(self, **kwargs):
        self.calls.append(kwargs)
        if kwargs.get("watch"):
            return Response(chunks=self.chunks)
        if kwargs.get("_continue"):
            await asyncio.sleep(self.page_pause)  # a page on its way: the loop runs the watch meanwhile
        start = int(kwargs.get("_continue") or 0)
        end = start + kwargs["limit"]
        metadata = {"resourceVersion": "100", **({"continue": str(end)} if end < len(self.pods) else {})}
        return Response(json.dumps({"items": self.pods[start:end], "metadata": metadata}).encode())


def informer(api, store, page_size=2):
    return Informer("pods", api.list, store, logging.getLogger("test"), page_size=page_size)


async def resumed_from(listed):
    """The resourceVersion to watch from after a listing: its own, or where the watch beside it stopped."""
    return await listed if isinstance(listed, asyncio.Task) else listed


async def test_listing_goes_page_by_page_and_never_asks_for_everything() -> None:
    api = FakeApi([pod(f"p{i}") for i in range(5)])
    index = PodIndex()
    version = await resumed_from(await informer(api, index)._list())
    assert version == "100" and len(index) == 5
    pages = [call for call in api.calls if not call.get("watch")]
    assert [(c["limit"], c.get("_continue")) for c in pages] == [(2, None), (2, "2"), (2, "4")]
    assert all(c["_preload_content"] is False for c in api.calls)


async def test_the_watch_opens_after_the_first_page_and_its_newer_objects_stay() -> None:
    """A listing of many pages takes longer than the server keeps a watch's history: the watch opens at the
    first page's resourceVersion, its events apply while the pages come, and a later page's older copy of an
    object the watch changed is not put back, nor is one the watch deleted."""
    events = [
        {"type": "MODIFIED", "object": pod("p3", node="node-1", version="101")},
        {"type": "DELETED", "object": pod("p4", version="102")},
        {"type": "ADDED", "object": pod("new", version="103")},
    ]
    api = FakeApi([pod(f"p{i}") for i in range(5)], events, page_pause=0.01)
    index = PodIndex()
    version = await resumed_from(await informer(api, index)._list())
    first_watch = next(call for call in api.calls if call.get("watch"))
    last_page = next(call for call in api.calls if call.get("_continue") == "4")
    assert first_watch["resource_version"] == "100" and api.calls.index(first_watch) < api.calls.index(last_page)
    assert version == "103"
    assert sorted(key[1] for key in index.pods) == ["new", "p0", "p1", "p2", "p3"]
    assert [p.name for p in index.on_node("node-1")] == ["p3"]


async def test_a_watch_that_expires_during_the_listing_asks_for_a_fresh_one() -> None:
    expired = [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}]
    api = FakeApi([pod(f"p{i}") for i in range(5)], expired, page_pause=0.01)
    listed = await informer(api, PodIndex())._list()
    with pytest.raises(WatchExpired):
        await resumed_from(listed)


async def test_a_fresh_listing_updates_in_place_and_drops_what_is_gone() -> None:
    api = FakeApi([pod("a"), pod("b"), pod("c")])
    index = PodIndex()
    watcher = informer(api, index)
    await watcher._list()
    api.pods = [pod("b", node="node-1"), pod("d")]
    await watcher._list()
    assert sorted(key[1] for key in index.pods) == ["b", "d"]
    assert [p.name for p in index.on_node("node-1")] == ["b"]
    assert watcher.relists == 2 and watcher.synced.is_set()


async def test_watch_events_are_applied_from_raw_lines_split_anywhere() -> None:
    events = [
        {"type": "ADDED", "object": pod("new", version="101")},
        {"type": "MODIFIED", "object": pod("a", node="node-1", version="102")},
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "150"}}},
        {"type": "DELETED", "object": pod("b", version="103")},
    ]
    api = FakeApi([pod("a"), pod("b")], events, chunk_size=5)
    index = PodIndex()
    watcher = informer(api, index)
    version = await watcher._watch(await watcher._list())
    assert version == "103"
    assert sorted(key[1] for key in index.pods) == ["a", "new"]
    assert [p.name for p in index.on_node("node-1")] == ["a"]
    watch_call = api.calls[-1]
    assert watch_call["watch"] is True and watch_call["resource_version"] == "100"
    assert watch_call["allow_watch_bookmarks"] is True


async def test_an_expired_watch_asks_for_a_fresh_listing() -> None:
    api = FakeApi([], [{"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}}])
    with pytest.raises(WatchExpired):
        await informer(api, DictStore(lambda raw: raw))._watch("5")


async def test_a_bookmark_alone_moves_the_resource_version() -> None:
    api = FakeApi([], [{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "77"}}}])
    store = DictStore(lambda raw: raw)
    assert await informer(api, store)._watch("5") == "77" and len(store) == 0


async def test_json_lines_refuses_an_endless_line() -> None:
    with pytest.raises(ValueError, match="more than 10 bytes"):
        async for _ in json_lines(Response(chunks=[b'{"a": "' + b"x" * 20]), limit=10):
            pass


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


STALE_AFTER = 60.0


async def test_health_follows_lists_and_watches_and_turns_stale_after_the_bound(caplog) -> None:
    caplog.set_level(logging.INFO)
    api, clock = FakeApi([pod("a")]), Clock()
    cache = Informer("pods", api.list, PodIndex(), logging.getLogger("test"), clock=clock)
    for _ in range(3):  # the same failure at each retry (what run() reports): logged once
        cache._failed("403 Forbidden (check the service account's RBAC: config/rbac)")
    assert cache.health(STALE_AFTER) == (
        "pods: not listed yet (last problem: 403 Forbidden (check the service account's RBAC: config/rbac))"
    )
    assert [r.getMessage() for r in caplog.records].count("watch failed") == 1
    await cache._list()
    assert cache.health(STALE_AFTER) is None and "watch recovered" in [r.getMessage() for r in caplog.records]
    clock.now += STALE_AFTER  # listed exactly the bound ago: still fresh
    assert cache.health(STALE_AFTER) is None
    cache._failed("ServerDisconnectedError: Server disconnected")
    clock.now += 1
    assert cache.health(STALE_AFTER) == (
        "pods: no successful list or watch for 61 s (last problem: ServerDisconnectedError: Server disconnected)"
    )
    await cache._watch("100")  # a watch that opens (and here ends at once) is the server heard from
    assert cache.health(STALE_AFTER) is None


async def test_an_open_watch_is_fresh_however_quiet() -> None:
    clock = Clock()
    cache = Informer("pods", FakeApi([pod("a")]).list, PodIndex(), logging.getLogger("test"), clock=clock)
    await cache._list()
    cache.watching = True
    clock.now += 10 * STALE_AFTER
    assert cache.health(STALE_AFTER) is None
    cache.watching = False
    assert cache.health(STALE_AFTER) == "pods: no successful list or watch for 600 s"


LISTS = [
    # (rule, body): decode_list must see what json.loads sees
    (
        "metadata before items, as the API server writes",
        {"kind": "PodList", "metadata": {"continue": "x"}, "items": [pod("a"), pod("b")]},
    ),
    ("items before metadata", {"items": [pod("a")], "metadata": {"resourceVersion": "7"}}),
    ("no items", {"kind": "PodList", "metadata": {}}),
    ("empty items", {"items": [], "metadata": {}}),
    ("an empty object", {}),
    (
        "strings with brackets, braces, quotes and escapes",
        {"items": [{"metadata": {"name": "a]b}c", "annotations": {"x": '"[{\\', "u": "é\u2603"}}}]},
    ),
    ("items that are not objects", {"items": [1, "two", None, [3]], "metadata": {}}),
]


@pytest.mark.parametrize(("rule", "body"), LISTS, ids=[case[0] for case in LISTS])
@pytest.mark.parametrize("indent", [None, 2])
def test_decode_list_sees_what_json_loads_sees(rule: str, body: dict, indent: int | None) -> None:
    from preemption_toleration.kube.informer import decode_list

    raw = json.dumps(body, indent=indent, ensure_ascii=indent is None).encode()
    items: list = []
    rest = decode_list(raw, items.append)
    decoded = json.loads(raw)
    assert items == decoded.pop("items", []), rule
    assert rest == decoded, rule


@pytest.mark.parametrize(
    "body", [b"", b"[]", b'{"items": [1, 2', b'{"items": [1 2]}', b'{"a": 1 "b": 2}', b"{x}", b'{"items": {}}']
)
def test_decode_list_refuses_what_is_no_list_object(body: bytes) -> None:
    from preemption_toleration.kube.informer import decode_list

    if body == b'{"items": {}}':  # items that are no array are kept as a field, as json.loads would
        assert decode_list(body, lambda item: None) == {"items": {}}
        return
    with pytest.raises(ValueError):
        decode_list(body, lambda item: None)


async def test_each_page_of_a_listing_is_told_once_it_is_in_the_store() -> None:
    api = FakeApi([pod(f"p{i}") for i in range(5)])
    index = PodIndex()
    cache = informer(api, index)
    in_store: list[int] = []
    cache.page_listed = lambda: in_store.append(len(index))
    await cache._list()
    assert in_store == [2, 4, 5]
