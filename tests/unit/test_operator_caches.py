"""The operator's one store of classes and policies (operator/caches.py): each class event parsed once and
reported unless it is the echo of what the last reconcile planned on; policies from the watch and from
kopf's handlers, the newer version winning."""

from __future__ import annotations

import logging
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.operator.caches import ClassStore, OperatorCaches, PolicyStore
from preemption_toleration.records.priority_class import ClassView

MANAGER = "ptol-operator"


def priority_class(name: str, value: int = 1000, version: str = "1") -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}, "value": value}


def policy(name: str, version: str, target: str = "batch") -> dict[str, Any]:
    return {
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


def test_a_policy_view_never_replaces_a_newer_one_and_a_deletion_removes_only_older_ones() -> None:
    store = PolicyStore()
    store.put(policy("p", "5", target="new"))
    store.put(policy("p", "3", target="old"))  # a late event of the other stream
    assert store.items["p"].resource_version == "5"
    store.remove(policy("p", "4"))  # the deletion of an earlier object of the same name
    assert "p" in store.items
    store.remove(policy("p", "6"))
    assert "p" not in store.items


async def test_a_handlers_policy_is_kept_only_if_the_watch_has_not_delivered_its_version() -> None:
    async with ApiClient() as api:
        caches = OperatorCaches(api, MANAGER, logging.getLogger("test"), is_known=lambda _: False, class_changed=print)
        caches.policies.version = 10  # the watch has delivered everything up to 10
        caches.offer_policy(policy("seen", "9"))  # in the store already, or gone since
        caches.offer_policy(policy("ahead", "11"))
        policies, _ = caches.contents()
    assert [view.name for view in policies] == ["ahead"]
