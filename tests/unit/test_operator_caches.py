"""The operator's one store of classes and policies (operator/caches.py): each class event parsed once and
reported unless it is the echo of what the last reconcile planned on; policies from kopf's stream, listed
only once a listing is complete, and pruned of what a new listing no longer shows."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.operator.caches import ClassStore, OperatorCaches, PolicyFeed
from preemption_toleration.records.priority_class import ClassView

MANAGER = "ptol-operator"


def priority_class(name: str, value: int = 1000, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "value": value}


def policy(name: str, version: str, target: str = "batch") -> dict[str, Any]:
    return {
        "apiVersion": "preemption-toleration.dev/v1alpha1",
        "kind": "PreemptionTolerationPolicy",
        "metadata": {"name": name, "resourceVersion": version, "creationTimestamp": "2026-11-01T00:00:00Z"},
        "spec": {"priorityClassName": target, "minimumPreemptablePriority": 10000},
    }


class Known:
    """The last reconcile's classes, and what the store reported."""

    def __init__(self) -> None:
        self.known: dict[str, ClassView] = {}
        self.reported: list[str | None] = []

    def is_known(self, view: ClassView) -> bool:
        return self.known.get(view.name) == view

    def changed(self, view: ClassView | None) -> None:
        self.reported.append(view.name if view else None)


def test_a_class_is_reported_unless_it_is_as_the_last_reconcile_saw_it() -> None:
    last = Known()
    store = ClassStore(MANAGER, last.is_known, last.changed)
    store.put(priority_class("batch"))
    last.known["batch"] = store.items["batch"]
    store.put(priority_class("batch", version="2"))  # the echo of our write: same content, a newer version
    store.put(priority_class("batch", value=2000, version="3"))
    assert last.reported == ["batch", "batch"]
    assert store.items["batch"].resource_version == "3"  # the store keeps the newest all the same


def test_a_removed_or_pruned_class_is_reported_once_and_a_prune_that_removes_nothing_is_not() -> None:
    last = Known()
    store = ClassStore(MANAGER, last.is_known, last.changed)
    for name in ("a", "b", "c"):
        store.put(priority_class(name))
    last.reported.clear()
    store.remove(priority_class("a"))
    store.remove(priority_class("a"))  # gone already
    store.prune({"b"})
    store.prune({"b"})
    assert last.reported == [None, None] and list(store.items) == ["b"]


