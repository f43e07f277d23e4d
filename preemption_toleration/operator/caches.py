"""The operator's one view of the cluster, one stream per kind that both triggers the reconcile and serves
its reads (controller-runtime's shared informer).

PriorityClasses come from the operator's own paged, raw-JSON watch (kopf does not watch them): each event is
parsed into its view once, kept, and unless the view is as the last reconcile planned on it (the echo of
our own write), reported to `changed`, which asks for a reconcile. With Kueue (`--kueue on`), Kueue's
WorkloadPriorityClasses come from a second such watch, into a store of their own.

Policies come from kopf's own watch (policy_stream.py), which kopf keeps for the operator's one policy handler
and pauses on a standby replica: each event is put in `PolicyFeed`'s store and, unless it is the echo of our
own status patch, asks for a reconcile, as a class's does. The feed also learns when a listing is complete (no
reconcile may run before it, or a policy not listed yet would look deleted and its classes be released), which
policies a listing no longer shows (deleted while the stream was down: pruned), and that the stream has
stopped (kopf pauses a standby replica's watch; the store is then stale until the next listing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Hashable, Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.resources import ClassKind
from preemption_toleration.kube import listers
from preemption_toleration.kube.informer import DictStore, Informer, object_name
from preemption_toleration.records.policy import PolicyView, policy_view
from preemption_toleration.records.priority_class import ClassView, class_view


class ClassStore(DictStore[ClassView]):
    """The classes' views; tells `changed` of each class that changed (None: one was removed), parsing each
    event once. `is_known(view)`: the class is as the last reconcile saw it, which is no change."""

    def __init__(
        self,
        field_manager: str,
        is_known: Callable[[ClassView], bool],
        changed: Callable[[ClassView | None], None],
        kind: ClassKind = ClassKind.PRIORITY_CLASS,
    ) -> None:
        super().__init__(lambda raw: class_view(raw, field_manager, kind))
        self.is_known = is_known
        self.changed = changed

    def put(self, raw: Mapping[str, Any]) -> str:
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


class PolicyFeed:
    """The policies as kopf's watch shows them. `listed` is set while a stream is live past its complete
    listing; each stream (a listing, then a watch) starts with `stream_started` and ends with `stream_ended`.
    Once `follow` has named them, `changed` is told of each policy that changed, was deleted or pruned, unless
    `is_known(view)`: the policy is as the last reconcile saw it (the echo of our own status patch)."""

    def __init__(self) -> None:
        self.store: DictStore[PolicyView] = DictStore(policy_view)
        self.listed = asyncio.Event()
        self._listing: set[Hashable] | None = None  # the keys listed so far, until the listing is complete
        self._is_known: Callable[[PolicyView], bool] = lambda _: False
        self._changed: Callable[[], None] = lambda: None

    def follow(self, is_known: Callable[[PolicyView], bool], changed: Callable[[], None]) -> None:
        """Set by the operator's start, once its reconciler exists (the feed is made before kopf starts)."""
        self._is_known, self._changed = is_known, changed

    def stream_started(self) -> None:
        self.listed.clear()
        self._listing = set()

    def take(self, event: Mapping[str, Any]) -> None:
        """One event of the stream: a listed object (type None, as kopf marks them), ADDED, MODIFIED or DELETED."""
        kind, raw = event.get("type"), event.get("object")
        if not isinstance(raw, Mapping) or not object_name(raw):
            return  # a BOOKMARK (no object identity) or an ERROR status, which kopf handles
        if kind == "DELETED":
            self.store.remove(raw)
            self._changed()
        elif kind in (None, "ADDED", "MODIFIED"):
            key = self.store.put(raw)
            if kind is None and self._listing is not None:
                self._listing.add(key)
            if not self._is_known(self.store.items[key]):
                self._changed()

    def listing_complete(self) -> None:
        """Whatever the listing did not show was deleted while no stream was live. The listing's end asks for a
        reconcile: those its objects asked for came while no reconcile could run (a standby replica, until its
        listing is complete, stands by and drops them)."""
        self.store.prune(self._listing or ())
        self._listing = None
        self.listed.set()
        self._changed()

    def stream_ended(self) -> None:
        self.listed.clear()
        self._listing = None


class OperatorCaches:
    def __init__(
        self,
        api: ApiClient,
        field_manager: str,
        logger: logging.Logger,
        *,
        policies: PolicyFeed,
        is_known: Callable[[ClassView], bool],
        class_changed: Callable[[ClassView | None], None],
        kinds: tuple[ClassKind, ...] = (ClassKind.PRIORITY_CLASS,),
    ) -> None:
        """`kinds`: the kinds of class it watches, each with a store of its own. Only PriorityClasses must be listed
        before a reconcile: Kueue's, where Kueue is not (yet) installed, are governed once they are listed."""
        self.class_stores = {kind: ClassStore(field_manager, is_known, class_changed, kind) for kind in kinds}
        listing = {
            ClassKind.PRIORITY_CLASS: listers.priority_classes,
            ClassKind.WORKLOAD_PRIORITY_CLASS: listers.workload_priority_classes,
        }
        self.informers = {
            kind: Informer(kind.plural, listing[kind](api), store, logger) for kind, store in self.class_stores.items()
        }
        self.policies = policies

    def tasks(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(informer.run(), name=f"watch-{informer.kind}") for informer in self.informers.values()
        ]

    async def synced(self) -> None:
        """Until the PriorityClasses have been listed, and the policies' stream is live past a complete listing."""
        priority_classes = self.informers[ClassKind.PRIORITY_CLASS]
        await asyncio.gather(priority_classes.synced.wait(), self.policies.listed.wait())

    def listed_kinds(self) -> tuple[ClassKind, ...]:
        """The kinds of class whose first listing is in: those a reconcile may govern."""
        return tuple(kind for kind, informer in self.informers.items() if informer.synced.is_set())

    def contents(self) -> tuple[list[PolicyView], list[ClassView]]:
        """The policies, and the classes of every kind listed."""
        listed = self.listed_kinds()
        classes = [view for kind in listed for view in self.class_stores[kind].items.values()]
        return list(self.policies.store.items.values()), classes
