"""The operator's one view of the cluster: PriorityClasses and policies from its own paged, raw-JSON watches
(controller-runtime's shared informer: one stream per kind that both triggers the reconcile and serves its reads).

PriorityClasses are watched here only, not by kopf: each event is parsed into its view once, kept, and
unless the view is as the last reconcile planned on it (the echo of our own write), it is reported to
`changed`, which asks for a reconcile. Policies are also watched by kopf, for their lifecycle (finalizer,
retried handlers); the store here stays the one the reconcile reads, and a handler's object that is newer
than anything this watch has seen is put in at once (`offer_policy`), so the reconcile the handler asks for
plans on it without waiting for the watch.

Why kopf's own stream of policies cannot feed this store (read in kopf 1.45's source):
- no handler learns that a listing is complete, and no reconcile may run before it is (a policy not listed
  yet would look deleted, and its classes would be released): kopf's watcher keeps the listing's end
  (`Bookmark.LISTED`) to itself and hands its per-object workers only objects, in no order across objects;
- an index holds every handler until the first listing is indexed, but only the first, never when no
  policy exists (no handler runs), and at a cost that grows with the square of the objects (a toggle per
  object, each change waking every waiter: kopf's toggles alone took about 27 s for 1,000 objects, 6 min for 3,000);
- a later listing (after 410 Gone, a lost connection, or a standby's takeover: kopf stops watching while
  paused and lists again after) sends the objects it finds, never the deletions it missed, so a store fed by
  handlers would keep a policy that another replica let go, and apply it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import PLURAL
from preemption_toleration.api.resources import PRIORITY_CLASS_PLURAL
from preemption_toleration.kube import listers
from preemption_toleration.kube.informer import DictStore, Informer, object_name, resource_version, version_number
from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import ClassView, class_view


class ClassStore(DictStore[ClassView]):
    """The classes' views; tells `changed` of each class that changed (None: one was removed), parsing each
    event once. `is_known(view)`: the class is as the last reconcile saw it, which is no change."""

    def __init__(
        self, field_manager: str, is_known: Callable[[ClassView], bool], changed: Callable[[ClassView | None], None]
    ) -> None:
        super().__init__(lambda raw: class_view(raw, field_manager))
        self.is_known = is_known
        self.changed = changed

    def put(self, raw: Mapping[str, Any]) -> Hashable:
        key = self.key(raw)
        view = self.items[key] = self.slim(raw)
        if not self.is_known(view):
            self.changed(view)
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        if self.items.pop(self.key(raw), None) is not None:
            self.changed(None)

    def prune(self, keep: Collection[Hashable]) -> None:
        count = len(self.items)
        super().prune(keep)
        if len(self.items) < count:
            self.changed(None)


def _not_older(version: object, than: PolicyView) -> bool:
    mine, theirs = version_number(version), version_number(than.resource_version)
    return mine is None or theirs is None or mine >= theirs


class PolicyStore(DictStore[PolicyView]):
    """The policies' views, fed by the watch and by kopf's handlers: a view never replaces a newer one of
    the same policy, and a deletion removes only what it is newer than."""

    def __init__(self) -> None:
        super().__init__(policy_view)

    def put(self, raw: Mapping[str, Any]) -> Hashable:
        key = self.key(raw)
        view = self.slim(raw)
        held = self.items.get(key)
        if held is None or _not_older(view.resource_version, held):
            self.items[key] = view
        return key

    def remove(self, raw: Mapping[str, Any]) -> None:
        key = self.key(raw)
        held = self.items.get(key)
        if held is not None and _not_older(resource_version(raw), held):
            del self.items[key]


class OperatorCaches:
    def __init__(
        self,
        api: ApiClient,
        field_manager: str,
        logger: logging.Logger,
        *,
        is_known: Callable[[ClassView], bool],
        class_changed: Callable[[ClassView | None], None],
    ) -> None:
        self.class_store = ClassStore(field_manager, is_known, class_changed)
        self.policy_store = PolicyStore()
        self.classes = Informer(PRIORITY_CLASS_PLURAL, listers.priority_classes(api), self.class_store, logger)
        self.policies = Informer(PLURAL, listers.policies(api), self.policy_store, logger)

    def tasks(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(informer.run(), name=f"watch-{informer.kind}")
            for informer in (self.classes, self.policies)
        ]

    async def synced(self) -> None:
        await asyncio.gather(self.classes.synced.wait(), self.policies.synced.wait())

    def offer_policy(self, body: Mapping[str, Any]) -> None:
        """A policy as a kopf handler got it: kept if the watch has not delivered its version yet (the
        watch delivers versions in order, so one it has passed is in the store, or a later one is)."""
        number = version_number(resource_version(body))
        if number is not None and number > self.policies.version and object_name(body):
            self.policy_store.put(body)

    def contents(self) -> tuple[list[PolicyView], list[ClassView]]:
        return list(self.policy_store.items.values()), list(self.class_store.items.values())