def listed(*objects: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": None, "object": obj} for obj in objects]  # kopf marks a listing's objects with type None


def test_the_policies_are_listed_only_once_the_listing_is_complete_and_the_stream_is_live() -> None:
    feed = PolicyFeed()
    assert not feed.listed.is_set()  # no stream yet: a standby replica's, which kopf never lets list
    feed.stream_started()
    for event in listed(policy("a", "5"), policy("b", "6")):
        feed.take(event)
    assert not feed.listed.is_set() and sorted(feed.store.items) == ["a", "b"]
    feed.listing_complete()
    assert feed.listed.is_set()
    feed.stream_ended()  # a break, or kopf pausing a replica: what the store holds may go stale
    assert not feed.listed.is_set()


def test_an_empty_listing_is_complete_too_and_prunes_everything() -> None:
    feed = PolicyFeed()
    feed.stream_started()
    feed.take({"type": "ADDED", "object": policy("a", "5")})
    feed.stream_ended()
    feed.stream_started()
    feed.listing_complete()
    assert feed.listed.is_set() and feed.store.items == {}


def test_a_new_listing_prunes_the_policies_deleted_while_no_stream_was_live() -> None:
    feed = PolicyFeed()
    feed.stream_started()
    for event in listed(policy("kept", "5"), policy("deleted-meanwhile", "6")):
        feed.take(event)
    feed.listing_complete()
    feed.take({"type": "ADDED", "object": policy("added-later", "7")})
    feed.stream_ended()
    feed.stream_started()  # e.g. after 410 Gone, or when a standby takes over
    for event in listed(policy("kept", "8"), policy("added-later", "7")):
        feed.take(event)
    assert "deleted-meanwhile" in feed.store.items  # until the listing is complete
    feed.listing_complete()
    assert sorted(feed.store.items) == ["added-later", "kept"]
    assert feed.store.items["kept"].resource_version == "8"


def test_watch_events_change_and_delete_and_events_without_an_object_are_left_to_kopf() -> None:
    feed = PolicyFeed()
    feed.stream_started()
    feed.listing_complete()
    feed.take({"type": "ADDED", "object": policy("p", "5", target="old")})
    feed.take({"type": "MODIFIED", "object": policy("p", "6", target="new")})
    feed.take({"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}})
    feed.take({"type": "ERROR", "object": {"code": 500}})
    assert feed.store.items["p"].resource_version == "6"
    feed.take({"type": "DELETED", "object": policy("p", "7")})
    assert feed.store.items == {}


def test_a_policy_asks_for_a_reconcile_unless_it_is_as_the_last_reconcile_saw_it() -> None:
    """Each policy event asks for a reconcile (no kopf handler of changes does), except the echo of our own
    status patch; a deletion asks too, and the end of every listing (on a standby replica, the requests of the
    listing's objects came while it stood by)."""
    feed, known, asked = PolicyFeed(), {}, []
    feed.follow(lambda view: known.get(view.name) == view, lambda: asked.append(len(feed.store)))
    feed.stream_started()
    for event in listed(policy("a", "5"), policy("b", "6")):
        feed.take(event)
    feed.listing_complete()  # prunes nothing, and asks all the same
    known["a"] = feed.store.items["a"]
    feed.take({"type": "MODIFIED", "object": policy("a", "7")})  # the echo: same content, a newer version
    feed.take({"type": "MODIFIED", "object": policy("a", "8", target="other")})
    feed.take({"type": "DELETED", "object": policy("a", "9")})
    feed.stream_ended()
    feed.stream_started()
    feed.listing_complete()  # b was deleted while no stream was live
    assert asked == [1, 2, 2, 2, 1, 0]


async def test_the_reconcile_reads_the_feeds_policies_once_classes_and_policies_are_listed() -> None:
    feed = PolicyFeed()
    async with ApiClient() as api:
        caches = OperatorCaches(
            api, MANAGER, logging.getLogger("test"), policies=feed, is_known=lambda _: False, class_changed=print
        )
        for informer in caches.informers.values():
            informer.synced.set()
        synced = asyncio.create_task(caches.synced())
        await asyncio.sleep(0)
        assert not synced.done()
        feed.stream_started()
        feed.take(listed(policy("a", "5"))[0])
        feed.listing_complete()
        await asyncio.wait_for(synced, 1)
        policies, _ = caches.contents()
    assert [view.name for view in policies] == ["a"]


async def test_with_kueue_a_reconcile_waits_for_the_priority_classes_not_for_kueues() -> None:
    """Where Kueue is not installed (or not yet), WorkloadPriorityClasses are never listed: PriorityClasses are
    governed all the same, and Kueue's kind once its listing is in."""
    feed = PolicyFeed()
    async with ApiClient() as api:
        caches = OperatorCaches(
            api,
            MANAGER,
            logging.getLogger("test"),
            policies=feed,
            is_known=lambda _: False,
            class_changed=print,
            kinds=tuple(ClassKind),
        )
        caches.informers[ClassKind.PRIORITY_CLASS].synced.set()
        feed.stream_started()
        feed.listing_complete()
        await asyncio.wait_for(caches.synced(), 1)
        assert caches.listed_kinds() == (ClassKind.PRIORITY_CLASS,)
        caches.informers[ClassKind.WORKLOAD_PRIORITY_CLASS].synced.set()
        assert caches.listed_kinds() == tuple(ClassKind)
