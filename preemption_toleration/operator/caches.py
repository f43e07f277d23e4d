"""The operator's view of the cluster: PriorityClasses and policies from its own paged, raw-JSON watches.

Not kopf indexes: with an index, kopf makes every object's first event wait for every other object's
(a toggle per object, each change waking every waiter), which took minutes with 3,000 classes. kopf's
handlers still say when to reconcile; these caches say what is there. A handler first waits until the
cache has seen the version of the object it was called for, so no reconcile plans on an older state than
the event that asked for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio.client import ApiClient

from preemption_toleration.api.policy import PLURAL
from preemption_toleration.governance.views import ClassView, PolicyView, class_view, policy_view
from preemption_toleration.kube import listers
from preemption_toleration.kube.informer import DictStore, Informer

CATCH_UP_SECONDS = 10.0  # past this, a handler goes on with what the cache has (the resync repairs)


class OperatorCaches:
    def __init__(self, api: ApiClient, field_manager: str, logger: logging.Logger) -> None:
        self.class_store: DictStore[ClassView] = DictStore(lambda raw: class_view(raw, field_manager))
        self.policy_store: DictStore[PolicyView] = DictStore(policy_view)
        self.classes = Informer("priorityclasses", listers.priority_classes(api), self.class_store, logger)
        self.policies = Informer(PLURAL, listers.policies(api), self.policy_store, logger)
        self.logger = logger

    def tasks(self) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(informer.run(), name=f"watch-{informer.kind}")
            for informer in (self.classes, self.policies)
        ]

    async def synced(self) -> None:
        await asyncio.gather(self.classes.synced.wait(), self.policies.synced.wait())

    async def caught_up(self, informer: Informer, body: Mapping[str, Any]) -> None:
        version = (body.get("metadata") or {}).get("resourceVersion")
        if not await informer.caught_up(version, CATCH_UP_SECONDS):
            self.logger.warning("watch cache behind an event", extra={"kind": informer.kind, "version": version})

    def contents(self) -> tuple[list[PolicyView], list[ClassView]]:
        return list(self.policy_store.items.values()), list(self.class_store.items.values())
