"""kopf's watch of the policies, shared with the operator's cache (operator/policy_stream.py): kopf's own
`infinite_watch` runs the wrapper, which hands the policies' events to the feed before kopf gets them, and
leaves every other resource alone. The wrapped `continuous_watch` is a stand-in for the API calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest
from kopf._cogs.clients import watching
from kopf._cogs.structs.references import Resource

from preemption_toleration.api.policy import GROUP, PLURAL, VERSION
from preemption_toleration.manifests import kopf_peering
from preemption_toleration.operator import policy_stream
from preemption_toleration.operator.caches import PolicyFeed
from tests.builders import policy

POLICIES = Resource(GROUP, VERSION, PLURAL)
PEERINGS = Resource(kopf_peering.GROUP, kopf_peering.VERSION, kopf_peering.PLURAL)
SPEC = {"priorityClassName": "batch", "minimumPreemptablePriority": 10000}


class OneStream:
    """A stand-in for kopf's continuous_watch: a listing of `listed`, kopf's LISTED mark, then `watched`."""

    def __init__(self, listed: list[dict[str, Any]], watched: list[dict[str, Any]]) -> None:
        self.listed, self.watched = listed, watched

    async def __call__(
        self, *, settings: Any, resource: Any, namespace: Any, operator_pause_waiter: Any
    ) -> AsyncIterator[Any]:
        for obj in self.listed:
            yield {"type": None, "object": obj}
        yield watching.Bookmark.LISTED
        for event in self.watched:
            yield event


async def kopf_reads(resource: Resource) -> list[Any]:
    """What kopf's watcher gets from its own infinite_watch (one stream, as after one break)."""
    stream = watching.infinite_watch(settings=kopf.OperatorSettings(), resource=resource, namespace=None, _iterations=1)
    return [event async for event in stream]


async def test_kopf_gets_every_event_and_the_feed_has_each_policy_before_kopf_does(monkeypatch: Any) -> None:
    feed = PolicyFeed()
    added = {"type": "ADDED", "object": policy("b", SPEC, resourceVersion="6")}
    stream = OneStream([policy("a", SPEC, resourceVersion="5")], [added])
    monkeypatch.setattr(watching, "continuous_watch", stream)
    policy_stream.install()
    seen_by_feed: list[list[str]] = []
    listed_when_kopf_was_told: bool | None = None
    with policy_stream.sharing(feed):
        events = []
        async for event in watching.infinite_watch(
            settings=kopf.OperatorSettings(), resource=POLICIES, namespace=None, _iterations=1
        ):
            events.append(event)
            seen_by_feed.append(sorted(str(name) for name in feed.store.items))
            if event is watching.Bookmark.LISTED:
                listed_when_kopf_was_told = feed.listed.is_set()
    assert [e if e is watching.Bookmark.LISTED else e["type"] for e in events] == [
        None,
        watching.Bookmark.LISTED,
        "ADDED",
    ]
    assert seen_by_feed == [["a"], ["a"], ["a", "b"]]  # each object was in the store when kopf got it
    assert listed_when_kopf_was_told is True
    assert not feed.listed.is_set()  # the stream has ended: kopf lists again before the store is trusted


async def test_other_resources_and_operators_without_a_feed_pass_through_untouched(monkeypatch: Any) -> None:
    feed = PolicyFeed()
    monkeypatch.setattr(watching, "continuous_watch", OneStream([policy("a", SPEC, resourceVersion="5")], []))
    policy_stream.install()
    with policy_stream.sharing(feed):
        peerings = await kopf_reads(PEERINGS)
    without_feed = await kopf_reads(POLICIES)
    assert len(peerings) == len(without_feed) == 2
    assert feed.store.items == {} and not feed.listed.is_set()


def test_installing_twice_wraps_once(monkeypatch: Any) -> None:
    monkeypatch.setattr(watching, "continuous_watch", OneStream([], []))
    policy_stream.install()
    wrapped = watching.continuous_watch
    policy_stream.install()
    assert watching.continuous_watch is wrapped


def test_the_installed_kopf_is_one_the_wrapper_supports(monkeypatch: Any) -> None:
    real = watching.continuous_watch
    monkeypatch.setattr(watching, "continuous_watch", getattr(real, "__wrapped__", real))
    policy_stream.install()  # raises UnsupportedKopf otherwise
    assert getattr(watching.continuous_watch, "shares_policies", False)


def test_a_kopf_whose_watch_has_changed_stops_the_start_with_a_clear_error(monkeypatch: Any) -> None:
    async def changed(*, settings: Any, resource: Any, namespace: Any, pause: Any) -> AsyncIterator[Any]:
        yield watching.Bookmark.LISTED

    monkeypatch.setattr(watching, "continuous_watch", changed)
    with pytest.raises(policy_stream.UnsupportedKopf, match=r"is not a release this operator supports \(kopf 1\.45"):
        policy_stream.install()
    assert watching.continuous_watch is changed
